"""Per-primitive emitters of scalar expressions: the body of every loop the cpu backend writes.

An emitter gets the operands as expressions (names of scalars already computed) and
returns one Python expression that Numba compiles to what the primitive means on one
element. Typing is exact: Numba widens ``int32 + int32`` to int64 and ``float32 * 1.5`` to
float64, so int32 results are cast back and every constant is a typed global
(``np.float32(1.5)`` bound once, see ``ScalarContext.constant``). Exponentials,
logarithms, tanh, logistic, sin and cos call ``fastmath``'s branch-free versions, which
vectorise (through ``mathlib``, which compiles each once instead of per program);
operations whose Numba meaning differs from the IR's (integer ``div``/``rem``, float
``max``/``min``, float ``rem``, ``select`` without a branch) call ``intrinsics``, and
shifts, undefined in LLVM for counts outside the bit width, select NumPy's result there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol

import numpy as np

from ...ir import dtypes
from ...ir.primitive import Pattern
from ...ir.rules import RuleTable
from .. import source as escape
from ..conversions import float_to_integer

INTRINSICS = "numbax.backends.cpu.intrinsics"
NARROW_FLOATS = "numbax.backends.cpu.narrow_floats"
MATHLIB = "numbax.backends.cpu.mathlib"
FASTMATH_PRIMITIVES = ("exp", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "erf")


class ScalarContext(Protocol):
    def constant(self, value, dtype: np.dtype) -> str:
        """The name of a module-level global holding ``value`` as a ``dtype`` scalar."""

    def function(self, module: str, attribute: str) -> str:
        """The name under which ``module.attribute`` is imported into the generated module."""


# An emitter: (context, operand dtype, output dtype, operand expressions, params) -> expression.
# Every elementwise primitive has one; the others are written as loops or calls.
Emitter = Callable[..., str]
EMITTERS = RuleTable(
    "cpu scalar emitters", not_applicable=lambda prim: prim.pattern is not Pattern.ELEMENTWISE
)


@functools.cache
def dtype_source(dtype) -> str:
    """``np.float32`` for float32: the dtype as generated code names it. A narrow float
    is held as its bits, ``np.uint16`` (Numba has no float16 on the CPU; see
    ``narrow_floats``). Remembered per dtype: NumPy's ``dtype.name`` is slow, and code
    generation asks for every operand."""
    dtype = storage_dtype(dtype)
    return f"np.{'bool_' if dtype == dtypes.bool_ else dtype.name}"


def storage_dtype(dtype) -> np.dtype:
    """The dtype generated code stores ``dtype`` as: uint16 bits for float16 and bfloat16."""
    dtype = np.dtype(dtype)
    return dtypes.uint16 if dtypes.is_narrow_float(dtype) else dtype


def cast(dtype: np.dtype, expression: str) -> str:
    return f"{dtype_source(dtype)}({expression})"


def _narrow(dtype: np.dtype, expression: str) -> str:
    """Numba computes arithmetic on integers narrower than 64 bits in 64 bits; wrap the
    result back, as NumPy does (uint8 200 + 100 is 44)."""
    return cast(dtype, expression) if dtype.kind in "iu" and dtype.itemsize < 8 else expression


def _is_float(dtype: np.dtype) -> bool:
    return dtypes.is_float(dtype)


def _is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


# --- unary ------------------------------------------------------------------------------


@EMITTERS.rule(*FASTMATH_PRIMITIVES)
def _fastmath(ctx, dtype, out_dtype, x, *, prim):
    if _is_complex(dtype):  # Numba's NumPy ufuncs of complex scalars: cmath's functions
        return f"np.{prim}({x})"
    return f"{ctx.function(MATHLIB, _fastmath_name(prim, dtype))}({x})"


def _fastmath_name(prim: str, dtype: np.dtype) -> str:
    return f"{prim}_{dtypes.short_name(dtype)}"


@EMITTERS.rule("neg")
def _neg(ctx, dtype, out_dtype, x, **_):
    return _narrow(dtype, f"-{x}")


@EMITTERS.rule("sqrt")
def _sqrt(ctx, dtype, out_dtype, x, **_):
    return f"np.sqrt({x})"


@EMITTERS.rule("rsqrt")
def _rsqrt(ctx, dtype, out_dtype, x, **_):
    return f"{ctx.constant(1, dtype)} / np.sqrt({x})"


@EMITTERS.rule("abs")
def _abs(ctx, dtype, out_dtype, x, **_):
    return _narrow(dtype, f"abs({x})")


@EMITTERS.rule("sign")
def _sign(ctx, dtype, out_dtype, x, **_):
    if _is_float(dtype):  # keeps NaN and signed zeros, as np.sign
        one, minus_one = ctx.constant(1, dtype), ctx.constant(-1, dtype)
        select = ctx.function(INTRINSICS, "select")
        return f"{select}({x} > 0, {one}, {select}({x} < 0, {minus_one}, {x}))"
    return cast(dtype, f"({x} > 0) - ({x} < 0)")


@EMITTERS.rule("floor", "ceil")
def _rounding(ctx, dtype, out_dtype, x, *, prim):
    return f"np.{prim}({x})"


@EMITTERS.rule("round")
def _round(ctx, dtype, out_dtype, x, **_):
    return f"np.rint({x})"  # round half to even, as np.round


@EMITTERS.rule("not")
def _not(ctx, dtype, out_dtype, x, **_):
    return f"(not {x})" if dtype == dtypes.bool_ else _narrow(dtype, f"~{x}")


@EMITTERS.rule("stop_gradient")
def _identity(ctx, dtype, out_dtype, x, **_):
    return x


# --- binary -----------------------------------------------------------------------------

_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^"}


@EMITTERS.rule(*_OPERATORS)
def _arithmetic(ctx, dtype, out_dtype, x, y, *, prim):
    return _narrow(dtype, f"({x} {_OPERATORS[prim]} {y})")


@EMITTERS.rule("div")
def _div(ctx, dtype, out_dtype, x, y, **_):
    if _is_float(dtype):
        return f"({x} / {y})"  # IEEE: the backend compiles with error_model="numpy"
    if _is_complex(dtype):
        return cast(dtype, f"{ctx.function(INTRINSICS, 'complex_div')}({x}, {y})")
    return f"{ctx.function(INTRINSICS, 'div_trunc')}({x}, {y})"


@EMITTERS.rule("rem")
def _rem(ctx, dtype, out_dtype, x, y, **_):
    name = "fmod" if _is_float(dtype) else "rem_trunc"
    return f"{ctx.function(INTRINSICS, name)}({x}, {y})"


@EMITTERS.rule("pow")
def _pow(ctx, dtype, out_dtype, x, y, **_):
    if _is_complex(dtype):
        return cast(dtype, f"{ctx.function(INTRINSICS, 'complex_pow')}({x}, {y})")
    return f"np.power({x}, {y})"


@EMITTERS.rule("atan2")
def _atan2(ctx, dtype, out_dtype, x, y, **_):
    return f"np.arctan2({x}, {y})"


@EMITTERS.rule("max", "min")
def _max_min(ctx, dtype, out_dtype, x, y, *, prim):
    if _is_float(dtype):
        name = "maximum" if prim == "max" else "minimum"
        return f"{ctx.function(INTRINSICS, name)}({x}, {y})"
    if dtype == dtypes.bool_:
        return f"({x} {'|' if prim == 'max' else '&'} {y})"
    return _narrow(dtype, f"{prim}({x}, {y})")


@EMITTERS.rule("shift_left", "shift_right_arithmetic")
def _shift(ctx, dtype, out_dtype, x, y, *, prim):
    # LLVM's shifts are undefined for a count outside [0, bits), where NumPy's are not: the
    # count is masked into range and the lanes it was outside of take NumPy's result.
    bits = dtype.itemsize * 8
    zero = ctx.constant(0, dtype)
    in_range = f"(({y} >= {zero}) & ({y} < {ctx.constant(bits, dtype)}))"
    count = f"({y} & {ctx.constant(bits - 1, dtype)})"
    if prim == "shift_left":
        shifted, out_of_range = f"({x} << {count})", zero
    else:
        shifted, out_of_range = f"({x} >> {count})", _sign_fill(ctx, dtype, x, bits)
    select = ctx.function(INTRINSICS, "select")
    return f"{select}({in_range}, {_narrow(dtype, shifted)}, {out_of_range})"


def _sign_fill(ctx, dtype, x, bits):
    """Every bit the sign bit: what shifting a signed ``x`` right by ``bits`` leaves."""
    if dtype.kind == "u":
        return ctx.constant(0, dtype)
    return _narrow(dtype, f"({x} >> {ctx.constant(bits - 1, dtype)})")


_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@EMITTERS.rule(*_COMPARISONS)
def _compare(ctx, dtype, out_dtype, x, y, *, prim):
    return f"({x} {_COMPARISONS[prim]} {y})"


@EMITTERS.rule("integer_pow")
def _integer_pow(ctx, dtype, out_dtype, x, *, y, **_):
    if _is_complex(dtype):  # NumPy's products and its zero and infinite cases
        exponent = ctx.constant(complex(y), dtype)
        return cast(dtype, f"{ctx.function(INTRINSICS, 'complex_pow')}({x}, {exponent})")
    one = ctx.constant(1, dtype)
    exponent = abs(y)
    if exponent == 0:
        power = one
    elif exponent <= 4:
        power = "(" + " * ".join([x] * exponent) + ")"
    else:
        exponent = escape.number(exponent, dtypes.int64, "np")
        power = f"{ctx.function(INTRINSICS, 'integer_pow')}({x}, {exponent}, {one})"
    return f"({one} / {power})" if y < 0 else _narrow(dtype, power)


@EMITTERS.rule("select")
def _select(ctx, dtype, out_dtype, predicate, on_true, on_false, **_):
    return f"{ctx.function(INTRINSICS, 'select')}({predicate}, {on_true}, {on_false})"


@EMITTERS.rule("convert_element_type")
def _convert(ctx, dtype, out_dtype, x, **_):
    if out_dtype == dtype:
        return x
    if dtypes.is_narrow_float(dtype):  # its bits, widened exactly: then as from float32
        widen = ctx.function(NARROW_FLOATS, f"{_narrow_name(dtype)}_to_float32")
        x, dtype = f"{widen}({x})", dtypes.float32
        if out_dtype == dtype:
            return x
    if dtypes.is_narrow_float(out_dtype):
        if dtype != dtypes.float64:
            x = cast(dtypes.float32, x)  # exact for every value a narrow float can hold
        return f"{ctx.function(NARROW_FLOATS, f'{_narrow_name(out_dtype)}_from_float')}({x})"
    if out_dtype == dtypes.bool_:
        return f"({x} != {ctx.constant(0, dtype)})"
    if _is_float(dtype) and out_dtype.kind in "iu":
        return _float_to_integer(ctx, dtype, out_dtype, x)
    return cast(out_dtype, x)


def _float_to_integer(ctx, dtype, out_dtype, x) -> str:
    """NumPy's cast on x86-64 (``backends.conversions``), in selects: ``&`` and a select,
    not ``and`` and ``if``, so there are no branches for Numba to type and lower (the
    conversion of an out-of-range value is discarded by the select)."""
    select = ctx.function(INTRINSICS, "select")
    return float_to_integer(
        x,
        dtype,
        out_dtype,
        select=lambda predicate, a, b: f"{select}({predicate}, {a}, {b})",
        both=lambda a, b: f"({a}) & ({b})",
        constant=ctx.constant,
        cast=cast,
    )


# --- complex ----------------------------------------------------------------------------


@EMITTERS.rule("real", "imag")
def _part(ctx, dtype, out_dtype, x, *, prim):
    if _is_complex(dtype):
        return f"{x}.{prim}"
    return x if prim == "real" else ctx.constant(0, out_dtype)


@EMITTERS.rule("conj")
def _conj(ctx, dtype, out_dtype, x, **_):
    return f"{x}.conjugate()" if _is_complex(dtype) else x


@EMITTERS.rule("complex")
def _complex(ctx, dtype, out_dtype, x, y, **_):
    return cast(out_dtype, f"complex({x}, {y})")


@EMITTERS.rule("threefry2x32")
def _threefry2x32(ctx, dtype, out_dtype, key0, key1, count0, count1, *, output, **_):
    # One call of a helper compiled once per process (cpu/threefry.py), not the cipher
    # written out in every kernel.
    helper = ctx.function(INTRINSICS, f"threefry2x32_{output}")
    return f"{helper}({key0}, {key1}, {count0}, {count1})"


def emit(ctx: ScalarContext, prim: str, in_dtype, out_dtype, args, params) -> str:
    """The scalar expression of one elementwise primitive applied to ``args``."""
    fn = EMITTERS.get(prim)
    if fn is None:
        raise NotImplementedError(f"the cpu backend has no scalar emitter for {prim!r}")
    return fn(ctx, in_dtype, out_dtype, *args, prim=prim, **params)


def _narrow_name(dtype: np.dtype) -> str:
    return "float16" if dtype == dtypes.float16 else "bfloat16"


def literal_source(value, dtype: np.dtype) -> str:
    """Python source for a scalar constant of ``dtype``, exact (round-trips every float);
    a narrow float's is its bits."""
    if dtypes.is_narrow_float(dtype):
        bits = int(np.asarray(value, dtype=dtype).view(dtypes.uint16))
        return cast(dtypes.uint16, escape.number(bits, dtypes.uint16, "np"))
    text = escape.number(value, dtype, "np")
    return text if dtype == dtypes.bool_ else cast(dtype, text)
