"""``np.stack`` along an existing axis is a concatenate along it and a reshape that
splits it (``numpy_lib/shapes.py``): a concatenate of windows that fusion reads in place,
as im2col's patches are, with no size-1 axis inserted before it."""

from __future__ import annotations

import numpy as np
import pytest

import numbax


def _patches(x):
    return np.stack([x[:, i : i + 3, j : j + 3] for i in range(2) for j in range(2)], axis=2)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_stack_equals_numpy_s_on_every_axis(axis):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((2, 3, 4)) for _ in range(3)]
    got = numbax.jit(lambda *a: np.stack(a, axis=axis))(*xs)
    np.testing.assert_array_equal(got, np.stack(xs, axis=axis))


def test_a_stack_of_windows_is_one_kernel_that_reads_them_in_place():
    x = np.random.default_rng(1).standard_normal((2, 4, 4))
    closed = numbax.make_jaxpr(_patches)(x)
    names = [eqn.prim.name for eqn in closed.jaxpr.eqns]
    assert "concatenate" in names and "broadcast_in_dim" not in names, names
    text = numbax.jit(_patches).lower(x).as_text()
    # One kernel reads the windows and joins them; the split of the axis is a reshape
    # of its output (a view in the launcher).
    assert text.count("kernel[") == 2 and "name='fused_slice_concatenate'" in text
    assert "name='reshape' kind='opaque'" in text
    np.testing.assert_array_equal(numbax.jit(_patches)(x), _patches(x))


def test_the_gradient_and_the_batch_of_a_stack_are_numpy_s():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 4))
    weights = rng.standard_normal(_patches(x).shape)
    grad = numbax.jit(numbax.grad(lambda x: (_patches(x) * weights).sum()))(x)
    want = np.zeros_like(x)
    for k, (i, j) in enumerate((i, j) for i in range(2) for j in range(2)):
        want[:, i : i + 3, j : j + 3] += weights[:, :, k]
    np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-12)
    batch = rng.standard_normal((5, 2, 4, 4))
    got = numbax.jit(numbax.vmap(_patches))(batch)
    np.testing.assert_array_equal(got, np.stack([_patches(b) for b in batch]))
