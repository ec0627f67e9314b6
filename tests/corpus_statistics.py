"""Corpus cases for NumPy coverage: statistics (registered into ``corpus.CASES``).

NaNs are put in by the programs themselves, at positions fixed by the shape (the argument
generators draw finite values), so the program and its NumPy oracle see the same NaNs and
a derivative test differentiates through them: the gradient there must be exactly 0.
"""

from __future__ import annotations

import numpy as np
from corpus import POSITIVE, REDUCTION_SCALE, boolean, case, f32, f64, i32, i64


def _every(x, k, offset=0):
    """A mask of ``x``'s shape, true at every k-th position (a constant at trace time)."""
    return np.arange(x.size).reshape(x.shape) % k == offset


def _with_nans(x, k=7, offset=3):
    """``x`` with NaNs at every k-th position (no slice of the grad shapes is all NaN)."""
    return np.where(_every(x, k, offset), np.nan, x) if x.dtype.kind == "f" else x


def _with_nan_row(x):
    """``_with_nans`` and, for a float matrix, a last row of NaNs only."""
    x = _with_nans(x)
    if x.dtype.kind == "f" and x.ndim >= 2:
        x = np.where(np.arange(x.shape[0])[:, None] == x.shape[0] - 1, np.nan, x)
    return x


@case(
    "any_all",
    [
        (f32(3, 4, 5),),
        (f64(3, 4, 5),),
        (i32(3, 4, 5),),
        (i64(3, 4, 5),),
        (boolean(3, 4, 5),),
        (f32(2, 1, 3),),
        (f64(0, 4, 2),),
        (boolean(),),
    ],  # fmt: skip
    tags=["reduction"],
)
def any_all(x):
    mask = _every(x, 3)
    return (
        np.any(x),
        np.all(x, axis=0),
        x.any(axis=-1, keepdims=True),
        x.all(),
        np.all(x > 0, axis=(0, -1)) if x.ndim else np.all(x > 0),
        np.any(x, where=mask),
        np.all(x, axis=None, keepdims=True, where=~mask),
        np.any(x > 1, axis=0, where=mask) if x.ndim else np.any(x > 1, where=mask),
    )


