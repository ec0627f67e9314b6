"""Corpus cases for NumPy coverage: the array-API spellings, the gufuncs ``matvec``/
``vecmat``/``vecdot`` and ``numpy.linalg``'s array-API variants (registered into
``corpus.CASES``).

The matrices that ``tensorinv`` and ``tensorsolve`` invert are made well conditioned
inside the program (a small outer product plus a multiple of the identity), the same in
numbax and in the NumPy oracle.
"""

from __future__ import annotations

import numpy as np
from corpus import Arg, case, f32, f64, i32, i64


@case(
    "array_api_products",
    [
        (f64(2, 3, 3), f64(3)),
        (f32(3, 3), f32(2, 1, 3)),
        (i32(2, 3, 3), i32(3)),
        (f64(1, 3, 3), f64(0, 1, 3)),
    ],
    tags=["linalg", "grad"],
)
def array_api_products(a, v):
    return (
        np.matvec(a, v),
        np.vecmat(v, a),
        np.vecdot(a, v),
        np.linalg.vecdot(a, a, axis=-2),
        np.linalg.cross(a, v),
        np.linalg.outer(np.reshape(v, -1), a[..., 0, :].reshape(-1)),
        np.linalg.tensordot(a, v, axes=([-1], [-1])),
        np.linalg.trace(a),
        np.linalg.diagonal(a, offset=1),
        np.linalg.matmul(np.matrix_transpose(a), a),
    )


@case(
    "array_api_scans",
    [(f64(3, 4),), (f32(2, 4),), (f64(1, 4),), (i64(3, 4),)],
    tags=["shape", "linalg", "grad"],
)
def array_api_scans(x):
    square = 0.1 * np.linalg.outer(x[0], x[-1]) + 3.0 * np.eye(4)
    first, *rest = np.unstack(x, axis=-1)
    return (
        np.cumulative_sum(x, axis=0, include_initial=True),
        np.cumulative_prod(x, axis=-1),
        np.cumulative_prod(np.rollaxis(x, 1), axis=1, include_initial=True),
        first * rest[-1],
        np.astype(x * 2, x.dtype, copy=False),
        np.linalg.tensorinv(np.reshape(square, (2, 2, 2, 2))),
        np.linalg.tensorsolve(np.reshape(square, (2, 2, 4)), np.reshape(x[0], (2, 2))),
    )


@case(
    "array_api_integers",
    [(i32(3, 4),), (i64(5),), (Arg((2, 3), "uint8"),), (Arg((2, 0), "int8"),)],
    tags=["ufunc"],
)
def array_api_integers(x):
    return (
        np.bitwise_count(x),
        np.bitwise_count(-x),
        np.around(x, -1),
        np.cumulative_sum(x > 0, axis=-1, include_initial=True),
        np.cumulative_prod(x, axis=0, dtype=np.int32),
        np.astype(x, np.uint8),
        np.vecdot(x, x),
    )
