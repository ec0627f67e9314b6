"""Typed wrappers that bind one primitive each, lax-style.

Operands must already agree in dtype and shape (rank-0 operands broadcast); the NumPy
front end (``numpy_api``) does promotion and broadcasting before calling these.
Transforms emit their rules through these functions.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.complex import real_p
from ..ir.primitive import PRIMITIVES
from .core import bind
from .source_info import warn_at_user_line

P = PRIMITIVES


def _unary(name):
    prim = P[name]

    def op(x):
        return bind(prim, x)

    op.__name__ = name
    return op


def _binary(name):
    prim = P[name]

    def op(x, y):
        return bind(prim, x, y)

    op.__name__ = name
    return op


neg, exp, log, log1p, expm1, sin, cos, tanh, logistic = map(
    _unary, ["neg", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "logistic"]
)
erf = _unary("erf")
sqrt, rsqrt, abs, sign, floor, ceil, round, logical_not, stop_gradient = map(
    _unary, ["sqrt", "rsqrt", "abs", "sign", "floor", "ceil", "round", "not", "stop_gradient"]
)
add, sub, mul, div, pow, max, min, atan2, rem = map(
    _binary, ["add", "sub", "mul", "div", "pow", "max", "min", "atan2", "rem"]
)
bitwise_and, bitwise_or, bitwise_xor = _binary("and"), _binary("or"), _binary("xor")
shift_left, shift_right_arithmetic = _binary("shift_left"), _binary("shift_right_arithmetic")
eq, ne, lt, le, gt, ge = map(_binary, ["eq", "ne", "lt", "le", "gt", "ge"])


def integer_pow(x, y: int):
    return bind(P["integer_pow"], x, y=int(y))


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` holds, else ``on_false``. A predicate of numbers holds
    where it is nonzero, as NumPy's ``where`` reads one (and JAX's ``select_n`` reads
    0 and 1); the primitive itself takes booleans only."""
    dtype = _dtype_of(pred)
    if dtype != dtypes.bool_:
        pred = ne(pred, np.zeros((), dtype))
    return bind(P["select"], pred, on_true, on_false)


def convert_element_type(x, dtype):
    dtype = dtypes.canonicalize(dtype)
    if _dtype_of(x) == dtype:
        return x
    if dtypes.is_complex(_dtype_of(x)) and not dtypes.is_complex(dtype):
        return _from_complex(x, dtype)
    return bind(P["convert_element_type"], x, new_dtype=dtype)


def _from_complex(z, dtype):
    """NumPy's cast of complex numbers to a real dtype: to bool, whether either part is
    nonzero; to a number, the real part, with NumPy's ``ComplexWarning`` at the user's
    line, once per trace (a compiled call does not trace again). The IR converts real
    numbers only: ``real`` says which part is kept, and its derivative is the real part's."""
    if dtype == dtypes.bool_:
        return ne(z, np.zeros((), _dtype_of(z)))
    warn_at_user_line(
        "Casting complex values to real discards the imaginary part (take z.real to say so)",
        np.exceptions.ComplexWarning,
    )
    return convert_element_type(bind(real_p, z), dtype)


def broadcast_in_dim(x, shape, broadcast_dimensions):
    shape, broadcast_dimensions = tuple(shape), tuple(broadcast_dimensions)
    if _shape_of(x) == shape and broadcast_dimensions == tuple(range(len(shape))):
        return x
    return bind(P["broadcast_in_dim"], x, shape=shape, broadcast_dimensions=broadcast_dimensions)


def broadcast_to_rank(x, shape):
    """NumPy-style broadcast of ``x`` to ``shape`` (trailing dims aligned)."""
    shape = tuple(shape)
    ndim = len(_shape_of(x))
    return broadcast_in_dim(x, shape, range(len(shape) - ndim, len(shape)))


def reshape(x, new_sizes):
    new_sizes = tuple(int(d) for d in new_sizes)
    if _shape_of(x) == new_sizes:
        return x
    return bind(P["reshape"], x, new_sizes=new_sizes)


