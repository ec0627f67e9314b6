"""bfloat16 conversions and the rounding of float64 into a narrower float, in LLVM IR:
plain instructions that any Numba target compiles, so the cpu and cuda backends share one
implementation (``cpu.narrow_floats``, ``cuda.narrow_floats``), each wrapping the typing
functions here in its target's ``intrinsic``.

A bfloat16 is held as its 16 bits, a ``uint16``: the upper half of a float32's bits.
Widening is a shift; narrowing rounds to nearest even on the float32's bits and makes a
NaN the quiet NaN of its sign, ml_dtypes' result bit for bit. A float64 is rounded once,
correctly (through a float32 rounded to odd), as ml_dtypes >= 0.7 casts it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types

BFLOAT16_QUIET_NAN = 0x7FC0  # ml_dtypes' bfloat16 NaN; with the sign bit, 0xffc0
BFLOAT16_HALF_ULP = 0x7FFF  # added with the lowest kept bit: round to nearest, ties to even

_I16, _I32, _F32 = ir.IntType(16), ir.IntType(32), ir.FloatType()


def float32_rounded_to_odd(builder, x):
    """The float64 ``x`` as a float32, rounded to odd: toward zero, with the lowest bit set
    when inexact. Rounding that once more to bfloat16 (16 fewer bits) is the correctly
    rounded bfloat16 of ``x``, as ml_dtypes (>= 0.7) casts float64; through a float32
    rounded to nearest it would round twice. A NaN stays a NaN; past float32's range the
    result is its largest finite value, which bfloat16 rounds to infinity."""
    nearest = builder.fptrunc(x, _F32)
    widened = builder.fpext(nearest, x.type)
    inexact = builder.fcmp_ordered("one", widened, x)
    fabs = builder.module.declare_intrinsic("llvm.fabs", [x.type])
    away = builder.fcmp_ordered("ogt", builder.call(fabs, [widened]), builder.call(fabs, [x]))
    bits = builder.bitcast(nearest, _I32)
    toward_zero = builder.sub(bits, builder.zext(away, _I32))
    odd = builder.or_(toward_zero, ir.Constant(_I32, 1))
    return builder.select(inexact, builder.bitcast(odd, _F32), nearest)


def _to_float32_code(context, builder, signature, args):
    wide = builder.shl(builder.zext(args[0], _I32), ir.Constant(_I32, 16))
    return builder.bitcast(wide, _F32)


def _from_float_code(context, builder, signature, args):
    value = args[0] if args[0].type == _F32 else float32_rounded_to_odd(builder, args[0])
    bits = builder.bitcast(value, _I32)
    upper = builder.lshr(bits, ir.Constant(_I32, 16))
    lowest_kept = builder.and_(upper, ir.Constant(_I32, 1))
    rounded = builder.add(bits, builder.add(ir.Constant(_I32, BFLOAT16_HALF_ULP), lowest_kept))
    narrowed = builder.trunc(builder.lshr(rounded, ir.Constant(_I32, 16)), _I16)
    # A NaN becomes the quiet NaN of its sign (the rounding add could carry a NaN's
    # payload into the exponent: an infinity).
    sign = builder.and_(builder.trunc(upper, _I16), ir.Constant(_I16, 0x8000))
    quiet_nan = builder.or_(sign, ir.Constant(_I16, BFLOAT16_QUIET_NAN))
    is_nan = builder.fcmp_unordered("uno", value, value)
    return builder.select(is_nan, quiet_nan, narrowed)


def is_narrow_bits(numba_type) -> bool:
    """Whether ``numba_type`` is the ``uint16`` a narrow float is held as."""
    return numba_type == types.uint16


# The typing of the two intrinsics (and, through it, their code), for a target's
# ``intrinsic`` decorator; named as the intrinsics they make.
def bfloat16_to_float32(typingctx, bits):
    """``uint16`` bits -> the float32 they are the upper half of (exact)."""
    if is_narrow_bits(bits):
        return types.float32(bits), _to_float32_code
    return None


def bfloat16_from_float(typingctx, x):
    """float32 or float64 -> the ``uint16`` bits of its bfloat16, rounded as ml_dtypes."""
    if x in (types.float32, types.float64):
        return types.uint16(x), _from_float_code
    return None
