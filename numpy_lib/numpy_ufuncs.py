"""NumPy's remaining ufuncs (inverse trig and hyperbolic, hypot, cbrt, rounding, degrees,
fmax/fmin, copysign, heaviside, signbit, nan_to_num), written as
compositions of primitives.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``numpy_lib/numpy_api.py``).

Accuracy: every composition is within a few ulps of NumPy (its libm) over the whole
domain, in float32 and float64; the formulas avoid the cancellations of the textbook
ones (``arccos`` near 1, ``arcsinh`` of large and tiny ``x``, ``arctanh`` near 1).

Derivatives come from the composition. Two rules keep them right at the edges:

- a branch that a ``select`` discards gets operands clamped into its own domain (the
  "double where"), so its zero cotangent never meets an inf and turns into NaN;
- where the function's slope is infinite (``arcsin`` at 1, ``cbrt`` at 0), the
  composition puts the infinite factor where nothing multiplies it by zero: the square
  root of a product is written as a product of square roots.

A NaN's sign is not visible to any numbax primitive, so ``signbit`` and ``copysign``
read every NaN as positive (NumPy reads its sign bit; NaNs made by arithmetic have a
platform-dependent sign anyway).

``gcd`` and ``lcm`` are Euclid's algorithm in a ``while_loop`` over the whole array,
which runs until every element's remainder is 0 (at most 93 steps for int64). The
functions of a float's exponent (frexp, ldexp, nextafter, spacing) are in
``numpy_exponents``, those of complex parts (real, imag, conj, angle) in
``numpy_complex``.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, at_line
from ..tracer import functionalize, lax
from ..tracer.control_flow import while_loop
from ..tracer.core import Tracer
from ..tracer.promote import asarray, operand, promote_and_broadcast, result_type
from ..tracer.source_info import user_frame_info
from . import complex_arctrig, complex_math, ufuncs
from .registry import implements
from .ufuncs import arithmetic_dtype, inexact_dtype, typed_constant

FUNCTIONS: dict = {}
UFUNCS: dict = {}


def _refuse_complex(dtype, name):
    """NumPy has no complex loop for the functions here, except the inverse trigonometric
    and hyperbolic ones (``_or_complex``)."""
    if dtypes.is_complex(dtype):
        raise ufuncs.complex_refused(name)


def _or_complex(complex_fn):
    """A real unary ufunc that hands complex operands to ``complex_fn``
    (``complex_math``), NumPy's complex loop of the same name."""

    def decorate(real_fn):
        def fn(x):
            x = operand(x)
            dtype = inexact_dtype(x)
            if not dtypes.is_complex(dtype):
                return real_fn(x)
            (z,), _ = promote_and_broadcast(x, dtype=dtype, operation=real_fn.__name__)
            return complex_fn(z)

        fn.__name__, fn.__doc__ = real_fn.__name__, real_fn.__doc__
        return fn

    return decorate


def _real_float(x, name):
    """``x`` in the float dtype NumPy computes a real-only unary ufunc in."""
    x = operand(x)
    dtype = inexact_dtype(x)
    _refuse_complex(dtype, name)
    (x,), _ = promote_and_broadcast(x, dtype=dtype, operation=name)
    return x


def _float_binary(x, y, name):
    """Both operands in the dtype NumPy computes a float-only binary ufunc in."""
    dtype = inexact_dtype(operand(x), operand(y))
    _refuse_complex(dtype, name)
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation=name)
    return x, y


def _large(dtype) -> float:
    """The power of two beyond which ``1 + x*x`` is ``x*x`` to the dtype's precision."""
    return 2.0 ** math.ceil(-math.log2(dtypes.finfo(dtype).eps) / 2)


def _odd(fn, x, negative):
    """``fn`` on ``|x|`` with the sign of ``x`` put back: an odd function of ``x`` whose
    derivative at 0 is ``fn``'s (``sign(x) * fn(abs(x))`` would make it 0 there)."""
    magnitude = fn(lax.select(negative, lax.neg(x), x))
    return lax.select(negative, lax.neg(magnitude), magnitude)


def _sqrt_one_minus_square(x):
    """``sqrt(1 - x*x)``: exact near +-1, where ``1 - x*x`` loses every digit; as a product
    of roots its infinite slope at +-1 is not multiplied by the zero of the other factor."""
    one = typed_constant(1, x.dtype)
    return lax.mul(lax.sqrt(lax.sub(one, x)), lax.sqrt(lax.add(one, x)))


