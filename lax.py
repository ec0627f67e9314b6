"""``numbax.lax``: staged control flow and one typed wrapper per primitive, spelled as
in ``jax.lax``.

Unlike ``numbax.numpy``, these do no promotion or broadcasting: operands must already
agree in dtype and shape (rank-0 operands broadcast), as the primitives require.

>>> import numbax
>>> numbax.lax.fori_loop(0, 4, lambda i, total: total + i, 0)
array(6)
"""

from __future__ import annotations

from .api import cond, fori_loop, scan, switch, while_loop  # the public entry points
from .ir import dtypes as _dtypes
from .numpy_lib.sorting import top_k
from .tracer.control_flow import map_rows as map
from .tracer.lax import (
    abs,
    add,
    argmax,
    argmin,
    atan2,
    broadcast_in_dim,
    ceil,
    concatenate,
    convert_element_type,
    cos,
    cumsum,
    div,
    dot_general,
    dynamic_slice,
    dynamic_update_slice,
    eq,
    erf,
    exp,
    expand_dims,
    expm1,
    floor,
    ge,
    gt,
    integer_pow,
    le,
    log,
    log1p,
    logistic,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    pow,
    reduce_max,
    reduce_min,
    reduce_prod,
    reduce_sum,
    rem,
    reshape,
    round,
    rsqrt,
    select,
    sign,
    sin,
    slice,
    sort,
    sqrt,
    squeeze,
    stop_gradient,
    sub,
    tanh,
    transpose,
)
from .tracer.lax import iota as broadcasted_iota


def iota(dtype, size: int):
    """``[0, 1, ..., size - 1]`` of ``dtype``, as ``jax.lax.iota``."""
    return broadcasted_iota(_dtypes.canonicalize(dtype), (int(size),), 0)


__all__ = [
    "abs", "add", "argmax", "argmin", "atan2", "broadcast_in_dim", "broadcasted_iota", "ceil",
    "concatenate", "cond", "convert_element_type", "cos", "cumsum", "div", "dot_general",
    "dynamic_slice", "dynamic_update_slice", "eq", "erf", "exp", "expand_dims", "expm1", "floor",
    "fori_loop", "ge", "gt", "integer_pow", "iota", "le", "log", "log1p", "logistic", "lt",
    "map", "max", "min", "mul", "ne", "neg", "pow", "reduce_max", "reduce_min", "reduce_prod",
    "reduce_sum", "rem", "reshape", "round", "rsqrt", "scan", "select", "sign", "sin", "slice",
    "sort", "sqrt", "squeeze", "stop_gradient", "sub", "switch", "tanh", "top_k", "transpose",
    "while_loop",
]  # fmt: skip
