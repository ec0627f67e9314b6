"""Train a small MLP on scikit-learn's handwritten digits with numbax, and beside it the
same model in JAX: same initial weights, same minibatches, same Adam.

The model is written once over a NumPy-like module ``xp``: plain NumPy for numbax (which
traces the NumPy calls under ``jit``), ``jax.numpy`` for JAX.

    python examples/mlp_digits.py           # 40 epochs
    python examples/mlp_digits.py --quick   # 12 epochs
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import NamedTuple

import numpy as np

import numbax

HIDDEN = 128
BATCH = 64
LEARNING_RATE = 3e-3
SEED = 0


class Result(NamedTuple):
    implementation: str
    test_accuracy: float
    first_epoch_s: float
    epoch_s: float  # median over the epochs after the first
    losses: list[float]  # mean training loss of each epoch


def load_data():
    """The 8x8 digits (1797 images, shipped with scikit-learn), scaled to [0, 1], split
    80/20 with every class in the same proportion on both sides."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    return train_test_split(x, labels, test_size=0.2, random_state=SEED, stratify=digits.target)


def init_params(n_in: int, n_out: int) -> dict:
    rng = np.random.default_rng(SEED)

    def dense(fan_in, fan_out):
        scale = np.sqrt(2.0 / (fan_in + fan_out))  # Glorot
        w = (scale * rng.standard_normal((fan_in, fan_out))).astype(np.float32)
        return {"w": w, "b": np.zeros(fan_out, np.float32)}

    return {"hidden": dense(n_in, HIDDEN), "out": dense(HIDDEN, n_out)}


def epoch_batches(n: int, epochs: int) -> list[list[np.ndarray]]:
    """Shuffled minibatch indices per epoch; the last partial batch is dropped, so every
    step has one shape and compiles once."""
    rng = np.random.default_rng(SEED + 1)
    schedule = []
    for _ in range(epochs):
        order = rng.permutation(n)
        schedule.append([order[i : i + BATCH] for i in range(0, n - BATCH + 1, BATCH)])
    return schedule


def logits(params, x, xp):
    h = xp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def cross_entropy(params, x, labels, xp):
    z = logits(params, x, xp)
    z = z - xp.max(z, axis=1, keepdims=True)
    log_probs = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(xp.sum(labels * log_probs, axis=1))


def accuracy(predicted_logits, labels) -> float:
    return float(np.mean(np.argmax(predicted_logits, axis=1) == np.argmax(labels, axis=1)))


def train(name, step, predict, params, state, data, batches, to_host=lambda x: x) -> Result:
    x_train, x_test, y_train, y_test = data
    times, losses = [], []
    for epoch in batches:
        start = time.perf_counter()
        epoch_loss = []
        for idx in epoch:
            params, state, loss = step(params, state, x_train[idx], y_train[idx])
            epoch_loss.append(loss)
        epoch_loss = [float(to_host(loss)) for loss in epoch_loss]  # waits for JAX's queue
        times.append(time.perf_counter() - start)
        losses.append(float(np.mean(epoch_loss)))
    test_accuracy = accuracy(np.asarray(to_host(predict(params, x_test))), y_test)
    return Result(name, test_accuracy, times[0], statistics.median(times[1:]), losses)


def train_numbax(data, batches) -> Result:
    opt = numbax.optim.adam(LEARNING_RATE)

    @numbax.jit
    def step(params, state, x, labels):
        loss, grads = numbax.value_and_grad(cross_entropy)(params, x, labels, np)
        updates, state = opt.update(grads, state, params)
        return numbax.optim.apply_updates(params, updates), state, loss

    predict = numbax.jit(lambda params, x: logits(params, x, np))
    params = init_params(data[0].shape[1], data[2].shape[1])
    return train("numbax", step, predict, params, opt.init(params), data, batches)


def train_jax(data, batches) -> Result | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    init, update, label = _jax_adam(jax, jnp)

    @jax.jit
    def step(params, state, x, labels):
        loss, grads = jax.value_and_grad(cross_entropy)(params, x, labels, jnp)
        updates, state = update(grads, state, params)
        return jax.tree_util.tree_map(jnp.add, params, updates), state, loss

    predict = jax.jit(lambda params, x: logits(params, x, jnp))
    params = jax.tree_util.tree_map(jnp.asarray, init_params(data[0].shape[1], data[2].shape[1]))
    return train(label, step, predict, params, init(params), data, batches, np.asarray)


def _jax_adam(jax, jnp):
    """optax's Adam when optax is installed, else the same update written in jax.numpy."""
    try:
        import optax
    except ImportError:
        optax = None
    if optax is not None:
        opt = optax.adam(LEARNING_RATE)
        return opt.init, opt.update, "JAX + optax"

    b1, b2, eps = 0.9, 0.999, 1e-8
    tree_map = jax.tree_util.tree_map

    def init(params):
        zeros = tree_map(jnp.zeros_like, params)
        return jnp.zeros((), jnp.int32), zeros, tree_map(jnp.zeros_like, params)

    def update(grads, state, params):
        count, mu, nu = state
        count = count + 1
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, mu, grads)
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
        c1, c2 = 1 - b1**count, 1 - b2**count
        updates = tree_map(
            lambda m, v: -LEARNING_RATE * (m / c1) / (jnp.sqrt(v / c2) + eps), mu, nu
        )
        return updates, (count, mu, nu)

    return init, update, "JAX (Adam in jax.numpy)"


def print_table(results: list[Result]) -> None:
    header = ("implementation", "test accuracy", "final loss", "first epoch", "epoch")
    print(f"{header[0]:<26} {header[1]:>13} {header[2]:>10} {header[3]:>12} {header[4]:>10}")
    for r in results:
        print(
            f"{r.implementation:<26} {r.test_accuracy:>13.2%} {r.losses[-1]:>10.5f} "
            f"{r.first_epoch_s * 1e3:>10.1f}ms {r.epoch_s * 1e3:>8.2f}ms"
        )
    print(
        "first epoch: includes compiling (numbax: or loading from its on-disk cache); "
        "epoch: median over the later ones"
    )


def main(quick: bool = False, epochs: int | None = None) -> list[Result]:
    epochs = epochs or (12 if quick else 40)
    data = load_data()
    batches = epoch_batches(len(data[0]), epochs)
    print(f"digits: {len(data[0])} train, {len(data[1])} test, {epochs} epochs of Adam")
    results = [train_numbax(data, batches)]
    jax_result = train_jax(data, batches)
    if jax_result is not None:
        results.append(jax_result)
    print_table(results)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs")
    main(parser.parse_args().quick)
