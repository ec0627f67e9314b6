"""Products of few rows above BLAS's small-matrix bound, run as BLAS calls of column chunks
within it (``gemm.SMALL_ROWS``, ``calibration.SMALL_BITS``): the values against NumPy in
float64 on both sides of every bound, with the cell's bits set and cleared, and the calls
BLAS receives, counted by a stand-in linked under numbax's BLAS symbol."""

from __future__ import annotations

import ctypes
import itertools

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba.extending import get_cython_function_address
from test_differential_fuzz import _write_into_results

import numbax
from numbax.backends.cpu import calibration
from numbax.config import config

CHUNKED = calibration.SMALL_DEFAULT  # BLAS's products, small ones in chunks


@pytest.fixture
def cell(monkeypatch):
    """Nothing measured again here; the cell's bits are the test's."""
    monkeypatch.setattr(calibration, "_settled", True)
    monkeypatch.setattr(calibration.PRODUCTS_CELL, "value", calibration.PRODUCTS_CELL.value)
    return calibration.PRODUCTS_CELL


SHAPES = [  # rows, columns, depth: chunked or not, by which bound
    (16, 512, 128),  # an LSTM cell's product: two chunks of 256
    (16, 600, 120),  # uneven: 304 and 296
    (17, 512, 128),  # one row too many
    (16, 488, 128),  # 999,424 multiplies: within the bound, one call
    (16, 489, 128),  # just over it: two chunks
    (3, 3000, 333),  # ten chunks, the last short
    (16, 64, 2000),  # a chunk would be narrower than SMALL_LEAST: one call
    (16, 128, 512),  # read transposed: chunks of 64 (SMALL_CELLS)
    (16, 2200, 31),  # read transposed, depth under SMALL_DEPTH_T: one call
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, columns, depth", SHAPES)
def test_chunked_products_equal_numpy(cell, rows, columns, depth, dtype):
    rng = np.random.default_rng(rows * columns + depth)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    for a_t, b_t in itertools.product((False, True), repeat=2):
        a = rng.standard_normal((depth, rows) if a_t else (rows, depth)).astype(dtype)
        b = rng.standard_normal((columns, depth) if b_t else (depth, columns)).astype(dtype)
        op_a, op_b = (a.T if a_t else a), (b.T if b_t else b)
        expected = op_a.astype(np.float64) @ op_b.astype(np.float64)
        product = numbax.jit(
            lambda a, b, a_t=a_t, b_t=b_t: (a.T if a_t else a) @ (b.T if b_t else b),
            tiered=False,
        )
        for bits in (0, CHUNKED):
            cell.value = bits
            result = product(a, b)
            scale = np.sqrt(depth) * tolerance
            np.testing.assert_allclose(result, expected, rtol=tolerance, atol=scale)


def test_chunked_products_of_a_batch_and_of_a_split(cell, monkeypatch):
    """Each matrix of a batch, at its offset, and each block of a product split over the
    threads (rows of ``c`` wider than the block's columns) is chunked where it lies."""
    monkeypatch.setattr(calibration.CELL, "value", 0)  # every product that may split does
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 16, 128)).astype(np.float32)
    w = rng.standard_normal((5, 128, 600)).astype(np.float32)
    batched = numbax.jit(lambda x, w: x @ w, tiered=False)
    # 2^24 flops, blocks of columns (16 rows cannot be split): 5 chunks of 416 in each.
    wide = rng.standard_normal((16, 128)).astype(np.float32)
    tall = rng.standard_normal((128, 4096)).astype(np.float32)
    split = numbax.jit(lambda a, b: a @ b, tiered=False)
    for bits in (0, CHUNKED):
        cell.value = bits
        np.testing.assert_allclose(batched(x, w), x.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(
            split(wide, tall), wide.astype(np.float64) @ tall, rtol=1e-4, atol=1e-3
        )


# sgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), all by reference.
_SGEMM = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 13)
_REAL_SGEMM = _SGEMM(get_cython_function_address("scipy.linalg.cython_blas", "sgemm"))
CALLS: list[int] = []  # the columns of each call (BLAS's m: numbax multiplies C^T)


@_SGEMM
def _counting_sgemm(*arguments):
    CALLS.append(ctypes.c_int.from_address(arguments[2]).value)
    _REAL_SGEMM(*arguments)


