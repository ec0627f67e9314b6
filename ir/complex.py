"""The primitives of complex numbers that no composition of the others computes: taking
a complex number apart (``real``, ``imag``), mirroring it (``conj``) and putting one
together from its parts (``complex``), as ``jax.lax``'s.

Every other complex operation is an existing primitive on complex dtypes (arithmetic,
``exp``, ``log``, ``sqrt``, ``sin``, ``cos``, ``tanh``, ``abs``, ``dot_general``, the
reductions) or a composition (``angle`` is ``atan2(imag, real)``). ``real`` and ``imag``
of a real operand are the operand and zeros, as NumPy's; ``conj`` of a real operand is the
operand. ``complex`` takes two operands of one real dtype (float32 gives complex64).
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .elementwise import common_shape, same_dtype
from .primitive import Pattern, check, register


def _part_rule(name):
    def rule(x: ShapedArray) -> ShapedArray:
        check(dtypes.is_inexact(x.dtype), name, f"needs a float or complex operand, got {x.dtype}")
        return ShapedArray(x.shape, dtypes.real_dtype(x.dtype))

    return rule


def _real(x):
    return np.array(np.real(x), copy=True)


def _imag(x):
    return np.array(np.imag(x), copy=True)


real_p = register("real", Pattern.ELEMENTWISE, _part_rule("real"), _real)
imag_p = register("imag", Pattern.ELEMENTWISE, _part_rule("imag"), _imag)


def _conj_rule(x: ShapedArray) -> ShapedArray:
    check(dtypes.is_inexact(x.dtype), "conj", f"needs a float or complex operand, got {x.dtype}")
    return x


conj_p = register("conj", Pattern.ELEMENTWISE, _conj_rule, np.conjugate)


def _complex_rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    dtype = same_dtype("complex", (x, y))
    check(dtypes.is_float(dtype), "complex", f"needs two real float operands, got {dtype}")
    return ShapedArray(common_shape("complex", (x, y)), dtypes.complex_dtype(dtype))


def _complex(x, y):
    # Not x + 1j * y, which turns an infinite part into NaNs.
    dtype = dtypes.complex_dtype(np.result_type(x, y))
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), dtype)
    out.real, out.imag = x, y
    return out


complex_p = register("complex", Pattern.ELEMENTWISE, _complex_rule, _complex)
