"""Corpus cases for NumPy coverage: construction (registered into ``corpus.CASES``).

Every case name starts with ``construct_`` (``-k construct_`` runs them all)."""

from __future__ import annotations

import numpy as np
from corpus import I64, Arg, boolean, case, dual_case, f32, f64, i32, i64

_MATRICES = [(f32(3, 4),), (f64(4, 1),), (i32(2, 3),), (f64(0, 3),), (f64(1, 1),)]
_CLASSES = ("class", 6)


@case("construct_tile_repeat", _MATRICES + [(boolean(2, 2),)], tags=["shape", "grad"])
def construct_tile_repeat(x):
    counts = np.arange(x.shape[0]) % 3  # one count per row, zeros included
    return (
        np.tile(x, (2, 1, 3)),
        np.tile(x, 2),
        np.repeat(x, 2),
        np.repeat(x, counts, axis=0),
        np.repeat(x, 3, axis=-1),
    )


@case("construct_roll_rotate_flip", _MATRICES, tags=["shape", "grad"])
def construct_roll_rotate_flip(x):
    return (
        np.roll(x, 2),
        np.roll(x, (1, -1, 5), axis=(0, 1, 0)),
        np.roll(x, -7, axis=1),
        np.rot90(x),
        np.rot90(x, 2),
        np.rot90(x, -1, axes=(1, 0)),
        np.fliplr(x),
        np.flipud(x),
    )


@case(
    "construct_roll_traced_shift",
    [(f32(3, 5), Arg((), I64, ("index", 9))), (f64(2, 1), Arg((), I64, ("index", 4)))],
)
def construct_roll_traced_shift(x, shift):
    return np.roll(x, shift, axis=1), np.roll(x, shift)


@case("construct_diff", [*_MATRICES[:4], (boolean(3, 4),)], tags=["shape", "grad"])
def construct_diff(x):
    return (
        np.diff(x),
        np.diff(x, 2, axis=0),
        np.diff(x, prepend=0, append=x[:, :1]),
        np.diff(x, 0),
    )


@case("construct_gradient", [(f32(3, 4),), (f64(5, 3),), (i32(3, 3),)], tags=["grad"])
def construct_gradient(x):
    uneven = np.array([0.0, 0.5, 1.75, 2.0, 3.5])[: x.shape[0]]
    return (
        np.gradient(x),
        np.gradient(x, 0.5, axis=1, edge_order=2),
        np.gradient(x, uneven, 2.0),
        np.gradient(x, uneven, axis=0, edge_order=2),
        np.gradient(x[0]),
    )


@case(
    "construct_gradient_traced_coordinates",
    [(f32(4, 3), f32(4)), (f64(3), f64(3)), (f64(6, 2), f64(6))],
    tags=["grad"],
)
def construct_gradient_traced_coordinates(f, t):
    coordinates = np.cumsum(t * t + 0.5)  # increasing, by uneven steps
    return np.gradient(f, coordinates, axis=0), np.gradient(f, coordinates, axis=0, edge_order=2)


@case("construct_diagonals", _MATRICES + [(i64(4, 4),)], tags=["shape", "grad"])
def construct_diagonals(x):
    v = x.sum(axis=0)
    return (
        np.diag(x),
        np.diag(x, 1),
        np.diag(x, -2),
        np.diag(v),
        np.diag(v, 2),
        np.diag(v, -1),
        np.diagonal(x, -1),
        np.diagonal(x, 7),
        np.trace(x),
        np.trace(x, 1, dtype=np.float64),
    )


@case("construct_diagonals_3d", [(f32(2, 3, 4),), (f64(3, 1, 2),), (i32(2, 2, 2),)], tags=["grad"])
def construct_diagonals_3d(x):
    return (
        np.diagonal(x, 1, 0, 2),
        np.diagonal(x, axis1=-1, axis2=1),
        np.trace(x, axis1=1, axis2=2),
        np.trace(x, -1, 2, 0),
    )


@case("construct_triangles", _MATRICES + [(boolean(3, 3),), (f32(2, 3, 3),)], tags=["grad"])
def construct_triangles(x):
    return np.tril(x), np.triu(x, 1), np.tril(x, -1), np.triu(x.sum(axis=-2))


@dual_case("construct_tri_indices", [(f32(2, 3),), (i32(3, 3),), (f64(0, 2),)], tags=["creation"])
def construct_tri_indices(xnp):
    def program(x):
        rows, cols = x.shape
        return (
            x * xnp.tri(rows, cols, 1),
            xnp.tri(rows, dtype=np.int32),
            xnp.tri(cols, rows, -1),
            xnp.indices(x.shape),
            xnp.indices((2, 3), dtype=np.int32, sparse=True),
            x + xnp.indices(x.shape)[1],
        )

    return program


@case(
    "construct_append_insert_delete",
    [(f32(3, 4),), (f64(2, 2),), (i32(2, 3),), (f64(1, 5),)],
    tags=["shape", "grad"],
)
def construct_append_insert_delete(x):
    return (
        np.append(x, x[:1]),
        np.append(x, x[:1], axis=0),
        np.insert(x, 1, 5.0),
        np.insert(x, [1, 1, 0], [7.0, 8.0, 9.0], axis=1),
        np.insert(x, 1, x[0], axis=0),
        np.insert(x, slice(0, 2), x[:, :1] * 2, axis=1),
        np.insert(x, -1, [[1.0], [2.0]][: x.ndim - 1], axis=0),
        np.delete(x, 1),
        np.delete(x, [0, -1], axis=1),
        np.delete(x, slice(1, None), axis=0),
        np.delete(x, np.array([True] + [False] * (x.shape[1] - 1)), axis=1),
    )


