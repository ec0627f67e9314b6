"""Sorting and what is built on it: sort, argsort, lexsort, partition, top_k,
unique(size=), searchsorted, interp, median, percentile, quantile.

Everything here is a composition of the ``sort`` primitive (``ir/sorting.py``) with the
others, so derivatives (a sort moves its tangent by the same permutation), batching and
both backends come with it. The order is NumPy's: NaNs last, ``-0.0 == 0.0``.

Where NumPy's result depends on the algorithm, numbax picks one valid answer and says
so: ``argsort`` is always stable (NumPy's default quicksort may order ties otherwise);
``partition``/``argpartition`` return a full sort, which is a valid partition for every
``kth``; ``unique`` under ``jit`` needs a static ``size=`` (as ``jax.numpy.unique``),
since the number of unique values is data-dependent.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import ConcretizationError, ShapeError, UnsupportedFunctionError
from ..tracer import indexing, lax
from ..tracer.core import Tracer, known_value
from ..tracer.functionalize import write_out
from ..tracer.promote import (
    asarray,
    convert,
    normalize_axes,
    normalize_axis,
    python_scalar_as,
    result_type,
)
from ..tracer.source_info import error_at_user_line as _error
from . import creation, shapes, ufuncs

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _refuse(name: str, argument: str, fix: str):
    raise _error(UnsupportedFunctionError, f"numpy.{name}: {argument} is not supported; {fix}")


def _along(a, axis, name):
    """The array and the axis to sort along; ``axis=None`` sorts the flattened array."""
    x = asarray(a)
    if axis is None:
        return lax.reshape(x, (x.size,)), 0
    return x, normalize_axis(axis, x.ndim, name)


def _is_stable(kind, stable, name) -> bool:
    if kind not in _KINDS:
        raise _error(ValueError, f"{name}: kind must be one of {_KINDS[1:]}, not {kind!r}")
    return bool(stable) or kind in ("mergesort", "stable")


def _no_order(order, name):
    if order is not None:
        _refuse(name, "order= (fields of a structured array)", "sort a plain array of keys")


def _positions(x, axis):
    return lax.iota(dtypes.int64, x.shape, axis)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no_order(order, "sort")
    x, axis = _along(a, axis, "sort")
    return lax.sort(x, axis, _is_stable(kind, stable, "sort"))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Always a stable argsort: equal keys keep their order whatever ``kind`` says."""
    _no_order(order, "argsort")
    _is_stable(kind, stable, "argsort")
    x, axis = _along(a, axis, "argsort")
    return lax.sort([x, _positions(x, axis)], axis)[1]


def lexsort(keys, axis=-1):
    """Sort by the last key first, then the one before, ... (NumPy's order); stable."""
    if isinstance(keys, Tracer) or isinstance(keys, np.ndarray):
        keys = [keys[k] for k in range(keys.shape[0])]
    keys = [asarray(k) for k in keys]
    if not keys:
        raise _error(TypeError, "lexsort: need a sequence of keys with len > 0")
    shape = keys[0].shape
    if any(k.shape != shape for k in keys):
        raise _error(ShapeError, "lexsort: all keys need to be the same shape")
    x, axis = _along(keys[0], axis, "lexsort")
    ordered = [k if k.shape == x.shape else lax.reshape(k, x.shape) for k in reversed(keys)]
    outs = lax.sort([*ordered, _positions(x, axis)], axis, True, len(keys))
    return outs[-1]


