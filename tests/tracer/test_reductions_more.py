"""Reductions and scans at their edges: where=/initial=, empty slices, all-NaN slices,
out=, NumPy's result dtypes, and exact derivatives at zeros and NaNs. The corpus
(``corpus_statistics.py``) covers the values on every backend, under grad and vmap."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from tracer_util import assert_error, jit

import numbax
from numbax import numpy as xnp

X = np.array([[1.0, -2.0, 3.0, 0.5], [4.0, 0.0, -1.0, 2.0], [-3.0, 5.0, 2.5, -0.5]])


# --------------------------------------------------------------- empty slices, where=


@pytest.mark.parametrize(
    "call",
    [
        lambda x: np.max(x[:0], axis=0),
        lambda x: np.min(x[:, :0]),
        lambda x: np.nanmax(x[:0]),
        lambda x: np.ptp(x[:0], axis=0),
    ],
    ids=["max", "min", "nanmax", "ptp"],
)
def test_an_empty_max_names_initial(call):
    assert_error(numbax.ShapeError, jit(call), X, says=["empty", "initial="])
    with pytest.raises(ValueError):
        call(X)  # NumPy refuses too


def test_initial_gives_an_empty_max_its_value():
    fn = jit(lambda x: (np.max(x[:0], axis=0, initial=-7.0), np.nanmin(x[:, :0], 1, initial=3)))
    high, low = fn(X)
    np.testing.assert_array_equal(high, np.full(4, -7.0))
    np.testing.assert_array_equal(low, np.full(3, 3.0))


def test_max_with_a_mask_needs_initial_as_in_numpy():
    call = jit(lambda x: np.max(x, where=x > 0))
    assert_error(numbax.ShapeError, call, X, says=["where=", "initial="])
    with pytest.raises(ValueError, match="initial"):
        np.max(X, where=X > 0)
    # where=True masks nothing, so NumPy needs no initial there either.
    assert jit(lambda x: np.max(x, where=True))(X) == np.max(X, where=True)


def test_a_mask_that_selects_nothing_gives_the_identity():
    nothing = np.zeros_like(X, bool)
    out = jit(
        lambda x: (
            np.sum(x, axis=0, where=nothing),
            np.prod(x, axis=1, where=nothing),
            np.any(x, where=nothing),
            np.all(x, axis=0, where=nothing),
            np.max(x, axis=1, where=nothing, initial=-1.5),
        )
    )(X)
    want = (np.zeros(4), np.ones(3), False, np.ones(4, bool), np.full(3, -1.5))
    for got, expected in zip(out, want, strict=True):
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == np.asarray(expected).dtype


def test_a_mask_of_the_wrong_dtype_or_shape_is_refused():
    assert_error(numbax.NumbaxTypeError, jit(lambda x: np.sum(x, where=x)), X, says=["bool"])
    rows = np.ones((3, 1, 1), bool)
    assert_error(
        numbax.ShapeError, jit(lambda x: np.sum(x, where=rows)), X, says=["(3, 1, 1)", "(3, 4)"]
    )
    assert_error(
        numbax.ShapeError,
        jit(lambda x: np.sum(x, initial=np.ones(2))),
        X,
        says=["initial=", "scalar"],
    )


def test_a_traced_initial_and_mask():
    fn = jit(lambda x, start: np.sum(x, axis=1, where=x > start, initial=start))
    np.testing.assert_allclose(fn(X, 0.5), np.sum(X, axis=1, where=X > 0.5, initial=0.5))


def test_initial_is_cast_to_the_reduction_dtype():
    ints = X.astype(np.int64)
    got = jit(lambda x: (np.sum(x, initial=2.5), np.max(x, initial=9.9)))(ints)
    assert got == (np.sum(ints, initial=2.5), np.max(ints, initial=9.9))
    assert [g.dtype for g in got] == [np.int64, np.int64]


# --------------------------------------------------------------- NumPy's numbers


def test_var_with_more_ddof_than_entries_is_inf_as_in_numpy():
    # The degrees of freedom clip at 0 (NumPy's rule); dividing by a negative count gave
    # a negative variance before.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.var(X, axis=0, ddof=5), np.std(X, ddof=20)
    got = jit(lambda x: (np.var(x, axis=0, ddof=5), np.std(x, ddof=20)))(X)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == np.inf


def test_mean_with_an_integer_dtype_truncates_as_in_numpy():
    ints = np.array([[1, 2], [-2, -1], [3, 3]])
    got = jit(lambda x: (np.mean(x, dtype=np.int64), np.mean(x, axis=1, dtype=np.int32)))(ints)
    want = np.mean(ints, dtype=np.int64), np.mean(ints, axis=1, dtype=np.int32)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_ufunc_reduce_reduces_axis_0_by_default():
    got = jit(lambda x: (np.add.reduce(x), np.multiply.reduce(x), np.maximum.reduce(x)))(X)
    for g, w in zip(
        got, (np.add.reduce(X), np.multiply.reduce(X), np.maximum.reduce(X)), strict=True
    ):
        np.testing.assert_array_equal(g, w)


def test_ddof_and_correction_together_are_refused():
    assert_error(
        numbax.NumbaxTypeError, jit(lambda x: np.var(x, ddof=1, correction=1)), X, says=["ddof"]
    )


def test_nanvar_with_no_degree_of_freedom_left_is_nan_as_in_numpy():
    x = X.copy()
    x[0, :3] = np.nan  # one entry left in row 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanvar(x, axis=1, ddof=1), np.nanvar(x, axis=1, ddof=2)
    got = jit(lambda x: (np.nanvar(x, axis=1, ddof=1), np.nanvar(x, axis=1, ddof=2)))(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# --------------------------------------------------------------- NaN slices


def test_nanargmax_of_an_all_nan_slice_is_minus_one_like_jax():
    x = np.array([[np.nan, np.nan, np.nan], [np.nan, 2.0, 5.0], [-np.inf, np.nan, -np.inf]])
    got = jit(lambda x: (np.nanargmax(x, axis=1), np.nanargmin(x, axis=1)))(x)
    np.testing.assert_array_equal(got[0], [-1, 2, 0])
    np.testing.assert_array_equal(got[1], [-1, 1, 0])
    for row, g in zip(x[1:], got[0][1:], strict=True):
        assert g == np.nanargmax(row)  # NumPy where it does not raise
    with pytest.raises(ValueError, match="All-NaN"):
        np.nanargmax(x, axis=1)


def test_nanargmax_of_an_empty_axis_is_refused():
    assert_error(numbax.ShapeError, jit(lambda x: np.nanargmax(x[:0], axis=0)), X)


def test_nanmax_of_an_all_nan_slice_is_nan_or_initial():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    got = jit(lambda x: (np.nanmax(x, axis=1), np.nanmin(x, axis=1, initial=0.0)))(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(got[0], np.nanmax(x, axis=1))
    np.testing.assert_array_equal(got[1], np.nanmin(x, axis=1, initial=0.0))


# --------------------------------------------------------------- out=


_REDUCTIONS = [
    "sum", "prod", "max", "min", "mean", "var", "std", "any", "all", "argmax", "argmin",
    "cumsum", "cumprod", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
    "nanstd", "nanargmax", "nanargmin", "nancumsum", "nancumprod", "ptp",
]  # fmt: skip


@pytest.mark.parametrize("name", _REDUCTIONS)
def test_out_is_refused_by_name_in_numbax_numpy(name):
    fn = getattr(xnp, name)
    assert_error(
        numbax.UnsupportedFunctionError,
        jit(lambda x: fn(x, out=np.zeros(()))),
        X,
        says=[f"numbax.numpy.{name}", "out=", "returned value"],
    )


@pytest.mark.parametrize("name", ["sum", "nansum", "nanmax", "any", "cumprod", "ptp"])
def test_out_through_numpy_writes_the_result(name):
    reduce = getattr(np, name)
    axis = 0 if name != "cumprod" else 1

    def fn(x):
        out = np.zeros_like(reduce(X, axis=axis))
        reduce(x, axis=axis, out=out)
        return out

    np.testing.assert_array_equal(jit(fn)(X), fn(X))


def test_method_forms_of_any_all_and_cumprod():
    def fn(x):
        out = np.zeros(4, bool)
        (x > 0).any(axis=0, out=out)
        return x.any(), (x > -3).all(axis=1, keepdims=True), x.cumprod(axis=1), out

    for got, want in zip(jit(fn)(X), fn(X), strict=True):
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------- average, ptp


def test_average_weights_of_another_shape_need_an_axis():
    w = np.ones(4)
    assert_error(numbax.NumbaxTypeError, jit(lambda x: np.average(x, weights=w)), X, says=["axis="])
    assert_error(
        numbax.ShapeError,
        jit(lambda x: np.average(x, axis=0, weights=w)),
        X,
        says=["(4,)", "axis 0"],
    )


def test_average_returned_sums_the_weights():
    w = np.array([1.0, 2.0, 0.5, 3.0])
    avg, scale = jit(lambda x: np.average(x, axis=1, weights=w, returned=True))(X)
    want_avg, want_scale = np.average(X, axis=1, weights=w, returned=True)
    np.testing.assert_allclose(avg, want_avg, rtol=1e-15)
    np.testing.assert_array_equal(scale, want_scale)


def test_ptp_of_bools_is_refused_as_in_numpy():
    assert_error(numbax.NumbaxTypeError, jit(lambda x: np.ptp(x > 0)), X, says=["bool"])
    with pytest.raises(TypeError):
        np.ptp(X > 0)


# --------------------------------------------------------------- derivatives


def _cumprod_vjp_oracle(x, ct):
    """d(sum_j ct_j cumprod(x)_j)/dx_i = sum_{j>=i} ct_j prod_{k<=j, k!=i} x_k, by
    brute force: the product of the others, with no division."""
    n = len(x)
    return np.array(
        [
            sum(ct[j] * np.prod([x[k] for k in range(j + 1) if k != i]) for j in range(i, n))
            for i in range(n)
        ]  # fmt: skip
    )


@pytest.mark.parametrize(
    "x",
    [[2.0, 0.0, 3.0, -1.5, 4.0], [0.0, 0.0, 2.0, 3.0], [-1.0, 2.0, 0.0], [0.0], [3.0, -2.0, 0.5]],
    ids=["one-zero", "two-zeros", "last-zero", "lone-zero", "no-zero"],
)
def test_cumprod_gradient_is_exact_at_zeros(x):
    x = np.array(x)
    ct = np.arange(1.0, len(x) + 1)
    got = numbax.grad(lambda x: np.sum(np.cumprod(x) * ct))(x)
    np.testing.assert_allclose(got, _cumprod_vjp_oracle(x, ct), rtol=1e-14)
    tangent = np.linspace(-1.0, 1.0, len(x))
    _, forward = numbax.jvp(lambda x: np.sum(np.cumprod(x) * ct), (x,), (tangent,))
    np.testing.assert_allclose(forward, _cumprod_vjp_oracle(x, ct) @ tangent, rtol=1e-14)


def test_nan_reductions_have_a_zero_gradient_at_nans():
    x = X.copy()
    x[0, 1] = x[2, 3] = np.nan
    is_nan = np.isnan(x)
    for name in ["nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd"]:
        grad = numbax.grad(lambda x, name=name: np.sum(getattr(np, name)(x, axis=1)))(x)
        assert np.all(grad[is_nan] == 0), name
        assert np.all(np.isfinite(grad)), name
    np.testing.assert_array_equal(numbax.grad(np.nansum)(x), (~is_nan).astype(float))
    # The gradient of a max goes to its argmax; NaNs never win.
    want = np.zeros_like(x)
    want[np.arange(3), np.nanargmax(x, axis=1)] = 1
    np.testing.assert_array_equal(numbax.grad(lambda x: np.sum(np.nanmax(x, axis=1)))(x), want)


def test_nanprod_gradient_is_exact_with_zeros_and_nans():
    x = np.array([2.0, np.nan, 0.0, 3.0])
    got = numbax.grad(np.nanprod)(x)
    np.testing.assert_array_equal(got, [0.0, 0.0, 6.0, 0.0])


def test_second_derivative_of_cumprod():
    x = np.array([1.5, -2.0, 0.0, 0.5])
    hess = numbax.jacfwd(numbax.grad(lambda x: np.sum(np.cumprod(x))))(x)
    # d2/dx_i dx_m of sum_j prod_{k<=j} x_k: sum over j >= max(i, m) of the product of the
    # other entries up to j.
    want = np.zeros((4, 4))
    for i, m in itertools.product(range(4), range(4)):
        if i != m:
            want[i, m] = sum(
                np.prod([x[k] for k in range(j + 1) if k not in (i, m)])
                for j in range(max(i, m), 4)
            )
    np.testing.assert_allclose(hess, want, rtol=1e-14)
