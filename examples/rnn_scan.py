"""An Elman RNN written with ``numbax.scan``, trained to echo its input two steps late.

``scan`` keeps the loop over time one staged loop however long the sequence (a Python
loop would unroll into a program as long as the sequence), and ``grad`` goes through it
by reverse-mode scan. The training step runs under ``jit`` with Adam on a warmup-cosine
learning-rate schedule.

    python examples/rnn_scan.py
    python examples/rnn_scan.py --quick
"""

from __future__ import annotations

import argparse

import numpy as np

import numbax

LAG = 2
LENGTH = 20
BATCH = 32
HIDDEN = 16


def init_params(rng) -> dict:
    return {
        "w_in": rng.standard_normal((1, HIDDEN)) * 0.5,
        "w_hidden": rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN),
        "b": np.zeros(HIDDEN),
        "w_out": rng.standard_normal((HIDDEN, 1)) / np.sqrt(HIDDEN),
    }


def sequences(rng):
    """Inputs of shape (time, batch, 1) and the targets: the input ``LAG`` steps ago
    (zero before the sequence starts)."""
    x = rng.uniform(-1, 1, (LENGTH, BATCH, 1))
    y = np.concatenate([np.zeros((LAG, BATCH, 1)), x[:-LAG]])
    return x, y


def predict(params, x):
    def cell(h, x_t):
        h = np.tanh(x_t @ params["w_in"] + h @ params["w_hidden"] + params["b"])
        return h, h @ params["w_out"]

    _, outputs = numbax.scan(cell, np.zeros((x.shape[1], HIDDEN)), x)
    return outputs


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def main(quick: bool = False) -> list[float]:
    steps = 60 if quick else 400
    rng = np.random.default_rng(0)
    params = init_params(rng)
    opt = numbax.optim.adam(numbax.optim.warmup_cosine_decay_schedule(0.0, 2e-2, 10, steps))
    state = opt.init(params)

    @numbax.jit
    def train_step(params, state, x, y):
        value, grads = numbax.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return numbax.optim.apply_updates(params, updates), state, value

    losses = []
    for step in range(steps):
        params, state, value = train_step(params, state, *sequences(rng))
        losses.append(float(value))
        if step % (steps // 5) == 0 or step == steps - 1:
            print(f"step {step:4d}  loss {losses[-1]:.4f}")
    held_out = float(numbax.jit(loss)(params, *sequences(rng)))
    print(f"held-out loss {held_out:.4f} (always predicting zero scores about 0.3)")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer training steps")
    main(parser.parse_args().quick)