@pytest.mark.parametrize(
    "rows, columns, depth, b_t, expected",
    [
        (16, 632, 112, False, [320, 312]),  # 10^6 // (16 * 112) = 558 -> 544 wide at most
        (17, 632, 112, False, [632]),
        (16, 128, 520, True, [64, 64]),  # at most SMALL_CELLS: 1200 // 16 = 75 -> 64
        (16, 632, 112, True, [64] * 9 + [56]),
    ],
)
def test_blas_receives_the_chunks(cell, monkeypatch, tmp_path, rows, columns, depth, b_t, expected):
    """The product's BLAS calls, counted by a stand-in for ``numbax_sgemm`` that passes
    them on: bound while a fresh program (an empty cache) is compiled and run."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    rng = np.random.default_rng(1)
    a = rng.standard_normal((rows, depth)).astype(np.float32)
    b = rng.standard_normal((columns, depth) if b_t else (depth, columns)).astype(np.float32)
    real = ctypes.cast(_REAL_SGEMM, ctypes.c_void_p).value  # as gemm.py links it
    llvm.add_symbol("numbax_sgemm", ctypes.cast(_counting_sgemm, ctypes.c_void_p).value)
    try:
        product = numbax.jit(lambda a, b: a @ (b.T if b_t else b), tiered=False)
        for bits, calls in ((0, [columns]), (CHUNKED, expected)):
            cell.value = bits
            CALLS.clear()
            result = product(a, b)
            assert CALLS == calls
            expected_values = a.astype(np.float64) @ (b.T if b_t else b)
            np.testing.assert_allclose(result, expected_values, rtol=1e-4, atol=1e-3)
    finally:
        llvm.add_symbol("numbax_sgemm", real)


@pytest.mark.parametrize("rows, columns, depth", [(16, 600, 0), (0, 600, 120), (16, 0, 120)])
def test_empty_products_divide_by_nothing(cell, rows, columns, depth):
    """The chunks' arithmetic runs for every product, chunked or not: a product of no
    rows, columns or depth gives NumPy's zeros (or nothing), not a division by zero."""
    cell.value = CHUNKED
    a = np.ones((rows, depth), np.float32)
    b = np.ones((depth, columns), np.float32)
    result = numbax.jit(lambda a, b: a @ b, tiered=False)(a, b)
    np.testing.assert_array_equal(result, a @ b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_products_on_the_users_path(cell, dtype):
    """An LSTM cell's product and its gradient (16 x 128 @ 128 x 512, and 16 x 512 @
    (128 x 512)^T, both chunked) under ``jit(value_and_grad)``, tiered and not, against
    the closed-form gradient in float64; every result written into after each call, the
    arguments unchanged (as the differential fuzzer calls its programs)."""
    cell.value = CHUNKED
    rng = np.random.default_rng(7)
    h = (rng.standard_normal((16, 128)) * 0.1).astype(dtype)
    w = (rng.standard_normal((128, 512)) * 0.1).astype(dtype)

    def loss(h, w):
        return numbax.numpy.sum(numbax.numpy.tanh(h @ w))

    z = np.tanh(h.astype(np.float64) @ w)
    dz = 1.0 - z * z
    want = (z.sum(), (dz @ w.T.astype(np.float64), h.T.astype(np.float64) @ dz))
    tolerance = 1e-4 if dtype == np.float32 else 1e-12

    def check(results):
        value, (grad_h, grad_w) = results
        np.testing.assert_allclose(value, want[0], rtol=tolerance, atol=tolerance)
        np.testing.assert_allclose(grad_h, want[1][0], rtol=tolerance, atol=tolerance)
        np.testing.assert_allclose(grad_w, want[1][1], rtol=tolerance, atol=tolerance)

    before = [h.copy(), w.copy()]
    for tiered in (True, False):
        step = numbax.jit(numbax.value_and_grad(loss, argnums=(0, 1)), tiered=tiered)
        for call in range(3 if tiered else 2):
            if call == 2:
                step.wait_compiled()  # the compiled program answers too
            results = step(h, w)
            check(results)
            _write_into_results(results, [h, w])
            np.testing.assert_array_equal(h, before[0])
            np.testing.assert_array_equal(w, before[1])
