"""The dtypes numbax supports and NumPy 2 (NEP 50) type promotion.

numbax follows NumPy exactly: an array's dtype wins over a Python scalar's kind
(``float32 array * 2.0`` stays float32), a lone Python float is float64 and a lone
Python int is int64, and two arrays promote by NumPy's table.
"""

from __future__ import annotations

import numpy as np

from .errors import NumbaxTypeError

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")

SUPPORTED = (float32, float64, int32, int64, bool_)

SHORT_NAMES = {float32: "f32", float64: "f64", int32: "i32", int64: "i64", bool_: "bool"}
FROM_SHORT_NAME = {short: dtype for dtype, short in SHORT_NAMES.items()}

# Narrow NumPy dtypes are widened to the nearest supported one on entry, as JAX
# does with 64-bit types; anything else (complex, strings, objects) is refused.
_WIDEN = {
    np.dtype("int8"): int32,
    np.dtype("int16"): int32,
    np.dtype("uint8"): int32,
    np.dtype("uint16"): int32,
    np.dtype("uint32"): int64,
    np.dtype("float16"): float32,
}


def canonicalize(dtype) -> np.dtype:
    """Map a NumPy dtype (or anything ``np.dtype`` accepts) to a supported dtype."""
    dtype = np.dtype(dtype)
    if dtype in SHORT_NAMES:
        return dtype
    if dtype in _WIDEN:
        return _WIDEN[dtype]
    raise NumbaxTypeError(
        f"dtype {dtype} is not supported by numbax; supported dtypes are "
        "float32, float64, int32, int64 and bool. Convert the array with .astype() first."
    )


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_bool(dtype: np.dtype) -> bool:
    return dtype == bool_


def short_name(dtype: np.dtype) -> str:
    return SHORT_NAMES[np.dtype(dtype)]


def result_type(*operands) -> np.dtype:
    """NumPy 2's promotion over dtypes and Python scalars (weakly typed)."""
    return canonicalize(np.result_type(*operands))


def float_result_type(*operands) -> np.dtype:
    """The dtype of a true division or a transcendental ufunc: ints become float64."""
    dtype = result_type(*operands)
    return dtype if is_float(dtype) else float64


def float_to_integer_bounds(dtype: np.dtype) -> tuple[float, float, int]:
    """A float converts to ``dtype`` by truncation when it lies in [low, high); NaN and
    anything outside give ``invalid``, what NumPy's cast gives on x86-64 (the smallest
    integer). Compiled backends check the range in generated code: LLVM's fptosi of such a
    value is poison, and LLVM may fold ``float(int(x))`` to ``trunc(x)`` and return inf."""
    info = np.iinfo(dtype)
    return float(info.min), float(info.max) + 1.0, int(info.min)
