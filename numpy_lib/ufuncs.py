"""NumPy's elementwise functions over tracers, as compositions of elementwise prims.

Each function promotes its operands as NumPy 2 does (``promote_and_broadcast``), then
binds. Transcendental functions of integers compute in the narrowest float that holds
them (float16 for int8, float64 for int32), as NumPy's loops do.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, UnsupportedFunctionError, at_line
from ..tracer import lax
from ..tracer.promote import (
    Scalar,
    asarray,
    broadcast_shapes,
    broadcast_to,
    comparison_dtype,
    operand,
    promote_and_broadcast,
    result_type,
    shape_of,
)
from ..tracer.source_info import user_frame_info
from . import complex_math


def inexact_dtype(*xs) -> np.dtype:
    """The dtype NumPy computes a transcendental ufunc in: bools and ints go to the
    narrowest float that holds them (int8 to float16, int16 to float32, int32 to
    float64)."""
    return dtypes.transcendental_result_type(result_type(*xs))


def _float_unary(prim_fn, name):
    def fn(x):
        x = operand(x)
        dtype = inexact_dtype(x)
        (x,), _ = promote_and_broadcast(x, dtype=dtype, operation=name)
        return prim_fn(x)

    fn.__name__ = name
    return fn


def real_or_complex(real_fn, complex_fn):
    """``complex_fn`` on complex operands (promoted to one dtype), ``real_fn`` otherwise:
    the complex cases NumPy defines and no primitive computes (``complex_math``)."""

    def fn(*xs):
        return complex_fn(*xs) if dtypes.is_complex(xs[0].dtype) else real_fn(*xs)

    return fn


def _same_unary(prim_fn, name):
    def fn(x):
        (x,), _ = promote_and_broadcast(x, operation=name)
        return prim_fn(x)

    fn.__name__ = name
    return fn


exp = _float_unary(lax.exp, "exp")
log = _float_unary(lax.log, "log")
log1p = _float_unary(real_or_complex(lax.log1p, complex_math.log1p), "log1p")
expm1 = _float_unary(real_or_complex(lax.expm1, complex_math.expm1), "expm1")
sin = _float_unary(lax.sin, "sin")
cos = _float_unary(lax.cos, "cos")
tanh = _float_unary(lax.tanh, "tanh")
sqrt = _float_unary(lax.sqrt, "sqrt")
negative = _same_unary(lax.neg, "negative")
sign = _same_unary(real_or_complex(lax.sign, complex_math.sign), "sign")
fabs = _float_unary(lax.abs, "fabs")
rint = _float_unary(
    real_or_complex(lax.round, lambda z: complex_math.round_parts(z, lax.round)), "rint"
)


def absolute(x):
    (x,), _ = promote_and_broadcast(x, operation="absolute")
    return x if x.dtype == dtypes.bool_ else lax.abs(x)


def _integral_identity_or(prim_fn, name):
    """floor/ceil/round of an integer array is the array itself, as in NumPy; of a
    complex one NumPy has no loop (round has, see ``round``)."""

    def fn(x):
        (x,), _ = promote_and_broadcast(x, operation=name)
        if dtypes.is_complex(x.dtype):
            raise complex_refused(name)
        return prim_fn(x) if dtypes.is_float(x.dtype) else x

    fn.__name__ = name
    return fn


floor = _integral_identity_or(lax.floor, "floor")
ceil = _integral_identity_or(lax.ceil, "ceil")
_round_half_even = _integral_identity_or(lax.round, "round")


def complex_refused(name: str) -> NumbaxTypeError:
    """NumPy's TypeError for a ufunc with no complex loop."""
    return NumbaxTypeError(
        at_line(
            f"numpy.{name} is not defined on complex numbers (NumPy raises TypeError too); "
            "apply it to the parts, z.real and z.imag",
            user_frame_info(),
        )
    )


