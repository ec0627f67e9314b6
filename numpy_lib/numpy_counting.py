"""Counting and comparing: histogram, bincount, digitize (counts by comparison with the
bin edges, summed over a one-hot axis or scattered), isclose, allclose, array_equal,
array_equiv; joined into ``numpy_construction.FUNCTIONS``.

The number of bins is static (it is the result's shape); the data, the weights and,
for ``histogram(a, bins=n)`` without ``range=``, the edges (from the data's min and max)
are traced. ``bincount`` of a traced ``x`` cannot know ``x.max()``: it needs
``length=`` (as ``jax.numpy.bincount``) or takes ``minlength=`` as the length, and drops
the counts of larger values. The answers of ``allclose``, ``array_equal`` and
``array_equiv`` are traced bool scalars (NumPy's are Python bools); two shapes that do
not match are a static False.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from ..ir import dtypes
from ..ir.errors import (
    ConcretizationError,
    NumbaxTypeError,
    ShapeError,
    UnsupportedFunctionError,
)
from ..tracer import lax
from ..tracer.core import Tracer, known_value
from ..tracer.indexing import update
from ..tracer.promote import asarray, broadcast_shapes, convert, operand, result_type, shape_of
from ..tracer.source_info import error_at_user_line as _error
from . import reductions, shapes, ufuncs


def _all(mask):
    """``mask.all()`` as a traced bool scalar: no entry is False (True when empty)."""
    false_count = lax.reduce_sum(
        lax.convert_element_type(ufuncs.logical_not(mask), dtypes.int64), range(asarray(mask).ndim)
    )
    return lax.eq(false_count, np.int64(0))


def _column(x):
    return lax.reshape(x, x.shape + (1,))


# --------------------------------------------------------------------------------------
# Histograms


def histogram(a, bins=10, range=None, density=None, weights=None):
    x = shapes.ravel(asarray(a))
    if weights is not None:
        weights = asarray(weights)
        if shape_of(weights) != shape_of(a):
            raise _error(ShapeError, "histogram: weights should have the same shape as a")
        weights = shapes.ravel(weights)
    if isinstance(bins, str):
        raise _error(
            UnsupportedFunctionError,
            f"histogram: bins={bins!r} chooses the number of bins from the data, which "
            "sets the result's shape; give a number of bins or the edges",
        )
    if np.ndim(bins) == 0:
        count = operator.index(bins)
        if count < 1:
            raise _error(ShapeError, "histogram: `bins` must be positive, when an integer")
        edges = _uniform_edges(x, count, range)
    else:
        edges = asarray(bins)
        known = known_value(edges)
        if edges.ndim != 1:
            raise _error(ShapeError, "histogram: `bins` must be 1d, when an array")
        if known is not None and (np.diff(known) < 0).any():
            raise _error(ShapeError, "histogram: `bins` must increase monotonically, when an array")
    counts = _bin_counts(x, edges, weights)
    if not density:
        return counts, edges
    widths = convert(asarray(_difference(edges)), dtypes.float64)
    return ufuncs.true_divide(ufuncs.true_divide(counts, widths), reductions.sum(counts)), edges


def _difference(edges):
    return ufuncs.subtract(
        shapes.split(edges, [1])[1], shapes.split(edges, [edges.shape[0] - 1])[0]
    )


def _uniform_edges(x, count, value_range):
    """NumPy's ``linspace(first, last, count + 1)`` over the outer edges, computed in
    NumPy's dtypes."""
    first, last = outer_edges(x, value_range)
    bin_dtype = result_type(first, last, x)
    bin_dtype = dtypes.float64 if not dtypes.is_float(bin_dtype) else bin_dtype
    ramp_dtype = dtypes.float_result_type(result_type(first, last))
    step = ufuncs.true_divide(ufuncs.subtract(last, first), count)
    ramp = ufuncs.add(
        ufuncs.multiply(lax.iota(ramp_dtype, (count,)), convert(operand(step), ramp_dtype)),
        convert(operand(first), ramp_dtype),
    )
    end = lax.reshape(asarray(convert(operand(last), ramp_dtype)), (1,))
    return convert(shapes.concatenate([ramp, end], 0), bin_dtype)


def outer_edges(x, value_range):
    """The first and last edge of uniform bins: the range, or the data's min and max
    (0 and 1 for no data), widened by a half when they are equal, as NumPy's."""
    if value_range is not None:
        first, last = (_static_number(v) for v in value_range)
        if first > last:
            raise _error(ShapeError, "histogram: max must be larger than min in range parameter")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise _error(
                ShapeError, f"histogram: supplied range of [{first}, {last}] is not finite"
            )
    elif x.size == 0:
        first, last = 0, 1
    else:
        first, last = reductions.min(x), reductions.max(x)
    if isinstance(first, Tracer):
        same = ufuncs.equal(first, last)
        first = ufuncs.where(same, ufuncs.subtract(first, 0.5), first)
        last = ufuncs.where(same, ufuncs.add(last, 0.5), last)
    elif first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _static_number(v):
    if isinstance(v, Tracer):
        known = known_value(v)
        if known is None:
            raise _error(
                ConcretizationError,
                "histogram: range= sets the bin edges and must be static (Python numbers); "
                "leave range=None to take the traced data's min and max",
            )
        return known.item()
    return v


