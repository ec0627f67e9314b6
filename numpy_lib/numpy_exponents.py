"""A float's exponent and its neighbours: ``frexp``, ``ldexp``, ``spacing``,
``nextafter``, written as compositions of primitives, exact as NumPy's.

No numbax primitive reads a float's bits, and none needs to: every value here is a
product of the argument and powers of two, and those products are exact.

- ``frexp``: the exponent ``e`` from ``floor(log(|x|) / log(2)) + 1``, which the
  rounding of the logarithm may leave one off; the mantissa ``x * 2**-e`` shows it
  (``|m|`` is 1 or below 0.5), and one step puts it right. ``2**-e`` is applied as two
  halves, so that neither overflows for a subnormal ``x``.
- ``ldexp``: the mantissa times ``2**(e + n)``, again in two halves, of which only the
  second can leave the normal range: the result is rounded once, as NumPy's is.
- ``spacing`` and ``nextafter``: the distance to the float above ``|x|`` is
  ``2**(e - p)`` (``p`` the precision), at least the smallest subnormal; to the float
  below it is half that at a power of two.

``2**k`` is ``pow(2, k)``, exact for an integer ``k`` (libm's and CUDA's). Derivatives
come from the composition: ``frexp``'s mantissa has slope ``2**-e``, ``ldexp``'s
``2**n``, ``nextafter`` slope 1 in ``x`` (it moves ``x`` by one ulp), ``spacing`` 0.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, at_line
from ..tracer import lax
from ..tracer.promote import operand, promote_and_broadcast, result_type
from ..tracer.source_info import user_frame_info
from . import ufuncs
from .registry import implements
from .ufuncs import inexact_dtype, typed_constant

UFUNCS: dict = {}
FUNCTIONS: dict = {}
EXPONENT_DTYPE = dtypes.int32  # frexp's exponents, as NumPy's (C's int)


def _type_error(message: str) -> NumbaxTypeError:
    return NumbaxTypeError(at_line(message, user_frame_info()))


def _real_float_dtype(name: str, *xs) -> np.dtype:
    """The float dtype NumPy computes ``name`` in; complex values have no exponent."""
    dtype = inexact_dtype(*xs)
    if dtypes.is_complex(dtype):
        raise _type_error(
            f"numpy.{name} of a complex value: NumPy has no complex loop for it; apply it "
            "to the real and imaginary parts (x.real, x.imag)"
        )
    return dtype


def _real_float(x, name: str):
    x = operand(x)
    (x,), _ = promote_and_broadcast(x, dtype=_real_float_dtype(name, x), operation=name)
    return x


def _power_of_two(k):
    """``2**k`` for a float ``k`` holding an integer."""
    return lax.pow(typed_constant(2, k.dtype), k)


def _times_power_of_two(x, k):
    """``x * 2**k`` by two halves of ``k``: each half's power is a normal number while
    ``|k|`` is within twice the exponent range, and only the last product rounds."""
    half = lax.floor(lax.mul(k, typed_constant(0.5, k.dtype)))
    return lax.mul(lax.mul(x, _power_of_two(half)), _power_of_two(lax.sub(k, half)))


def _exponent_parts(x):
    """``(m, e, ordinary)``: ``x == m * 2**e`` with ``0.5 <= |m| < 1`` and ``e`` a float
    holding an integer where ``x`` is finite and nonzero (``ordinary``); elsewhere
    ``m`` is ``x`` and ``e`` 0, as ``frexp`` says."""
    dtype = x.dtype
    one, half, two = typed_constant(1, dtype), typed_constant(0.5, dtype), typed_constant(2, dtype)
    magnitude = lax.abs(x)
    ordinary = lax.bitwise_and(
        lax.gt(magnitude, typed_constant(0, dtype)),
        lax.lt(magnitude, typed_constant(np.inf, dtype)),
    )
    safe = lax.select(ordinary, x, one)  # the logarithm never sees 0, inf or NaN
    log_2 = typed_constant(math.log(2.0), dtype)
    estimate = lax.add(lax.floor(lax.div(lax.log(lax.abs(safe)), log_2)), one)
    m = _times_power_of_two(safe, lax.neg(estimate))
    too_large, too_small = lax.ge(lax.abs(m), one), lax.lt(lax.abs(m), half)
    m = lax.select(too_large, lax.mul(m, half), lax.select(too_small, lax.mul(m, two), m))
    e = lax.add(estimate, lax.sub(_as(too_large, dtype), _as(too_small, dtype)))
    zero = typed_constant(0, dtype)
    return lax.select(ordinary, m, x), lax.select(ordinary, e, zero), ordinary


def _as(x, dtype):
    return lax.convert_element_type(x, dtype)


def _step_above(e, dtype):
    """The distance from a float of exponent ``e`` (``frexp``'s) to the next one up."""
    info = dtypes.finfo(dtype)
    precision = typed_constant(info.nmant + 1, dtype)
    return lax.max(
        _power_of_two(lax.sub(e, precision)), typed_constant(info.smallest_subnormal, dtype)
    )


@implements(UFUNCS, "frexp")
def frexp(x):
    """``(mantissa, exponent)`` with ``x == mantissa * 2**exponent``, ``0.5 <= |mantissa|
    < 1``; 0, inf and NaN are their own mantissa, with exponent 0."""
    x = _real_float(x, "frexp")
    m, e, _ = _exponent_parts(x)
    return m, _as(e, EXPONENT_DTYPE)


@implements(UFUNCS, "ldexp")
def ldexp(x1, x2):
    """``x1 * 2**x2``, rounded once; ``x2`` must be an integer, as NumPy's."""
    x, n = operand(x1), operand(x2)
    n_dtype = result_type(n)
    # NumPy's loops take a C int or long: a uint64 or a float does not cast to one safely.
    if not (dtypes.is_bool(n_dtype) or n_dtype.kind == "i" or n_dtype.kind == "u" and (
        n_dtype.itemsize < 8
    )):  # fmt: skip
        raise _type_error(
            f"numpy.ldexp: the exponent must be a signed integer, not {n_dtype}, as in "
            "NumPy; convert it with x2.astype(np.int64), or write x1 * 2.0 ** x2"
        )
    dtype = _real_float_dtype("ldexp", x)
    info = dtypes.finfo(dtype)
    # Beyond twice the exponent range the result is 0 or inf whatever n is; clipped
    # while still an integer, so it converts exactly into a float of any width.
    bound = 2 * (info.maxexp + info.nmant + 2)
    n = ufuncs.clip(n, -bound, bound)  # a bound outside n's dtype is no bound (uint8 n)
    (x, n), _ = promote_and_broadcast(x, _as(operand(n), dtype), dtype=dtype, operation="ldexp")
    m, e, ordinary = _exponent_parts(x)
    return lax.select(ordinary, _times_power_of_two(m, lax.add(e, n)), x)


@implements(UFUNCS, "spacing")
def spacing(x):
    """The distance from ``x`` to the next float away from zero, with ``x``'s sign (the
    smallest subnormal at 0, inf beyond the largest float, NaN at inf and NaN)."""
    x = _real_float(x, "spacing")
    dtype = x.dtype
    info = dtypes.finfo(dtype)
    _, e, ordinary = _exponent_parts(x)
    step = _step_above(e, dtype)
    step = lax.select(
        lax.eq(lax.abs(x), typed_constant(info.max, dtype)), typed_constant(np.inf, dtype), step
    )
    signed = lax.select(lax.lt(x, typed_constant(0, dtype)), lax.neg(step), step)
    zero = lax.eq(x, typed_constant(0, dtype))
    nonzero = lax.select(ordinary, signed, typed_constant(np.nan, dtype))
    return lax.select(zero, typed_constant(info.smallest_subnormal, dtype), nonzero)


@implements(UFUNCS, "nextafter")
def nextafter(x1, x2):
    """The float after ``x1`` towards ``x2`` (``x2`` itself when they are equal)."""
    dtype = _real_float_dtype("nextafter", operand(x1), operand(x2))
    (x, y), _ = promote_and_broadcast(x1, x2, dtype=dtype, operation="nextafter")
    info = dtypes.finfo(dtype)
    zero, one, tiny = (
        typed_constant(0, dtype),
        typed_constant(1, dtype),
        typed_constant(info.smallest_subnormal, dtype),
    )
    m, e, ordinary = _exponent_parts(x)
    above = _step_above(e, dtype)
    # Below a power of two the floats are twice as dense.
    power_of_two = lax.eq(lax.abs(m), typed_constant(0.5, dtype))
    below = lax.max(
        lax.select(power_of_two, lax.mul(above, typed_constant(0.5, dtype)), above), tiny
    )
    magnitude = lax.abs(x)
    away = lax.eq(lax.gt(y, x), lax.gt(x, zero))  # towards a larger magnitude
    moved = lax.select(away, lax.add(magnitude, above), lax.sub(magnitude, below))
    # The sign as a factor: -1 * 0.0 is -0.0, the float after -tiny towards 0.
    sign = lax.select(lax.lt(x, zero), lax.neg(one), one)
    result = lax.select(
        ordinary, lax.mul(sign, moved), lax.mul(sign, typed_constant(info.max, dtype))
    )
    result = lax.select(lax.eq(x, zero), lax.select(lax.gt(y, zero), tiny, lax.neg(tiny)), result)
    result = lax.select(lax.eq(x, y), y, result)
    either_nan = lax.bitwise_or(lax.ne(x, x), lax.ne(y, y))
    return lax.select(either_nan, lax.add(x, y), result)