def round(x, decimals=0):
    """Half to even, at ``decimals`` digits; a complex number part by part, as NumPy."""
    if dtypes.is_complex(result_type(operand(x))):
        (z,), _ = promote_and_broadcast(x, operation="round")
        return complex_math.round_parts(z, lambda part: round(part, decimals))
    if decimals == 0:
        return _round_half_even(x)
    (x,), _ = promote_and_broadcast(x, operation="round")
    if not dtypes.is_float(x.dtype):
        if decimals > 0:
            return x  # an integer has no digits after the point
        # NumPy rounds integers to tens, hundreds, ... and keeps their dtype.
        rounded = round(lax.convert_element_type(x, dtypes.float64), decimals)
        return lax.convert_element_type(rounded, x.dtype)
    scale = 10.0**decimals
    return lax.div(
        lax.round(lax.mul(x, typed_constant(scale, x.dtype))), typed_constant(scale, x.dtype)
    )


def positive(x):
    return operand(x)


def logical_not(x):
    return lax.logical_not(_to_bool(x))


def invert(x):
    x = operand(x)
    (x,), _ = promote_and_broadcast(x, dtype=_bitwise_dtype("invert", x), operation="invert")
    return lax.logical_not(x)


def arithmetic_dtype(*xs) -> np.dtype:
    """NumPy has no bool loop for most arithmetic ufuncs and computes bools in int8."""
    dtype = result_type(*xs)
    return dtypes.int8 if dtype == dtypes.bool_ else dtype


def square(x):
    (x,), _ = promote_and_broadcast(x, dtype=arithmetic_dtype(operand(x)), operation="square")
    return lax.integer_pow(x, 2)


def reciprocal(x):
    x = operand(x)
    (x,), _ = promote_and_broadcast(x, dtype=arithmetic_dtype(x), operation="reciprocal")
    return lax.div(typed_constant(1, x.dtype), x)


def tan(x):
    x = _as_float(x, "tan")
    return lax.div(lax.sin(x), lax.cos(x))


def sinh(x):
    x = _as_float(x, "sinh")
    half = typed_constant(0.5, x.dtype)
    return lax.mul(half, lax.sub(lax.exp(x), lax.exp(lax.neg(x))))


def cosh(x):
    x = _as_float(x, "cosh")
    half = typed_constant(0.5, x.dtype)
    return lax.mul(half, lax.add(lax.exp(x), lax.exp(lax.neg(x))))


def _log_base(x, base: int, name: str):
    """``e + log(x / base**e) / log(base)``, ``e`` the answer rounded to an integer: exact
    at the powers of ``base`` as libm is (``log10(1000) == 3``, which ``log(x) / log(10)``
    misses), within about an ulp elsewhere. ``e`` is clamped so ``base**e`` stays a normal
    number; ``x / base**e`` carries 0, inf and NaN through."""
    x = _as_float(x, name)
    if dtypes.is_complex(x.dtype):
        return complex_math.log_base(x, base)
    dtype = x.dtype
    limits, log_2 = dtypes.finfo(dtype), math.log(2, base)
    lowest = typed_constant(math.ceil(log_2 * limits.minexp), dtype)
    highest = typed_constant(math.floor(log_2 * (limits.maxexp - 1)), dtype)
    log_base = typed_constant(math.log(base), dtype)
    e = lax.min(lax.max(lax.round(lax.div(lax.log(x), log_base)), lowest), highest)
    scaled = lax.div(x, lax.pow(typed_constant(base, dtype), e))
    return lax.add(e, lax.div(lax.log(scaled), log_base))


def log2(x):
    return _log_base(x, 2, "log2")


def log10(x):
    return _log_base(x, 10, "log10")


def exp2(x):
    """``2 ** x`` by ``pow``: ``exp(x * log(2))`` is hundreds of ulps off for large ``x``,
    where the rounding of ``x * log(2)`` is multiplied by the result."""
    x = _as_float(x, "exp2")
    if dtypes.is_complex(x.dtype):
        return complex_math.exp2(x)
    return lax.pow(typed_constant(2, x.dtype), x)


