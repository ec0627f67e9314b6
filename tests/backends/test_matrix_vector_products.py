"""A product of one column or one row runs as BLAS's gemv (``gemm.gemm``): every
transposition of either operand, batched, strided windows, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import numbax

rng = np.random.default_rng(7)

CASES = {
    "matrix_vector": (lambda a, v: a @ v, [(40, 30), (30,)]),
    "matrix_column": (lambda a, v: a @ v, [(40, 30), (30, 1)]),
    "transposed_matrix_vector": (lambda a, v: a.T @ v, [(30, 40), (30,)]),
    "vector_matrix": (lambda v, b: v @ b, [(30,), (30, 20)]),
    "row_matrix": (lambda v, b: v @ b, [(1, 30), (30, 20)]),
    "row_transposed_matrix": (lambda v, b: v @ b.T, [(1, 30), (20, 30)]),
    "column_of_transposed": (lambda a, v: a @ v.T, [(40, 30), (1, 30)]),
    "transposed_row": (lambda v, b: v.T @ b, [(30, 1), (30, 20)]),
    "dot": (lambda u, v: u @ v, [(30,), (30,)]),
    "batched_columns": (lambda a, v: a @ v, [(5, 40, 30), (5, 30, 1)]),
    "window_columns": (lambda a, v: a[:, 3:33] @ v[::2], [(40, 36), (60,)]),
    "large_matrix_vector": (lambda a, v: a @ v, [(3000, 2000), (2000,)]),
    "large_vector_matrix": (lambda v, b: v @ b, [(2000,), (2000, 3000)]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", CASES)
def test_one_column_or_one_row_products_are_numpys(name, dtype):
    fn, shapes = CASES[name]
    args = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    got = numbax.jit(fn, backend="cpu", tiered=False)(*args)
    want = fn(*[a.astype(np.float64) for a in args])
    rtol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.sqrt(shapes[0][-1]))
    assert got.dtype == dtype
