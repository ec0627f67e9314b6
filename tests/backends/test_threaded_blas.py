"""A large matrix product runs in blocks on the call's threads, one single-threaded BLAS
call per block in one ``prange`` (``gemm.blocked_gemm``, one compiled function that every
large product unit calls), never on OpenBLAS's own threads (they spin after a call, and
where the cores are busy a two-thread product waited for the scheduler's next time
slice): blocks of rows, or of the depth where that reads less
(``contraction.split_by_depth``: a weight gradient), each block's sum then added in block
order. Operands BLAS cannot read where they lie are copied, then split into blocks of
rows in the launcher. Values against the interpreter, or float64 NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import blas, contraction


@pytest.fixture
def large(monkeypatch):
    """Every float product counts as large, with blocks of one row or depth element."""
    monkeypatch.setattr(contraction, "PARALLEL_FLOPS", 0)
    monkeypatch.setattr(contraction, "MIN_ROWS", 1)
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 1 << 40)  # no prange but the products'


def _update(x, w, b):
    hidden = np.maximum(x @ w + b, 0.0)  # an epilogue: the product unit's next unit
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


def _product_units(source: str) -> list[str]:
    return re.findall(r"# --- kernel product_.*?(?=# --- kernel|\Z)", source, re.S)


def test_large_products_are_units_in_blocks_on_the_calls_threads(large):
    source = _check(_inputs())
    units = _product_units(source)
    assert len(units) == 2, source  # ``x @ w`` twice is one
    for unit in units:  # no parallel loop of its own to compile
        assert "PARALLEL = False" in unit and unit.count("nbx_gemm.blocked_gemm(") == 1, unit
        assert "nbx_threads.numba_threads(), 1)" in unit, unit  # the call's threads, MIN_ROWS
    assert "swap_threads" not in source and "threaded_dot" not in source, source
    assert "np.dot(" not in source and "ascontiguousarray" not in source, source


def test_the_product_path_does_not_depend_on_openblas_thread_controls(large, monkeypatch):
    with_controls = _check(_inputs())
    monkeypatch.setattr(blas, "AVAILABLE", False)
    assert _check(_inputs()) == with_controls


@pytest.mark.parametrize("depth", [600, 601])  # blocks of the depth, the last one shorter
def test_a_weight_gradient_is_split_by_its_depth(large, depth):
    """``x.T @ g`` over a long batch (9 x depth @ depth x 4) sums each block's depth into
    an array of its own; ``x @ w`` (depth x 9 @ 9 x 4) is split by rows."""
    rng = np.random.default_rng(depth)
    x = rng.standard_normal((depth, 9)).astype(np.float32)
    g = rng.standard_normal((depth, 4)).astype(np.float32)
    w = rng.standard_normal((9, 4)).astype(np.float32)
    jitted = numbax.jit(lambda x, g, w: (x.T @ g, x @ w))
    gradient, forward = jitted(x, g, w)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(gradient, wide.T @ g, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(forward, wide @ w, rtol=1e-4, atol=1e-4)
    units = _product_units(jitted.lower(x, g, w).source())
    (by_depth,) = [unit for unit in units if f"(9, 4, {depth}), (9, 4), True," in unit]
    (by_rows,) = [unit for unit in units if f"({depth}, 4, 9), (9, 4), False," in unit]
    assert "blocked_gemm" in by_depth and "blocked_gemm" in by_rows


def test_split_by_depth_where_the_blocks_read_less():
    assert contraction.split_by_depth(72, 16, 18432, 2)  # a CNN's weight gradient
    assert not contraction.split_by_depth(18432, 16, 72, 2)  # its forward product
    assert not contraction.split_by_depth(784, 512, 256, 2)  # an MLP's x.T @ g
    assert not contraction.split_by_depth(4, 4, 40, 2)  # cheaper, but too short to split


def test_a_large_product_of_operands_blas_cannot_read_in_place_is_split_into_row_blocks(large):
    def product(x, y):  # x's contraction split by its rows: copied, then row blocks
        return np.einsum("kij,kjl->il", x, y)

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 4, 5))
    source = numbax.jit(product).lower(x, y).source()
    assert "ascontiguousarray" in source and re.search(r"in prange\(blocks_\d+\):", source)
    assert "threaded_dot" not in source, source
    np.testing.assert_allclose(numbax.jit(product)(x, y), product(x, y), rtol=1e-12)
