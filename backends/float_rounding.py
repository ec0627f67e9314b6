"""Rounding of float64 into a narrower float in LLVM IR, shared by the backends' bfloat16
conversions (``cpu.narrow_floats``, ``cuda.narrow_floats``): plain instructions that any
Numba target compiles."""

from __future__ import annotations

from llvmlite import ir


def float32_rounded_to_odd(builder, x):
    """The float64 ``x`` as a float32, rounded to odd: toward zero, with the lowest bit set
    when inexact. Rounding that once more to bfloat16 (16 fewer bits) is the correctly
    rounded bfloat16 of ``x``, as ml_dtypes (>= 0.7) casts float64; through a float32
    rounded to nearest it would round twice. A NaN stays a NaN; past float32's range the
    result is its largest finite value, which bfloat16 rounds to infinity."""
    i32, f32 = ir.IntType(32), ir.FloatType()
    nearest = builder.fptrunc(x, f32)
    widened = builder.fpext(nearest, x.type)
    inexact = builder.fcmp_ordered("one", widened, x)
    fabs = builder.module.declare_intrinsic("llvm.fabs", [x.type])
    away = builder.fcmp_ordered("ogt", builder.call(fabs, [widened]), builder.call(fabs, [x]))
    bits = builder.bitcast(nearest, i32)
    toward_zero = builder.sub(bits, builder.zext(away, i32))
    odd = builder.or_(toward_zero, ir.Constant(i32, 1))
    return builder.select(inexact, builder.bitcast(odd, f32), nearest)
