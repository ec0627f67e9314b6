"""Corpus cases for NumPy coverage: writes into arrays and index construction (registered
into ``corpus.CASES``).

The in-place functions write into copies the program makes, at positions fixed by the
shape (masks and indices are constants), so the outputs stay smooth in the argument and
the grad tests differentiate through the written values.
"""

from __future__ import annotations

import numpy as np
from corpus import boolean, case, f32, f64, i32, i64


def _every(x, k, offset=0):
    return np.arange(x.size).reshape(x.shape) % k == offset


@case(
    "inplace_writes",
    [(f32(3, 4),), (f64(4, 4),), (i32(3, 4),), (i64(2, 5),), (boolean(3, 4),), (f64(3, 1),)],
    tags=["update", "grad"],
)
def inplace_writes(x):
    copied, masked, placed, put, along, diagonal = (x.copy() for _ in range(6))
    np.copyto(copied, x[::-1], where=_every(x, 3))
    np.putmask(masked, _every(x, 2), x[0])
    np.place(placed, _every(x, 3, 1), x[-1, ::-1])
    np.put(put, [0, -1, 5], x.ravel()[:2], mode="wrap")
    np.put_along_axis(along, np.zeros((x.shape[0], 1), np.int64), x[:, -1:], axis=1)
    np.fill_diagonal(diagonal, x[-1], wrap=True)
    return copied, masked, placed, put, along, diagonal


@case(
    "choose_block_resize",
    [(f32(3, 4),), (f64(2, 3),), (i32(3, 4),), (f64(1, 1),), (boolean(2, 2),)],
    tags=["shape", "grad"],
)
def choose_block_resize(x):
    picks = np.arange(x.size).reshape(x.shape) % 3
    return (
        np.choose(picks, [x, x[::-1], x * 2]),
        np.choose(picks + 2, [x, 1], mode="wrap"),
        np.block([[x, x[:, :1]], [x[:1], x[:1, :1]]]),
        np.resize(x, (x.shape[1], 5)),
        np.diagflat(x[0], -1),
        np.apply_along_axis(lambda row: row[::-1] * row[0], 1, x),
        np.apply_over_axes(np.sum, x, [0, 1]),
    )


@case(
    "flat_indices_bits",
    [(i64(3, 4, values=("class", 3)),), (i32(2, 5, values=("class", 2)),), (i64(0, 3),)],
    tags=["index"],
)
def flat_indices_bits(i):
    flat = np.ravel_multi_index((i, i + 2), (3, 5), mode=("raise", "clip"))
    rows, cols = np.unravel_index(flat, (3, 5), order="F")
    packed = np.packbits(i, axis=-1, bitorder="little")
    return flat, rows, cols, packed, np.unpackbits(packed, axis=-1, count=i.shape[-1])
