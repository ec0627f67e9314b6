"""Corpus cases for NumPy coverage: the ufunc methods (outer, reduce, accumulate, at,
reduceat), einsum in all its forms, and ramps with traced endpoints (registered into
``corpus.CASES``)."""

from __future__ import annotations

import numpy as np
from corpus import NONZERO, POSITIVE, UNIT, case, dual_case, f32, f64, i32, i64


@case(
    "ufunc_method_outer",
    [
        (f64(3), f64(4)),
        (f32(2, 3), f32(2)),
        (f64(0), f64(3)),
        (f32(1), f32(1)),
        (i32(3), i32(2, 2)),
    ],
    tags=["ufunc", "grad"],
)
def ufunc_method_outer(x, y):
    return (
        np.add.outer(x, y),
        np.multiply.outer(x, y),
        np.subtract.outer(y, x),
        np.hypot.outer(x, y),
    )


@case(
    "ufunc_method_reduce",
    [(f64(3, 4),), (f32(2, 5),), (f64(1, 1),), (f32(4, 2),)],
    tags=["ufunc", "reduction", "grad"],
)
def ufunc_method_reduce(x):
    return (
        np.add.reduce(x),
        np.multiply.reduce(x, axis=1, keepdims=True),
        np.maximum.reduce(x, axis=None, initial=-10.0),
        np.minimum.reduce(x, axis=0, where=x < 1.0, initial=5.0),
        np.subtract.reduce(x, axis=1),
        np.add.reduce(x, axis=(0, 1), where=x > 0, initial=1.5),
        np.logaddexp.reduce(x, axis=0),
        np.hypot.reduce(x, axis=1),
        np.subtract.reduce(x, axis=0, initial=2.0, where=x > -1.0),
    )


@case(
    "ufunc_method_reduce_ints",
    [(i32(3, 4),), (i64(5, 2),), (i32(4, 0),), (i64(1, 3),)],
    tags=["ufunc", "reduction"],
)
def ufunc_method_reduce_ints(x):
    return (
        np.bitwise_xor.reduce(x, axis=1),
        np.bitwise_or.reduce(x, axis=0),
        np.bitwise_and.reduce(x, axis=None),
        np.add.reduce(x, axis=0, dtype=np.int32),
        np.subtract.reduce(x, axis=0),
        np.logical_and.reduce(x, axis=1),
        np.logical_xor.reduce(x > 0, axis=1),
        np.maximum.reduce(x, axis=1, initial=-100),
        np.multiply.reduce(x, axis=1),
    )


@case(
    "ufunc_method_accumulate",
    [(f64(3, 5, values=NONZERO),), (f32(4, 1, values=NONZERO),), (f64(0, 3),), (f32(1, 6),)],
    tags=["ufunc", "grad"],
)
def ufunc_method_accumulate(x):
    return (
        np.add.accumulate(x),
        np.multiply.accumulate(x, axis=1),
        np.maximum.accumulate(x, axis=1),
        np.subtract.accumulate(x, axis=0),
        np.divide.accumulate(x, axis=-1),
        np.logaddexp.accumulate(x, axis=1),
        np.minimum.accumulate(x.T, dtype=np.float64),
    )


@case(
    "ufunc_method_accumulate_ints",
    [(i32(3, 5),), (i64(2, 1),), (i32(0, 2),)],
    tags=["ufunc"],
)
def ufunc_method_accumulate_ints(x):
    return (
        np.add.accumulate(x, axis=1),
        np.bitwise_xor.accumulate(x, axis=1),
        np.subtract.accumulate(x, axis=0),
        np.logical_or.accumulate(x > 1, axis=1),
    )


@case(
    "ufunc_method_reduceat",
    [(f64(6, 3),), (f32(5, 2),), (i32(7, 2),)],
    tags=["ufunc", "reduction", "grad"],
)
def ufunc_method_reduceat(x):
    return (
        np.add.reduceat(x, [0, 2, 1, 4]),
        np.maximum.reduceat(x, [1, 3], axis=0),
        np.multiply.reduceat(x.T, [0, 1], axis=1),
        np.subtract.reduceat(x, np.array([4, 0])),
    )


def _written_at(x, v):
    """Repeated indices: NumPy applies the ufunc once per occurrence."""
    y = x.copy()
    np.add.at(y, [0, 2, 2, 0, 2], v)
    np.multiply.at(y, [1, 1], 1.5)
    np.subtract.at(y, (slice(None),), 0.25)
    np.divide.at(y, [2, 0, 2], 2.0)
    np.negative.at(y, [1, 1, 1])
    np.maximum.at(y, [0], -100.0)
    return y


