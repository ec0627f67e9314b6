"""Arrays a traced function creates with NumPy are traced arrays it can write into.

Inside a traced function ``R = np.zeros((n, n))`` would be a concrete NumPy array, and
``R[0, 0] = np.sqrt(x[0])`` would ask NumPy to convert a tracer, which cannot work: NumPy's
``ndarray.__setitem__`` gives the tracer no say. So numbax traces the function against a
view of its globals in which the ``numpy`` module (under whatever name) is a thin proxy
whose creation functions (``zeros``, ``ones``, ``empty``, ``full``, their ``_like``
forms, ``arange``, ``eye``, ``identity``, ``linspace``, ``copy``, ``array``) return
traced arrays, and ``nditer``, a C type that gives a tracer no say either, refuses a
traced array by name; every other attribute is NumPy's own. The traced arrays carry their
value, so Python code may still branch on them and index with them, and they fold to
constants when nothing traced is written into them.

Nothing global changes (other threads and other code see NumPy as it is). The view is
live: the module's other globals are read from the module at each lookup. It extends to
the plain functions of the same module that the function calls (helpers), as they are
looked up; a helper from another module sees plain NumPy unless it is itself jitted, and
so does code that imports NumPy inside a function body. A global assigned by the traced
code (``global counter; counter += 1``) is assigned in its module, as Python would, once
per trace (as in JAX): a traced value stored that way is a leaked tracer once the trace
ends.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from ..ir.errors import UnsupportedFunctionError, at_line
from .core import Tracer, current_trace
from .source_info import user_frame_info

# Creation functions whose result is one value everywhere: a broadcast scalar in the
# jaxpr (free under fusion) instead of a constant array. ``empty`` is zeros, as NumPy
# gives no promise about its contents.
_FILLED = {"zeros": 0, "zeros_like": 0, "empty": 0, "empty_like": 0, "ones": 1, "ones_like": 1}
_FILLED_BY_ARGUMENT = {"full": 1, "full_like": 1}  # the position of the fill value
_CREATION = (
    *_FILLED,
    *_FILLED_BY_ARGUMENT,
    "arange",
    "eye",
    "identity",
    "linspace",
    "copy",
    "array",
)


def _has_tracer(args, kwargs) -> bool:
    values = [*args, *kwargs.values()]
    return any(
        isinstance(v, Tracer)
        or (isinstance(v, (list, tuple)) and any(isinstance(e, Tracer) for e in v))
        for v in values
    )


def _creating(name: str):
    numpy_fn = getattr(np, name)

    @functools.wraps(numpy_fn)
    def create(*args, **kwargs):
        trace = current_trace()
        if trace is None:
            return numpy_fn(*args, **kwargs)
        # The NumPy library is a floor above the tracer: read when a traced call needs it.
        from ..numpy_lib import creation

        if _has_tracer(args, kwargs):
            kwargs.pop("order", None)  # a traced array has no memory layout
            result = getattr(creation, name)(*args, **kwargs)
            if isinstance(result, tuple):  # linspace(..., retstep=True): (samples, step)
                return (_new_handle(trace, result[0]), *result[1:])
            return _new_handle(trace, result)
        array = numpy_fn(*args, **kwargs)
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "biufc":
            return array
        if name in _FILLED:
            return _new_handle(trace, creation.full(array.shape, _FILLED[name], array.dtype))
        if name in _FILLED_BY_ARGUMENT and array.size and array.ndim:
            return _new_handle(trace, creation.full(array.shape, array.flat[0], array.dtype))
        return _new_handle(trace, array)

    return create


def _new_handle(trace, value) -> Tracer:
    """A handle on a new array: the program may write into it."""
    if not isinstance(value, Tracer):
        from ..numpy_lib import creation

        value = trace.lift(creation.array(value))
    return value.alias(mutable=True)


class _TracingNumPy(types.ModuleType):
    """``numpy`` as a traced function sees it: the creation functions return traced
    arrays, everything else is NumPy's."""

    def __getattr__(self, name):
        return getattr(np, name)


