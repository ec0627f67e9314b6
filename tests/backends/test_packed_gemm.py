"""numbax's packed float32 product (``backends/cpu/packed_gemm.py``) against NumPy in
float64: every way BLAS may read its operands (transposed or not, leading dimensions
wider than a row, an output row wider than the product), sizes at and across each block
edge (the tile's 12 rows and 32 columns, the depth's 384, the 192 rows packed at a time),
NaN and infinity where they lie, and the products of compiled programs that call it."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp
from numbax.backends.cpu import calibration, packed_gemm

pytestmark = pytest.mark.skipif(
    not packed_gemm.available(), reason="the packed product runs on AVX-512 processors only"
)


@pytest.fixture(autouse=True)
def _packed_products_on(monkeypatch):
    """Compiled programs call the packed product of both types, whichever product was
    measured faster on this machine (``calibration.PRODUCTS_CELL``), which nothing measures
    again here."""
    monkeypatch.setattr(calibration, "_settled", True)
    monkeypatch.setattr(calibration.PRODUCTS_CELL, "value", calibration.PACKED_DEFAULT)


SHAPES = [  # (rows, depth, columns)
    (12, 1, 32),
    (1, 5, 40),
    (13, 300, 33),
    (37, 45, 70),
    (64, 784, 512),
    (193, 257, 95),
    (385, 513, 31),
    (24, 256, 64),
    (50, 385, 64),
    (30, 769, 40),
]


def _letter(dtype) -> str:
    return "s" if np.dtype(dtype) == np.float32 else "d"


def _pointer(array):
    real = ctypes.c_float if array.dtype == np.float32 else ctypes.c_double
    return array.ctypes.data_as(ctypes.POINTER(real))


def _product(a, b, m, n, k, a_t, b_t, c_width):
    """``op(a) @ op(b)`` by the packed product of their dtype into rows ``c_width``
    elements apart."""
    lda, ldb = a.shape[1], b.shape[1]
    c = np.full((m, c_width), 7.0, a.dtype)  # a product column must not spill past n
    a_row, a_step = (1, lda) if a_t else (lda, 1)
    b_step, b_column = (1, ldb) if b_t else (ldb, 1)
    packed_gemm.compiled()[_letter(a.dtype)].ctypes(
        _pointer(a), _pointer(b), _pointer(c), m, n, k, a_row, a_step, b_step, b_column, c_width
    )
    return c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_packed_product_equals_numpy(shape, a_t, b_t, dtype):
    m, k, n = shape
    rng = np.random.default_rng(m * 1000 + k + n)
    # Leading dimensions wider than the matrix: BLAS reads a window of a wider array.
    a_full = rng.standard_normal((k, m + 3) if a_t else (m, k + 5)).astype(dtype)
    b_full = rng.standard_normal((n, k + 2) if b_t else (k, n + 7)).astype(dtype)
    op_a = a_full[:k, :m].T if a_t else a_full[:m, :k]
    op_b = b_full[:n, :k].T if b_t else b_full[:k, :n]
    c = _product(a_full, b_full, m, n, k, a_t, b_t, n + 4)
    expected = op_a.astype(np.longdouble) @ op_b.astype(np.longdouble)
    scale = np.abs(op_a).astype(np.longdouble) @ np.abs(op_b).astype(np.longdouble)
    assert np.all(np.abs(c[:, :n] - expected) <= 4 * k * np.finfo(dtype).eps * scale + 1e-300)
    assert np.all(c[:, n:] == 7.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_infinity_reach_only_their_row_and_column(dtype):
    m, k, n = 30, 500, 70
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    a[5, 400] = np.nan  # in the second block of the depth (``packed_gemm.KC``)
    b[7, 65] = np.inf  # in the last, partial panel of columns
    c = _product(a, b, m, n, k, False, False, n)
    with np.errstate(invalid="ignore"):
        expected = a.astype(np.float64) @ b.astype(np.float64)
    assert np.array_equal(np.isnan(c), np.isnan(expected))
    assert np.array_equal(np.isinf(c), np.isinf(expected))
    finite = np.isfinite(expected)
    assert np.allclose(c[finite], expected[finite], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("tiered", [True, False])
def test_compiled_training_products_use_it_and_equal_numpy(tiered):
    """A dense layer's forward and weight-gradient products, float32, large enough for the
    packed product and, at 256 rows, for blocks on every thread (``gemm.blocked_gemm``)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 784), dtype=np.float32)
    w = rng.standard_normal((784, 96), dtype=np.float32)

    def layer(x, w):
        h = xnp.maximum(x @ w, 0.0)
        return h, x.T @ h

    f = numbax.jit(layer, tiered=tiered)
    for _ in range(2):
        h, g = f(x, w)
        expected_h = np.maximum(x.astype(np.float64) @ w, 0.0)
        np.testing.assert_allclose(h, expected_h, rtol=2e-4, atol=2e-3)
        np.testing.assert_allclose(g, x.T.astype(np.float64) @ expected_h, rtol=2e-4, atol=5e-2)
        h[...] = 0.0  # written into after the call: the next call's results are its own


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_unit_calls_the_packed_product(dtype):
    """A product of one thread's size calls ``numbax_sgemm_packed`` (``dgemm`` for
    float64) from its unit (a large one calls it from ``gemm.blocked_gemm``'s blocks)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 300)).astype(dtype)
    w = rng.standard_normal((300, 64)).astype(dtype)
    jitted = numbax.jit(lambda x, w: x @ w, tiered=False)
    expected = x.astype(np.longdouble) @ w.astype(np.longdouble)
    np.testing.assert_allclose(jitted(x, w), expected, rtol=1e-4, atol=1e-3)
    assert packed_gemm.SYMBOLS[_letter(dtype)] in jitted.lower(x, w).compile().executable.llvm_ir()
