"""The dispatch fast path: a call whose positional arguments are NumPy arrays, or tuples
of them (a model's parameters), finds its compiled program without flattening a pytree,
and never confuses one argument structure with another."""

from __future__ import annotations

import numpy as np

import numbax


def test_tuples_of_arrays_take_the_fast_path_and_keep_their_structure(backend):
    def step(params, x):
        w, b = params
        return (w - 0.5 * x, b + x.sum()), x * 2.0

    f = numbax.jit(step, backend=backend)
    w, b, x = np.arange(6.0).reshape(2, 3), np.ones(3), np.full((2, 3), 0.25)
    for _ in range(3):
        (new_w, new_b), doubled = backend.to_host(f((w, b), x))
        np.testing.assert_allclose(new_w, w - 0.125)
        np.testing.assert_allclose(new_b, b + 1.5)
        np.testing.assert_allclose(doubled, x * 2.0)
    assert f.cache_info().traces == 1
    ((_, signature),) = f._fast.keys()
    assert signature[0][0] == "tuple", "the tuple argument is in the fast path's key"

    # Other structures are other signatures, traced on their own, never a wrong program.
    def total(*args):
        return sum(np.sum(leaf) for leaf in numbax.tree_leaves(args))

    g = numbax.jit(total, backend=backend)
    a = np.ones(2)
    calls = [((a, a),), ((a,), a), (a, a), ((a, a, a),), ([a, a],), ((a, (a,)),)]
    for args in calls + calls:
        assert float(backend.to_host(g(*args))) == 2.0 * len(numbax.tree_leaves(args))
    assert g.cache_info().traces == len(calls)
