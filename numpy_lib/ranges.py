"""Ramps whose endpoints may be traced: linspace, logspace, geomspace, and arange of
bounds known while tracing.

A ramp's length is a shape, so it is static: ``num`` is a Python int, and ``arange``'s
bounds must be known (its length depends on their values). The endpoints themselves
may be traced arrays, of any shape: the ramp is ``start + iota * step``, a composition,
so it differentiates in them and batches. Without a traced endpoint each is NumPy's
own result, a constant of the program.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import ConcretizationError, ShapeError
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.promote import asarray, convert, operand, result_type, shape_of, static_size
from ..tracer.source_info import error_at_user_line as _error
from . import shapes, ufuncs


def _traced(*values) -> bool:
    return any(isinstance(v, Tracer) for v in values)


def _count(num, name) -> int:
    num = static_size(num, name)
    if num < 0:
        raise _error(ShapeError, f"{name}: number of samples, {num}, must be non-negative")
    return num


def _canonical(array):
    array = np.asarray(array)
    return array.astype(dtypes.canonicalize(array.dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``numpy.linspace``; ``start`` and ``stop`` may be traced (``num`` is static)."""
    num = _count(num, "linspace")
    if not _traced(start, stop):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
        return (_canonical(out[0]), out[1]) if retstep else _canonical(out)
    start, stop = operand(start), operand(stop)
    computed = dtypes.float_result_type(result_type(start, stop))
    delta = ufuncs.subtract(convert(stop, computed), convert(start, computed))
    ramp = lax.iota(computed, (num,) + (1,) * len(shape_of(delta)))
    div = num - 1 if endpoint else num
    if div > 0:
        step = ufuncs.true_divide(delta, np.asarray(div, computed))
        y = ufuncs.multiply(ramp, step)
    else:
        step = np.nan
        y = ufuncs.multiply(ramp, delta)
    y = ufuncs.add(y, convert(start, computed))
    if endpoint and num > 1:
        # The last sample is ``stop`` exactly, as NumPy makes it.
        last = lax.broadcast_to_rank(convert(stop, computed), (1,) + y.shape[1:])
        y = lax.concatenate([lax.slice(y, [0] * y.ndim, (num - 1,) + y.shape[1:]), last], 0)
    y = shapes.moveaxis(y, 0, axis) if axis != 0 else y
    if dtype is not None and dtypes.is_integer(dtypes.canonicalize(dtype)):
        y = ufuncs.floor(y)
    y = convert(y, dtype) if dtype is not None else y
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``numpy.logspace``: ``base ** linspace(start, stop)``; any of the three traced."""
    if not _traced(start, stop, base):
        return _canonical(np.logspace(start, stop, num, endpoint, base, dtype, axis))
    start, stop, base = operand(start), operand(stop), operand(base)
    rank = max(len(shape_of(v)) for v in (start, stop, base))
    start, stop = (_at_rank(v, rank) for v in (start, stop))
    y = linspace(start, stop, num, endpoint, axis=axis)
    if shape_of(base):
        base = lax.expand_dims(_at_rank(base, rank), [axis % (rank + 1)])
    y = ufuncs.power(base, y)
    return convert(y, dtype) if dtype is not None else y


def _at_rank(x, rank):
    """``x`` with leading 1s up to ``rank`` axes (NumPy's ``ndmin``); scalars stay."""
    shape = shape_of(x)
    if not shape and not isinstance(x, Tracer):
        return x
    return lax.reshape(asarray(x), (1,) * (rank - len(shape)) + shape)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``numpy.geomspace`` of real endpoints; traced ones must not be zero (NumPy raises,
    a traced value cannot be checked while tracing: the ramp is NaN there)."""
    if not _traced(start, stop):
        return _canonical(np.geomspace(start, stop, num, endpoint, dtype, axis))
    num = _count(num, "geomspace")
    start, stop = asarray(operand(start)), asarray(operand(stop))
    computed = dtypes.float_result_type(result_type(start, stop, np.zeros((), dtypes.float64)))
    start, stop = convert(start, computed), convert(stop, computed)
    # Negative endpoints: the ramp of their magnitudes, signed (NumPy's way).
    sign = ufuncs.sign(start)
    start, stop = ufuncs.true_divide(start, sign), ufuncs.true_divide(stop, sign)
    y = logspace(ufuncs.log10(start), ufuncs.log10(stop), num, endpoint, 10.0)
    if num > 0:
        # The ends are the arguments exactly: 10 ** log10(x) need not be x.
        ends = [lax.broadcast_to_rank(start, (1,) + y.shape[1:])]
        inner = (1, num - 1 if endpoint and num > 1 else num)
        ends.append(lax.slice(y, (inner[0],) + (0,) * (y.ndim - 1), (inner[1],) + y.shape[1:]))
        if endpoint and num > 1:
            ends.append(lax.broadcast_to_rank(stop, (1,) + y.shape[1:]))
        y = lax.concatenate(ends, 0)
    y = ufuncs.multiply(sign, y)
    y = shapes.moveaxis(y, 0, axis) if axis != 0 else y
    return convert(y, dtype) if dtype is not None else y


def arange(start, stop=None, step=None, dtype=None):
    """``numpy.arange`` where a bound is a traced array whose value is known while
    tracing (an eager transform, a constant): its length is read from the values, and
    the ramp stays a function of the traced bounds (it differentiates in them)."""
    reference = np.arange(*(_known_value(v) for v in (start, stop, step)), dtype=dtype)
    dtype = dtypes.canonicalize(reference.dtype)
    first = 0 if stop is None else start
    increment = 1 if step is None else step
    ramp = ufuncs.multiply(lax.iota(dtype, reference.shape), convert(operand(increment), dtype))
    return ufuncs.add(convert(operand(first), dtype), ramp)


def _known_value(bound):
    if bound is None or not isinstance(bound, Tracer):
        return bound
    try:
        return bound.concrete_value("numpy.arange of a traced bound")
    except ConcretizationError:
        pass
    raise _error(
        ConcretizationError,
        f"numpy.arange with a traced bound ({bound.aval.str_short()}): the length of the "
        "result depends on the bounds' values, and shapes are static. Use "
        "numpy.linspace(start, stop, num) with a static num (its endpoints may be traced), "
        "or pass the bounds as static arguments (jit(f, static_argnums=...))",
    )


FUNCTIONS = {"linspace": linspace, "logspace": logspace, "geomspace": geomspace}
