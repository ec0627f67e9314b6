"""float16 and bfloat16 in generated CPU code: stored as their bit patterns, computed in
float32.

Numba has no float16 or bfloat16 type on the CPU, so the generated program holds a narrow
float as its 16 bits (a ``uint16``, arrays included) and the ``narrow_floats`` pass has
left conversions as the only operations that read or make one. These are the
conversions, as LLVM instructions:

- float16: ``fpext``/``fptrunc`` through LLVM's ``half`` (one ``vcvtph2ps``/``vcvtps2ph``
  on x86-64 with F16C), rounding to nearest even, as NumPy's ``npy_float_to_half``. A
  float64 rounds to float16 directly (``fptrunc double to half``), as NumPy casts it:
  through float32 it would round twice.
- bfloat16: the upper half of a float32's bits (widening is a shift); narrowing rounds
  to nearest even and makes a NaN the quiet NaN of its sign, as ml_dtypes does; a float64
  is rounded once, correctly (through a float32 rounded to odd: the LLVM IR is shared with
  the cuda backend, ``backends.float_rounding``), as ml_dtypes >= 0.7.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..float_rounding import float32_rounded_to_odd

_HALF = ir.HalfType()
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_F32 = ir.FloatType()


def _is_bits(value) -> bool:
    return isinstance(value, types.Integer) and value.bitwidth == 16 and not value.signed


@intrinsic
def float16_to_float32(typingctx, bits):
    if not _is_bits(bits):
        return None

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], _HALF), _F32)

    return types.float32(bits), codegen


@intrinsic
def float16_from_float(typingctx, x):
    if x not in (types.float32, types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], _HALF), _I16)

    return types.uint16(x), codegen


@intrinsic
def bfloat16_to_float32(typingctx, bits):
    if not _is_bits(bits):
        return None

    def codegen(context, builder, signature, args):
        wide = builder.shl(builder.zext(args[0], _I32), ir.Constant(_I32, 16))
        return builder.bitcast(wide, _F32)

    return types.float32(bits), codegen


@intrinsic
def bfloat16_from_float(typingctx, x):
    if x not in (types.float32, types.float64):
        return None

    def codegen(context, builder, signature, args):
        value = args[0] if x == types.float32 else float32_rounded_to_odd(builder, args[0])
        bits = builder.bitcast(value, _I32)
        # Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate.
        lowest_kept = builder.and_(builder.lshr(bits, ir.Constant(_I32, 16)), ir.Constant(_I32, 1))
        rounded = builder.add(bits, builder.add(ir.Constant(_I32, 0x7FFF), lowest_kept))
        narrowed = builder.trunc(builder.lshr(rounded, ir.Constant(_I32, 16)), _I16)
        # A NaN becomes the quiet NaN of its sign, 0x7fc0 or 0xffc0, as ml_dtypes makes it
        # (the rounding add could carry a NaN's payload into the exponent: an infinity).
        sign = builder.trunc(builder.lshr(bits, ir.Constant(_I32, 16)), _I16)
        sign = builder.and_(sign, ir.Constant(_I16, 0x8000))
        quiet_nan = builder.or_(sign, ir.Constant(_I16, 0x7FC0))
        is_nan = builder.fcmp_unordered("uno", value, value)
        return builder.select(is_nan, quiet_nan, narrowed)

    return types.uint16(x), codegen