# --------------------------------------------------------------------------------------
# Inverse trigonometric and hyperbolic functions


@implements(UFUNCS, "arcsin", "asin")
@_or_complex(complex_arctrig.arcsin)
def arcsin(x):
    x = _real_float(x, "arcsin")
    return lax.atan2(x, _sqrt_one_minus_square(x))


@implements(UFUNCS, "arccos", "acos")
@_or_complex(complex_arctrig.arccos)
def arccos(x):
    x = _real_float(x, "arccos")
    return lax.atan2(_sqrt_one_minus_square(x), x)


@implements(UFUNCS, "arctan", "atan")
@_or_complex(complex_arctrig.arctan)
def arctan(x):
    x = _real_float(x, "arctan")
    return lax.atan2(x, typed_constant(1, x.dtype))


@implements(UFUNCS, "arcsinh", "asinh")
@_or_complex(complex_arctrig.arcsinh)
def arcsinh(x):
    """``log1p(a + a*a / (1 + sqrt(1 + a*a)))`` for ``a = |x|`` (no cancellation for small
    ``a``), ``log(a) + log(2)`` once ``a*a`` would swamp 1 (and later overflow); ``x``
    itself below the square root of the precision, which keeps ``-0.0``."""
    x = _real_float(x, "arcsinh")
    dtype = x.dtype
    large = typed_constant(_large(dtype), dtype)
    one = typed_constant(1, dtype)

    def magnitude(a):
        is_large = lax.gt(a, large)
        a_large = lax.select(is_large, a, one)
        a_small = lax.select(is_large, one, a)
        square = lax.mul(a_small, a_small)
        ratio = lax.div(square, lax.add(one, lax.sqrt(lax.add(one, square))))
        near = lax.log1p(lax.add(a_small, ratio))
        far = lax.add(lax.log(a_large), typed_constant(math.log(2.0), dtype))
        return lax.select(is_large, far, near)

    tiny = lax.lt(lax.abs(x), typed_constant(1 / _large(dtype), dtype))
    return lax.select(tiny, x, _odd(magnitude, x, lax.lt(x, typed_constant(0, dtype))))


@implements(UFUNCS, "arccosh", "acosh")
@_or_complex(complex_arctrig.arccosh)
def arccosh(x):
    """``log1p(t + sqrt(t) * sqrt(t + 2))`` for ``t = x - 1`` (exact near 1, where the
    slope is infinite), ``log(x) + log(2)`` for large ``x``."""
    x = _real_float(x, "arccosh")
    dtype = x.dtype
    is_large = lax.gt(x, typed_constant(_large(dtype), dtype))
    two = typed_constant(2, dtype)
    x_large = lax.select(is_large, x, two)
    t = lax.sub(lax.select(is_large, two, x), typed_constant(1, dtype))
    near = lax.log1p(lax.add(t, lax.mul(lax.sqrt(t), lax.sqrt(lax.add(t, two)))))
    far = lax.add(lax.log(x_large), typed_constant(math.log(2.0), dtype))
    return lax.select(is_large, far, near)


@implements(UFUNCS, "arctanh", "atanh")
@_or_complex(complex_arctrig.arctanh)
def arctanh(x):
    """``(log1p(x) - log1p(-x)) / 2``: exact near +-1 (``1 - x`` is computed exactly inside
    ``log1p``), odd to the last bit, and ``-0.0`` stays ``-0.0``."""
    x = _real_float(x, "arctanh")
    difference = lax.sub(lax.log1p(x), lax.log1p(lax.neg(x)))
    return lax.mul(typed_constant(0.5, x.dtype), difference)


# --------------------------------------------------------------------------------------
# Roots, hypot, angles


@implements(UFUNCS, "cbrt")
def cbrt(x):
    """``|x| ** (1/3)`` sharpened by one Newton step (the rounded exponent alone is off by
    up to ``ln|x| * 2**-54`` relatively, tens of ulps), with the sign of ``x``."""
    x = _real_float(x, "cbrt")
    dtype = x.dtype
    third = typed_constant(1 / 3, dtype)
    one = typed_constant(1, dtype)

    def magnitude(a):
        regular = lax.bitwise_and(
            lax.gt(a, typed_constant(0, dtype)), lax.lt(a, typed_constant(np.inf, dtype))
        )
        a_regular = lax.select(regular, a, one)
        y = lax.pow(a_regular, third)
        step = lax.sub(y, lax.div(a_regular, lax.mul(y, y)))
        sharpened = lax.sub(y, lax.div(step, typed_constant(3, dtype)))
        # 0, inf and NaN are their own roots; pow keeps the slope at 0 infinite.
        return lax.select(regular, sharpened, lax.pow(a, third))

    return _odd(magnitude, x, ufuncs.negative_sign(x))