def transpose(x, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return bind(P["transpose"], x, permutation=permutation)


def squeeze(x, dimensions):
    dimensions = tuple(sorted(int(d) for d in dimensions))
    return bind(P["squeeze"], x, dimensions=dimensions) if dimensions else x


def expand_dims(x, dimensions):
    dimensions = tuple(sorted(int(d) for d in dimensions))
    return bind(P["expand_dims"], x, dimensions=dimensions) if dimensions else x


def slice(x, start_indices, limit_indices, strides=None):
    start_indices = tuple(int(i) for i in start_indices)
    limit_indices = tuple(int(i) for i in limit_indices)
    strides = tuple(int(s) for s in strides) if strides else (1,) * len(start_indices)
    if (
        start_indices == (0,) * len(start_indices)
        and limit_indices == _shape_of(x)
        and (strides == (1,) * len(strides))
    ):
        return x
    return bind(
        P["slice"], x, start_indices=start_indices, limit_indices=limit_indices, strides=strides
    )


def dynamic_slice(x, starts, slice_sizes):
    return bind(P["dynamic_slice"], x, *starts, slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(x, update, starts):
    return bind(P["dynamic_update_slice"], x, update, *starts)


def gather(x, indices, axis: int):
    return bind(P["gather"], x, indices, axis=int(axis))


def scatter(x, indices, updates, axis: int, mode: str):
    return bind(P["scatter"], x, indices, updates, axis=int(axis), mode=mode)


def concatenate(xs, dimension: int):
    xs = list(xs)
    return xs[0] if len(xs) == 1 else bind(P["concatenate"], *xs, dimension=int(dimension))


def pad(x, padding_value, padding_config):
    config = tuple((int(lo), int(hi)) for lo, hi in padding_config)
    if all(lo == hi == 0 for lo, hi in config):
        return x
    return bind(P["pad"], x, padding_value, padding_config=config)


def iota(dtype, shape, dimension: int = 0):
    shape = tuple(int(d) for d in shape)
    return bind(P["iota"], dtype=dtypes.canonicalize(dtype), shape=shape, dimension=dimension)


def _reduce(name):
    prim = P[name]

    def op(x, axes):
        axes = tuple(sorted(int(a) for a in axes))
        return bind(prim, x, axes=axes) if axes else x

    op.__name__ = name
    return op


reduce_sum, reduce_max, reduce_min, reduce_prod = map(
    _reduce, ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]
)


def argmax(x, axis: int, index_dtype=dtypes.int64):
    return bind(P["argmax"], x, axis=int(axis), index_dtype=dtypes.canonicalize(index_dtype))


def argmin(x, axis: int, index_dtype=dtypes.int64):
    return bind(P["argmin"], x, axis=int(axis), index_dtype=dtypes.canonicalize(index_dtype))


def cumsum(x, axis: int, reverse: bool = False):
    return bind(P["cumsum"], x, axis=int(axis), reverse=bool(reverse))


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """``jax.lax.sort``: one array, or a sequence of arrays of one shape sorted together
    by their first ``num_keys`` (lexicographically) along ``dimension``; NaNs last."""
    operands = list(operand) if isinstance(operand, (list, tuple)) else [operand]
    ndim = len(_shape_of(operands[0]))
    dimension = int(dimension) % ndim if ndim else int(dimension)  # rank 0: the rule refuses
    outs = bind(
        P["sort"], *operands, dimension=dimension, is_stable=bool(is_stable), num_keys=int(num_keys)
    )
    return tuple(outs) if isinstance(operand, (list, tuple)) else outs[0]


def dot_general(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    numbers = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    return bind(P["dot_general"], lhs, rhs, dimension_numbers=numbers)


def zeros_like_aval(aval):
    """A zero array of ``aval``: a scalar literal broadcast (stays cheap under fusion)."""
    zero = np.zeros((), aval.dtype)
    return broadcast_in_dim(zero, aval.shape, ()) if aval.shape else zero


def full(shape, value, dtype):
    scalar = np.asarray(value, dtype=dtypes.canonicalize(dtype))
    return broadcast_in_dim(scalar, tuple(shape), ()) if shape else scalar


def _shape_of(x) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else ()


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.result_type(x)