def _bin_counts(x, edges, weights):
    """Counts (or summed weights) of ``edges[i] <= x < edges[i + 1]``, the last bin
    closed on the right: comparisons against every edge, summed over the values."""
    bins = edges.shape[0] - 1
    if bins < 1:
        raise _error(ShapeError, "histogram: `bins` needs at least two edges")
    values = _column(x)
    lower = ufuncs.greater_equal(values, shapes.split(edges, [bins])[0])
    inner, end = shapes.split(shapes.split(edges, [1])[1], [bins - 1])
    upper = shapes.concatenate([ufuncs.less(values, inner), ufuncs.less_equal(values, end)], axis=1)
    inside = ufuncs.logical_and(lower, upper)
    if weights is None:
        return reductions.sum(inside, axis=0)
    # NumPy sums float weights in float64 (``bincount``) and rounds the sums once.
    total_dtype = dtypes.float64 if dtypes.is_float(weights.dtype) else dtypes.int64
    spread = ufuncs.where(inside, _column(convert(weights, total_dtype)), np.zeros((), total_dtype))
    return convert(reductions.sum(spread, axis=0), weights.dtype)


def bincount(x, /, weights=None, minlength=0, *, length=None):
    """``length=`` is numbax's (and JAX's): the static number of bins of a traced ``x``."""
    x = asarray(x)
    if x.ndim != 1:
        raise _error(ShapeError, f"bincount: x must be 1-d (got shape {x.shape})")
    if not (dtypes.is_integer(x.dtype) or x.dtype == dtypes.bool_):
        raise _error(
            NumbaxTypeError,
            f"bincount: cannot cast array data from {x.dtype} to int64 according to the rule "
            "'safe'; pass integers (x.astype(np.int64))",
        )
    minlength = operator.index(minlength)
    if minlength < 0:
        raise _error(ShapeError, "bincount: minlength must be non-negative")
    if length is None:
        length = _bincount_length(x, minlength)
    x = convert(x, dtypes.int64)
    # A negative value has no bin: send it past the end, where the scatter drops it.
    positions = ufuncs.where(ufuncs.less(x, 0), np.int64(length), x)
    # NumPy counts an empty x in int64 even with weights.
    dtype = dtypes.int64 if weights is None or x.shape[0] == 0 else dtypes.float64
    counts = lax.full((length,), 0, dtype)
    if weights is None:
        values = lax.full(x.shape, 1, dtype)
    else:
        values = convert(asarray(weights), dtype)
        if values.shape != x.shape:
            raise _error(ShapeError, "bincount: the weights and x do not have the same length")
    if length == 0 or x.shape[0] == 0:
        return counts
    return update(counts, positions, values, "add")


def _bincount_length(x, minlength):
    known = known_value(x)
    if known is not None:
        if known.size and known.min() < 0:
            raise _error(ShapeError, "bincount: x must have no negative elements")
        return builtins.max(minlength, int(known.max()) + 1 if known.size else 0)
    if minlength > 0:
        return minlength
    raise _error(
        ConcretizationError,
        "bincount of a traced x: the number of bins (x.max() + 1) sets the result's shape "
        "and is not known while tracing. Pass minlength=n (np.bincount) or length=n "
        "(numbax.numpy.bincount): the result then has n bins, and values >= n are dropped",
    )


def digitize(x, bins, right=False):
    """The bin of each value: how many edges lie at or below it (increasing edges) or
    above it (decreasing), counted by comparisons. NaN sorts last, as in NumPy."""
    values = asarray(operand(x))
    edges = asarray(bins)
    if edges.ndim != 1:
        raise _error(ShapeError, "digitize: bins must be one-dimensional")
    compare = ufuncs.less_equal if right else ufuncs.less
    below = reductions.sum(compare(_column(values), edges), axis=-1)
    above = ufuncs.subtract(np.int64(edges.shape[0]), below)
    known = known_value(edges)
    if known is not None:
        steps = np.diff(known)
        if (steps >= 0).all():
            return above
        if (steps <= 0).all():
            return below
        raise _error(ShapeError, "digitize: bins must be monotonically increasing or decreasing")
    if edges.shape[0] < 2:
        return above
    first, last = shapes.split(edges, [1, edges.shape[0] - 1])[::2]
    increasing = lax.reshape(ufuncs.less_equal(first, last), ())
    return ufuncs.where(increasing, above, below)


# --------------------------------------------------------------------------------------
# Closeness and equality


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy 2's test: ``|a - b| <= atol + rtol * |b|`` with ``b`` finite, or ``a == b``
    (equal infinities); ``b`` is compared in a float dtype."""
    x, y = operand(a), operand(b)
    if isinstance(y, int):
        y = float(y)
    elif not isinstance(y, float):
        y = convert(y, result_type(y, 1.0))
    rtol, atol = operand(rtol), operand(atol)
    bound = ufuncs.add(atol, ufuncs.multiply(rtol, ufuncs.absolute(y)))
    close = ufuncs.logical_and(
        ufuncs.less_equal(ufuncs.absolute(ufuncs.subtract(x, y)), bound), ufuncs.isfinite(y)
    )
    close = ufuncs.logical_or(close, ufuncs.equal(x, y))
    if equal_nan:
        close = ufuncs.logical_or(close, ufuncs.logical_and(ufuncs.isnan(x), ufuncs.isnan(y)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    x, y = asarray(a1), asarray(a2)
    if x.shape != y.shape:
        return False
    same = ufuncs.equal(x, y)
    if equal_nan:
        same = ufuncs.logical_or(same, ufuncs.logical_and(ufuncs.isnan(x), ufuncs.isnan(y)))
    return _all(same)


def array_equiv(a1, a2):
    x, y = asarray(a1), asarray(a2)
    try:
        broadcast_shapes(x.shape, y.shape, operation="array_equiv")
    except ShapeError:
        return False
    return _all(ufuncs.equal(x, y))


FUNCTIONS: dict = {
    "allclose": allclose, "array_equal": array_equal, "array_equiv": array_equiv,
    "bincount": bincount, "digitize": digitize, "histogram": histogram, "isclose": isclose,
}  # fmt: skip
