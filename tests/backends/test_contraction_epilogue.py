"""A contraction's epilogue runs inside the blocks of rows of its product, where a large
product is written inline in blocks of rows because it is not a unit of its own (its
operands are copied first; a product unit runs in blocks of its own and its epilogue is
the next unit: ``test_kernel_units.py``, ``test_threaded_blas.py``).

With the thresholds lowered so that every float product is large (run on all threads,
with blocks of rows as small as one), each program below is compiled by the cpu backend
and checked against the interpreter; the generated source shows where the epilogue went.
Epilogues that read the product only at the point they write, over the product's rows
outermost, run in the product's ``prange`` (one parallel region); the others (a batched
product, a product read broadcast to a larger shape) run after it, as before.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import calibration, contraction


@pytest.fixture
def blocks(monkeypatch):
    monkeypatch.setattr(contraction, "PARALLEL_FLOPS", 0)
    monkeypatch.setattr(contraction, "SPLITTABLE_FLOPS", 0)
    monkeypatch.setattr(calibration.CELL, "value", 0)  # split at run time too
    monkeypatch.setattr(contraction, "MIN_ROWS", 1)
    monkeypatch.setattr(contraction, "into_array", lambda *avals: False)  # inline
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 1 << 40)  # no prange but the products'


def _programs(x, w, b, y3, v):
    relu = np.maximum(x @ w + b, 0.0)  # bias and relu, rows and columns merged
    update = w - 0.1 * (x.T @ relu)  # a transposed lhs (copied contiguous for row blocks)
    two_masks = (x @ w > 0.0, x @ w == 0.0)  # boolean outputs
    leading = np.tanh(np.einsum("abk,kc->abc", y3, v))  # two row dims and a column dim
    transposed = (x @ w).T + 1.0  # reads the product transposed: after the blocks
    batched = np.einsum("bij,bjk->bik", y3, y3.transpose(0, 2, 1)) * 2.0  # a batch
    column = x @ w[:, 0]
    outer = column[:, None] * column[None, :] + 1.0  # reads the product broadcast
    return relu, update, *two_masks, leading, transposed, batched, outer


@pytest.mark.parametrize("rows", [7])  # an uneven last block
def test_epilogues_in_row_blocks_match_the_interpreter(blocks, rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 5)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    y3 = rng.standard_normal((3, rows, 4)).astype(np.float32)
    v = rng.standard_normal((4, 5)).astype(np.float32)
    args = (x, w, b, y3, v)
    want = numbax.jit(_programs, backend="interpret")(*args)
    jitted = numbax.jit(_programs, backend="cpu")
    got = jitted(*args)
    for g, e in zip(got, want, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
    source = jitted.lower(*args).source()
    # Inside a block of rows (a loop over the rows of the block): the epilogues of the
    # relu, the update, the two masks (with the relu: one product), tanh and the
    # transposed product (fusion computes it transposed); not the batch's nor the outer
    # product's.
    assert source.count("in range(low_") == 4, source
