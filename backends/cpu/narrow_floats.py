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
  is rounded once, correctly, as ml_dtypes >= 0.7. The cuda backend compiles the same
  LLVM IR: both wrap the typing of ``backends.float_rounding`` in their ``intrinsic``.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .. import float_rounding

_HALF = ir.HalfType()
_I16 = ir.IntType(16)
_F32 = ir.FloatType()


@intrinsic
def float16_to_float32(typingctx, bits):
    if not float_rounding.is_narrow_bits(bits):
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


bfloat16_to_float32 = intrinsic(float_rounding.bfloat16_to_float32)
bfloat16_from_float = intrinsic(float_rounding.bfloat16_from_float)
