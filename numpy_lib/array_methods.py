"""The ndarray-like surface of ``Tracer``: operators, NumPy protocols, methods.

Kept apart from ``core`` so the tracer machinery reads on its own; ``install()`` puts
these on the class once, when ``numbax.tracer`` is imported.
"""

from __future__ import annotations

import sys

import numpy as np

from ..ir.errors import (
    NumbaxTypeError,
    TracerArrayConversionError,
    UnsupportedAttributeError,
    UnsupportedFunctionError,
    at_line,
)
from ..tracer import functionalize
from ..tracer.core import Tracer
from ..tracer.indexing import IndexUpdateHelper
from ..tracer.promote import weak_result
from ..tracer.source_info import user_frame_info
from . import numpy_api as xnp
from . import views
from .scipy_special import for_scipy_ufunc


def _swap(fn):
    return lambda self, other: fn(other, self)


def _array(self, dtype=None, copy=None):
    raise TracerArrayConversionError(
        at_line(
            f"numpy.asarray() (or another conversion to a NumPy array) was called on a traced "
            f"array ({self.aval.str_short()}). A traced value has no concrete data while the "
            "function is being compiled. Keep the computation in numpy functions that numbax "
            "traces (they accept traced arrays), or move the conversion outside the jitted "
            "function. If this is an assignment into a NumPy array (a[i] = traced), that "
            "array comes from outside the traced function (a global, a closure, a helper "
            "in another module) and cannot hold traced values: create it inside the "
            "function (np.zeros(...)) or pass it in as an argument.",
            user_frame_info(),
        )
    )


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    out = kwargs.pop("out", None)
    # A ufunc call casts into ``out=`` by ``same_kind``, a reduction unsafely (NumPy's rules).
    casting = kwargs.pop("casting", "same_kind" if method == "__call__" else "unsafe")
    # A gufunc's implementation takes its own keywords (axes=, axis=) and names the rest.
    if method == "__call__" and ufunc in xnp.HANDLED_UFUNCS and (ufunc.signature or not kwargs):
        result = xnp.HANDLED_UFUNCS[ufunc](*inputs, **kwargs)
    elif method != "__call__" and ufunc in xnp.NUMBAX_UFUNCS:
        result = getattr(xnp.NUMBAX_UFUNCS[ufunc], method)(*inputs, **kwargs)
        if method == "at":
            return None  # it wrote into its first operand, as NumPy's does
    elif method == "__call__" and not kwargs and (scipys := for_scipy_ufunc(ufunc)) is not None:
        result = scipys(*inputs)
    else:
        result = None
    if result is not None:
        if out is None:
            return _fresh(result, inputs)
        return functionalize.write_out(out, result, ufunc.__name__, casting)
    kwargs.update({"out": out} if out is not None else {})
    what = _ufunc_name(ufunc) + ("" if method == "__call__" else f".{method}")
    extra = f" with arguments {sorted(kwargs)}" if kwargs else ""
    raise _unsupported(ufunc, what + extra)


def _ufunc_name(ufunc) -> str:
    """A ufunc's name as the user imports it: NumPy's carry ``__module__``, SciPy's
    (``scipy.special.expit``) do not, so the loaded module that exports it names it,
    public names first."""
    name = ufunc.__name__
    module = getattr(ufunc, "__module__", None)
    if module is None and getattr(np, name, None) is ufunc:
        module = "numpy"
    if module is None:
        exporting = [
            m for m, loaded in list(sys.modules.items()) if getattr(loaded, name, None) is ufunc
        ]
        if not exporting:
            return f"the ufunc {name} (not NumPy's)"
        module = min(exporting, key=lambda m: ("._" in f".{m}", m.count("."), m))
    return f"{module}.{name}"


def _round(self, ndigits=None):
    """Python's ``round()``: NumPy defines it on its scalars (a 0-d result), where
    ``round(x)`` is a Python int and ``round(x, n)`` is ``numpy.round(x, n)``; on an
    array, and on a complex or bool scalar, NumPy raises TypeError."""
    kind = np.dtype(self.dtype).kind
    if self.ndim or kind in "cb":
        what = f"an array {self.aval.str_short()}" if self.ndim else f"a {self.dtype} scalar"
        raise NumbaxTypeError(
            at_line(
                f"round() of {what}: NumPy defines round() only on its real scalars and "
                "raises TypeError here too. Use numpy.round(x, decimals) (or "
                "x.round(decimals)), which numbax traces",
                user_frame_info(),
            )
        )
    if ndigits is None:
        value = self.concrete_value(
            "round() of a traced value (a Python int; numpy.round(x) stays traced)"
        )
        return round(np.asarray(value)[()])
    return xnp.round(self, ndigits)


