"""Shape and construction functions beyond the corpus: the refusals (static arguments
that are traced, options numbax does not trace), derivatives and batching of the
counting functions, and NumPy's index tricks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import numbax
from numbax import numpy as xnp
from numbax.ir.errors import (
    ConcretizationError,
    NumbaxTypeError,
    ShapeError,
    TracerArrayConversionError,
    UnsupportedFunctionError,
)

sys.path.insert(0, str(Path(__file__).parent.parent / "transforms"))
from finite_differences import check_derivatives  # noqa: E402


@pytest.mark.parametrize(
    ("program", "named"),
    [
        (lambda x, n: np.repeat(x, n), "repeats"),
        (lambda x, n: np.tile(x, n), "reps"),
        (lambda x, n: np.insert(x, n, 0.0), "obj"),
        (lambda x, n: np.delete(x, n), "obj"),
        (lambda x, n: np.roll(x, (n, n), axis=(0, 0)), "shift"),
    ],
)
def test_a_traced_shape_argument_is_refused_naming_it_and_static_argnums(program, named):
    x, n = np.arange(4.0), np.array([1, 2, 0, 1])[:1].reshape(())
    with pytest.raises(ConcretizationError, match=f"{named}.*static_argnums") as info:
        numbax.jit(program)(x, n)
    assert "test_construction.py" in str(info.value)
    # The same value known while tracing (a static argument) is accepted.
    assert np.array_equal(numbax.jit(program, static_argnums=1)(x, 1), program(x, 1))


def test_bincount_of_a_traced_x_needs_a_static_length():
    x = np.array([0, 3, 1, 3])
    with pytest.raises(ConcretizationError, match="minlength=n.*length=n"):
        numbax.jit(np.bincount)(x)
    # minlength= is the length; values past it are dropped, as jax.numpy.bincount does.
    got = numbax.jit(lambda x: np.bincount(x, minlength=3))(x)
    np.testing.assert_array_equal(got, [1, 1, 0])
    got = numbax.jit(lambda x: xnp.bincount(x, length=5))(np.array([0, 4, 4, -1, 7]))
    np.testing.assert_array_equal(got, [1, 0, 0, 0, 2])
    # Known while tracing (a constant), the length is NumPy's: x.max() + 1.
    np.testing.assert_array_equal(numbax.jit(lambda: np.bincount(x))(), np.bincount(x))


@pytest.mark.parametrize(
    ("program", "error", "match"),
    [
        (lambda x: np.bincount(x), NumbaxTypeError, "cannot cast.*float64"),
        (lambda x: np.histogram(x, bins="auto"), UnsupportedFunctionError, "bins='auto'"),
        (lambda x: np.gradient(x[:2], edge_order=2), ShapeError, "edge_order"),
        (lambda x: np.diagonal(x), ShapeError, "at least 2-d"),
        (lambda x: np.cross(x, x), ShapeError, "dimension must be 2 or 3"),
        (lambda x: np.select([x], [x]), UnsupportedFunctionError, "should be boolean"),
        (lambda x: np.repeat(x, [1, 2]), ShapeError, "2 repeats for an axis of length 4"),
        (lambda x: np.rot90(x.reshape(2, 2), axes=(0, 0)), ShapeError, "repeated axis"),
        (lambda x: np.vsplit(x, 2), ShapeError, "2 or more dimensions"),
    ],
)
def test_bad_arguments_are_refused_at_the_users_line(program, error, match):
    with pytest.raises(error, match=match) as info:
        numbax.jit(program)(np.arange(4.0))
    assert "test_construction.py" in str(info.value)


def test_equality_of_different_shapes_is_a_static_false_and_otherwise_a_traced_bool():
    x = np.arange(6.0).reshape(2, 3)
    assert numbax.jit(lambda a: np.array_equal(a, a[0]))(x) == np.False_
    assert numbax.jit(lambda a: np.array_equiv(a, a[:, :2]))(x) == np.False_
    for answer in numbax.jit(lambda a: (np.allclose(a, a + 1e-9), np.array_equiv(a, a[:1])))(x):
        assert answer.shape == () and answer.dtype == np.bool_
    assert numbax.jit(lambda a: np.allclose(a, a + 1e-9))(x)
    assert not numbax.jit(lambda a: np.array_equiv(a, a[:1]))(x)


def test_bincount_and_histogram_weights_are_differentiable(rng):
    labels = np.array([0, 2, 2, 4, 1])
    weights = rng.standard_normal(5)
    check_derivatives(lambda w: np.bincount(labels, w, minlength=6), [weights], rng)
    check_derivatives(lambda w: xnp.bincount(labels, w, length=6), [weights], rng)
    data = np.array([-1.5, -0.2, 0.3, 0.9, 1.7])
    check_derivatives(lambda w: np.histogram(data, 3, weights=w, density=True)[0], [weights], rng)


def test_bincount_batched_over_labels_and_weights(rng):
    labels = rng.integers(0, 4, (3, 6))
    weights = rng.standard_normal((3, 6))
    got = numbax.vmap(lambda i, w: np.bincount(i, w, minlength=4))(labels, weights)
    want = np.stack([np.bincount(i, w, minlength=4) for i, w in zip(labels, weights, strict=True)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_index_tricks_of_python_numbers_are_constants_and_r_refuses_a_traced_operand():
    x = np.arange(3.0)

    def grids(a):
        return (
            a + np.mgrid[0:3],
            np.ogrid[0:2, 0:3][1] * a,
            np.r_[0:3] + a,
            np.c_[x, x] * a[:, None],
        )

    got = numbax.jit(grids)(x)
    want = (x + np.arange(3), np.arange(3)[None] * x, np.arange(3) + x, np.c_[x, x] * x[:, None])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(TracerArrayConversionError):
        numbax.jit(lambda a: np.r_[a, a])(x)
    np.testing.assert_array_equal(numbax.jit(lambda a: np.concatenate([a, a]))(x), np.r_[x, x])


def test_row_stack_and_the_deprecated_cross_of_2_vectors_behave_as_numpy():
    a = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(numbax.jit(lambda v: np.vstack([v, v]))(a), np.vstack([a, a]))
    np.testing.assert_array_equal(numbax.numpy.row_stack([a, a]), np.vstack([a, a]))
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        got = numbax.jit(lambda v: np.cross(v, v[::-1]))(a)
    np.testing.assert_array_equal(got, a[:, 0] * a[::-1, 1] - a[:, 1] * a[::-1, 0])


def test_numbax_numpy_creators_take_numpys_arguments():
    np.testing.assert_array_equal(
        xnp.eye(3, 4, k=1, dtype=np.int32), np.eye(3, 4, k=1, dtype=np.int32)
    )
    np.testing.assert_array_equal(xnp.tri(3, 5, -1), np.tri(3, 5, -1))
    np.testing.assert_array_equal(xnp.indices((2, 3)), np.indices((2, 3)))
    with pytest.raises(UnsupportedFunctionError, match="like="):
        xnp.tri(3, like=np.ones(1))
