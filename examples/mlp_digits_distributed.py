"""Data-parallel training of the digits MLP (``mlp_digits.py``) across MPI processes.

Every process holds the same parameters and takes its shard of each minibatch; inside
the jitted step each computes the gradient of its shard's mean loss, and ``pmean``
averages the gradients (and the losses) over the processes, so every process applies
the same Adam update. The shards are equal, so the mean of the shards' mean losses is
the minibatch's mean loss, and the run follows the single-process run on the full
minibatch up to floating-point rounding.

    mpiexec -n 4 python examples/mlp_digits_distributed.py      # 4 processes
    python examples/mlp_digits_distributed.py                   # 1 process: the reference
    mpiexec -n 2 python examples/mlp_digits_distributed.py --epochs 3 --float64

Process 0 prints each epoch's mean loss and a last line ``LOSSES [...]`` (JSON).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from mlp_digits import LEARNING_RATE, cross_entropy, epoch_batches, init_params, load_data

import numbax
import numbax.distributed as nd


def make_step(optimizer):
    @numbax.jit
    def step(params, state, x, labels):
        loss, grads = numbax.value_and_grad(cross_entropy)(params, x, labels, np)
        grads, loss = nd.pmean((grads, loss))  # the minibatch's gradient and loss
        updates, state = optimizer.update(grads, state, params)
        return numbax.optim.apply_updates(params, updates), state, loss

    return step


def shard(indices: np.ndarray) -> np.ndarray:
    """This process's equal part of a minibatch's indices."""
    count, rank = nd.process_count(), nd.process_index()
    if len(indices) % count:
        raise SystemExit(f"a minibatch of {len(indices)} does not split over {count} processes")
    size = len(indices) // count  # a minibatch of 64: 1, 2, 4 or 8 processes
    return indices[rank * size : (rank + 1) * size]


def train(epochs: int, dtype=np.float32) -> list[float]:
    x_train, _, y_train, _ = load_data()
    x_train, y_train = x_train.astype(dtype), y_train.astype(dtype)
    params = numbax.tree_util.tree_map(lambda a: a.astype(dtype), init_params(64, 10))
    optimizer = numbax.optim.adam(LEARNING_RATE)
    state, step = optimizer.init(params), make_step(optimizer)
    losses = []
    for epoch, batches in enumerate(epoch_batches(len(x_train), epochs)):
        epoch_losses = []
        for indices in batches:
            mine = shard(indices)
            params, state, loss = step(params, state, x_train[mine], y_train[mine])
            epoch_losses.append(float(loss))
        losses.append(float(np.mean(epoch_losses)))
        if nd.process_index() == 0:
            print(f"epoch {epoch}: loss {losses[-1]:.6f} ({nd.process_count()} processes)")
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--float64", action="store_true", help="train in float64")
    args = parser.parse_args()
    nd.initialize()
    losses = train(args.epochs, np.float64 if args.float64 else np.float32)
    if nd.process_index() == 0:
        print("LOSSES " + json.dumps(losses))


if __name__ == "__main__":
    main()
