"""Operand handling shared by the NumPy front end: accepting array-likes, NumPy 2
promotion (NEP 50), broadcasting, axis normalisation, and shape errors that show the
user's line."""

from __future__ import annotations

import operator

import numpy as np

from ..ir import dtypes
from ..ir.core import ShapedArray, aval_of
from ..ir.errors import (
    AxisError,
    ConcretizationError,
    NumbaxTypeError,
    ScalarOverflowError,
    ShapeError,
    at_line,
)
from . import lax
from .core import Tracer, known_value
from .source_info import user_frame_info

Scalar = (bool, int, float, complex)


def is_array(x) -> bool:
    return isinstance(x, (Tracer, np.ndarray, np.generic))


def asarray(x):
    """A Tracer stays; anything NumPy accepts becomes an ndarray of a supported dtype."""
    if isinstance(x, Tracer):
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(e, Tracer) for e in _leaves(x)):
        from ..numpy_lib.shapes import stack

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
    """A Python bool, int, float or complex: weakly typed (np.float64 subclasses float but
    is not)."""
    return isinstance(x, Scalar) and not isinstance(x, np.generic)


def is_weak(leaf) -> bool:
    """Promotes like a Python scalar (NEP 50): a Python scalar or a weakly typed tracer."""
    return is_python_scalar(leaf) or (isinstance(leaf, Tracer) and leaf.weak_type)


def weak_result(result, operands):
    """``result`` weakly typed when every operand is (a Python scalar or a weak tracer):
    how Python's arithmetic on Python scalars keeps them weak under NEP 50, and JAX's
    rule for its operators. A Python float argument ``s`` of ``jit`` then promotes as the
    Python float ``1j * 2.0`` would: ``float32 array + 1j * s`` is complex64, as in NumPy
    and JAX."""
    if not operands or not all(is_weak(x) for x in operands):
        return result
    for out in result if isinstance(result, tuple) else (result,):
        if isinstance(out, Tracer):
            out.weak_type = True
    return result


def argument_aval(leaf, error=None) -> tuple[ShapedArray, bool]:
    """The abstract value of an argument leaf of ``jit``, a transform or a control-flow
    function, and whether it is weakly typed (promotes like a Python scalar, NEP 50).

    ``error(message)`` builds the exception for a leaf that is not an array (by default a
    ``NumbaxTypeError`` at the user's line). A tracer keeps its weak type, so a Python
    scalar passed on through a nested ``jit`` still promotes like one.

    NumPy subclasses: ``np.matrix`` (``*`` is a matrix product) and masked arrays (masked
    elements do not count) mean something other than their data, and a subclass
    with its own ``__array_ufunc__`` or ``__array_function__`` redefines NumPy's functions:
    these are refused, naming the conversion that drops the subclass. Any other subclass
    (``np.memmap``, a subclass that only adds attributes) is taken as its base array.
    """
    error = error or _argument_error
    if isinstance(leaf, Tracer):
        return leaf.aval, leaf.weak_type
    if is_python_scalar(leaf):
        aval = aval_of(leaf)
        python_scalar_as(leaf, aval.dtype, fix=_ARGUMENT_FIX)
        return aval, True
    if is_device_array(leaf):
        return _device_aval(leaf), False
    if isinstance(leaf, (str, bytes)):
        raise error(
            f"a {type(leaf).__name__} ({leaf!r:.40}) is not an array. A configuration value "
            "must be static: jit(f, static_argnums=...) or static_argnames=..., or bind it "
            "with functools.partial(f, ...)"
        )
    if isinstance(leaf, np.ndarray) and type(leaf) is not np.ndarray:
        _check_subclass(leaf, error)
    try:
        array = np.asarray(leaf)
    except Exception as err:  # noqa: BLE001 - NumPy's refusal, reported as a numbax error
        raise error(f"a value of type {type(leaf).__name__} is not an array: {err}") from err
    if array.dtype == object:
        raise error(_object_message(leaf))
    try:
        return ShapedArray(array.shape, array.dtype), False
    except NumbaxTypeError as err:  # an unsupported dtype
        raise error(str(err)) from None


def _argument_error(message: str) -> NumbaxTypeError:
    return NumbaxTypeError(at_line(f"argument: {message}", user_frame_info()))


def _object_message(leaf) -> str:
    if isinstance(leaf, np.ndarray):
        return (
            f"an array of dtype object (shape {leaf.shape}) holds Python objects, not "
            "numbers; convert it with x.astype(np.float64) (or another numeric dtype), "
            "or replace its None entries first"
        )
    return (
        f"a value of type {type(leaf).__name__} is not an array. Pass arrays or numbers, "
        "register its class as a pytree (numbax.register_pytree_node), or mark it static: "
        "jit(f, static_argnums=...) or static_argnames=..."
    )


# Subclass -> the conversion that gives the array a user means.
_REFUSED_SUBCLASSES = {
    np.matrix: "np.asarray(x) (and use @ for the matrix product)",
    np.ma.MaskedArray: "x.filled(fill_value) for the values you mean at masked places",
}


