"""The cpu backend's data-movement kernels (``backends/cpu/opaque.py``): ``slice``,
``dynamic_slice``, ``transpose``, ``concatenate`` and ``pad`` are loop nests into a new
array, checked against NumPy, and the elementwise kernel after them reads their results
through flat views (of planned buffers, the buffer itself: ``_ProgramWriter.flat_buffer``)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import numpy as xnp
from numbax.tracer import lax


def _program(x, y, i):
    c = xnp.concatenate([x, y, x], axis=1)
    moved = (
        x[1:3, ::2],
        xnp.transpose(x),
        c,
        xnp.concatenate([x, x[:1]], axis=0),
        xnp.pad(x, ((1, 2), (0, 3)), constant_values=7.0),
        lax.dynamic_slice(x, (i, 1), (2, 2)),
        xnp.transpose(xnp.reshape(c, (x.shape[0], 2, -1)), (2, 0, 1)),
    )
    return moved + (xnp.sin(c) * c[::-1],)  # elementwise reads of the kernels' results


def _expected(x, y, i):
    start = min(max(i, 0), x.shape[0] - 2)
    c = np.concatenate([x, y, x], axis=1)
    return (
        x[1:3, ::2],
        x.T,
        c,
        np.concatenate([x, x[:1]], axis=0),
        np.pad(x, ((1, 2), (0, 3)), constant_values=7.0),
        x[start : start + 2, 1:3],
        np.transpose(c.reshape(x.shape[0], 2, -1), (2, 0, 1)),
        np.sin(c) * c[::-1],
    )


@pytest.mark.parametrize("rows, columns", [(3, 4), (40, 30)], ids=["3x4", "40x30"])
def test_data_movement_kernels_match_numpy(rng, rows, columns):
    x = rng.standard_normal((rows, columns)).astype(np.float32)
    y = rng.standard_normal((rows, 2)).astype(np.float32)
    program = numbax.jit(_program)
    for i in (0, 1, rows + 5):  # the last start is clamped so the window fits
        for got, want in zip(program(x, y, i), _expected(x, y, i), strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    # The program function, and the launcher its steps stand for (``steps.py``).
    body = program.lower(x, y, 0).source().split("@njit(")[-1].split("# --- kernel")[0]
    assert ".copy()" not in body and "np.full" not in body and "np.concatenate" not in body


def _rows(x, i):
    """Single rows by a traced index (a row view, then its leading axis dropped by an
    index), rows given leading axes of one (``x[None]``-style reshapes) and windows with
    literal starts, in range and clamped."""

    def body(k, acc):
        return acc.at[k].set(acc[k - 1] * 0.5 + x[k])  # row k - 1 read, row k written

    swept = numbax.fori_loop(1, x.shape[0], body, x * 1.0)
    row = x[i]  # a row view read at three offsets: its leading axis dropped by an index
    return (
        row[:-2] + row[1:-1] + row[2:],
        x[i] * 2.0,
        xnp.reshape(x[i], (1, 1, x.shape[1])) + 1.0,
        lax.dynamic_slice(x, (1, 0), (1, x.shape[1])),
        lax.dynamic_slice(x, (x.shape[0] + 3, 0), (2, x.shape[1])),
        swept,
    )


def _rows_expected(x, i):
    swept = x.copy()
    for k in range(1, x.shape[0]):
        swept[k] = swept[k - 1] * 0.5 + x[k]
    row = x[i]
    return (
        row[:-2] + row[1:-1] + row[2:],
        x[i] * 2.0,
        x[i].reshape(1, 1, -1) + 1.0,
        x[1:2],
        x[-2:],
        swept,
    )


def test_row_windows_match_numpy(rng):
    x = rng.standard_normal((5, 4))
    program = numbax.jit(_rows)
    for i in (0, 3, -1):
        for got, want in zip(program(x, i), _rows_expected(x, i), strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=0)
    body = program.lower(x, 0).source().split("@njit(")[-1]
    assert ".reshape(" not in body and "[0]" in body  # rows are indexed, not reshaped
