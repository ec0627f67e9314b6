"""Per-example gradients: ``vmap(grad(loss))`` gives the gradient of every example's
loss in one batched program (what DP-SGD clips, what influence functions and
gradient-noise studies read), checked against a Python loop of ``grad``.

    python examples/per_example_grads.py
    python examples/per_example_grads.py --quick
"""

from __future__ import annotations

import argparse

import numpy as np

import numbax


def init_params(rng, n_in: int, n_hidden: int) -> dict:
    return {
        "w1": rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
        "b1": np.zeros(n_hidden),
        "w2": rng.standard_normal(n_hidden) / np.sqrt(n_hidden),
    }


def loss(params, x, y):
    """Squared error of a one-hidden-layer network on one example ``x`` (a vector)."""
    h = np.tanh(x @ params["w1"] + params["b1"])
    return (h @ params["w2"] - y) ** 2


# The parameters are shared by every example (None), the data is mapped over its rows (0).
per_example_grads = numbax.jit(numbax.vmap(numbax.grad(loss), in_axes=(None, 0, 0)))


def gradient_norms(grads):
    """Each example's gradient norm over all parameters: what DP-SGD clips."""
    squares = [np.sum(g.reshape(len(g), -1) ** 2, axis=1) for g in numbax.tree_leaves(grads)]
    return np.sqrt(sum(squares))


def main(quick: bool = False) -> float:
    rng = np.random.default_rng(0)
    n_examples, n_in, n_hidden = (16, 5, 8) if quick else (256, 20, 32)
    params = init_params(rng, n_in, n_hidden)
    x = rng.standard_normal((n_examples, n_in))
    y = rng.standard_normal(n_examples)

    batched = per_example_grads(params, x, y)
    grad_one = numbax.jit(numbax.grad(loss))
    looped = [grad_one(params, x[i], y[i]) for i in range(n_examples)]

    worst = 0.0
    for name, leaf in batched.items():
        expected = np.stack([g[name] for g in looped])
        assert leaf.shape == expected.shape == (n_examples,) + params[name].shape
        np.testing.assert_allclose(leaf, expected, rtol=1e-10, atol=1e-12)
        worst = max(worst, float(np.max(np.abs(leaf - expected))))

    norms = gradient_norms(batched)
    print(f"{n_examples} examples, per-example gradients of {len(params)} parameter arrays")
    print(f"vmap(grad) vs a loop of grad: max |difference| = {worst:.2e}")
    print(
        f"per-example gradient norms: min {norms.min():.3f}, median {np.median(norms):.3f}, "
        f"max {norms.max():.3f}"
    )
    return worst


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller batch")
    main(parser.parse_args().quick)