def _array_function(self, func, types, args, kwargs):
    if func in xnp.HANDLED_FUNCTIONS:
        return _call_with_out(xnp.HANDLED_FUNCTIONS[func], func.__name__, args, kwargs)
    module = getattr(func, "__module__", None) or "numpy"  # numpy.linalg, numpy.fft, ...
    raise _unsupported(func, f"{module}.{func.__name__}")


def _unsupported(func, what: str) -> UnsupportedFunctionError:
    """The refusal of a NumPy function or ufunc numbax does not trace, with its reason
    where it has one of its own (``numpy_api.LIMITATIONS``)."""
    if func in xnp.LIMITATIONS:
        message = f"{what} is not supported: {xnp.LIMITATIONS[func]} (docs/numpy_support.md)"
    else:
        # The table is generated from HANDLED_FUNCTIONS / HANDLED_UFUNCS: it cannot disagree.
        message = (
            f"{what} is not supported on traced arrays by numbax. Write it with functions "
            "numbax traces (docs/numpy_support.md lists every NumPy function and whether "
            "numbax traces it; numbax.numpy has those it does), or call it outside the "
            "traced function."
        )
    return UnsupportedFunctionError(at_line(message, user_frame_info()))


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


def _call_with_out(fn, name, args, kwargs):
    """``fn(*args, **kwargs)``; a reduction's ``out=`` is written with unsafe casting."""
    out = kwargs.pop("out", None)
    result = fn(*args, **kwargs)
    if out is None:
        return _fresh(result, args)
    return functionalize.write_out(out, result, name, "unsafe")


def _fresh(result, inputs):
    """NumPy's functions return new arrays: a result that is one of the input handles
    (``floor`` of an int array, ``astype`` to the same dtype) becomes a new handle, so a
    later write into it does not write into the input."""
    if isinstance(result, (tuple, list)):
        fresh = [_fresh(r, inputs) for r in result]
        # A named tuple (numpy.linalg's results) takes its fields one by one.
        return type(result)(*fresh) if hasattr(result, "_fields") else type(result)(fresh)
    if isinstance(result, Tracer) and any(result is x for x in _handles(inputs)):
        return result.alias()
    return result


def _handles(inputs):
    for x in inputs:
        if isinstance(x, (tuple, list)):
            yield from _handles(x)
        else:
            yield x


def _returning_fresh(fn):
    return lambda self, *args, **kwargs: _fresh(fn(self, *args, **kwargs), (self, *args))


def _python_arithmetic(fn):
    """An operator whose operands are all weakly typed is, in NumPy, Python's arithmetic
    on Python scalars (``1j * 2.0`` is a Python complex): its result is weakly typed too
    (``promote.weak_result``). A ufunc called on them (``np.sin(2.0)``) gives a typed
    NumPy scalar, and so does numbax's."""
    return lambda self, *args: weak_result(fn(self, *args), (self, *args))


def _method_with_out(fn, name):
    def method(self, *args, **kwargs):
        return _call_with_out(fn, name, (self, *args), kwargs)

    return method


def _len(self):
    if not self.shape:
        raise TypeError("len() of unsized object (a 0-d traced array)")
    return self.shape[0]


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (views.getitem(self, i) for i in range(self.shape[0]))


def _astype(self, dtype, copy=True):
    return xnp.array(self, dtype=dtype)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) and np.ndim(shape[0]):
        shape = shape[0]
    return xnp.reshape(self, shape, order)


def _in_place(function):
    """An ndarray method that rearranges the array itself (``sort``, ``partition``):
    ``function``'s result written back through the handle, None returned, as NumPy does."""

    def method(self, *args, **kwargs):
        views.setitem(self, Ellipsis, function(self, *args, **kwargs))

    return method


def _fill(self, value):
    views.setitem(self, Ellipsis, value)


