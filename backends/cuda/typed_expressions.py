"""Typed scalar expressions in generated CUDA source: each dtype's Numba type name, typed
constants, casts, integer wrap-around and libdevice calls by precision.

Every rule that writes scalar code (``scalar``, ``complex``, the reducers, scans and
contractions) spells its types through these, so a float32 kernel never meets a float64
literal and an int32 result wraps as NumPy's does.
"""

from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ...ir.errors import NumbaxTypeError
from .. import source as escape
from .narrow_floats import is_held_as_bits

TYPE_NAMES = {
    dtypes.float32: "float32",
    dtypes.float64: "float64",
    dtypes.int32: "int32",
    dtypes.int64: "int64",
    dtypes.bool_: "boolean",
    dtypes.complex64: "complex64",
    dtypes.complex128: "complex128",
}
# float16 is native on the GPU (``ld.global.u16`` + ``cvt.f32.f16``); bfloat16 is held as
# its bits (``narrow_floats``). The narrow_floats pass leaves conversions as the only
# operations that read either.
TYPE_NAMES.update({dtypes.float16: "float16", dtypes.int8: "int8", dtypes.int16: "int16"})
TYPE_NAMES.update({dtypes.uint8: "uint8", dtypes.uint16: "uint16", dtypes.uint32: "uint32"})
TYPE_NAMES[dtypes.uint64] = "uint64"


def type_name(dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype not in TYPE_NAMES:
        raise NumbaxTypeError(
            f"cuda codegen: no {dtype} arithmetic in a kernel (bfloat16 is held as its bits, "
            "which only conversions read): compile through passes.optimize, whose "
            "narrow_floats pass computes narrow floats in float32"
        )
    return TYPE_NAMES[dtype]


def constant(value, dtype) -> str:
    """A typed constant: ``float32(1.5)``, ``int64(-3)``, ``float64(-math.inf)``, ``True``;
    a bfloat16 one is its bits, ``uint16(16320)`` (1.5)."""
    dtype = np.dtype(dtype)
    if is_held_as_bits(dtype):
        bits = int(np.asarray(value, dtype).view(dtypes.uint16))
        return f"uint16({escape.number(bits, dtypes.uint16, 'math')})"
    text = escape.number(value, dtype, "math")
    return text if dtype == dtypes.bool_ else f"{type_name(dtype)}({text})"


def cast(expr: str, dtype) -> str:
    """Convert ``expr`` to ``dtype`` (to bool as NumPy does: non-zero is True)."""
    dtype = np.dtype(dtype)
    if dtype == dtypes.bool_:
        return f"({expr} != 0)"
    return f"{type_name(dtype)}({expr})"


def wrap(expr: str, dtype) -> str:
    """Integer arithmetic result in ``dtype``: Numba computes integers narrower than 64
    bits in 64 bits, and the cast back wraps around like NumPy's (uint8 200 + 100 is 44)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and dtype.itemsize < 8:
        return f"{type_name(dtype)}({expr})"
    return f"({expr})"


def libdevice(name: str, dtype, *args: str) -> str:
    suffix = "f" if np.dtype(dtype) == dtypes.float32 else ""
    return f"libdevice.{name}{suffix}({', '.join(args)})"