@implements(UFUNCS, "hypot")
def hypot(x, y):
    """``|m| * sqrt(1 + (n/m)**2)`` with ``m`` the operand larger in magnitude: no overflow
    or underflow in between; an infinity wins over a NaN, as in C."""
    x, y = _float_binary(x, y, "hypot")
    dtype = x.dtype
    zero, one = typed_constant(0, dtype), typed_constant(1, dtype)
    x_bigger = lax.ge(lax.abs(x), lax.abs(y))
    m = lax.select(x_bigger, x, y)
    n = lax.select(x_bigger, y, x)
    regular = lax.bitwise_and(lax.ne(m, zero), lax.lt(lax.abs(m), typed_constant(np.inf, dtype)))
    m_regular = lax.select(regular, m, one)
    ratio = lax.div(lax.select(regular, n, zero), m_regular)
    scaled = lax.mul(lax.abs(m_regular), lax.sqrt(lax.add(one, lax.mul(ratio, ratio))))
    x_infinite, y_infinite = ufuncs.isinf(x), ufuncs.isinf(y)
    # |inf| with the slope hypot tends to there: 1 in the infinite operand.
    infinite = lax.abs(lax.select(x_infinite, x, y))
    # Not regular and not infinite: m is 0 (and n is 0 or NaN), or m is NaN.
    irregular = lax.add(lax.abs(m), lax.abs(n))
    finite = lax.select(regular, scaled, irregular)
    return lax.select(lax.bitwise_or(x_infinite, y_infinite), infinite, finite)


def _scale_by(factors, name):
    """A ufunc ``x * factor``; ``factors`` per dtype: NumPy's float32 loop multiplies by
    the constant computed in float32."""

    def scale(x):
        x = _real_float(x, name)
        if dtypes.is_narrow_float(x.dtype):  # NumPy's float16 loop scales in float32
            wide = lax.convert_element_type(x, dtypes.float32)
            return lax.convert_element_type(scale(wide), x.dtype)
        return lax.mul(x, typed_constant(factors[x.dtype], x.dtype))

    scale.__name__ = name
    return scale


_DEGREE = {dtypes.float64: math.pi / 180, dtypes.float32: np.float32(np.pi) / np.float32(180)}
_RADIAN = {dtypes.float64: 180 / math.pi, dtypes.float32: np.float32(180) / np.float32(np.pi)}
deg2rad = radians = implements(UFUNCS, "deg2rad", "radians")(_scale_by(_DEGREE, "deg2rad"))
rad2deg = degrees = implements(UFUNCS, "rad2deg", "degrees")(_scale_by(_RADIAN, "rad2deg"))


@implements(FUNCTIONS, "sinc")
def sinc(x):
    """``sin(pi x) / (pi x)`` as NumPy computes it, and near 0 its Taylor series, whose
    derivatives of every order are right at 0 (NumPy swaps in ``x = 1e-20`` there)."""
    x = operand(x)
    (x,), _ = promote_and_broadcast(x, dtype=result_type(x, 1.0), operation="sinc")
    dtype = x.dtype
    y = lax.mul(typed_constant(math.pi, dtype), x)
    # Below it the series' first dropped term, y**8 / 9!, is under the precision.
    threshold = (math.factorial(9) * dtypes.finfo(dtype).eps) ** 0.125
    small = lax.lt(lax.abs(y), typed_constant(threshold, dtype))
    y_large = lax.select(small, typed_constant(1, dtype), y)
    quotient = lax.div(lax.sin(y_large), y_large)
    square = lax.mul(y, y)
    series = typed_constant(-1 / math.factorial(7), dtype)
    for k in (2, 1, 0):
        series = lax.add(
            typed_constant((-1) ** k / math.factorial(2 * k + 1), dtype), lax.mul(square, series)
        )
    return lax.select(small, series, quotient)


# --------------------------------------------------------------------------------------
# Rounding toward zero


