"""The dtypes numbax supports and NumPy 2 (NEP 50) type promotion.

numbax follows NumPy exactly: an array's dtype wins over a Python scalar's kind
(``float32 array * 2.0`` stays float32, ``uint8 array + 1`` stays uint8), a lone Python
float is float64 and a lone Python int is int64, and two arrays promote by NumPy's table.
Every NumPy numeric dtype is kept as it is (no widening on entry): bool, int8-int64,
uint8-uint64, float16, float32, float64, complex64, complex128, and bfloat16 when
ml_dtypes is installed, which promotes as JAX's table says (bf16 + int8 and bf16 + 2.0
are bf16, bf16 + f16 is f32). ml_dtypes gives bfloat16 the kind "V": ``kind`` and the
``is_*`` predicates here say "f".
"""

from __future__ import annotations

import numpy as np

from .errors import NumbaxTypeError

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float16 = np.dtype("float16")

try:  # bfloat16 comes from ml_dtypes (the package JAX uses), an optional dependency
    import ml_dtypes
except ImportError:
    ml_dtypes = None
bfloat16 = np.dtype(ml_dtypes.bfloat16) if ml_dtypes is not None else None

SUPPORTED = (float32, float64, int32, int64, bool_, complex64, complex128)
SUPPORTED += (int8, int16, uint8, uint16, uint32, uint64, float16)
SUPPORTED += (bfloat16,) if bfloat16 is not None else ()

SHORT_NAMES = {float32: "f32", float64: "f64", int32: "i32", int64: "i64", bool_: "bool"}
SHORT_NAMES.update({complex64: "c64", complex128: "c128"})
SHORT_NAMES.update({int8: "i8", int16: "i16", uint8: "u8", uint16: "u16", uint32: "u32"})
SHORT_NAMES.update({uint64: "u64", float16: "f16"})
if bfloat16 is not None:
    SHORT_NAMES[bfloat16] = "bf16"
FROM_SHORT_NAME = {short: dtype for dtype, short in SHORT_NAMES.items()}
# What ``canonicalize`` answers without NumPy's parsing: each supported dtype, by itself,
# its scalar type and its name (every equation's abstract value is made through it).
_SUPPORTED = {key: dtype for dtype in SHORT_NAMES for key in (dtype, dtype.type, dtype.name)}

# The floats narrower than float32: stored narrow, computed in float32 by the compiled
# backends (what NumPy's float16 loops do), accumulated in float32 by reductions.
NARROW_FLOATS = (float16,) + ((bfloat16,) if bfloat16 is not None else ())


def canonicalize(dtype) -> np.dtype:
    """``dtype`` (anything ``np.dtype`` accepts) as a supported dtype, or an error naming it."""
    try:
        return _SUPPORTED[dtype]  # a supported dtype, its scalar type or its name
    except (KeyError, TypeError):  # another, or an unhashable spec
        pass
    if isinstance(dtype, str) and dtype == "bfloat16" and bfloat16 is None:
        raise NumbaxTypeError(
            "bfloat16 needs the ml_dtypes package (pip install ml_dtypes), as in JAX"
        )
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")  # a byte-swapped dtype (data from a file): its values
    if native in SHORT_NAMES:
        return native
    raise NumbaxTypeError(
        f"dtype {dtype} is not supported by numbax; supported dtypes are bool, int8-int64, "
        "uint8-uint64, float16, bfloat16, float32, float64, complex64 and complex128. "
        "Convert the array with .astype() first."
    )


def kind(dtype: np.dtype) -> str:
    """NumPy's kind letter, with bfloat16 a float ("f"): ml_dtypes registers it as "V"."""
    dtype = np.dtype(dtype)
    return "f" if dtype == bfloat16 else dtype.kind


def is_float(dtype: np.dtype) -> bool:
    return kind(dtype) == "f"


def is_narrow_float(dtype: np.dtype) -> bool:
    """float16 or bfloat16: what compiled backends compute in float32 and store narrow."""
    return np.dtype(dtype) in NARROW_FLOATS


