"""Operand handling shared by the NumPy front end: accepting array-likes, NumPy 2
promotion (NEP 50), broadcasting, axis normalisation, and shape errors that show the
user's line."""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.core import ShapedArray, aval_of
from ..ir.errors import NumbaxTypeError, ShapeError, at_line
from . import lax
from .core import Tracer
from .source_info import user_frame_info

Scalar = (bool, int, float)


def is_array(x) -> bool:
    return isinstance(x, (Tracer, np.ndarray, np.generic))


def asarray(x):
    """A Tracer stays; anything NumPy accepts becomes an ndarray of a supported dtype."""
    if isinstance(x, Tracer):
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(e, Tracer) for e in _leaves(x)):
        from .shapes import stack

        return stack([asarray(e) for e in x])
    array = np.asarray(x)
    if array.dtype == object:
        raise NumbaxTypeError(
            at_line(f"cannot convert {type(x).__name__} to an array", user_frame_info())
        )
    dtype = dtypes.canonicalize(array.dtype)
    return array if array.dtype == dtype else array.astype(dtype)


def _leaves(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _leaves(e)
        else:
            yield e


def operand(x):
    """Like ``asarray`` but Python scalars stay Python scalars (weakly typed)."""
    return x if isinstance(x, Scalar) else asarray(x)


def is_python_scalar(x) -> bool:
    """A Python bool, int or float: weakly typed (np.float64 subclasses float but is not)."""
    return isinstance(x, Scalar) and not isinstance(x, np.generic)


def is_weak(leaf) -> bool:
    """Promotes like a Python scalar (NEP 50): a Python scalar or a weakly typed tracer."""
    return is_python_scalar(leaf) or (isinstance(leaf, Tracer) and leaf.weak_type)


def leaf_aval(leaf, error) -> ShapedArray:
    """The abstract value of a pytree leaf given to a transform or a control-flow
    function; ``error(message)`` builds the exception for a leaf that is not an array."""
    if isinstance(leaf, Tracer):
        return leaf.aval
    if is_python_scalar(leaf):
        return aval_of(leaf)
    array = np.asarray(leaf)
    if array.dtype == object:
        raise error(f"a value of type {type(leaf).__name__} is not an array")
    return ShapedArray(array.shape, array.dtype)


def dtype_of(x) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else dtypes.result_type(x)


def shape_of(x) -> tuple[int, ...]:
    return tuple(np.shape(x)) if not isinstance(x, Tracer) else x.shape


_WEAK_STAND_INS = {"f": 0.0, "i": 0, "b": False}


def _promotion_operand(x):
    if isinstance(x, Scalar):
        return x
    if isinstance(x, Tracer) and x.weak_type:
        # A jit argument that was a Python scalar keeps promoting like one (NEP 50).
        return _WEAK_STAND_INS[x.dtype.kind]
    return dtype_of(x)


def result_type(*xs) -> np.dtype:
    """NumPy 2 promotion: arrays by dtype, Python scalars weakly."""
    return dtypes.result_type(*[_promotion_operand(x) for x in xs])


def convert(x, dtype):
    """``x`` as ``dtype``; a Python scalar becomes a typed NumPy scalar (a literal)."""
    if isinstance(x, Scalar):
        return np.asarray(x).astype(dtype)
    if isinstance(x, Tracer):
        return lax.convert_element_type(x, dtype)
    return np.asarray(x, dtype=dtype) if x.dtype != dtype else x


def broadcast_shapes(*shapes, operation: str = "operation") -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(
            at_line(
                f"{operation}: shapes {' and '.join(str(tuple(s)) for s in shapes)} do not "
                "broadcast together (NumPy broadcasting: trailing dimensions must be equal "
                "or 1). Reshape or transpose one operand, or index it with None to add an axis.",
                user_frame_info(),
            )
        ) from None


def broadcast_to(x, shape):
    """Broadcast an operand to ``shape``; rank-0 operands are left for implicit broadcast."""
    x_shape = shape_of(x)
    if x_shape == tuple(shape):
        return x
    return lax.broadcast_to_rank(asarray(x), shape)


def promote_and_broadcast(*xs, dtype=None, operation: str = "operation"):
    """Operands of one dtype and one shape (or rank 0), ready for an elementwise prim."""
    xs = [operand(x) for x in xs]
    dtype = dtype or result_type(*xs)
    shape = broadcast_shapes(*[shape_of(x) for x in xs], operation=operation)
    out = []
    for x in xs:
        x = convert(x, dtype)
        out.append(x if shape_of(x) == () else broadcast_to(x, shape))
    return out, shape


def normalize_axis(axis: int, ndim: int, operation: str = "operation") -> int:
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise ShapeError(
            at_line(
                f"{operation}: axis {axis} is out of bounds for an array of dimension {ndim}",
                user_frame_info(),
            )
        )
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim: int, operation: str = "operation") -> tuple[int, ...]:
    """``None`` means every axis; an int or a tuple of ints, negatives allowed."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim, operation) for a in axis)
        if len(set(axes)) != len(axes):
            raise ShapeError(at_line(f"{operation}: repeated axis in {axis}", user_frame_info()))
        return axes
    return (normalize_axis(axis, ndim, operation),)