def arctan2(y, x):
    (y, x), _ = promote_and_broadcast(
        y, x, dtype=inexact_dtype(operand(y), operand(x)), operation="arctan2"
    )
    return lax.atan2(y, x)


def _binary(prim_fn, name, dtype_rule=None):
    """A binary ufunc of one primitive. ``dtype_rule(name, x, y)``, when given, picks the
    dtype both operands are converted to (NumPy's promotion otherwise)."""

    def fn(x, y):
        x, y = operand(x), operand(y)
        dtype = dtype_rule(name, x, y) if dtype_rule else None
        (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation=name)
        return prim_fn(x, y)

    fn.__name__ = name
    return fn


subtract = _binary(lax.sub, "subtract")
maximum = _binary(real_or_complex(lax.max, complex_math.maximum), "maximum")
minimum = _binary(real_or_complex(lax.min, complex_math.minimum), "minimum")


def add(x, y):
    """On bools NumPy's add is logical or (``mask + mask``)."""
    (x, y), _ = promote_and_broadcast(x, y, operation="add")
    return lax.bitwise_or(x, y) if x.dtype == dtypes.bool_ else lax.add(x, y)


def multiply(x, y):
    """On bools NumPy's multiply is logical and."""
    (x, y), _ = promote_and_broadcast(x, y, operation="multiply")
    return lax.bitwise_and(x, y) if x.dtype == dtypes.bool_ else lax.mul(x, y)


def fmod(x, y):
    dtype = arithmetic_dtype(operand(x), operand(y))
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="fmod")
    return lax.rem(x, y)


def _comparison_dtype(name, x, y) -> np.dtype:
    return comparison_dtype(x, y)


equal = _binary(lax.eq, "equal", _comparison_dtype)
not_equal = _binary(lax.ne, "not_equal", _comparison_dtype)
# Complex numbers compare lexicographically, real part first (``complex_math``).
less = _binary(real_or_complex(lax.lt, complex_math.less), "less", _comparison_dtype)
less_equal = _binary(
    real_or_complex(lax.le, complex_math.less_equal), "less_equal", _comparison_dtype
)
greater = _binary(real_or_complex(lax.gt, complex_math.greater), "greater", _comparison_dtype)
greater_equal = _binary(
    real_or_complex(lax.ge, complex_math.greater_equal), "greater_equal", _comparison_dtype
)


def _bitwise_dtype(name, *xs) -> np.dtype:
    """NumPy's bitwise ufuncs have loops for integers and bools only."""
    dtype = result_type(*xs)
    if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
        raise NumbaxTypeError(
            at_line(
                f"numpy.{name} is defined on integers and bools, not on {dtype} (NumPy "
                "raises TypeError too); convert the operands with .astype(np.int64), or "
                "compare them (x != 0) for a truth value",
                user_frame_info(),
            )
        )
    return dtype


bitwise_and = _binary(lax.bitwise_and, "bitwise_and", _bitwise_dtype)
bitwise_or = _binary(lax.bitwise_or, "bitwise_or", _bitwise_dtype)
bitwise_xor = _binary(lax.bitwise_xor, "bitwise_xor", _bitwise_dtype)


def _shift_dtype(name, x, y) -> np.dtype:
    """NumPy has no bool loop for shifts and computes bools in int8."""
    dtype = _bitwise_dtype(name, x, y)
    return dtypes.int8 if dtype == dtypes.bool_ else dtype


left_shift = _binary(lax.shift_left, "left_shift", _shift_dtype)
right_shift = _binary(lax.shift_right_arithmetic, "right_shift", _shift_dtype)


def true_divide(x, y):
    dtype = dtypes.float_result_type(result_type(operand(x), operand(y)))
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="divide")
    return lax.div(x, y)


divide = true_divide