def finfo(dtype: np.dtype):
    """``np.finfo``, which also knows bfloat16 through ml_dtypes."""
    if np.dtype(dtype) == bfloat16:
        return ml_dtypes.finfo(bfloat16)
    return np.finfo(dtype)


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """Floating point, real or complex: what carries a derivative."""
    return kind(dtype) in "fc"


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's parts (float32 of complex64); a real dtype itself."""
    return np.dtype(np.finfo(dtype).dtype) if is_complex(dtype) else dtype


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts are ``dtype`` (complex64 of float32, of complex64)."""
    return complex64 if np.dtype(dtype) in (float32, complex64) else complex128


def is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_bool(dtype: np.dtype) -> bool:
    return dtype == bool_


def short_name(dtype: np.dtype) -> str:
    return SHORT_NAMES[np.dtype(dtype)]


def result_type(*operands) -> np.dtype:
    """NumPy 2's promotion over dtypes and Python scalars (weakly typed); bfloat16 as JAX
    promotes it."""
    if bfloat16 is not None and any(_is_bfloat16(x) for x in operands):
        return _bfloat16_result_type(operands)
    return canonicalize(np.result_type(*operands))


def _is_bfloat16(operand) -> bool:
    return isinstance(operand, (np.dtype, type)) and np.dtype(operand) == bfloat16


def _bfloat16_result_type(operands) -> np.dtype:
    """JAX's table: bfloat16 absorbs bools, integers and Python scalars (bf16 + int8 and
    bf16 + 2.0 stay bf16), and meets another inexact dtype as float32 would (bf16 + f16
    is f32, bf16 + f64 is f64, bf16 + c64 is c64)."""
    others = [x for x in operands if not _is_bfloat16(x)]
    inexact = [
        x
        for x in others
        if isinstance(x, complex) or (isinstance(x, (np.dtype, type)) and is_inexact(x))
    ]
    if not inexact:
        return bfloat16
    return canonicalize(np.result_type(float32, *inexact))


def float_result_type(*operands) -> np.dtype:
    """The dtype of a true division: ints and bools become float64, as in NumPy."""
    dtype = result_type(*operands)
    return dtype if is_inexact(dtype) else float64


def transcendental_result_type(*operands) -> np.dtype:
    """The dtype of a transcendental ufunc (``np.sin``, ``np.sqrt``): an integer or bool
    goes to the narrowest float that holds it exactly, as NumPy's loops do (int8, uint8
    and bool to float16, int16 and uint16 to float32, wider ones to float64)."""
    dtype = result_type(*operands)
    if is_inexact(dtype):
        return dtype
    return next(f for f in (float16, float32, float64) if np.can_cast(dtype, f))


def float_to_integer_bounds(dtype: np.dtype) -> tuple[float, float, int]:
    """A float converts to the signed ``dtype`` (int32 or int64) by truncation when it
    lies in [low, high); NaN and anything outside give ``invalid``, the smallest integer,
    as x86-64's conversion instructions do. Compiled backends check the range in generated
    code: LLVM's fptosi of such a value is poison, and LLVM may fold ``float(int(x))`` to
    ``trunc(x)`` and return inf."""
    info = np.iinfo(dtype)
    return float(info.min), float(info.max) + 1.0, int(info.min)


def float_to_integer_steps(dtype: np.dtype) -> tuple[np.dtype, float | None]:
    """How a float converts to integer ``dtype`` as NumPy's cast does on x86-64, where
    a value out of range is not an error (NumPy warns, "invalid value encountered in
    cast") but a result every backend gives alike: ``(wide, split)``. The float converts
    to the signed ``wide`` (int32 for the integers of up to 16 bits and int32, int64 for
    uint32 and the 64-bit ones) as ``float_to_integer_bounds`` says; where ``split`` is
    set (uint64: 2^63) a float at or above it is lowered by it first and ``wide``'s top
    bit flipped after; the bits are then wrapped into ``dtype``. So 260.0 is 4 as uint8
    and -1.0 is 255; 1e10 is 0 as uint8 and int16 (int32's smallest, wrapped); NaN is
    the smallest int32 or int64, wrapped. NumPy's uint32 cast gives two answers for a
    negative or too large value, by where it lies in the array (its vector loop and its
    scalar loop differ: -3e9 is 2147483648 in one, 1294967296 in the other); this is its
    scalar loop's, through int64, the one its scalars and short arrays take."""
    dtype = np.dtype(dtype)
    wide = int64 if dtype.itemsize == 8 or dtype == uint32 else int32
    split = float(2**63) if dtype == uint64 else None
    return wide, split
