"""``numbax.numpy``'s scalar types and dtype helpers, as ``jax.numpy`` code uses them.

``numbax.numpy.float32`` (and every other scalar type) is NumPy's type, made to convert a
traced array: ``float32(x)`` is ``x.astype(float32)`` inside a traced function and
NumPy's ``np.float32(x)`` outside; as a dtype (``zeros(3, float32)``, ``x.astype(float32)``,
``x.dtype == float32``) it is NumPy's. ``bfloat16`` is ml_dtypes' (present when ml_dtypes
is installed). ``finfo``, ``issubdtype`` and ``promote_types`` also know bfloat16, as
JAX's do; ``mgrid``, ``ogrid``, ``s_`` and ``index_exp`` are NumPy's (their arguments are
Python numbers, so they build constants).

>>> import numpy as np, numbax
>>> import numbax.numpy as xnp
>>> numbax.jit(lambda x: xnp.float32(x) * 2)(np.arange(3.0))
array([0., 2., 4.], dtype=float32)
>>> xnp.issubdtype(xnp.zeros(2, xnp.float32).dtype, xnp.floating)
True
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..tracer.numpy_namespace import SCALAR_TYPES, _scalar_type

bool_ = SCALAR_TYPES["bool_"]
int8, int16 = SCALAR_TYPES["int8"], SCALAR_TYPES["int16"]
int32, int64 = SCALAR_TYPES["int32"], SCALAR_TYPES["int64"]
uint8, uint16 = SCALAR_TYPES["uint8"], SCALAR_TYPES["uint16"]
uint32, uint64 = SCALAR_TYPES["uint32"], SCALAR_TYPES["uint64"]
float16, float32, float64 = (
    SCALAR_TYPES["float16"],
    SCALAR_TYPES["float32"],
    SCALAR_TYPES["float64"],
)
complex64, complex128 = SCALAR_TYPES["complex64"], SCALAR_TYPES["complex128"]

# NumPy's other names of the same types (float_ and complex_ as NumPy 1 and JAX have them).
bool = bool_  # noqa: A001
int_, uint, intp, uintp = int64, uint64, int64, uint64
half, single, double, float_ = float16, float32, float64, float64
csingle, cdouble, complex_ = complex64, complex128, complex128

# The abstract types, for issubdtype.
generic, number, inexact = np.generic, np.number, np.inexact
floating, complexfloating = np.floating, np.complexfloating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger

dtype = np.dtype
iinfo = np.iinfo
mgrid, ogrid, s_, index_exp = np.mgrid, np.ogrid, np.s_, np.index_exp

SCALAR_TYPE_NAMES = [
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "int_", "uint", "intp", "uintp",
    "half", "single", "double", "float_", "csingle", "cdouble", "complex_",
]  # fmt: skip
NAMES = [
    *SCALAR_TYPE_NAMES, "generic", "number", "inexact", "floating", "complexfloating", "integer",
    "signedinteger", "unsignedinteger", "dtype", "iinfo", "finfo", "issubdtype", "promote_types",
    "mgrid", "ogrid", "s_", "index_exp",
]  # fmt: skip

if dtypes.bfloat16 is not None:
    bfloat16 = _scalar_type(dtypes.bfloat16.type)
    SCALAR_TYPE_NAMES.append("bfloat16")
    NAMES.append("bfloat16")


def _dtype_of(value) -> np.dtype:
    """The dtype ``value`` names: a dtype, a scalar type, a dtype's name, or an array's."""
    if hasattr(value, "dtype") and not isinstance(value, type):
        return np.dtype(value.dtype)
    return np.dtype(value)


def finfo(value):
    """``np.finfo`` of a dtype, scalar type or array, bfloat16 included.

    >>> import numbax.numpy as xnp
    >>> float(xnp.finfo(xnp.float32).eps)
    1.1920928955078125e-07
    """
    return dtypes.finfo(_dtype_of(value))


def issubdtype(arg1, arg2) -> bool:
    """``np.issubdtype``, where ``arg2`` may be one of numbax's scalar types and
    bfloat16 is a floating type (as in JAX).

    >>> import numpy as np, numbax.numpy as xnp
    >>> xnp.issubdtype(np.float32, xnp.float32), xnp.issubdtype(np.int8, xnp.integer)
    (True, True)
    """
    if isinstance(arg2, type) and issubclass(arg2, np.generic) and arg2 not in _ABSTRACT:
        arg2 = np.dtype(arg2).type  # numbax.numpy.float32 is np.float32's subclass
    if dtypes.bfloat16 is not None and _dtype_of(arg1) == dtypes.bfloat16:
        if isinstance(arg2, type) and arg2 in _ABSTRACT:
            return arg2 in (np.generic, np.number, np.inexact, np.floating)
        return _dtype_of(arg2) == dtypes.bfloat16
    return np.issubdtype(_dtype_of(arg1), arg2)


_ABSTRACT = (generic, number, inexact, floating, complexfloating, integer, signedinteger)
_ABSTRACT += (unsignedinteger,)


def promote_types(type1, type2) -> np.dtype:
    """The dtype two dtypes promote to, by NumPy's table (bfloat16 by JAX's).

    >>> import numbax.numpy as xnp
    >>> xnp.promote_types(xnp.int8, xnp.float32)
    dtype('float32')
    """
    return dtypes.result_type(_dtype_of(type1), _dtype_of(type2))