def floor_divide(x, y):
    dtype = arithmetic_dtype(operand(x), operand(y))
    is_float = dtypes.is_float(dtype)
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="floor_divide")
    if is_float:
        return _float_divmod(x, y)[0]
    quotient = lax.div(x, y)  # truncates toward zero
    remainder = lax.rem(x, y)
    zero = typed_constant(0, remainder.dtype)
    adjust = lax.bitwise_and(
        lax.ne(remainder, zero),
        lax.ne(lax.lt(remainder, zero), lax.lt(y, typed_constant(0, remainder.dtype))),
    )
    return lax.select(adjust, lax.sub(quotient, typed_constant(1, quotient.dtype)), quotient)


def negative_sign(x):
    """Whether the sign of float ``x`` is negative, ``-0.0`` included: atan2(-0.0, -1) is
    -pi."""
    return lax.lt(lax.atan2(x, typed_constant(-1, x.dtype)), typed_constant(0, x.dtype))


def _float_divmod(x, y):
    """NumPy's ``npy_divmod``: the floor quotient and the remainder with the divisor's
    sign, computed from ``fmod`` so that they agree (``1 // 0.1`` is 9, not
    ``floor(1 / 0.1)`` = 10), with NumPy's signed zeros; division by 0 is ``x / y`` and
    ``fmod``."""
    zero, one = typed_constant(0, x.dtype), typed_constant(1, x.dtype)
    mod = lax.rem(x, y)
    by_zero = lax.eq(y, zero)
    div = lax.div(lax.sub(x, mod), y)
    adjust = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.lt(y, zero), lax.lt(mod, zero)))
    mod = lax.select(adjust, lax.add(mod, y), mod)
    div = lax.select(adjust, lax.sub(div, one), div)
    signed_zero = lax.select(negative_sign(y), lax.neg(zero), zero)
    mod = lax.select(lax.eq(mod, zero), signed_zero, mod)
    floor = lax.floor(div)
    snapped = lax.select(
        lax.gt(lax.sub(div, floor), typed_constant(0.5, x.dtype)), lax.add(floor, one), floor
    )
    quotient = lax.div(x, y)
    zero_quotient = lax.select(negative_sign(quotient), lax.neg(zero), zero)
    floordiv = lax.select(lax.eq(div, zero), zero_quotient, snapped)
    return lax.select(by_zero, quotient, floordiv), lax.select(by_zero, lax.rem(x, y), mod)


def remainder(x, y):
    """Python's modulo: the result takes the sign of the divisor, as np.remainder."""
    dtype = arithmetic_dtype(operand(x), operand(y))
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="remainder")
    if dtypes.is_float(dtype):
        return _float_divmod(x, y)[1]
    r = lax.rem(x, y)
    zero = typed_constant(0, r.dtype)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


def power(x, y):
    x, y = operand(x), operand(y)
    exponent = _static_integer(y)
    if exponent is not None and (exponent >= 0 or dtypes.is_inexact(result_type(x, y))):
        (x,), _ = promote_and_broadcast(x, dtype=result_type(x, y), operation="power")
        return lax.integer_pow(x, exponent)
    dtype = result_type(x, y)
    if not dtypes.is_inexact(dtype):
        raise UnsupportedFunctionError(
            at_line(
                "power of integer arrays with an array exponent is not supported; convert "
                "the base to float (x.astype(float)) or use a Python int exponent",
                user_frame_info(),
            )
        )
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="power")
    return lax.pow(x, y)


def _static_integer(y):
    """A Python or concrete NumPy scalar exponent with an integer value, else None."""
    if isinstance(y, bool):
        return None
    if isinstance(y, int):
        return y
    if isinstance(y, float) and y.is_integer() and abs(y) <= 64:
        return int(y)
    if isinstance(y, (np.ndarray, np.generic)) and np.shape(y) == () and y.dtype.kind in "iu":
        return int(y)
    return None


def logical_and(x, y):
    return lax.bitwise_and(*promote_and_broadcast(_to_bool(x), _to_bool(y))[0])


def logical_or(x, y):
    return lax.bitwise_or(*promote_and_broadcast(_to_bool(x), _to_bool(y))[0])


def logical_xor(x, y):
    return lax.bitwise_xor(*promote_and_broadcast(_to_bool(x), _to_bool(y))[0])