def _check_kth(kth, x, axis, name):
    n = x.shape[axis]
    for k in np.ravel(np.asarray(kth)).tolist():
        if not -n <= int(k) < n:
            raise _error(ValueError, f"{name}: kth(={k}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """A full sort: every element before ``kth`` is no greater, every one after no
    smaller, as NumPy promises (NumPy's own order inside each side differs)."""
    _no_order(order, "partition")
    x, axis = _along(a, axis, "partition")
    _check_kth(kth, x, axis, "partition")
    return lax.sort(x, axis, False)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """The indices of a full (stable) sort: a valid argpartition for every ``kth``."""
    _no_order(order, "argpartition")
    x, axis = _along(a, axis, "argpartition")
    _check_kth(kth, x, axis, "argpartition")
    return lax.sort([x, _positions(x, axis)], axis)[1]


def top_k(operand, k: int):
    """The ``k`` largest entries along the last axis and their indices (int32), largest
    first, as ``jax.lax.top_k``: of equal values the lower index comes first, and NaN
    counts as the largest.

    >>> import numbax
    >>> numbax.lax.top_k(numbax.numpy.asarray([3.0, 1.0, 4.0, 1.5]), 2)
    (array([4., 3.]), array([2, 0], dtype=int32))
    """
    x = asarray(operand)
    if x.ndim == 0:
        raise _error(ShapeError, "top_k needs an array of at least one dimension, not a scalar")
    n = x.shape[-1]
    k = int(k)
    if not 0 <= k <= n:
        raise _error(ShapeError, f"top_k: k={k} must be between 0 and the last axis' size {n}")
    axis = x.ndim - 1
    # Ascending by value, then by descending index: the last k, reversed, are the answer.
    values, later_first = lax.sort([x, lax.neg(_positions(x, axis))], axis, True, 2)
    top = (Ellipsis, slice(n - k, n))
    indices = lax.convert_element_type(lax.neg(later_first[top]), dtypes.int32)
    return shapes.flip(values[top], -1), shapes.flip(indices, -1)


# --------------------------------------------------------------------------------------
# unique


def sorted_with_firsts(x, equal_nan):
    """The flattened ``x`` sorted (stably), its permutation, and the mask of the entries
    that start a run of equal values."""
    flat = lax.reshape(x, (x.size,))
    values, order = lax.sort([flat, _positions(flat, 0)], 0)
    differs = values[1:] != values[:-1]
    if equal_nan and dtypes.is_float(x.dtype):
        differs = differs & ~(ufuncs.isnan(values[1:]) & ufuncs.isnan(values[:-1]))
    return values, order, shapes.concatenate([lax.full((1,), True, dtypes.bool_), differs])


def nonzero_positions(mask, size: int):
    """The positions of the first ``size`` True entries of the 1-D ``mask``, padded with 0
    (``jnp.nonzero(mask, size=size)``): each True entry is scattered to its rank."""
    rank = lax.cumsum(lax.convert_element_type(mask, dtypes.int64), 0) - 1
    target = ufuncs.where(mask, rank, np.int64(size))  # out of range: dropped
    zeros = lax.full((size,), 0, dtypes.int64)
    return lax.scatter(zeros, target, _positions(mask, 0), 0, "set")


def static_size(arrays, count, name: str, what: str, call: str) -> int:
    """``size=`` when it was not given: ``count(*values)`` if the values of ``arrays`` are
    known while tracing, else an error that says to call ``numbax.numpy.<call>``."""
    values = [known_value(x) for x in arrays]
    if any(value is None for value in values):
        raise _error(
            ConcretizationError,
            f"numpy.{name}: the number of {what} depends on the data, which jit does not know "
            f"while tracing; call numbax.numpy.{call} with a static size= (as "
            f"jax.numpy.{name}): the first n {what}, padded with fill_value",
        )
    return int(count(*values))


def _unique_size(x, equal_nan):
    return static_size(
        [x],
        lambda value: len(np.unique(value, equal_nan=equal_nan)),
        "unique",
        "unique values",
        "unique(x, size=n, fill_value=v)",
    )


def padding_value(fill_value, dtype, name: str):
    """A ``fill_value`` in the result's dtype. A Python scalar out of the dtype's range is
    an error, as NumPy's padding with it would be (``fill_value=-9`` on uint8 raises
    OverflowError there); an array or a NumPy scalar is cast, as NumPy casts."""
    if isinstance(fill_value, (bool, int, float, complex)):
        fix = (
            f"numpy.{name}(size=, fill_value=) pads with fill_value in the result's dtype, and "
            "NumPy raises OverflowError for it too. Pass a fill value in the dtype's range, or "
            "x.astype(a wider dtype)"
        )
        return python_scalar_as(fill_value, dtype, fix=fix)
    return convert(asarray(fill_value), dtype)


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,
    size=None,
    fill_value=None,
):
    """The sorted unique values of the flattened array, as ``numpy.unique``; with
    ``size=`` (needed under ``jit`` for values it cannot know), exactly ``size`` of them,
    padded with ``fill_value`` (default: the smallest value), as ``jax.numpy.unique``.
    A padded ``return_index`` entry is the smallest value's, a padded count 0."""
    if axis is not None:
        _refuse("unique", "axis=", "unique the flattened array, or reshape rows into keys")
    x = asarray(ar)
    size = _unique_size(x, equal_nan) if size is None else int(size)
    wanted = (return_index, return_inverse, return_counts)
    fill_value = None if fill_value is None else padding_value(fill_value, x.dtype, "unique")
    if x.size == 0:
        fill = lax.full((size,), 0 if fill_value is None else fill_value, x.dtype)
        extras = [lax.full(shape, 0, dtypes.int64) for shape in [(size,), x.shape, (size,)]]
        outputs = [fill] + [e for e, w in zip(extras, wanted, strict=True) if w]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
    values, order, firsts = sorted_with_firsts(x, equal_nan)
    group = lax.cumsum(lax.convert_element_type(firsts, dtypes.int64), 0) - 1
    count = group[x.size - 1] + 1
    slots = _positions(lax.full((size,), 0, dtypes.int64), 0)
    real = slots < count
    # One start more than asked: where the last group asked for ends.
    bounds = nonzero_positions(firsts, size + 1)
    starts = bounds[:size]
    result = lax.gather(values, starts, 0)
    if fill_value is not None:
        result = ufuncs.where(real, result, fill_value)
    outputs = [result]
    if return_index:
        outputs.append(lax.gather(order, starts, 0))
    if return_inverse:
        inverse = lax.scatter(lax.full((x.size,), 0, dtypes.int64), order, group, 0, "set")
        outputs.append(lax.reshape(inverse, x.shape))
    if return_counts:
        # A group ends where the next starts; the last one at the array's end.
        ends = ufuncs.where(slots + 1 < count, bounds[1:], np.int64(x.size))
        outputs.append(ufuncs.where(real, ends - starts, np.int64(0)))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# --------------------------------------------------------------------------------------
# searchsorted and interp


def _before(a, v, side):
    """Whether ``a`` sorts before ``v`` (``side='left'``: strictly), in NumPy's NaN-last
    order."""
    if side == "left":
        less = a < v
        if dtypes.is_float(result_type(a, v)):
            less = less | (ufuncs.isnan(v) & ~ufuncs.isnan(a))
        return less
    less_equal = a <= v
    if dtypes.is_float(result_type(a, v)):
        less_equal = less_equal | ufuncs.isnan(v)
    return less_equal


def searchsorted(a, v, side="left", sorter=None):
    """The insertion points of ``v`` in the sorted 1-D ``a``: for each ``v``, how many
    entries of ``a`` sort before it, counted by comparing it with all of them
    (O(len(a) * v.size) work; fine for the sizes a program searches)."""
    if side not in ("left", "right"):
        raise _error(ValueError, f"searchsorted: side must be 'left' or 'right', not {side!r}")
    x = asarray(a)
    if x.ndim != 1:
        raise _error(ShapeError, f"searchsorted: a must be 1-D, not of shape {x.shape}")
    if sorter is not None:
        x = indexing.take(x, sorter)
    values = asarray(v)
    dtype = result_type(x, values)
    x, values = convert(x, dtype), convert(values, dtype)
    spread = lax.broadcast_in_dim(x, values.shape + x.shape, (values.ndim,))
    probes = lax.broadcast_in_dim(values, values.shape + x.shape, tuple(range(values.ndim)))
    before = lax.convert_element_type(_before(spread, probes, side), dtypes.int64)
    return lax.reduce_sum(before, (values.ndim,))


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation at ``x`` of the points (``xp``, ``fp``), ``xp``
    increasing (or, with ``period``, any order), as ``numpy.interp``."""
    dtype = dtypes.complex128 if asarray(fp).dtype.kind == "c" else dtypes.float64
    x = convert(asarray(x), dtypes.float64)
    xp, fp = convert(asarray(xp), dtypes.float64), convert(asarray(fp), dtype)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise _error(ValueError, "interp: fp and xp are not of the same length")
    if xp.shape[0] == 0:
        raise _error(ValueError, "interp: array of sample points is empty")
    if period is not None:
        if period == 0:
            raise _error(ValueError, "interp: period must be a non-zero value")
        period = abs(period)
        x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
        xp, fp = lax.sort([xp, fp], 0, True, 1)
        xp = shapes.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = shapes.concatenate([fp[-1:], fp, fp[:1]])
        left = right = None
    n = xp.shape[0]
    first, last = fp[0], fp[n - 1]
    left = first if left is None else convert(asarray(left), dtype)
    right = last if right is None else convert(asarray(right), dtype)
    if n == 1:
        inside = ufuncs.where(x < xp[0], left, ufuncs.where(x > xp[0], right, first))
        return lax.convert_element_type(inside, dtype) if inside.dtype != dtype else inside
    upper = ufuncs.clip(searchsorted(xp, x, "right"), 1, n - 1)
    x0, x1 = indexing.take(xp, upper - 1), indexing.take(xp, upper)
    f0, f1 = indexing.take(fp, upper - 1), indexing.take(fp, upper)
    slope = (f1 - f0) / (x1 - x0)
    # At a sample point, its value exactly (the slope's rounding would show).
    inside = ufuncs.where(x == x0, f0, ufuncs.where(x == x1, f1, slope * (x - x0) + f0))
    return ufuncs.where(x < xp[0], left, ufuncs.where(x > xp[n - 1], right, inside))


# --------------------------------------------------------------------------------------
# Quantiles: sort, then read (and interpolate between) the order statistics.

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _rows_last(x, axis, name):
    """``x`` with the reduced axes merged into one last axis; the reduced axes."""
    axes = normalize_axes(axis, x.ndim, name)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = lax.transpose(x, kept + list(axes))
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    return lax.reshape(moved, tuple(x.shape[i] for i in kept) + (n,)), axes


def _lerp(a, b, t):
    """NumPy's interpolation between neighbours (exact at both ends)."""
    diff = b - a
    return ufuncs.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def _order_statistics(rows, q, count, method):
    """Quantiles ``q`` (a flat array) of each row of the sorted ``rows`` whose first
    ``count`` entries are the data; the results on a new last axis."""
    top = count - 1
    if isinstance(count, Tracer):
        count = lax.convert_element_type(count, q.dtype)
    virtual = (count - 1) * q  # rows' shape but the last axis, then q's

    def read(index):
        index = ufuncs.clip(lax.convert_element_type(index, dtypes.int64), 0, top)
        return indexing.take_along_axis(rows, index, axis=-1)

    if method == "lower":
        return read(ufuncs.floor(virtual))
    if method == "higher":
        return read(ufuncs.ceil(virtual))
    if method == "nearest":
        return read(ufuncs.rint(virtual))
    below = ufuncs.floor(virtual)
    gamma = virtual - below
    if method == "midpoint":
        gamma = ufuncs.where(gamma == 0, gamma, creation.full_like(gamma, 0.5))
    return _lerp(read(below), read(below + 1), gamma)


def _quantile(a, q, axis, out, method, keepdims, interpolation, weights, name, ignore_nan):
    if weights is not None:
        _refuse(name, "weights=", "repeat the samples, or sort and interpolate with cumsum")
    method = interpolation if interpolation is not None else method
    if method not in _METHODS:
        _refuse(name, f"method={method!r}", f"use one of {_METHODS}")
    x = asarray(a)
    as_float = x.dtype if dtypes.is_float(x.dtype) else dtypes.float64
    if method in ("lower", "higher", "nearest"):
        dtype = data_dtype = x.dtype
    else:
        # A Python float q takes the data's float dtype (NumPy's rule), an array promotes;
        # the data keep theirs (NumPy takes the step between neighbours in it).
        given = q if isinstance(q, (int, float, Tracer)) else np.asarray(q)
        dtype, data_dtype = result_type(np.zeros((), as_float), given), as_float
    q = asarray(q)
    rows, axes = _rows_last(convert(x, data_dtype), axis, name)
    n = rows.shape[-1]
    flat_q = convert(lax.reshape(q, (q.size,)), dtype if dtypes.is_float(dtype) else as_float)
    kept_shape = rows.shape[:-1]
    if n == 0:
        result = lax.full(kept_shape + (q.size,), np.nan, dtype)
    else:
        rows = lax.sort(rows, rows.ndim - 1, False)
        if ignore_nan and dtypes.is_float(dtype):
            count = lax.reduce_sum(
                lax.convert_element_type(~ufuncs.isnan(rows), dtypes.int64), (rows.ndim - 1,)
            )
            count = lax.reshape(count, kept_shape + (1,))
        else:
            count = n
        spread = lax.broadcast_in_dim(flat_q, kept_shape + (q.size,), (len(kept_shape),))
        result = _order_statistics(rows, spread, count, method)
        if dtypes.is_float(dtype):
            missing = (count == 0) if ignore_nan else ufuncs.isnan(rows[..., n - 1 : n])
            result = ufuncs.where(missing, np.asarray(np.nan, dtype), result)
        result = convert(result, dtype)
    # q's axes come first, as NumPy puts them.
    result = lax.transpose(result, [result.ndim - 1] + list(range(result.ndim - 1)))
    shape = q.shape + tuple(
        1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes
    )
    result = lax.reshape(result, shape)
    return result if out is None else write_out(out, result, name, "unsafe")


def _fraction(q):
    """A percentage as a fraction; a Python number stays one (it promotes weakly)."""
    return q / 100 if isinstance(q, (int, float)) else ufuncs.true_divide(q, 100)


def _quantile_function(name: str, ignore_nan: bool, percent: bool):
    """NumPy's ``name``: quantile and percentile (q in percent), and their nan- twins,
    which skip NaNs; all four have NumPy's one signature."""

    def function(
        a,
        q,
        axis=None,
        out=None,
        overwrite_input=False,
        method="linear",
        keepdims=False,
        *,
        weights=None,
        interpolation=None,
    ):
        q = _fraction(q) if percent else q
        return _quantile(
            a, q, axis, out, method, keepdims, interpolation, weights, name, ignore_nan
        )

    function.__name__ = function.__qualname__ = name
    return function


quantile = _quantile_function("quantile", ignore_nan=False, percent=False)
percentile = _quantile_function("percentile", ignore_nan=False, percent=True)
nanquantile = _quantile_function("nanquantile", ignore_nan=True, percent=False)
nanpercentile = _quantile_function("nanpercentile", ignore_nan=True, percent=True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile(a, 0.5, axis, out, "linear", keepdims, None, None, "median", False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile(a, 0.5, axis, out, "linear", keepdims, None, None, "nanmedian", True)


def _refused(name, fix):
    def refuse(*args, **kwargs):
        _refuse(name, "this function", fix)

    refuse.__name__ = name
    return refuse


FUNCTIONS: dict = {
    "sort": sort,
    "argsort": argsort,
    "lexsort": lexsort,
    "partition": partition,
    "argpartition": argpartition,
    "unique": unique,
    "searchsorted": searchsorted,
    "interp": interp,
    "median": median,
    "percentile": percentile,
    "quantile": quantile,
    "nanmedian": nanmedian,
    "nanpercentile": nanpercentile,
    "nanquantile": nanquantile,
    "sort_complex": _refused("sort_complex", "sort the complex array with numpy.sort"),
}
UFUNCS: dict = {}