@case(
    "ufunc_method_at",
    [(f64(4), f64(5)), (f32(3, 2), f32(5, 1)), (f64(3), f64())],
    tags=["ufunc", "update", "grad"],
)
def ufunc_method_at(x, v):
    return _written_at(x, v)


@case(
    "ufunc_method_at_indices",
    [
        (f64(5), i64(7, values=("index", 5)), f64(7)),
        (f32(3, 4), i32(2, values=("index", 3)), f32(2, 4)),
        (i32(4), i64(6, values=("index", 4)), i32(6)),
        (f64(4), i64(0, values=("index", 4)), f64(0)),
    ],
    tags=["ufunc", "update"],
)
def ufunc_method_at_indices(x, i, v):
    y = x.copy()
    np.add.at(y, i, v)
    np.minimum.at(y, i, v)
    np.power.at(y, i, 2)
    return y


@case(
    "einsum_forms",
    [
        (f64(2, 3, 3), f64(3, 4)),
        (f32(1, 2, 2), f32(2, 5)),
        (f64(2, 0, 0), f64(0, 3)),
        (i32(2, 3, 3), i32(3, 4)),
    ],
    tags=["linalg", "grad"],
)
def einsum_forms(a, b):
    return (
        np.einsum("bii->bi", a),
        np.einsum("bii", a),
        np.einsum("...ij,jk->...ik", a, b),
        np.einsum("...ij,...jk->...ik", a, a[:1]),
        np.einsum("ij...,j...->i...", b.T, b),
        np.einsum("bij,jk,kl->bil", a, b, b.T, optimize="greedy"),
        np.einsum("bij,jk,kl->bil", a, b, b.T, optimize="optimal"),
        np.einsum(a, [0, 1, 2], b, [2, 3], [0, 3, 1]),
        np.einsum(a, [Ellipsis, 1, 1], [Ellipsis]),
        np.einsum("iij,jk", a[0][:, :, None] * a[0][None], b),
        np.einsum("ij,ij->ij", b[:, :1], b),
        np.einsum("ab,cd", b, b[:1]),
    )


@case(
    "ramp_traced_endpoints",
    [(f64(), f64()), (f32(3, values=UNIT), f32(3, values=UNIT)), (f64(2, 1), f64(3))],
    tags=["creation", "grad"],
)
def ramp_traced_endpoints(a, b):
    return (
        np.linspace(a, b, 5),
        np.linspace(a, b, 4, endpoint=False, axis=-1),
        np.linspace(a, b, 3, retstep=True),
        np.linspace(a, b, 1),
        np.logspace(a * 0.1, b * 0.1, 3, base=2.0),
        np.geomspace(1.0 + a * a, 2.0 + b * b, 4),
        np.geomspace(-1.0 - a * a, -2.0 - b * b, 3, endpoint=False),
    )


@dual_case(
    "ufunc_methods_namespace",
    [(f64(3), f64(4, values=POSITIVE)), (f32(2), f32(1, values=POSITIVE)), (f64(1), f64(2))],
    tags=["ufunc", "grad"],
)
def ufunc_methods_namespace(m):
    def program(x, y):
        return (
            m.add.outer(x, y),
            m.maximum.reduce(x, axis=0),
            m.multiply.accumulate(y),
            m.subtract.reduce(y),
            m.add.reduceat(y, [0]),
            m.einsum("i,j->ij", x, y),
            m.einsum("i,i", x, x),
            m.linspace(x[0], y[0], 4),
        )

    return program


@case(
    "ndarray_methods",
    [(f64(3, 4),), (f32(2, 5),), (i32(3, 4),), (f64(1, 1),)],
    tags=["shape", "index"],
)
def ndarray_methods(x):
    """The ndarray methods that sort, select and rearrange; ``sort``, ``partition`` and
    ``fill`` rewrite the array itself and return None."""
    rows = x.copy()
    rows.sort(axis=1)
    columns = x.copy()
    columns.partition(0, axis=0)
    filled = x.copy()
    filled.fill(3)
    put = x.copy()
    put.put([0, -1], [7, 8])
    return (
        rows,
        columns[0],
        filled,
        put,
        x.argsort(axis=0),
        x.argpartition(0, axis=1)[:, 0],
        rows[0].searchsorted(x[-1]),
        x.diagonal(),
        x.trace(),
        x.repeat(2, axis=1),
        x.compress([True, False], axis=0),
        (x % 3).choose([x, -x, 2 * x], mode="clip") if x.dtype.kind == "i" else x,
        x.mT,
    )
