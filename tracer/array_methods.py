"""The ndarray-like surface of ``Tracer``: operators, NumPy protocols, methods.

Kept apart from ``core`` so the tracer machinery reads on its own; ``install()`` puts
these on the class once, when ``numbax.tracer`` is imported.
"""

from __future__ import annotations

import numpy as np

from ..ir.errors import (
    InPlaceUpdateError,
    TracerArrayConversionError,
    UnsupportedAttributeError,
    UnsupportedFunctionError,
    at_line,
)
from . import numpy_api as xnp
from .core import Tracer
from .indexing import IndexUpdateHelper, getitem
from .source_info import user_frame_info


def _swap(fn):
    return lambda self, other: fn(other, self)


def _array(self, dtype=None, copy=None):
    raise TracerArrayConversionError(
        at_line(
            f"numpy.asarray() (or another conversion to a NumPy array) was called on a traced "
            f"array ({self.aval.str_short()}). A traced value has no concrete data while the "
            "function is being compiled. Keep the computation in numpy functions that numbax "
            "traces (they accept traced arrays), or move the conversion outside the jitted "
            "function.",
            user_frame_info(),
        )
    )


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if kwargs.get("out") is not None:
        raise InPlaceUpdateError(
            at_line(
                f"numpy.{ufunc.__name__}(..., out=...) writes in place, which traced "
                "arrays do not support; use the returned value instead",
                user_frame_info(),
            )
        )
    kwargs.pop("out", None)
    if method == "__call__" and ufunc in xnp.HANDLED_UFUNCS and not kwargs:
        return xnp.HANDLED_UFUNCS[ufunc](*inputs)
    if method == "reduce" and ufunc in xnp.UFUNC_REDUCTIONS:
        return xnp.UFUNC_REDUCTIONS[ufunc](*inputs, **kwargs)
    what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    extra = f" with arguments {sorted(kwargs)}" if kwargs else ""
    raise UnsupportedFunctionError(
        at_line(f"{what}{extra} is not supported on traced arrays by numbax", user_frame_info())
    )


def _array_function(self, func, types, args, kwargs):
    if func in xnp.HANDLED_FUNCTIONS:
        return xnp.HANDLED_FUNCTIONS[func](*args, **kwargs)
    module = getattr(func, "__module__", None) or "numpy"  # numpy.linalg, numpy.fft, ...
    raise UnsupportedFunctionError(
        at_line(
            f"{module}.{func.__name__} is not supported on traced arrays by numbax; see "
            "numbax.numpy for the functions it traces",
            user_frame_info(),
        )
    )


def _getattr(self, name):
    """Only reached when normal lookup fails: name the ndarray feature that is missing."""
    if name.startswith("__") or not hasattr(np.ndarray, name):
        raise AttributeError(f"'Tracer' object has no attribute {name!r}")
    raise UnsupportedAttributeError(
        at_line(
            f"ndarray.{name} is not supported on traced arrays by numbax; see "
            "numbax.numpy for the functions it traces",
            user_frame_info(),
        )
    )


def _setitem(self, index, value):
    raise InPlaceUpdateError(
        at_line(
            "traced arrays are immutable: `x[idx] = v` cannot be traced. Use the functional "
            "form `x = x.at[idx].set(v)` (also .add, .multiply, .min, .max).",
            user_frame_info(),
        )
    )


def _len(self):
    if not self.shape:
        raise TypeError("len() of unsized object (a 0-d traced array)")
    return self.shape[0]


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (getitem(self, i) for i in range(self.shape[0]))


def _astype(self, dtype, copy=True):
    return xnp.array(self, dtype=dtype)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return xnp.reshape(self, shape, order)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = axes[0]
    return xnp.transpose(self, axes or None)


_METHODS = {
    "__array__": _array,
    "__array_ufunc__": _array_ufunc,
    "__array_function__": _array_function,
    "__getattr__": _getattr,
    "__setitem__": _setitem,
    "__getitem__": getitem,
    "__len__": _len,
    "__iter__": _iter,
    "__neg__": xnp.negative,
    "__pos__": xnp.positive,
    "__abs__": xnp.absolute,
    "__invert__": xnp.invert,
    "__add__": xnp.add,
    "__radd__": _swap(xnp.add),
    "__sub__": xnp.subtract,
    "__rsub__": _swap(xnp.subtract),
    "__mul__": xnp.multiply,
    "__rmul__": _swap(xnp.multiply),
    "__truediv__": xnp.true_divide,
    "__rtruediv__": _swap(xnp.true_divide),
    "__floordiv__": xnp.floor_divide,
    "__rfloordiv__": _swap(xnp.floor_divide),
    "__mod__": xnp.remainder,
    "__rmod__": _swap(xnp.remainder),
    "__pow__": xnp.power,
    "__rpow__": _swap(xnp.power),
    "__matmul__": xnp.matmul,
    "__rmatmul__": _swap(xnp.matmul),
    "__and__": xnp.bitwise_and,
    "__rand__": _swap(xnp.bitwise_and),
    "__or__": xnp.bitwise_or,
    "__ror__": _swap(xnp.bitwise_or),
    "__xor__": xnp.bitwise_xor,
    "__rxor__": _swap(xnp.bitwise_xor),
    "__lshift__": xnp.left_shift,
    "__rlshift__": _swap(xnp.left_shift),
    "__rshift__": xnp.right_shift,
    "__rrshift__": _swap(xnp.right_shift),
    "__eq__": xnp.equal,
    "__ne__": xnp.not_equal,
    "__lt__": xnp.less,
    "__le__": xnp.less_equal,
    "__gt__": xnp.greater,
    "__ge__": xnp.greater_equal,
    "astype": _astype,
    "reshape": _reshape,
    "transpose": _transpose,
    "ravel": xnp.ravel,
    "flatten": xnp.ravel,
    "squeeze": xnp.squeeze,
    "swapaxes": xnp.swapaxes,
    "sum": xnp.sum,
    "prod": xnp.prod,
    "mean": xnp.mean,
    "var": xnp.var,
    "std": xnp.std,
    "max": xnp.max,
    "min": xnp.min,
    "argmax": xnp.argmax,
    "argmin": xnp.argmin,
    "cumsum": xnp.cumsum,
    "clip": xnp.clip,
    "dot": xnp.dot,
    "take": xnp.take,
    "round": xnp.round,
    "copy": lambda self: self,
}


def install() -> None:
    for name, fn in _METHODS.items():
        setattr(Tracer, name, fn)
    Tracer.T = property(lambda self: xnp.transpose(self))
    Tracer.at = property(IndexUpdateHelper)
