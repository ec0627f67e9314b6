"""A large matrix product is one BLAS call on OpenBLAS's threads: a product unit that
sets OpenBLAS's thread count for its calls and back after them (``blas.swap_threads``),
or, for operands BLAS cannot read where they lie, ``blas.threaded_dot`` in the launcher;
where the BLAS has no thread controls, the product is split into blocks of rows. Values
against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import blas, contraction


@pytest.fixture
def large(monkeypatch):
    """Every float product counts as large, with blocks of one row."""
    monkeypatch.setattr(contraction, "PARALLEL_FLOPS", 0)
    monkeypatch.setattr(contraction, "MIN_ROWS", 1)
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 1 << 40)  # no prange but the products'


def _update(x, w, b):
    hidden = np.maximum(x @ w + b, 0.0)  # an epilogue in the product's rows
    return w - 0.1 * (x.T @ hidden), x @ w  # a transposed lhs; the first product again


def _inputs():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((9, 5)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    return x, w, rng.standard_normal(6).astype(np.float32)


def _check(args):
    want = numbax.jit(_update, backend="interpret")(*args)
    jitted = numbax.jit(_update, backend="cpu")
    for got, expected in zip(jitted(*args), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)
    return jitted.lower(*args).source()


@pytest.mark.skipif(not blas.AVAILABLE, reason="SciPy's BLAS is not an OpenBLAS with threads")
def test_large_products_are_one_call_on_openblas_threads(large):
    source = _check(_inputs())
    # Two distinct products (``x @ w`` twice is one), each a unit between swaps.
    assert source.count("= nbx_blas.swap_threads(nbx_threads.numba_threads())") == 2, source
    assert source.count("nbx_gemm.gemm(") == 2 and "threaded_dot" not in source, source
    assert "np.dot(" not in source and "ascontiguousarray" not in source, source


@pytest.mark.skipif(not blas.AVAILABLE, reason="SciPy's BLAS is not an OpenBLAS with threads")
def test_a_large_product_of_operands_blas_cannot_read_in_place_is_threaded_dot(large):
    def product(x, y):  # x's contraction split by its rows: copied, then one call
        return np.einsum("kij,kjl->il", x, y)

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 4, 5))
    source = numbax.jit(product).lower(x, y).source()
    assert "nbx_blas.threaded_dot(" in source and "ascontiguousarray" in source, source
    np.testing.assert_allclose(numbax.jit(product)(x, y), product(x, y), rtol=1e-12)


def test_without_thread_controls_products_are_split_into_row_blocks(large, monkeypatch):
    monkeypatch.setattr(blas, "AVAILABLE", False)
    source = _check(_inputs())
    assert "threaded_dot" not in source
    assert source.count("np.dot(") == 2 and "ascontiguousarray" in source, source


@pytest.mark.skipif(not blas.AVAILABLE, reason="SciPy's BLAS is not an OpenBLAS with threads")
def test_the_thread_count_is_set_back_after_the_call():
    import ctypes

    get = ctypes.CFUNCTYPE(ctypes.c_int)(blas._CONTROLS["get"])
    before = get()
    x, w, _ = _inputs()
    out = np.empty((9, 6), np.float32)
    blas.threaded_dot(x, w, out, 2)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-5)
    assert get() == before
