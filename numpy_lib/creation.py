"""Array creation: zeros, ones, full, *_like, arange, linspace, eye, array, copy.

Filled arrays are a scalar broadcast (``broadcast_in_dim`` of a literal), so a large
``zeros`` costs nothing until fusion decides where it is read. Outside a trace these
run eagerly and return NumPy arrays.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.promote import (
    asarray,
    convert,
    dtype_of,
    operand,
    result_type,
    shape_of,
    static_shape,
    static_size,
)
from . import ranges
from .ufuncs import equal


def _dtype(dtype, default=dtypes.float64):
    return dtypes.canonicalize(dtype) if dtype is not None else default


def full(shape, fill_value, dtype=None):
    fill = operand(fill_value)
    dtype = _dtype(dtype, result_type(fill))
    shape = static_shape(shape, "numpy.full")
    if shape_of(fill) != ():
        return lax.broadcast_to_rank(lax.convert_element_type(asarray(fill), dtype), shape)
    if hasattr(fill, "aval"):  # a traced scalar
        return lax.broadcast_in_dim(lax.convert_element_type(fill, dtype), shape, ())
    return lax.full(shape, convert(fill, dtype), dtype)


def zeros(shape, dtype=None):
    return lax.full(static_shape(shape, "numpy.zeros"), 0, _dtype(dtype))


def ones(shape, dtype=None):
    return lax.full(static_shape(shape, "numpy.ones"), 1, _dtype(dtype))


def empty(shape, dtype=None):
    return lax.full(static_shape(shape, "numpy.empty"), 0, _dtype(dtype))


def full_like(a, fill_value, dtype=None, shape=None):
    return full(shape_of(a) if shape is None else shape, fill_value, dtype or dtype_of(a))


def zeros_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None):
    return full_like(a, 1, dtype, shape)


empty_like = zeros_like


def arange(start, stop=None, step=None, dtype=None):
    if any(isinstance(bound, Tracer) for bound in (start, stop, step)):
        return ranges.arange(start, stop, step, dtype)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    reference = np.arange(start, stop, step, dtype=dtype)
    dtype = dtypes.canonicalize(reference.dtype)
    if dtypes.is_integer(dtype) and reference.size > 1:
        # An integer ramp is an iota (exact, and free under fusion).
        ramp = lax.iota(dtype, reference.shape)
        ramp = lax.mul(ramp, np.asarray(step, dtype)) if step != 1 else ramp
        return lax.add(ramp, np.asarray(start, dtype)) if start != 0 else ramp
    return reference.astype(dtype)


linspace = ranges.linspace


def eye(N, M=None, k=0, dtype=None):
    N = static_size(N, "numpy.eye")
    M = N if M is None else static_size(M, "numpy.eye")
    rows = lax.iota(dtypes.int64, (N, M), 0)
    cols = lax.iota(dtypes.int64, (N, M), 1)
    mask = equal(lax.add(rows, np.int64(k)), cols) if k else equal(rows, cols)
    return lax.convert_element_type(mask, _dtype(dtype))


def identity(n, dtype=None):
    return eye(static_size(n, "numpy.identity"), dtype=dtype)


def array(object, dtype=None, copy=True):
    x = asarray(object)
    x = lax.convert_element_type(x, dtype) if dtype is not None else x
    # A copy is a new array: a write into it must not reach ``object``.
    return x.alias(mutable=True) if x is object and isinstance(x, Tracer) else x


def copy(a, order="K", subok=False):
    x = asarray(a)
    return x.alias(mutable=True) if isinstance(x, Tracer) else np.array(x, copy=True)