@implements(UFUNCS, "trunc")
def trunc(x):
    (x,), _ = promote_and_broadcast(x, operation="trunc")
    if dtypes.is_complex(x.dtype):
        raise ufuncs.complex_refused("trunc")
    if not dtypes.is_float(x.dtype):
        return x  # NumPy 2 keeps integers (and bools) as they are
    return lax.select(lax.lt(x, typed_constant(0, x.dtype)), lax.ceil(x), lax.floor(x))


@implements(FUNCTIONS, "fix")
def fix(x, out=None):
    return _maybe_out(trunc(x), out, "fix")


@implements(UFUNCS, "modf")
def modf(x):
    """(fractional part, integral part), each with the sign of ``x``; ``modf(inf)`` is
    ``(0.0, inf)``."""
    x = _real_float(x, "modf")
    whole = trunc(x)
    part = lax.select(ufuncs.isinf(x), typed_constant(0, x.dtype), lax.sub(x, whole))
    return _with_sign_of(part, x), whole


@implements(UFUNCS, "divmod")
def divmod(x, y):  # noqa: A001 - NumPy's name
    return ufuncs.floor_divide(x, y), ufuncs.remainder(x, y)


@implements(UFUNCS, "float_power")
def float_power(x, y):
    """``power`` computed in float64, or complex128 for complex operands."""
    complex_operands = dtypes.is_complex(result_type(operand(x), operand(y)))
    dtype = dtypes.complex128 if complex_operands else dtypes.float64
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="float_power")
    return lax.pow(x, y)


# --------------------------------------------------------------------------------------
# NaN-ignoring extrema, signs and steps


def _nan_ignoring(prim_fn, complex_fn, name):
    def fn(x, y):
        (x, y), _ = promote_and_broadcast(x, y, operation=name)
        if dtypes.is_complex(x.dtype):
            return complex_fn(x, y)
        extremum = prim_fn(x, y)
        if not dtypes.is_float(x.dtype):
            return extremum
        return lax.select(lax.ne(y, y), x, lax.select(lax.ne(x, x), y, extremum))

    fn.__name__ = name
    fn.__doc__ = f"numpy.{name}: like the plain extremum, but a NaN loses to a number."
    return fn


fmax = implements(UFUNCS, "fmax")(_nan_ignoring(lax.max, complex_math.fmax, "fmax"))
fmin = implements(UFUNCS, "fmin")(_nan_ignoring(lax.min, complex_math.fmin, "fmin"))


@implements(UFUNCS, "signbit")
def signbit(x):
    return ufuncs.negative_sign(_real_float(x, "signbit"))


def _with_sign_of(x, sign_source):
    flip = lax.ne(ufuncs.negative_sign(x), ufuncs.negative_sign(sign_source))
    return lax.select(flip, lax.neg(x), x)


@implements(UFUNCS, "copysign")
def copysign(x, y):
    """``x`` negated where its sign differs from ``y``'s (derivative +-1, at 0 too)."""
    x, y = _float_binary(x, y, "copysign")
    return _with_sign_of(x, y)


@implements(UFUNCS, "heaviside")
def heaviside(x, h0):
    """0 below 0, ``h0`` at 0, 1 above; NaN stays NaN."""
    x, h0 = _float_binary(x, h0, "heaviside")
    zero = typed_constant(0, x.dtype)
    at_zero = lax.select(lax.eq(x, zero), h0, x)  # x itself where it is NaN
    above = lax.select(lax.gt(x, zero), typed_constant(1, x.dtype), at_zero)
    return lax.select(lax.lt(x, zero), zero, above)


@implements(UFUNCS, "logaddexp2")
def logaddexp2(x, y):
    """``log2(2**x + 2**y)`` as NumPy: the larger plus ``log2(1 + 2**(smaller - larger))``;
    chosen by a select so every derivative is exact at ``x == y`` (see ``logaddexp``)."""
    x, y = _float_binary(x, y, "logaddexp2")
    dtype = x.dtype
    x_bigger = lax.ge(x, y)
    big = lax.select(x_bigger, x, y)
    below = lax.select(x_bigger, lax.sub(y, x), lax.sub(x, y))
    # Equal infinities: their difference is NaN, but 2**x == 2**y, so it is 0.
    equal_infinities = lax.bitwise_and(lax.ne(below, below), lax.eq(x, y))
    below = lax.select(equal_infinities, typed_constant(0, dtype), below)
    # NumPy multiplies by log2(e) rather than divide by log(2); so does this, rounding alike.
    log2_e = typed_constant(1 / math.log(2.0), dtype)
    return lax.add(big, lax.mul(lax.log1p(lax.pow(typed_constant(2, dtype), below)), log2_e))


