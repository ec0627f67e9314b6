"""Elementwise primitives: unary math, binary arithmetic, comparisons, bitwise logic and
shifts, select, dtype conversion.

``and``, ``or``, ``xor`` and ``not`` are bitwise on integers and logical on bools, as
``lax.bitwise_and`` and friends are. ``shift_left`` and ``shift_right_arithmetic`` have
NumPy's meaning for every count: a count outside ``[0, bits)`` (negative, or at least the
bit width) shifts every bit out, leaving 0, or for a right shift of a signed integer the
sign bit everywhere (an unsigned integer has no sign bit, so zeros).

Operands of an n-ary elementwise primitive have one dtype and one shape, except that
rank-0 operands broadcast (so ``mul a 2.0:f32[]`` needs no broadcast equation). The
front end inserts ``broadcast_in_dim`` and ``convert_element_type`` for everything
else, so these rules stay strict.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .primitive import Pattern, check, register


def common_shape(name: str, avals) -> tuple[int, ...]:
    shapes = {a.shape for a in avals if a.shape != ()}
    check(len(shapes) <= 1, name, lambda: f"shapes differ: {[a.str_short() for a in avals]}")
    return shapes.pop() if shapes else ()


def same_dtype(name: str, avals) -> np.dtype:
    kinds = {a.dtype for a in avals}
    check(len(kinds) == 1, name, lambda: f"operand dtypes differ: {[a.str_short() for a in avals]}")
    return kinds.pop()


def _quiet(fn):
    """NumPy warns on overflow, 0/0 and log(0); numbax, like JAX, returns inf/nan quietly."""

    def impl(*args, **params):
        with np.errstate(all="ignore"):
            return fn(*args, **params)

    impl.without_errstate = fn  # for a caller already in a quiet errstate (tiered.py)
    return impl


def _unary_rule(name, allowed_kinds):
    def rule(x: ShapedArray) -> ShapedArray:
        check(dtypes.kind(x.dtype) in allowed_kinds, name, lambda: f"unsupported dtype {x.dtype}")
        return x

    return rule


def _binary_rule(name, allowed_kinds, out_dtype=None):
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        dtype = same_dtype(name, (x, y))
        check(dtypes.kind(dtype) in allowed_kinds, name, lambda: f"unsupported dtype {dtype}")
        return ShapedArray(common_shape(name, (x, y)), out_dtype or dtype)

    return rule


FLOAT = "f"
NUMERIC = "fiu"
# Complex too: the functions NumPy (and Numba, through cmath) define on complex numbers.
INEXACT = "fc"
ARITHMETIC = "fiuc"
ANY = "fiub"
INTEGRAL = "iub"
INTEGER = "iu"


def _in_float64(fn):
    """``fn`` of a real float narrower than float64 computed in float64, then rounded once.

    NumPy's own float32 exp, log, sin, ... are SIMD approximations with errors of up to
    2-4 ulps; the compiled code's are within 1-3 (``backends/cpu/fastmath.py``,
    ``ULP_BOUNDS``). Computed in float64 (errors of at most an ulp of float64) and
    rounded, the reference is the exact result correctly rounded in all but the rarest
    cases, so the interpreted first call and the compiled program agree within the
    compiled math's documented bound (tests/backends/test_tier_math.py).
    """

    def reference(x):
        x = np.asarray(x)
        if not dtypes.is_float(x.dtype) or x.dtype == dtypes.float64:
            return fn(x)
        return fn(x.astype(dtypes.float64)).astype(x.dtype)

    reference.__name__ = fn.__name__
    return reference


@_in_float64
def _logistic(x):
    # The compiled formula (fastmath's): e = exp(-|x|) never overflows, and for x < 0 the
    # result e / (1 + e) keeps the tiny values 1 / (1 + exp(-x)) rounds to 0
    # (logistic(-710.0) is 4.5e-309, not 0.0).
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def _rsqrt(x):
    return 1 / np.sqrt(x)


@_in_float64
def _erf(x):
    # NumPy has no erf; SciPy, a dependency of numbax, is imported only when one is
    # evaluated (``ir`` imports NumPy alone). Within an ulp of float64.
    from scipy.special import erf

    return erf(x)


# name: (NumPy reference, accepted dtype kinds, expensive, differentiable)
UNARY = {
    "neg": (np.negative, ARITHMETIC, False, True),
    "exp": (_in_float64(np.exp), INEXACT, True, True),
    "log": (_in_float64(np.log), INEXACT, True, True),
    "log1p": (_in_float64(np.log1p), FLOAT, True, True),
    "expm1": (_in_float64(np.expm1), FLOAT, True, True),
    "sin": (_in_float64(np.sin), INEXACT, True, True),
    "cos": (_in_float64(np.cos), INEXACT, True, True),
    "tanh": (_in_float64(np.tanh), INEXACT, True, True),
    "logistic": (_logistic, FLOAT, True, True),
    "erf": (_erf, FLOAT, True, True),
    "sqrt": (np.sqrt, INEXACT, True, True),
    "rsqrt": (_rsqrt, INEXACT, True, True),
    "abs": (np.abs, ARITHMETIC, False, True),
    "sign": (np.sign, NUMERIC, False, False),
    "floor": (np.floor, FLOAT, False, False),
    "ceil": (np.ceil, FLOAT, False, False),
    "round": (np.round, FLOAT, False, False),
    "not": (np.invert, INTEGRAL, False, False),
}


def _abs_rule(x: ShapedArray) -> ShapedArray:
    check(dtypes.kind(x.dtype) in ARITHMETIC, "abs", lambda: f"unsupported dtype {x.dtype}")
    return ShapedArray(x.shape, dtypes.real_dtype(x.dtype))  # |complex| is real


for _name, (_fn, _kinds, _expensive, _diff) in UNARY.items():
    register(
        _name,
        Pattern.ELEMENTWISE,
        _abs_rule if _name == "abs" else _unary_rule(_name, _kinds),
        _quiet(_fn),
        expensive=_expensive,
        differentiable=_diff,
    )


def _div(x, y):
    if dtypes.kind(x.dtype) in INEXACT:
        return np.true_divide(x, y)
    # Integer division truncates toward zero, as in C and lax.div.
    quotient = np.floor_divide(x, y)
    inexact = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return np.where(inexact, quotient + 1, quotient).astype(x.dtype)


BINARY = {
    "add": (np.add, ARITHMETIC, False, True),
    "sub": (np.subtract, ARITHMETIC, False, True),
    "mul": (np.multiply, ARITHMETIC, False, True),
    "div": (_div, ARITHMETIC, True, True),
    "pow": (np.power, INEXACT, True, True),
    "max": (np.maximum, ANY, False, True),
    "min": (np.minimum, ANY, False, True),
    "atan2": (np.arctan2, FLOAT, True, True),
    "rem": (np.fmod, NUMERIC, False, True),
    "and": (np.bitwise_and, INTEGRAL, False, False),
    "or": (np.bitwise_or, INTEGRAL, False, False),
    "xor": (np.bitwise_xor, INTEGRAL, False, False),
    "shift_left": (np.left_shift, INTEGER, False, False),
    "shift_right_arithmetic": (np.right_shift, INTEGER, False, False),
}

for _name, (_fn, _kinds, _expensive, _diff) in BINARY.items():
    register(
        _name,
        Pattern.ELEMENTWISE,
        _binary_rule(_name, _kinds),
        _quiet(_fn),
        expensive=_expensive,
        differentiable=_diff,
    )

COMPARISONS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}

for _name, _fn in COMPARISONS.items():
    register(
        _name,
        Pattern.ELEMENTWISE,
        # Complex numbers are not ordered: only equality compares them.
        _binary_rule(_name, ANY + "c" if _name in ("eq", "ne") else ANY, out_dtype=dtypes.bool_),
        _quiet(_fn),
        differentiable=False,
    )


def _integer_pow_rule(x: ShapedArray, *, y: int) -> ShapedArray:
    check(dtypes.kind(x.dtype) in ARITHMETIC, "integer_pow", f"unsupported dtype {x.dtype}")
    check(isinstance(y, int), "integer_pow", f"exponent must be a Python int, got {y!r}")
    check(y >= 0 or dtypes.kind(x.dtype) in INEXACT, "integer_pow", "negative power of an integer")
    return x


def _integer_pow(x, *, y):
    return np.power(x, x.dtype.type(y)) if dtypes.kind(x.dtype) in INEXACT else np.power(x, y)


register("integer_pow", Pattern.ELEMENTWISE, _integer_pow_rule, _quiet(_integer_pow))


def _select_rule(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray):
    check(pred.dtype == dtypes.bool_, "select", lambda: f"predicate must be bool, got {pred.dtype}")
    dtype = same_dtype("select", (on_true, on_false))
    return ShapedArray(common_shape("select", (pred, on_true, on_false)), dtype)


register("select", Pattern.ELEMENTWISE, _select_rule, np.where)


def _convert_rule(x: ShapedArray, *, new_dtype) -> ShapedArray:
    # Which part a complex number keeps is said with ``real``, never by a conversion.
    dropping = dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype)
    check(
        not dropping,
        "convert_element_type",
        lambda: f"{x.dtype} to {new_dtype}: take real first",
    )
    return ShapedArray(x.shape, new_dtype)


def _convert(x, *, new_dtype):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f" and np.dtype(new_dtype).kind in "iu":
            # The steps the compiled backends take (``dtypes.float_to_integer_steps``):
            # NumPy's own uint32 cast answers by where a value lies in the array.
            wide, split = dtypes.float_to_integer_steps(new_dtype)
            if split is None:
                return x.astype(wide).astype(new_dtype)
        return x.astype(new_dtype)


register("convert_element_type", Pattern.ELEMENTWISE, _convert_rule, _convert)


def _identity_rule(x: ShapedArray) -> ShapedArray:
    return x


register(
    "stop_gradient",
    Pattern.ELEMENTWISE,
    _identity_rule,
    lambda x: x,
    differentiable=False,
)
