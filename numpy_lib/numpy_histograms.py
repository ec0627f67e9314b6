"""Histograms beyond ``histogram``: ``histogram_bin_edges``, ``histogramdd`` and
``histogram2d``, built on ``numpy_counting``'s ``histogram`` and ``bincount``.

``histogramdd`` counts with ``bincount`` over the flattened bin numbers; its result is
float64, as NumPy's. An edge array's monotony is checked when it is known while tracing,
and a string bin rule (``bins="auto"``) is followed when the data is.

Each name in ``FUNCTIONS`` joins ``numbax.numpy`` and NumPy's dispatch tables
(``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from ..ir import dtypes
from ..ir.errors import ConcretizationError, NumbaxTypeError, ShapeError
from ..tracer.core import known_value
from ..tracer.promote import asarray, convert
from ..tracer.source_info import error_at_user_line as _error
from . import creation, numpy_construction, reductions, shapes
from .numpy_counting import bincount, histogram, outer_edges
from .numpy_differences import diff


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """A string rule chooses the number of bins from the data: taken from the values when
    they are known while tracing; the edges are then uniform, as for a number of bins."""
    if isinstance(bins, str):
        known = known_value(a)
        if known is None:
            raise _error(
                ConcretizationError,
                f"histogram_bin_edges: bins={bins!r} chooses the number of bins from the "
                "data, which sets the result's shape and is not known while tracing; give a "
                "number of bins or the edges",
            )
        bins = len(np.histogram_bin_edges(known, bins, range)) - 1
    return histogram(a, bins, range, weights=weights)[1]


def _sample_columns(sample):
    """NumPy's reading of a sample: an (N, D) array, or a sequence of D arrays of N."""
    x = asarray(sample)
    if isinstance(sample, (list, tuple)) or x.ndim != 2:
        x = numpy_construction.atleast_2d(x).T
    if x.ndim != 2:
        raise _error(ShapeError, f"histogramdd: the sample must be (N, D), not {x.shape}")
    return [x[:, k] for k in builtins.range(x.shape[1])]


def _edges(column, bins, value_range, k):
    if np.ndim(bins) == 0:
        if bins < 1:
            raise _error(ShapeError, f"histogramdd: `bins[{k}]` must be positive, when an integer")
        try:
            count = operator.index(bins)
        except TypeError:
            raise _error(
                NumbaxTypeError, f"histogramdd: `bins[{k}]` must be an integer, when a scalar"
            ) from None
        first, last = outer_edges(column, value_range)
        return creation.linspace(first, last, count + 1)
    edges = asarray(bins)
    if edges.ndim != 1:
        raise _error(ShapeError, f"histogramdd: `bins[{k}]` must be a scalar or 1d array")
    known = known_value(edges)
    if known is not None and (np.diff(known) < 0).any():
        raise _error(
            ShapeError, f"histogramdd: `bins[{k}]` must be monotonically increasing, when an array"
        )
    return edges


def _bin_numbers(column, edges):
    """NumPy's: how many edges lie at or below each value (0 and len(edges) are outliers),
    a value on the last edge counted in the last bin."""
    below = reductions.sum(edges <= column[:, None], axis=1)
    return below - (column == edges[-1])


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    columns = _sample_columns(sample)
    dims = len(columns)
    ragged = isinstance(bins, (list, tuple))  # edges of several lengths
    bins = list(bins) if ragged or np.ndim(bins) != 0 else [bins] * dims
    if len(bins) != dims:
        raise _error(
            ShapeError,
            "histogramdd: the dimension of bins must be equal to the dimension of the sample",
        )
    ranges = (None,) * dims if range is None else list(range)
    if len(ranges) != dims:
        raise _error(ShapeError, "histogramdd: range argument must have one entry per dimension")
    edges = [
        _edges(c, b, r, k) for k, (c, b, r) in enumerate(zip(columns, bins, ranges, strict=True))
    ]
    shape = [e.shape[0] + 1 for e in edges]  # an outlier bin at each end
    flat = np.zeros((), dtypes.int64)
    for column, column_edges, size in zip(columns, edges, shape, strict=True):
        flat = flat * size + _bin_numbers(column, column_edges)
    weights = None if weights is None else asarray(weights)
    counts = bincount(flat, weights, length=int(np.prod(shape)))
    hist = shapes.reshape(convert(counts, dtypes.float64), shape)
    hist = hist[(slice(1, -1),) * dims]
    if density:
        total = reductions.sum(hist)
        for k, column_edges in enumerate(edges):
            widths = diff(column_edges)
            hist = hist / shapes.reshape(
                widths, [widths.shape[0] if j == k else 1 for j in builtins.range(dims)]
            )
        hist = hist / total
    return hist, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    x, y = asarray(x), asarray(y)
    if x.shape[:1] != y.shape[:1]:
        raise _error(ShapeError, "histogram2d: x and y must have the same length")
    if np.ndim(bins) != 0 and len(bins) not in (1, 2):
        bins = [asarray(bins)] * 2
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


FUNCTIONS: dict = {
    "histogram2d": histogram2d, "histogram_bin_edges": histogram_bin_edges,
    "histogramdd": histogramdd,
}  # fmt: skip
UFUNCS: dict = {}
