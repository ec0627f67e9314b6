"""Views of traced arrays: writes through them reach their base, as in NumPy.

NumPy returns a view (memory shared with the base) from basic indexing (``x[k]``,
``x[1:-1, ::2]``, ``x[None]``, ``x[..., 0]``), ``.T``/``transpose``/``swapaxes``/
``moveaxis``, ``reshape``/``ravel`` when the layout allows, ``squeeze``/``expand_dims``/
``atleast_nd``, ``flip``/``fliplr``/``flipud``/``rot90``, and read-only views from
``diagonal`` and ``broadcast_to``. A traced value never changes, so a view here is a
handle that knows how it was taken from the memory it shares with its base:

- ``Storage`` is that memory: the base's current value and a version counted up by
  every write into it, through any handle;
- a handle's ``View`` is its path from the storage's value, one ``Step`` per view
  operation (how to take it again, how to put a new value of it back into its parent);
- a write through a view puts the new value back step by step, from the view to the
  base (each step a functional update, ``dynamic_update_slice`` for a box), and counts
  the version up; a handle whose version is behind takes its path again before it is
  read. So every handle sees every write, in program order, exactly as NumPy's arrays.

Whether NumPy would have returned a view is decided by NumPy itself, on a *probe*: an
array of the base's shape and C-order strides that owns one byte and is never read,
put through the same view operations. ``reshape`` of a probe with ``copy=False`` fails
where NumPy's ``reshape`` copies, and ``ravel`` copies what is not C-contiguous; the
result of such a call is then a new array and writes into it stay there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ir.errors import InPlaceUpdateError, ShapeError, at_line
from ..tracer import functionalize, indexing
from ..tracer.core import Tracer, current_trace, recording_into
from ..tracer.source_info import user_frame_info
from . import numpy_construction, shapes


class Storage:
    """The memory a base array and its views share: its value now, and a version."""

    __slots__ = ("trace", "value", "version")

    def __init__(self, base: Tracer):
        self.trace = base._trace
        self.value = base.alias()
        self.version = 0


@dataclass(frozen=True)
class Step:
    """One view operation: ``take`` makes the view of a parent value, ``put`` the new
    parent when the view is given a new value (None: NumPy's view is read-only),
    ``probe`` the same operation on NumPy's side (None where NumPy would copy)."""

    take: Callable
    put: Callable | None
    probe: Callable
    readonly_reason: str = ""


class View:
    """Where a handle sits in a storage: its steps from the storage's value, and the
    version of the storage its value was taken at."""

    __slots__ = ("storage", "steps", "version", "probe")

    def __init__(self, storage: Storage, steps: tuple, version: int, probe: np.ndarray):
        self.storage, self.steps, self.version, self.probe = storage, steps, version, probe

    def sync(self, handle: Tracer) -> None:
        """Take the handle's path again if the storage was written since."""
        storage = self.storage
        if self.version == storage.version or not handle._trace.active:
            return
        self.version = storage.version  # first: taking the path reads the handle's steps only
        with recording_into(handle._trace):
            value = storage.value
            for step in self.steps:
                value = step.take(value)
        handle._own_var, handle._own_value = value._var, value._value

    def write(self, new: Tracer) -> None:
        """Put ``new`` (the handle's new value) back into the storage."""
        storage = self.storage
        reason = next((s.readonly_reason for s in self.steps if s.put is None), None)
        if reason is not None:
            raise InPlaceUpdateError(
                at_line(
                    f"assignment destination is read-only: {reason}, and NumPy raises "
                    "ValueError here too. Write into the array it was taken from, or into "
                    "a copy (numpy.copy(...))",
                    user_frame_info(),
                )
            )
        if storage.trace is not current_trace():
            raise InPlaceUpdateError(
                at_line(
                    "a write into a view of an array of an enclosing traced function, made "
                    "inside a nested trace (a cond/while_loop/fori_loop/scan body, or a "
                    f"function under grad, vmap or jit). {functionalize.CAPTURED_FIX}.",
                    user_frame_info(),
                )
            )
        parents = [storage.value] if self.steps else []
        for step in self.steps[:-1]:
            parents.append(step.take(parents[-1]))
        value = new
        for step, parent in zip(reversed(self.steps), reversed(parents), strict=True):
            value = step.put(parent, value)
        storage.value = value.alias()
        storage.version += 1
        self.version = storage.version


def _root(base: Tracer) -> View:
    if base._view is None:
        # A probe of the base's shape: one byte of memory, C-order strides, never read.
        strides = np.cumprod((1, *base.shape[:0:-1]), dtype=np.int64)[::-1] if base.ndim else ()
        probe = np.lib.stride_tricks.as_strided(
            np.zeros(1, np.uint8), base.shape, tuple(int(s) for s in strides), writeable=False
        )
        base._view = View(Storage(base), (), 0, probe)
    return base._view


def taken(base, result, step: Step):
    """``result``, computed from ``base`` by ``step``, as NumPy returns it: a view of
    ``base`` when NumPy's result would share its memory, else a new array."""
    if not (isinstance(base, Tracer) and isinstance(result, Tracer) and base._mutable):
        return result
    if base.weak_type:
        return result
    parent = _root(base)
    probe = step.probe(parent.probe)
    if not isinstance(probe, np.ndarray):  # a copy, or a NumPy scalar
        return result
    if result is base or result._view is not None:
        result = result.alias()
    result._mutable = True
    result._view = View(parent.storage, (*parent.steps, step), parent.storage.version, probe)
    return result


def is_same_view(value, x, index) -> bool:
    """Whether ``value`` is ``x[index]`` as a view, in step with ``x``: what Python
    assigns back in ``x[index] op= v`` after ``op=`` wrote through the view already."""
    if not (isinstance(value, Tracer) and isinstance(x, Tracer)):
        return False
    view, base = value._view, x._view
    if view is None or base is None or view.storage is not base.storage:
        return False
    if view.steps[:-1] != base.steps or len(view.steps) != len(base.steps) + 1:
        return False
    last = view.steps[-1]
    return getattr(last.take, "index", None) is index and view.version == view.storage.version


# --------------------------------------------------------------------------------------
# The NumPy functions that return views.


def _basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(
        i is None
        or i is Ellipsis
        or isinstance(i, slice)
        or indexing.is_int_scalar(i)
        or (isinstance(i, Tracer) and i.ndim == 0 and i.dtype.kind in "iu")
        for i in items
    )


def _probe_index(index):
    """``index`` for the probe: a traced int takes position 0 (same strides)."""
    items = index if isinstance(index, tuple) else (index,)
    probed = tuple(0 if isinstance(i, Tracer) else i for i in items)
    return probed if isinstance(index, tuple) else probed[0]


class _Take:
    """``x[index]``, remembering the index object (see ``is_same_view``)."""

    def __init__(self, index):
        self.index = index

    def __call__(self, x):
        return indexing.getitem(x, self.index)


def getitem(x, index):
    """``x[index]``: a view for a basic index (ints, slices, None, Ellipsis)."""
    result = indexing.getitem(x, index)
    if not _basic(index):
        return result
    step = Step(
        take=_Take(index),
        put=lambda parent, value: functionalize.assigned(parent, index, value),
        probe=lambda probe: probe[_probe_index(index)],
    )
    return taken(x, result, step)


def setitem(x, index, value) -> None:
    """``x[index] = value``; nothing more to do when ``value`` is the view ``x[index]``
    that ``x[index] op= v`` has just written through."""
    if not is_same_view(value, x, index):
        functionalize.setitem(x, index, value)


def _reshape_probe(probe, shape):
    try:
        return np.reshape(probe, shape, copy=False)
    except ValueError:  # NumPy's reshape would copy
        return None


def _reshaped(x, result):
    """``result`` as a reshape of ``x``: a view when NumPy's reshape would be one."""
    if not isinstance(result, Tracer):
        return result
    shape, back = result.shape, np.shape(x)
    step = Step(
        take=lambda parent: shapes.reshape(parent, shape),
        put=lambda parent, value: shapes.reshape(value, back),
        probe=lambda probe: _reshape_probe(probe, shape),
    )
    return taken(x, result, step)


def reshape(a, *args, **kwargs):
    return _reshaped(a, shapes.reshape(a, *args, **kwargs))


def set_shape(x: Tracer, shape) -> None:
    """``x.shape = shape``: NumPy's in-place reshape. The handle becomes the reshape of
    its memory, a view of it (its other views keep their shapes, as NumPy's do); where
    NumPy would need a copy to read that memory in the new shape, it refuses, and so
    does numbax. A jitted function's argument may not change shape (``written_arguments``)."""
    operation = "`x.shape = ...`"
    functionalize.check_rebindable(x, operation)
    if not functionalize.is_mutable(x):
        raise InPlaceUpdateError(
            at_line(
                f"{operation}: this value ({x.aval.str_short()}) is a scalar, not an array "
                "(the 0-d result of an operation is a NumPy scalar, whose shape NumPy "
                "cannot set either). Bind a new array instead: x = numpy.reshape(x, ...)",
                user_frame_info(),
            )
        )
    result = shapes.reshape(x, shape)  # NumPy's checks of the new shape
    if _reshape_probe(_root(x).probe, result.shape) is None:
        raise ShapeError(
            at_line(
                f"{operation}: incompatible shape for in-place modification: this array "
                f"({x.aval.str_short()}) is a view whose memory cannot be read with shape "
                f"{result.shape} without a copy (NumPy raises AttributeError here too). "
                "Use x = x.reshape(...), which copies",
                user_frame_info(),
            )
        )
    view = _reshaped(x, result)
    x.aval, x._own_var, x._own_value, x._view = view.aval, view._var, view._value, view._view
    if x._first_write is None:
        x._first_write = user_frame_info()


def ravel(a, order="C"):
    result = shapes.ravel(a, order)
    if isinstance(a, Tracer) and a._view is not None and not a._view.probe.flags.c_contiguous:
        return result if result is not a else a.alias()  # NumPy's ravel copies these
    return _reshaped(a, result)


def _shape_view(plain):
    """A view function that only regroups axes of size 1 or adds them."""

    def function(a, *args, **kwargs):
        return _reshaped(a, plain(a, *args, **kwargs))

    function.__name__ = function.__qualname__ = plain.__name__
    function.__doc__ = plain.__doc__
    return function


def _permuting(plain, numpy_function, inverse):
    """A view function that permutes or reverses axes; ``inverse(value, *args)`` undoes it."""

    def function(a, *args, **kwargs):
        step = Step(
            take=lambda parent: plain(parent, *args, **kwargs),
            put=lambda parent, value: inverse(value, *args, **kwargs),
            probe=lambda probe: numpy_function(probe, *args, **kwargs),
        )
        return taken(a, plain(a, *args, **kwargs), step)

    function.__name__ = function.__qualname__ = plain.__name__
    function.__doc__ = plain.__doc__
    return function


def _readonly(plain, numpy_function, reason):
    def function(a, *args, **kwargs):
        step = Step(
            take=lambda parent: plain(parent, *args, **kwargs),
            put=None,
            probe=lambda probe: numpy_function(probe, *args, **kwargs),
            readonly_reason=reason,
        )
        return taken(a, plain(a, *args, **kwargs), step)

    function.__name__ = function.__qualname__ = plain.__name__
    function.__doc__ = plain.__doc__
    return function


def _splitting(plain):
    """A split function: NumPy's pieces are views, basic slices along the split axis."""

    def function(ary, *args, **kwargs):
        pieces = plain(ary, *args, **kwargs)  # checks the arguments as NumPy does
        if not isinstance(ary, Tracer):
            return pieces
        shape = ary.shape
        axis = next(
            (
                a
                for a in range(len(shape))
                if sum(p.shape[a] for p in pieces) == shape[a]
                and all(
                    p.shape[:a] + p.shape[a + 1 :] == shape[:a] + shape[a + 1 :] for p in pieces
                )
            ),
            0,
        )
        views, start = [], 0
        for piece in pieces:
            width = piece.shape[axis] if piece.ndim else 1
            views.append(getitem(ary, (slice(None),) * axis + (slice(start, start + width),)))
            start += width
        return views

    function.__name__ = function.__qualname__ = plain.__name__
    function.__doc__ = plain.__doc__
    return function


def _diag(plain, diagonal):
    def function(v, k=0):
        return diagonal(v, k) if np.ndim(v) == 2 else plain(v, k)

    function.__name__ = function.__qualname__ = plain.__name__
    function.__doc__ = plain.__doc__
    return function


def _untranspose(value, axes=None):
    ndim = np.ndim(value)
    order = tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)
    return shapes.transpose(value, tuple(int(i) for i in np.argsort(order)))