def logaddexp(x, y):
    """log(exp(x) + exp(y)) without overflow, as NumPy: big + log1p(exp(small - big)).

    The larger operand is chosen by a select, not ``max``/``abs``: each side of the select
    (``x + log1p(exp(y - x))`` and its mirror) equals logaddexp everywhere and is smooth,
    so every derivative is exact, at ``x == y`` too (``max``'s tie rule and ``abs``'s kink
    would make the second derivative 0 there instead of 1/4).
    """
    dtype = inexact_dtype(operand(x), operand(y))
    (x, y), _ = promote_and_broadcast(x, y, dtype=dtype, operation="logaddexp")
    x_bigger = lax.ge(x, y)
    big = lax.select(x_bigger, x, y)
    below = lax.select(x_bigger, lax.sub(y, x), lax.sub(x, y))
    # Equal infinities: their difference is NaN, but exp(x) == exp(y), so it is 0.
    equal_infinities = lax.bitwise_and(lax.ne(below, below), lax.eq(x, y))
    below = lax.select(equal_infinities, typed_constant(0, dtype), below)
    return lax.add(big, lax.log1p(lax.exp(below)))


def where(condition, x=None, y=None):
    if x is None or y is None:
        raise UnsupportedFunctionError(
            at_line(
                "numpy.where(condition) with one argument returns data-dependent indices; "
                "use the three-argument form numpy.where(condition, x, y)",
                user_frame_info(),
            )
        )
    condition = _to_bool(condition)
    x, y = operand(x), operand(y)
    shape = broadcast_shapes(shape_of(condition), shape_of(x), shape_of(y), operation="where")
    (x, y), _ = promote_and_broadcast(x, y, operation="where")
    condition, x, y = (
        v if shape_of(v) == () else broadcast_to(v, shape) for v in (condition, x, y)
    )
    return lax.select(condition, x, y)


def clip(x, a_min=None, a_max=None, *, min=None, max=None):
    # ``min``/``max`` are NumPy 2's keyword spellings of the bounds.
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    out = operand(x)
    a_min, a_max = (_clip_bound(out, bound) for bound in (a_min, a_max))
    if a_min is not None:
        out = maximum(out, a_min)
    if a_max is not None:
        out = minimum(out, a_max)
    return out


def _clip_bound(x, bound):
    """NumPy 2 clips an integer array at a Python int outside its range (uint8 at -1)
    without raising: such a bound is the dtype's own limit."""
    dtype = result_type(x)
    if not (dtypes.is_integer(dtype) and type(bound) is int):
        return bound
    limits = np.iinfo(dtype)
    return builtins.min(builtins.max(bound, int(limits.min)), int(limits.max))


def isnan(x):
    x = operand(x)
    if dtypes.is_complex(result_type(x)):
        return complex_math.isnan(asarray(x))
    return not_equal(x, x) if dtypes.is_float(result_type(x)) else _full_bool(x, False)


def isinf(x):
    x = operand(x)
    if dtypes.is_complex(result_type(x)):
        return complex_math.isinf(asarray(x))
    if not dtypes.is_float(result_type(x)):
        return _full_bool(x, False)
    return equal(absolute(x), np.inf)


def isfinite(x):
    x = operand(x)
    if dtypes.is_complex(result_type(x)):
        return complex_math.isfinite(asarray(x))
    if not dtypes.is_float(result_type(x)):
        return _full_bool(x, True)
    return less(absolute(x), np.inf)


def _full_bool(x, value):
    return lax.full(shape_of(x), value, dtypes.bool_)


def _to_bool(x):
    x = operand(x)
    if isinstance(x, Scalar):
        return bool(x)
    if result_type(x) == dtypes.bool_:
        return x
    return not_equal(x, 0)


def _as_float(x, name):
    x = operand(x)
    (x,), _ = promote_and_broadcast(x, dtype=inexact_dtype(x), operation=name)
    return x


def typed_constant(value, dtype):
    return np.asarray(value).astype(dtype)