# --------------------------------------------------------------------------------------
# NaN and infinity tests and replacement


@implements(FUNCTIONS, "isposinf")
def isposinf(x, out=None):
    return _maybe_out(ufuncs.equal(operand(x), np.inf), out, "isposinf")


@implements(FUNCTIONS, "isneginf")
def isneginf(x, out=None):
    return _maybe_out(ufuncs.equal(operand(x), -np.inf), out, "isneginf")


@implements(FUNCTIONS, "nan_to_num")
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, inf -> ``posinf`` (the dtype's largest by default), -inf ->
    ``neginf`` (its most negative); other dtypes unchanged. ``copy=False`` writes the
    result into ``x``, as NumPy does."""
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        return x.alias(mutable=True) if copy and isinstance(x, Tracer) else x
    limits = dtypes.finfo(x.dtype)
    out = x
    for test, value in (
        (ufuncs.isnan, nan),
        (isposinf, limits.max if posinf is None else posinf),
        (isneginf, limits.min if neginf is None else neginf),
    ):
        out = ufuncs.where(test(x), np.asarray(value, dtype=x.dtype), out)
    if not copy and functionalize.is_mutable(x):
        functionalize.write(x, out, "numpy.nan_to_num(..., copy=False)")
        return x
    return out


# --------------------------------------------------------------------------------------
# Greatest common divisor and least common multiple


def _integer_operands(x1, x2, name):
    dtype = arithmetic_dtype(operand(x1), operand(x2))  # bools in int8, as NumPy
    if not dtypes.is_integer(dtype):
        raise NumbaxTypeError(
            at_line(
                f"numpy.{name} takes integers, not {dtype}, as in NumPy; convert with "
                "x.astype(np.int64) if the values are whole numbers",
                user_frame_info(),
            )
        )
    (a, b), shape = promote_and_broadcast(x1, x2, dtype=dtype, operation=name)
    # Both full size: the loop's carry keeps its shape (a rank-0 operand stays rank 0).
    a, b = lax.broadcast_to_rank(a, shape), lax.broadcast_to_rank(b, shape)
    return lax.abs(a), lax.abs(b), dtype


def _unsigned(x):
    """``x`` in the unsigned dtype of its width, as NumPy computes gcd: ``|int8 min|``
    wraps to -128 and is 128 there."""
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    return lax.convert_element_type(x, unsigned) if x.dtype != unsigned else x


def _gcd_of_magnitudes(a, b):
    """Euclid's ``(a, b) -> (b, a mod b)`` on every element until all of ``b`` is 0; an
    element already done keeps its ``a``."""
    zero, one = typed_constant(0, a.dtype), typed_constant(1, a.dtype)
    every_axis = tuple(range(len(a.shape)))

    def running(carry):
        nonzero = lax.convert_element_type(lax.ne(carry[1], zero), dtypes.int32)
        return lax.gt(lax.reduce_sum(nonzero, every_axis), typed_constant(0, dtypes.int32))

    def step(carry):
        a, b = carry
        done = lax.eq(b, zero)
        remainder = lax.rem(a, lax.select(done, one, b))
        return lax.select(done, a, b), lax.select(done, zero, remainder)

    return while_loop(running, step, (a, b))[0]


@implements(UFUNCS, "gcd")
def gcd(x1, x2):
    """The greatest common divisor of ``|x1|`` and ``|x2|``; ``gcd(0, 0)`` is 0."""
    a, b, dtype = _integer_operands(x1, x2, "gcd")
    return lax.convert_element_type(_gcd_of_magnitudes(_unsigned(a), _unsigned(b)), dtype)


@implements(UFUNCS, "lcm")
def lcm(x1, x2):
    """``|x1| // gcd * |x2|`` (divided first, as NumPy, so it overflows only where the
    result does); 0 where either is 0."""
    a, b, dtype = _integer_operands(x1, x2, "lcm")
    a, b = _unsigned(a), _unsigned(b)
    divisor = _gcd_of_magnitudes(a, b)
    zero, one = typed_constant(0, a.dtype), typed_constant(1, a.dtype)
    either_zero = lax.eq(divisor, zero)
    quotient = lax.div(a, lax.select(either_zero, one, divisor))
    multiple = lax.select(either_zero, zero, lax.mul(quotient, b))
    return lax.convert_element_type(multiple, dtype)


def _maybe_out(result, out, name):
    return result if out is None else functionalize.write_out(out, result, name, "same_kind")
