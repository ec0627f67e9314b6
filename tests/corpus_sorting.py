"""Corpus cases for NumPy coverage: sorting (registered into ``corpus.CASES``).

Integer arguments are drawn from a handful of values, so they tie: what a stable order
decides is checked there. NaNs come from ``_with_nans`` inside the program, the same
in numbax and in the NumPy oracle.
"""

from __future__ import annotations

import numpy as np
from corpus import boolean, case, f32, f64, i32, i64

import numbax
from numbax import numpy as xnp


def _with_nans(x):
    return np.where(x > 1.5, np.nan, x)


@case(
    "sort_axes",
    [
        (f64(3, 5),),
        (f32(7),),
        (f64(1, 4),),
        (f64(0, 3),),
        (i32(3, 6),),
        (boolean(2, 5),),
    ],
    tags=["grad"],
)
def sort_axes(x):
    return np.sort(x), np.sort(x, axis=0), np.sort(x, axis=None), np.sort(x.T, kind="stable")


@case(
    "sort_nans",
    [
        (f64(3, 6),),
        (f32(9),),
        (f64(0, 2),),
    ],
)
def sort_nans(x):
    y = _with_nans(x)
    return np.sort(y), np.argsort(y, axis=0), np.sort(y, axis=None), np.sort(-y, stable=True)


def _stable_argsorts(x):
    return np.argsort(x, kind="stable"), np.argsort(x, axis=0, kind="stable")


# numbax's argsort is always stable; NumPy's default (quicksort) may order ties otherwise.
@case(
    "argsort_ties",
    [
        (i32(3, 8),),
        (i64(11),),
        (boolean(2, 7),),
        (f64(4, 3),),
        (i32(0, 4),),
    ],
    reference=_stable_argsorts,
)
def argsort_ties(x):
    return np.argsort(x), np.argsort(x, axis=0)


@case("lexsort", [(i32(3, 9),), (i64(2, 1),), (i32(2, 0),)])
def lexsort(keys):
    return np.lexsort(keys), np.lexsort((keys[0], keys[-1])), np.lexsort((keys[0],), axis=0)


# numbax's partition is a full sort, which is one of the answers NumPy allows.
@case(
    "partition_is_a_sort",
    [
        (f64(3, 6),),
        (i32(8),),
        (f32(2, 4),),
    ],
    reference=lambda x: (np.sort(x), np.argsort(x, kind="stable"), np.sort(x, axis=0)),
)
def partition_is_a_sort(x):
    return np.partition(x, 2), np.argpartition(x, (0, 1)), np.partition(x, -1, axis=0)


@case(
    "median_quantile",
    [
        (f64(4, 5),),
        (f32(7),),
        (f64(1, 3),),
        (i32(4, 5),),
    ],
    tags=["grad"],
)
def median_quantile(x):
    return (
        np.median(x),
        np.median(x, axis=0),
        np.quantile(x, [0.2, 0.9], axis=-1),
        np.percentile(x, 35, axis=0, keepdims=True),
        np.quantile(x, np.array([[0.0, 1.0], [0.5, 0.25]])),
    )


# NumPy's median of nothing is NaN (its quantile raises IndexError).
@case("median_empty", [(f64(0, 3),), (f32(2, 0),)])
def median_empty(x):
    return np.median(x), np.median(x, axis=0), np.median(x, axis=1)


@case("quantile_methods", [(f64(3, 6),), (i64(3, 5),), (f32(2, 4),)])
def quantile_methods(x):
    methods = ("linear", "lower", "higher", "nearest", "midpoint")
    return [np.quantile(x, [0.37, 0.5, 1.0], axis=1, method=m) for m in methods]


@case(
    "quantile_of_traced_q",
    [
        (f64(3, 6), f64(2)),
        (
            f32(5),
            f32(3),
        ),
    ],
    tags=["grad"],
)
def quantile_of_traced_q(x, q):
    return np.quantile(x, np.abs(np.tanh(q)), axis=-1), np.percentile(x, 50 + 40 * np.tanh(q))


@case(
    "nan_quantiles",
    [
        (f64(3, 6),),
        (f64(6),),
        (f32(2, 4),),
    ],
)
def nan_quantiles(x):
    y = _with_nans(x)
    return (
        np.median(y, axis=-1),
        np.nanmedian(y, axis=-1),
        np.nanquantile(y, 0.3, axis=-1),
        np.nanpercentile(y, [10, 80]),
    )


@case("searchsorted", [(f64(6), f64(3, 4)), (i32(5), i32(7)), (f64(1), f64(2)), (f64(0), f64(3))])
def searchsorted(a, v):
    ordered = np.sort(a)
    return (
        np.searchsorted(ordered, v),
        np.searchsorted(ordered, v, side="right"),
        np.searchsorted(a, v, sorter=np.argsort(a, kind="stable")),
        np.searchsorted(ordered, _with_nans(ordered)),
    )


@case("interp_knots", [(f64(9), f64(5), f64(5)), (f32(4, 3), f32(6), f64(6))], tags=["grad"])
def interp_knots(x, xp, fp):
    knots = np.sort(xp)
    return (
        np.interp(x, knots, fp),
        np.interp(x, knots, fp, left=-1.0, right=fp[0] * 2),
        np.interp(x, xp, fp, period=2.5),
    )


def _top_k_reference(x, k=3):
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@case(
    "top_k",
    [
        (f64(3, 6),),
        (i32(4, 5),),
        (f32(3),),
    ],
    reference=_top_k_reference,
)
def top_k(x):
    return numbax.lax.top_k(x, 3)


def _unique_reference(x, size=7):
    values, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    pad = max(size - len(values), 0)
    lowest = values[:1] if len(values) else np.zeros(1, x.dtype)
    return (
        np.concatenate([values, np.full(pad, lowest[0] if len(values) else 0, x.dtype)])[:size],
        np.concatenate([values, np.full(pad, -9, x.dtype)])[:size],
        np.concatenate([index, np.full(pad, index[0] if len(index) else 0)])[:size],
        inverse,
        np.concatenate([counts, np.zeros(pad, counts.dtype)])[:size],
    )


@case("unique_size", [(i32(12),), (i64(3, 4),), (i32(3),), (i32(0),)], reference=_unique_reference)
def unique_size(x):
    every = xnp.unique(x, True, True, True, size=7)
    return xnp.unique(x, size=7), xnp.unique(x, size=7, fill_value=-9), *every[1:]
