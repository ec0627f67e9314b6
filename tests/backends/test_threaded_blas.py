"""A large matrix product runs in blocks on the call's threads, one single-threaded BLAS
call per block in one ``prange`` (``gemm.blocked_gemm``, one compiled function that every
large product unit calls), never on OpenBLAS's own threads (they spin after a call, and
where the cores are busy a two-thread product waited for the scheduler's next time
slice): blocks of rows, of columns, or of the depth, whichever reads least
(``contraction.split_of``: a weight gradient by its depth, each block's sum then added in
block order). Operands BLAS cannot read where they lie are copied, then split into blocks of
rows in the launcher. Values against the interpreter, or float64 NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import blas, calibration, contraction


@pytest.fixture
def large(monkeypatch):
    """Every float product counts as large, with blocks of one row or depth element."""
    monkeypatch.setattr(contraction, "PARALLEL_FLOPS", 0)
    monkeypatch.setattr(contraction, "SPLITTABLE_FLOPS", 0)
    monkeypatch.setattr(calibration.CELL, "value", 0)  # split at run time too
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
    """The same code where numbax cannot set its BLAS's threads (not run here: SciPy's
    OpenBLAS would then run on its own threads inside each block)."""
    with_controls = _check(_inputs())
    monkeypatch.setattr(blas, "AVAILABLE", False)
    assert numbax.jit(_update, backend="cpu").lower(*_inputs()).source() == with_controls


@pytest.mark.parametrize("depth", [600, 601])  # blocks of the depth, the last one shorter
def test_a_product_is_split_by_rows_columns_or_depth(large, depth):
    """``x.T @ g`` over a long batch (9 x depth @ depth x 4) sums each block's depth into
    an array of its own; ``x @ w`` (depth x 9 @ 9 x 4) is split by rows; ``y @ v``
    (4 x 100 @ 100 x 80, few rows) by columns."""
    rng = np.random.default_rng(depth)
    x = rng.standard_normal((depth, 9)).astype(np.float32)
    g = rng.standard_normal((depth, 4)).astype(np.float32)
    w = rng.standard_normal((9, 4)).astype(np.float32)
    y = rng.standard_normal((4, 100)).astype(np.float32)
    v = rng.standard_normal((100, 80)).astype(np.float32)
    jitted = numbax.jit(lambda x, g, w, y, v: (x.T @ g, x @ w, y @ v))
    gradient, forward, few_rows = jitted(x, g, w, y, v)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(gradient, wide.T @ g, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(forward, wide @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(few_rows, y.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)
    source = jitted.lower(x, g, w, y, v).source()
    rows, depth_, columns = contraction.ROWS, contraction.DEPTH, contraction.COLUMNS
    assert f"(9, 4, {depth}), (9, 4), {depth_}," in source, source
    assert f"({depth}, 4, 9), (9, 4), {rows}," in source, source
    assert f"(4, 80, 100), (100, 80), {columns}," in source, source


def test_split_of_where_the_blocks_read_least():
    split_of = contraction.split_of
    assert split_of(72, 16, 18432, 2) == contraction.DEPTH  # a CNN's weight gradient
    assert split_of(18432, 16, 72, 2) == contraction.ROWS  # its forward product
    assert split_of(64, 512, 784, 2) == contraction.COLUMNS  # an MLP's first layer, batch 64
    assert split_of(784, 512, 256, 2) == contraction.ROWS  # its x.T @ g, batch 256
    assert split_of(4, 4, 40, 2) == contraction.ROWS  # too small to split otherwise


def test_a_large_product_of_operands_blas_cannot_read_in_place_is_split_into_row_blocks(large):
    def product(x, y):  # x's contraction split by its rows: copied, then row blocks
        return np.einsum("kij,kjl->il", x, y)

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 4, 5))
    source = numbax.jit(product).lower(x, y).source()
    assert "ascontiguousarray" in source and re.search(r"in prange\(blocks_\d+\):", source)
    assert "threaded_dot" not in source, source
    np.testing.assert_allclose(numbax.jit(product)(x, y), product(x, y), rtol=1e-12)