@case(
    "construct_stacks_splits",
    [
        (f32(2, 4), f32(2, 4)),
        (f64(1, 2), f64(1, 2)),
        (i32(2, 2), i64(2, 2)),
        (f64(0, 2), f64(0, 2)),
    ],
    tags=["shape", "grad"],
)
def construct_stacks_splits(x, y):
    return (
        np.column_stack([x[:, 0], y]),
        np.column_stack([x.sum(), y.sum()]),
        np.dstack([x, y]),
        np.dstack([x.sum(axis=0), y.sum(axis=0)]),
        np.atleast_2d(x.sum(), x[:, 0], x),
        np.atleast_3d(x[:, 0]),
        np.atleast_3d(x.sum(), x),
        np.hsplit(x, 2),
        np.hsplit(x[:, 0], [1]),
        np.vsplit(y, [1]),
        np.dsplit(np.atleast_3d(x), 1),
    )


@case(
    "construct_kron",
    [(f32(2, 3), f32(3, 2)), (f64(1, 2), f64(2, 2)), (i32(2, 2), i32(2, 1)), (f64(2, 0), f64(2))],
    tags=["linalg", "grad"],
)
def construct_kron(a, b):
    return np.kron(a, b), np.kron(b, a), np.kron(a[0], b), np.kron(a, 2.0)


@case(
    "construct_cross",
    [
        (f32(4, 3), f32(4, 3)),
        (f64(2, 1, 3), f64(5, 3)),
        (i32(3, 3), i32(3, 3)),
        (f64(0, 3), f64(3)),
    ],
    tags=["linalg", "grad"],
)
def construct_cross(a, b):
    return (
        np.cross(a, b),
        np.cross(a, b, axisc=0),
        np.cross(a[..., :2], b),
        np.cross(a, b[..., 1:]),
        np.cross(a[..., 1:], b[..., :2]),
        np.cross(np.moveaxis(a, -1, 0), b, axisa=0),
    )


@case("construct_select_piecewise", _MATRICES[:4] + [(f32(),)], tags=["grad"])
def construct_select_piecewise(x):
    return (
        np.select([x > 1, x < -1], [x, x * 2], default=-1.0),
        np.select([x > 0], [x]),
        np.piecewise(x, [x < 0, x > 1], [lambda t: -t, lambda t: t**2, 0.5]),
        np.piecewise(x, [x < 0, x >= 0], [lambda t: np.sin(t), lambda t: t + 1]),
        np.piecewise(x, [x > 0], [lambda t: t * 3]),
        np.piecewise(x.sum(), x.sum() > 0, [lambda t: t * 3, lambda t: -t]),
    )


@case(
    "construct_meshgrid",
    [(f32(3), f32(4)), (f64(1), f64(0)), (i64(2), i64(3)), (f64(2, 2), f64(3))],
    tags=["shape", "grad"],
)
def construct_meshgrid(x, y):
    return (
        np.meshgrid(x, y),
        np.meshgrid(x, y, indexing="ij"),
        np.meshgrid(x, y, x, sparse=True),
        np.meshgrid(y, copy=False),
    )


@case(
    "construct_histogram_weights",
    [(f64(12), f64(12)), (f32(3, 4), f32(3, 4)), (f64(0), f64(0)), (i32(10), f64(10))],
    tags=["grad"],
)
def construct_histogram_weights(x, w):
    return (
        np.histogram(x, 4, range=(-2, 2), weights=w),
        np.histogram(x, [-1.0, 0.0, 0.5, 2.0], weights=w),
        np.histogram(x, 3, range=(-3.0, 1), weights=w, density=True),
    )


@case("construct_histogram_counts", [(f64(12),), (f32(3, 5),), (f64(0),), (i32(10),), (f64(1),)])
def construct_histogram_counts(x):
    return (
        np.histogram(x),
        np.histogram(x, 3, density=True),
        np.histogram(x, [-1, 0, 2]),
        np.histogram(x, 5, range=(-1.5, 1.5)),
    )


@case(
    "construct_bincount_digitize",
    [
        (i64(10, values=_CLASSES), f64(10)),
        (i32(1, values=_CLASSES), f32(1)),
        (i64(0), f64(0)),
        (boolean(5), f32(5)),
    ],
)
def construct_bincount_digitize(i, w):
    return (
        np.bincount(i, minlength=6),
        np.bincount(i, w, minlength=6),
        np.digitize(w, [-1.0, 0.0, 1.0]),
        np.digitize(w, [1.0, 0.0, -1.0], right=True),
        np.digitize(i, [0, 2, 2, 5], right=True),
    )


@case(
    "construct_closeness",
    [(f32(3, 4), f32(3, 4)), (f64(5), f64(1)), (i32(2, 3), i32(3)), (f64(0, 2), f64(2))],
)
def construct_closeness(x, y):
    special = np.where(x > 1, np.inf, np.where(x < -1, np.nan, x))
    return (
        np.isclose(x, y),
        np.isclose(x, x + 1e-9),
        np.isclose(special, special),
        np.isclose(special, special, equal_nan=True),
        np.isclose(x, 1),
        np.allclose(x, x),
        np.allclose(x, y, rtol=10.0),
        np.array_equal(x, x),
        np.array_equal(special, special, equal_nan=True),
        np.array_equiv(x, y),
        np.array_equiv(x, x[..., :1]),
    )