def _compress(self, condition, axis=None, out=None):
    return xnp.compress(condition, self, axis, out)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = axes[0]
    return xnp.transpose(self, axes or None)


_METHODS = {
    "__array__": _array,
    "__array_ufunc__": _array_ufunc,
    "__array_function__": _array_function,
    "__getattr__": _getattr,
    "__setitem__": views.setitem,
    "__getitem__": views.getitem,
    "__len__": _len,
    "__iter__": _iter,
    "__neg__": xnp.negative,
    "__pos__": xnp.positive,
    "__abs__": xnp.absolute,
    "__invert__": xnp.invert,
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
    "flatten": lambda self, order="C": xnp.copy(xnp.ravel(self, order)),
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
    "cumprod": xnp.cumprod,
    "any": xnp.any,
    "all": xnp.all,
    "clip": xnp.clip,
    "dot": xnp.dot,
    "take": xnp.take,
    "round": xnp.round,
    "conj": xnp.conjugate,
    "conjugate": xnp.conjugate,
    "copy": lambda self, order="K": self.alias(mutable=True),
    "argsort": xnp.argsort,
    "argpartition": xnp.argpartition,
    "searchsorted": xnp.searchsorted,
    "diagonal": xnp.diagonal,
    "trace": xnp.trace,
    "repeat": xnp.repeat,
    "nonzero": xnp.nonzero,
    "compress": _compress,
    "choose": xnp.choose,
    "put": xnp.put,
    "sort": _in_place(xnp.sort),
    "partition": _in_place(xnp.partition),
    "fill": _fill,
}

# The ndarray methods that take ``out=`` (a reduction's result written into an array).
_REDUCTION_METHODS = (
    "sum", "prod", "mean", "var", "std", "max", "min", "cumsum", "cumprod", "any", "all", "clip",
    "trace",
)  # fmt: skip

# Python's binary operators: the stem of the method's name, the symbol, and the ufunc that
# computes it. Each gives ``x op v`` (``__add__``), ``v op x`` (``__radd__``) and
# ``x op= v`` (``__iadd__``).
_BINARY_OPERATORS = {
    "add": ("+", xnp.add),
    "sub": ("-", xnp.subtract),
    "mul": ("*", xnp.multiply),
    "truediv": ("/", xnp.true_divide),
    "floordiv": ("//", xnp.floor_divide),
    "mod": ("%", xnp.remainder),
    "pow": ("**", xnp.power),
    "matmul": ("@", xnp.matmul),
    "and": ("&", xnp.bitwise_and),
    "or": ("|", xnp.bitwise_or),
    "xor": ("^", xnp.bitwise_xor),
    "lshift": ("<<", xnp.left_shift),
    "rshift": (">>", xnp.right_shift),
}
for _stem, (_symbol, _ufunc) in _BINARY_OPERATORS.items():
    _METHODS[f"__{_stem}__"] = _ufunc
    _METHODS[f"__r{_stem}__"] = _swap(_ufunc)


def install() -> None:
    protocols = ("__array__", "__array_ufunc__", "__array_function__", "__getattr__")
    containers = ("__setitem__", "__getitem__", "__len__", "__iter__")
    for name, fn in _METHODS.items():
        if name in _REDUCTION_METHODS:
            fn = _method_with_out(fn, name)
        elif name not in protocols and name not in ("__setitem__", "copy"):
            fn = _returning_fresh(fn)
        if name.startswith("__") and name not in protocols + containers:
            fn = _python_arithmetic(fn)
        setattr(Tracer, name, fn)
    for name, (symbol, ufunc) in _BINARY_OPERATORS.items():
        setattr(Tracer, f"__i{name}__", functionalize.inplace_operator(ufunc, symbol))
    Tracer.shape = property(lambda self: self.aval.shape, views.set_shape)
    Tracer.T = property(lambda self: xnp.transpose(self))
    Tracer.mT = property(lambda self: xnp.matrix_transpose(self))
    Tracer.itemsize = property(lambda self: self.dtype.itemsize)
    Tracer.nbytes = property(lambda self: self.size * self.dtype.itemsize)
    Tracer.real = property(lambda self: xnp.real(self))
    Tracer.imag = property(lambda self: xnp.imag(self))
    Tracer.at = property(IndexUpdateHelper)
    Tracer.__round__ = _round