def _check_subclass(leaf: np.ndarray, error) -> None:
    for cls, fix in _REFUSED_SUBCLASSES.items():
        if isinstance(leaf, cls):
            raise error(
                f"{type(leaf).__module__}.{type(leaf).__name__} is an ndarray subclass whose "
                "operations mean something other than what numbax computes from its data; "
                f"pass {fix}"
            )
    for protocol in ("__array_ufunc__", "__array_function__"):
        if getattr(type(leaf), protocol) is not getattr(np.ndarray, protocol):
            raise error(
                f"{type(leaf).__module__}.{type(leaf).__name__} redefines NumPy's functions "
                f"({protocol}), which numbax cannot trace; pass np.asarray(x) if its data "
                "alone is what you mean"
            )


def is_device_array(leaf) -> bool:
    """An array in GPU memory: it has the CUDA Array Interface (Numba, CuPy, PyTorch), or
    Numba's own marker, which the CUDA simulator's arrays carry too."""
    return hasattr(leaf, "__cuda_array_interface__") or bool(
        getattr(leaf, "__cuda_ndarray__", False)
    )


def _device_aval(leaf) -> ShapedArray:
    # Its type is read from the interface: the data stays on the device.
    interface = getattr(leaf, "__cuda_array_interface__", None)
    if interface is not None:
        return ShapedArray(interface["shape"], np.dtype(interface["typestr"]))
    return ShapedArray(leaf.shape, leaf.dtype)


_PROMOTION_FIX = (
    "a Python scalar takes the dtype of the array it meets (NumPy 2, NEP 50) or the dtype "
    "asked for, and NumPy raises OverflowError too. Use a wider dtype (x.astype(np.int64)) "
    "or a typed scalar (np.int64(...))"
)
_ARGUMENT_FIX = (
    "a Python int argument is an int64 scalar, as in JAX. Pass float(n) if an approximation will do"
)


def python_scalar_as(x, dtype, fix: str = _PROMOTION_FIX) -> np.ndarray:
    """A Python scalar as a 0-d array of ``dtype`` (it becomes an IR literal). A value
    outside the dtype's range is an error, as in NumPy 2, never a wrapped-around value."""
    try:
        return np.asarray(x, dtype=dtype)
    except OverflowError:
        raise ScalarOverflowError(
            at_line(
                f"the Python {type(x).__name__} {x!r} is out of range for {np.dtype(dtype)}: {fix}",
                user_frame_info(),
            )
        ) from None


def comparison_dtype(*xs) -> np.dtype:
    """The dtype a comparison computes in: NEP 50's, except that a Python int outside an
    integer array's range compares exactly in int64, since NumPy 2 answers such
    comparisons (``int32_array < 2**40`` is True everywhere) instead of raising."""
    dtype = result_type(*xs)
    if dtypes.is_integer(dtype):
        limits = np.iinfo(dtype)
        ints = [x for x in xs if isinstance(x, int) and not isinstance(x, (bool, np.generic))]
        if any(not limits.min <= x <= limits.max for x in ints):
            return dtypes.int64
    return dtype


def dtype_of(x) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else dtypes.result_type(x)


def shape_of(x) -> tuple[int, ...]:
    return tuple(np.shape(x)) if not isinstance(x, Tracer) else x.shape


def static_shape(shape, operation: str) -> tuple[int, ...]:
    """A shape argument (a size or a sequence of sizes) as Python ints; see
    ``static_size``."""
    if isinstance(shape, Tracer):
        sizes = [shape] if shape.ndim == 0 else list(shape)
    else:
        sizes = list(shape) if np.iterable(shape) else [shape]
    return tuple(static_size(size, operation) for size in sizes)


def static_size(size, operation: str) -> int:
    """A size as a Python int, read as NumPy reads it (``operator.index``: a float size
    is refused). Shapes are static: a traced size whose value is not known while
    tracing is refused, naming ``operation`` and the fix, not taken for a Python index."""
    if isinstance(size, Tracer):
        value = known_value(size)
        if value is None:
            raise ConcretizationError(
                at_line(
                    f"{operation}: a size of the shape is a traced value "
                    f"({size.aval.str_short()}), but a shape must be static: every array's "
                    "shape is fixed when the function is traced. Pass the size as a static "
                    "argument (jit(f, static_argnums=...) or static_argnames=...), or "
                    "compute it from shapes (x.shape[0]), which are static",
                    user_frame_info(),
                )
            )
        size = value
    return operator.index(size)


_WEAK_STAND_INS = {"c": 0j, "f": 0.0, "i": 0, "b": False}


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
        return python_scalar_as(x, dtype)
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
    """``axis`` in ``[0, ndim)``, a negative one counted from the end; outside, NumPy's
    AxisError. Every ``axis=`` goes through here; the functions where NumPy lets a 0-d
    array take axis 0 or -1 say so before calling it (see ``reductions``)."""
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(
            at_line(
                f"{operation}: axis {axis} is out of bounds for an array of dimension {ndim}",
                user_frame_info(),
            ),
            axis,
            ndim,
        )
    return axis % ndim


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
