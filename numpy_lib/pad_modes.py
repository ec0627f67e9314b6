"""``np.pad``'s modes that copy the array's own elements into the border: edge, wrap,
reflect and symmetric.

Each axis is padded in turn, as NumPy does (the corners of a later axis read the border
an earlier axis made). Along one axis, every position of the result reads one position
of the operand (``source_positions``); the result is the concatenate of slices of the
operand, one per run of consecutive positions. Fusion reads such a concatenate by index
arithmetic in the loop that consumes it (``passes.kernels.INDEX_MAPS``), so a padded
array costs no buffer. A border that steps backwards or stays put (reflected or
repeated) is one-element slices. An axis that would take more than ``MAX_PIECES``
slices (wide borders of those modes, or a wrap many times the axis) is one ``gather``
of the operand instead, read from memory.
"""

from __future__ import annotations

import numpy as np

from ..tracer import lax

MODES = ("edge", "wrap", "reflect", "symmetric")

# The most slices an axis is written with: a concatenate of k pieces is a chain of k - 1
# index tests where a loop reads it.
MAX_PIECES = 16


def source_positions(size: int, low: int, high: int, mode: str) -> np.ndarray:
    """For each position of an axis of ``size`` padded by ``(low, high)`` in ``mode``,
    the operand's position it holds (NumPy's rule for every width, also wider than the
    axis)."""
    j = np.arange(-low, size + high)
    if mode == "edge":
        return np.clip(j, 0, size - 1)
    if mode == "wrap":
        return j % size
    if mode == "symmetric":
        m = j % (2 * size)
        return np.where(m < size, m, 2 * size - 1 - m)
    if size == 1:  # reflect about a single element repeats it
        return np.zeros_like(j)
    period = 2 * size - 2
    m = j % period
    return np.where(m < size, m, period - m)


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """``positions`` cut into maximal runs of consecutive positions: (first, length)."""
    runs, start = [], 0
    for k in range(1, len(positions) + 1):
        if k == len(positions) or positions[k] != positions[k - 1] + 1:
            runs.append((int(positions[start]), k - start))
            start = k
    return runs


def pad_axis(x, axis: int, low: int, high: int, mode: str):
    """``x`` padded along ``axis`` by ``(low, high)`` in ``mode``."""
    if low == high == 0:
        return x
    size = x.shape[axis]
    positions = source_positions(size, low, high, mode)
    runs = _runs(positions)
    if len(runs) > MAX_PIECES:
        return lax.gather(x, positions.astype(np.int64), axis)
    pieces = []
    for first, length in runs:
        starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
        starts[axis], limits[axis] = first, first + length
        pieces.append(x if length == size else lax.slice(x, starts, limits, strides))
    return lax.concatenate(pieces, axis)


def pad_with_mode(x, widths, mode: str):
    """``np.pad(x, widths, mode)`` for a mode of ``MODES``; ``widths`` is (ndim, 2)."""
    for axis, (low, high) in enumerate(widths):
        x = pad_axis(x, axis, int(low), int(high), mode)
    return x
