"""The cpu backend's radix sort (``backends/cpu/sorting.py``) and its LAPACK LU and
triangular solve (``backends/cpu/lapack.py``): against NumPy and the reference
implementations of ``ir/linalg.py``, on rows long enough to take the radix path and
matrices large enough for LAPACK's blocked code."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import lapack, sorting
from numbax.ir import linalg as ir_linalg

LONG = sorting.RADIX_MIN + 17  # an odd length above the radix threshold


def _awkward_floats(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::11] = np.nan
    flat[5::13] = -np.nan
    flat[1::17] = -0.0
    flat[2::17] = 0.0
    flat[3], flat[4] = np.inf, -np.inf
    flat[6::19] = np.finfo(dtype).smallest_subnormal
    flat[7::19] = -np.finfo(dtype).max
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_radix_sort_of_floats_is_numpys_sort(dtype, rng):
    x = _awkward_floats(rng, (3, LONG), dtype)
    got = numbax.jit(np.sort, backend="cpu")(x)
    np.testing.assert_array_equal(got, np.sort(x))
    # NaNs keep their bits (here both signs), as NumPy's sort moves them.
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    for got_row, row in zip(got, x, strict=True):
        np.testing.assert_array_equal(
            np.sort(got_row[np.isnan(got_row)].view(bits)), np.sort(row[np.isnan(row)].view(bits))
        )


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_radix_sort_of_integers_is_numpys_sort(dtype, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (2, LONG), dtype=dtype, endpoint=True)
    x[0, :3] = info.min, info.max, 0
    np.testing.assert_array_equal(numbax.jit(np.sort, backend="cpu")(x), np.sort(x))


def test_radix_sort_of_equal_and_of_nan_rows(rng):
    equal = np.full(LONG, 2.5)  # every digit the same: every pass skipped
    nans = np.full(LONG, np.nan)  # no keys at all
    sort = numbax.jit(np.sort, backend="cpu")
    np.testing.assert_array_equal(sort(equal), equal)
    assert np.isnan(sort(nans)).all()


def test_the_program_calls_the_radix_sort_for_long_rows():
    x = np.zeros(LONG)
    source = numbax.jit(np.sort, backend="cpu").lower(x).source()
    assert "nbx_sorting.sort_rows(" in source


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 130])
def test_lapack_lu_is_the_reference_lu(dtype, n, rng):
    a = rng.standard_normal((2, n, n)).astype(dtype)
    if n > 1:
        a[1, :, 0] = 0.0  # singular: a zero pivot, no error
    packed = np.empty_like(a)
    pivots, permutation = np.empty((2, n), np.int32), np.empty((2, n), np.int32)
    lapack.lu(a, packed, pivots, permutation)
    want_packed, want_pivots, want_permutation = ir_linalg._lu(a)
    tolerance = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(packed, want_packed, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(pivots, want_pivots)
    np.testing.assert_array_equal(permutation, want_permutation)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_trsm_is_the_reference_triangular_solve(dtype, lower, transpose_a, unit_diagonal, rng):
    n, k = 70, 3
    a = (rng.standard_normal((2, n, n)) / n + 2 * np.eye(n)).astype(dtype)
    b = rng.standard_normal((2, n, k)).astype(dtype)
    x = np.empty_like(b)
    flags = {"lower": lower, "transpose_a": transpose_a, "unit_diagonal": unit_diagonal}
    lapack.triangular_solve(a, b, x, *flags.values())
    want = ir_linalg._triangular_solve(a, b, **flags)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(x, want, rtol=tolerance, atol=tolerance)


def test_solve_of_a_large_system_is_numpys(rng):
    n = 300
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, 4))
    got = numbax.jit(np.linalg.solve, backend="cpu")(a, b)
    np.testing.assert_allclose(got, np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)