@case(
    "where_initial",
    [(f32(3, 4),), (f64(3, 4),), (i32(3, 4),), (i64(3, 4),), (f64(0, 4),), (f32(2, 1),)],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def where_initial(x):
    mask = _every(x, 3, 1)
    columns = np.arange(x.shape[-1]) % 2 == 0  # broadcast against the rows
    return (
        np.sum(x, where=mask),
        np.sum(x, axis=0, where=x > 0, initial=1),
        np.prod(x, axis=1, where=columns),
        np.prod(x, initial=2, where=mask),
        np.max(x, axis=0, where=mask, initial=-5),
        np.min(x, where=x > 0, initial=10),
        np.max(x, axis=1, initial=0, keepdims=True),
        np.mean(x, axis=-1, where=columns),
        np.add.reduce(x),
        np.maximum.reduce(x, axis=1, initial=-1),
    )


@case(
    "where_initial_values",
    [(f32(3, 4),), (i32(3, 4),), (i64(3, 4),), (boolean(3, 4),), (f64(0, 4),)],
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def where_initial_values(x):
    mask = _every(x, 3, 1)
    empty = np.zeros(x.shape, bool)
    return (
        np.sum(x, initial=3),
        np.sum(x, axis=0, where=empty),
        np.mean(x, axis=0, where=mask),
        np.var(x, axis=1, where=~mask),
        np.std(x, where=mask, ddof=1),
        np.max(x, where=empty, initial=4),
        np.min(x, axis=(0, 1), initial=True),
        np.any(x, axis=1, where=empty),
        np.all(x, axis=0, where=empty),
        np.mean(x, dtype=np.float32),
        np.sum(x, dtype=np.float64, where=mask),
        np.var(x, correction=1, axis=0),
    )


@case(
    "reduction_result_dtypes",
    [(i32(3, 4),), (boolean(3, 4),), (f32(3, 4),), (i64(3, 4),)],
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def reduction_result_dtypes(x):
    return (
        np.sum(x),
        np.prod(x, axis=0),
        np.cumprod(x, axis=1),
        np.mean(x, axis=1, dtype=np.int64),
        np.var(x, ddof=5, axis=0),
        np.prod(x, dtype=np.float32),
        np.cumprod(x, dtype=np.float64),
        np.nansum(x, dtype=np.int64),
    )


@case(
    "nan_reductions",
    [
        (f32(3, 4),),
        (f64(3, 4),),
        (i32(3, 4),),
        (i64(3, 4),),
        (boolean(3, 4),),
        (f64(2, 1),),
        (f32(0, 4),),
        (f64(),),
    ],  # fmt: skip
    reference=lambda x: _nan_reductions(x, _nanarg_or_minus_one),
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def nan_reductions(x):
    return _nan_reductions(x, lambda name, x, **kwargs: getattr(np, name)(x, **kwargs))


def _nanarg_or_minus_one(name, x, axis=None, keepdims=False):
    """NumPy's nanargmax/nanargmin (NaNs count as the worst value), with -1 where NumPy
    raises for a slice of NaNs only: what numbax (and jax.numpy) return there."""
    if x.dtype.kind != "f":
        return getattr(np, name)(x, axis=axis, keepdims=keepdims)
    worst, arg = (-np.inf, np.argmax) if name == "nanargmax" else (np.inf, np.argmin)
    index = arg(np.where(np.isnan(x), worst, x), axis=axis, keepdims=keepdims)
    return np.where(np.all(np.isnan(x), axis=axis, keepdims=keepdims), -1, index)


def _nan_reductions(x, nanarg):
    x = _with_nan_row(x)
    first = -1 if x.ndim else None
    out = (
        np.nansum(x),
        np.nansum(x, axis=0, keepdims=True),
        np.nanprod(x, axis=first),
        np.nanmean(x, axis=first),
        np.nanvar(x, axis=0) if x.ndim else np.nanvar(x),
        np.nanstd(x, ddof=1),
        np.nansum(x, where=_every(x, 2), initial=1.5),
        np.nanmean(x, where=_every(x, 2)),
    )
    if x.size == 0:
        return out
    return out + (
        np.nanmax(x, axis=first),
        np.nanmin(x),
        np.nanmax(x, axis=0, initial=-3) if x.ndim else np.nanmax(x, initial=-3),
        np.nanmin(x, where=~_every(x, 5), initial=9),
        nanarg("nanargmax", x, axis=first),
        nanarg("nanargmin", x, axis=first, keepdims=True),
        nanarg("nanargmax", x),
        np.ptp(x.astype(np.int64) if x.dtype == bool else x, axis=first),
    )


@case(
    "nan_reductions_grad",
    [(f32(3, 4),), (f64(2, 5),), (f64(3, 1),)],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def nan_reductions_grad(x):
    x = _with_nans(x)
    return (
        np.nansum(x),
        np.nansum(x * 2.0, axis=0),
        np.nanmean(x, axis=1),
        np.nanmax(x, axis=1),
        np.nanmin(x, axis=0),
        np.nanprod(x, axis=1),
        np.nanvar(x, axis=1),
        np.nanstd(x),
        np.nancumsum(x, axis=0),
        np.nancumprod(x, axis=1),
    )


@case(
    "cumprod",
    [
        (f32(3, 4),),
        (f64(5),),
        (i32(2, 3, 2),),
        (boolean(4, 3),),
        (f64(0, 3),),
        (i64(),),
        (f64(9),),
    ],  # fmt: skip
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def cumprod(x):
    y = _with_nans(x, 4, 1)
    return (
        np.cumprod(x),
        np.cumprod(x, axis=0),
        np.cumprod(x, axis=-1),
        x.cumprod(axis=0),
        np.nancumsum(y, axis=-1),
        np.nancumprod(y),
        np.nancumprod(y, axis=0, dtype=np.float64),
    )


@case(
    "cumprod_grad",
    [(f32(3, 4),), (f64(2, 5),), (f64(9),), (f64(1, 3),)],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def cumprod_grad(x):
    with_zeros = np.where(_every(x, 3), 0.0, x)  # products through zeros
    return np.cumprod(x, axis=-1), np.cumprod(with_zeros), np.cumprod(-x, axis=0) * 0.5


@case(
    "ptp",
    [(f32(3, 4, 5),), (f64(3, 4, 5),), (i32(3, 4, 5),), (i64(3, 4, 5),), (f64(2, 1, 3),)],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def ptp(x):
    return np.ptp(x), np.ptp(x, axis=1), np.ptp(x, axis=(0, 2), keepdims=True), np.ptp(x, -1)


@case(
    "count_nonzero",
    [
        (i32(3, 4, 5),),
        (f32(3, 4, 5),),
        (f64(3, 4, 5),),
        (i64(3, 4, 5),),
        (boolean(3, 4, 5),),
        (i32(0, 4, 2),),
        (boolean(),),
    ],  # fmt: skip
    tags=["reduction"],
)
def count_nonzero(x):
    axes = (0, -1) if x.ndim else None
    return (
        np.count_nonzero(x),
        np.count_nonzero(x, axis=axes),
        np.count_nonzero(x > 0, axis=axes, keepdims=True),
        np.count_nonzero(x, axis=None, keepdims=True),
    )


@case(
    "average",
    [
        (f32(3, 4), f32(4, values=POSITIVE)),
        (f64(2, 5), f64(5, values=POSITIVE)),
        (i32(3, 4), i64(4, values=POSITIVE)),
        (f32(3, 4), i32(4, values=POSITIVE)),
    ],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def average(x, w):
    full = np.abs(x) + w  # weights of a's own shape
    return (
        np.average(x),
        np.average(x, axis=0),
        np.average(x, axis=1, weights=w),
        np.average(x, axis=-1, weights=w, keepdims=True),
        np.average(x, weights=full),
        np.average(x, axis=0, weights=full, returned=True),
        np.average(x, axis=1, returned=True),
        np.average(x, axis=1, weights=w, returned=True),
    )


@case(
    "average_axes",
    [(f64(2, 3, 4), f64(4, 2, values=POSITIVE)), (f32(3, 1, 2), f32(2, 3, values=POSITIVE))],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def average_axes(x, w):
    return np.average(x, axis=(2, 0), weights=w), np.average(x, axis=(-1, 0), weights=w)
