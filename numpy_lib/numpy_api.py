"""``numbax.numpy``: the NumPy functions numbax traces, in one namespace.

The same functions are reached from plain NumPy through ``__array_function__`` and
``__array_ufunc__`` (see ``HANDLED_FUNCTIONS`` and ``HANDLED_UFUNCS``), so code written
against ``numpy`` traces unchanged.
"""

from __future__ import annotations

import numpy as np

from ..tracer.indexing import take, take_along_axis  # noqa: F401
from ..tracer.promote import asarray  # noqa: F401
from .creation import (  # noqa: F401
    arange,
    array,
    copy,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .linalg import dot, einsum, inner, matmul, outer, tensordot, vdot  # noqa: F401
from .reductions import (  # noqa: F401
    amax,
    amin,
    argmax,
    argmin,
    cumsum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from .shapes import (  # noqa: F401
    array_split,
    atleast_1d,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    hstack,
    moveaxis,
    pad,
    ravel,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    transpose,
    vstack,
)
from .ufuncs import (  # noqa: F401
    absolute,
    add,
    arctan2,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    ceil,
    clip,
    cos,
    cosh,
    divide,
    equal,
    exp,
    exp2,
    expm1,
    fabs,
    floor,
    floor_divide,
    fmod,
    greater,
    greater_equal,
    invert,
    isfinite,
    isinf,
    isnan,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    positive,
    power,
    reciprocal,
    remainder,
    right_shift,
    rint,
    round,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    where,
)

abs = absolute
# NumPy 2's array-API spellings name the same ufuncs (np.bitwise_not is np.invert).
bitwise_not = bitwise_invert = invert
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift
round_ = round
pi, e, inf, nan, newaxis = np.pi, np.e, np.inf, np.nan, None

# The scalar types (numbax.numpy.float32, ...) and dtype helpers (finfo, issubdtype, ...).
from . import numpy_dtypes  # noqa: E402

for _name in numpy_dtypes.NAMES:
    globals()[_name] = getattr(numpy_dtypes, _name)

_UFUNC_NAMES = [
    "absolute", "add", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "ceil", "cos", "cosh",
    "divide", "equal", "exp", "exp2", "expm1", "fabs", "floor", "floor_divide", "fmod", "greater",
    "greater_equal", "invert", "isfinite", "isinf", "isnan", "left_shift", "less", "less_equal",
    "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "multiply", "negative", "not_equal", "positive", "power",
    "reciprocal", "remainder", "right_shift", "rint", "sign", "sin", "sinh", "sqrt", "square",
    "subtract", "tan", "tanh",
]  # fmt: skip
HANDLED_UFUNCS = {getattr(np, name): globals()[name] for name in _UFUNC_NAMES}
HANDLED_UFUNCS[np.true_divide] = true_divide

# ufunc.reduce for the ufuncs that have a reduction primitive.
UFUNC_REDUCTIONS = {np.add: sum, np.multiply: prod, np.maximum: max, np.minimum: min}

_FUNCTION_NAMES = [
    "amax", "amin", "argmax", "argmin", "array_split", "atleast_1d", "broadcast_arrays",
    "broadcast_to", "clip", "concatenate", "copy", "cumsum", "dot", "einsum", "empty_like",
    "expand_dims", "flip", "full_like", "hstack", "inner", "matmul", "max", "mean", "min",
    "moveaxis", "ones_like", "outer", "pad", "prod", "ravel", "reshape", "round", "split",
    "squeeze", "stack", "std", "sum", "swapaxes", "take", "take_along_axis", "tensordot",
    "transpose", "var", "vdot", "vstack", "where", "zeros_like",
]  # fmt: skip
HANDLED_FUNCTIONS = {getattr(np, name): globals()[name] for name in _FUNCTION_NAMES}
HANDLED_FUNCTIONS[np.shape] = lambda a: tuple(a.shape)
HANDLED_FUNCTIONS[np.ndim] = lambda a: a.ndim
HANDLED_FUNCTIONS[np.size] = lambda a, axis=None: a.size if axis is None else a.shape[axis]
HANDLED_UFUNCS[np.matmul] = matmul

# Families of NumPy functions in modules of their own: each module's FUNCTIONS maps a NumPy
# function's name to its implementation and UFUNCS a ufunc's name; both join the tables
# above and this namespace.
from . import numpy_complex, numpy_construction, numpy_statistics, numpy_ufuncs, sorting  # noqa: E402, I001
from . import numpy_array_api, numpy_exponents, numpy_placement, numpy_polynomial  # noqa: E402
from . import numpy_histograms, numpy_index_tricks, numpy_queries, numpy_selection  # noqa: E402
from . import numpy_differences, numpy_sets  # noqa: E402

_FAMILIES = (
    numpy_construction, numpy_statistics, numpy_ufuncs, numpy_exponents, numpy_complex,
    numpy_array_api, numpy_polynomial, numpy_histograms, numpy_placement, numpy_index_tricks,
    numpy_queries, numpy_selection, numpy_sets, numpy_differences,
)  # fmt: skip
for _family in (*_FAMILIES, sorting):
    for _name, _implementation in _family.FUNCTIONS.items():
        globals()[_name] = _implementation
        HANDLED_FUNCTIONS[getattr(np, _name)] = _implementation
    for _name, _implementation in _family.UFUNCS.items():
        globals()[_name] = _implementation
        HANDLED_UFUNCS[getattr(np, _name)] = _implementation

# numbax.numpy's ufuncs are objects with NumPy's ufunc methods (numbax.numpy.add.outer),
# wrapped after the families above have added theirs; __array_ufunc__ finds the methods
# of numpy.add.outer(tracer, ...) here.
from .ufunc_methods import wrap_ufuncs  # noqa: E402

NUMBAX_UFUNCS = wrap_ufuncs(HANDLED_UFUNCS, globals())

from .einsum import einsum_path  # noqa: E402

HANDLED_FUNCTIONS[np.einsum_path] = einsum_path

from . import ranges  # noqa: E402

for _name, _implementation in ranges.FUNCTIONS.items():
    globals()[_name] = _implementation
    HANDLED_FUNCTIONS[getattr(np, _name)] = _implementation

# numpy.linalg is a namespace of its own: NumPy dispatches np.linalg.solve, not np.solve.
import types as _types  # noqa: E402

from . import numpy_linalg  # noqa: E402

linalg = _types.SimpleNamespace(**numpy_linalg.FUNCTIONS)
for _name, _implementation in numpy_linalg.FUNCTIONS.items():
    HANDLED_FUNCTIONS[getattr(np.linalg, _name)] = _implementation
# NumPy function -> why numbax refuses it, where the reason is more than "not yet".
LIMITATIONS = {getattr(np.linalg, name): why for name, why in numpy_linalg.LIMITATIONS.items()}
_PRINTING = (
    "a traced array has no value while tracing, so it has no text; "
    "numbax.debug.print('{}', x) prints its value each time the program runs"
)
_FILES = (
    "a traced function cannot write files (a compiled call would not write again); return "
    "the array and save it outside, or call numbax.debug.callback(numpy.save, path, x)"
)
_DATETIMES = "numbax has no datetime64 or timedelta64 dtypes"
for _names, _why in [
    (("array2string", "array_repr", "array_str"), _PRINTING),
    (("save", "savetxt", "savez", "savez_compressed"), _FILES),
    (("busday_count", "busday_offset", "datetime_as_string", "is_busday", "isnat"), _DATETIMES),
]:
    LIMITATIONS.update(dict.fromkeys((getattr(np, name) for name in _names), _why))

# numpy.fft likewise (fftfreq and rfftfreq take no array, so only numbax.numpy.fft's trace d).
from . import numpy_fft  # noqa: E402

fft = _types.SimpleNamespace(**numpy_fft.FUNCTIONS)
for _name, _implementation in numpy_fft.FUNCTIONS.items():
    HANDLED_FUNCTIONS[getattr(np.fft, _name)] = _implementation

# The NumPy functions that return views of their argument return numbax's views (a write
# through one reaches its base): views.FUNCTIONS, put in last over the plain ones above.
from . import views as _views  # noqa: E402

for _name, _implementation in _views.FUNCTIONS.items():
    globals()[_name] = _implementation
    HANDLED_FUNCTIONS[getattr(np, _name)] = _implementation