def wrap(functions: dict) -> dict:
    """The view-returning NumPy functions among ``functions`` (name -> plain
    implementation), each wrapped to return NumPy's view."""
    wrapped = {"reshape": reshape, "ravel": ravel}
    for name in ("squeeze", "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d"):
        wrapped[name] = _shape_view(functions[name])
    flip = functions["flip"]
    wrapped["transpose"] = _permuting(functions["transpose"], np.transpose, _untranspose)
    wrapped["swapaxes"] = _permuting(
        functions["swapaxes"], np.swapaxes, lambda v, i, j: shapes.swapaxes(v, i, j)
    )
    wrapped["moveaxis"] = _permuting(
        functions["moveaxis"], np.moveaxis, lambda v, s, d: shapes.moveaxis(v, d, s)
    )
    wrapped["flip"] = _permuting(flip, np.flip, lambda v, axis=None: flip(v, axis))
    wrapped["fliplr"] = _permuting(functions["fliplr"], np.fliplr, lambda v: flip(v, 1))
    wrapped["flipud"] = _permuting(functions["flipud"], np.flipud, lambda v: flip(v, 0))
    rot90 = functions["rot90"]
    wrapped["rot90"] = _permuting(rot90, np.rot90, lambda v, k=1, axes=(0, 1): rot90(v, -k, axes))
    wrapped["diagonal"] = _readonly(
        functions["diagonal"], np.diagonal, "numpy.diagonal returns a read-only view"
    )
    wrapped["broadcast_to"] = _readonly(
        functions["broadcast_to"], np.broadcast_to, "numpy.broadcast_to returns a read-only view"
    )
    for name in ("split", "array_split", "hsplit", "vsplit", "dsplit"):
        wrapped[name] = _splitting(functions[name])
    wrapped["diag"] = _diag(functions["diag"], wrapped["diagonal"])
    return wrapped


# NumPy's view-returning functions as numbax.numpy has them, over the plain
# implementations of shapes and numpy_construction (numpy_api puts them in the namespace,
# numpy_array_api's aliases return them).
_OF_SHAPES = ("squeeze", "expand_dims", "atleast_1d", "flip", "transpose", "swapaxes", "moveaxis",
              "broadcast_to", "split", "array_split")  # fmt: skip
FUNCTIONS = wrap(
    {**{name: getattr(shapes, name) for name in _OF_SHAPES}, **numpy_construction.FUNCTIONS}
)