def _scalar_type(numpy_type):
    """``np.complex128`` (``np.float64``, ...) as a traced function sees it: called on a
    traced array it is ``x.astype(np.complex128)``, as NumPy's is on an array; anything
    else is NumPy's (a subclass, so ``dtype=np.complex128`` still means complex128)."""

    def __new__(cls, *args, **kwargs):
        if _has_tracer(args, kwargs):
            from ..numpy_lib import numpy_api

            return numpy_api.asarray(*args).astype(numpy_type)
        return numpy_type(*args, **kwargs)

    namespace = {"__new__": __new__, "__module__": "numbax.numpy"}
    return type(numpy_type.__name__, (numpy_type,), namespace)


def _nditer(op, *args, **kwargs):
    """``np.nditer`` as a traced function sees it: NumPy's, refused by name over a traced
    array (NumPy's own gives a TypeError about writeable operands)."""
    operands = op if isinstance(op, (list, tuple)) else (op,)
    if any(isinstance(operand, Tracer) for operand in operands):
        raise UnsupportedFunctionError(
            at_line(
                "numpy.nditer over a traced array is not supported: it walks an array's "
                "memory, which a traced array does not have. Write the loop as array "
                "operations, or loop over x.ravel() (for v in x.ravel(): ..., which "
                "unrolls inside jit; fori_loop keeps a long loop small)",
                user_frame_info(),
            )
        )
    return np.nditer(op, *args, **kwargs)


# Scalar types that convert traced values (np.complex128(x), np.float64(z), np.int32(x)).
_SCALAR_TYPES = ("complex64", "complex128", "float16", "float32", "float64", "bool_")
_SCALAR_TYPES += ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

# The same objects are numbax.numpy's scalar types (numbax.numpy.float32).
SCALAR_TYPES = {name: _scalar_type(getattr(np, name)) for name in _SCALAR_TYPES}

NUMPY = _TracingNumPy("numpy", np.__doc__)
for _name in _CREATION:
    setattr(NUMPY, _name, _creating(_name))
for _name, _type in SCALAR_TYPES.items():
    setattr(NUMPY, _name, _type)
NUMPY.nditer = _nditer
# A creation function imported by name (``from numpy import zeros``) is replaced too.
_REPLACED = {id(np): NUMPY} | {
    id(getattr(np, name)): getattr(NUMPY, name) for name in (*_CREATION, *_SCALAR_TYPES, "nditer")
}


class _TracedGlobals(dict):
    """A module's globals as a traced function sees them (see the module docstring).
    CPython reads the globals of a function through ``__getitem__`` when they are not
    exactly a dict, but stores a ``global`` assignment in this dict itself, without a
    call that could redirect it; ``flush`` moves such assignments into the module, at
    the next read of a global and when the traced function returns."""

    def __init__(self, module_globals: dict):
        super().__init__()
        self.module_globals = module_globals
        self._helpers: dict[int, types.FunctionType] = {}

    def flush(self) -> None:
        """Assign in the module what the traced code assigned here (``global x; x = v``),
        so the module, and every later read, sees it as Python would."""
        if dict.__len__(self):
            self.module_globals.update(self)
            self.clear()

    def __getitem__(self, name):
        self.flush()
        value = self.module_globals[name]
        replaced = _REPLACED.get(id(value))
        if replaced is not None:
            return replaced
        if isinstance(value, types.FunctionType) and value.__globals__ is self.module_globals:
            helper = self._helpers.get(id(value))
            if helper is None:
                helper = self._helpers[id(value)] = _rebound(value, self)
            return helper
        return value


def _rebound(fun: types.FunctionType, globals_: _TracedGlobals) -> types.FunctionType:
    rebound = types.FunctionType(
        fun.__code__, globals_, fun.__name__, fun.__defaults__, fun.__closure__
    )
    rebound.__kwdefaults__ = fun.__kwdefaults__
    return functools.update_wrapper(rebound, fun)


def tracing_numpy(fun):
    """``fun`` seeing the tracing ``numpy`` (see the module docstring). A callable that
    is not a plain Python function, or is numbax's own, is returned as it is."""
    if not isinstance(fun, types.FunctionType) or _is_numbax(fun):
        return fun
    globals_ = _TracedGlobals(fun.__globals__)
    rebound = _rebound(fun, globals_)

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        try:
            return rebound(*args, **kwargs)
        finally:
            globals_.flush()  # a global assigned after the function's last global read

    return traced


def _is_numbax(fun: types.FunctionType) -> bool:
    """numbax's own wrappers (a transform's restricted function) use NumPy as NumPy."""
    module = fun.__globals__.get("__name__") or ""
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


_PACKAGE = __name__.split(".")[0]
