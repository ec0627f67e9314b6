"""In-place NumPy, functionalized: writes into traced arrays become pure updates.

A traced array is a mutable handle (the ``Tracer`` object) on a pure value. A write
computes the updated array functionally and rebinds the handle to it, in program order,
so every reference to the object sees it, as with a NumPy array:

- ``x[idx] = v``: ``dynamic_update_slice`` for a box of ints and unit-step slices, a
  select for a traced boolean mask, the scatter of ``x.at[idx].set`` for any other index;
- ``x[idx] op= v``: Python reads ``x[idx]``, applies ``op=`` to it and assigns it back,
  so an index repeated in an integer array is updated once, as in NumPy;
- ``x op= v`` and ``out=``: the ufunc's result, cast back to the output's dtype.

Casting is NumPy's: ``op=`` and ufunc ``out=`` follow the ``same_kind`` rule, reductions'
``out=`` and item assignment cast unsafely. A NumPy scalar (the 0-d result of an
operation) is immutable, so ``s += v`` on one rebinds the name, as in NumPy. The written
arguments of a jitted function are written back to the caller's arrays by ``api.py``.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import InPlaceUpdateError, ShapeError, UnsupportedFunctionError, at_line
from . import lax
from .core import Tracer, any_concrete_trace, current_trace, leaked_tracer_error
from .indexing import is_int_scalar, known_index, update
from .promote import asarray, broadcast_shapes, convert, operand, result_type
from .source_info import user_frame_info

CAPTURED_FIX = (
    "Pass the array in as an argument of the traced function (a jitted function writes "
    "its arguments back to the caller), or as the carry of the loop, and return it"
)


def write(handle: Tracer, new, operation: str) -> None:
    """Rebind ``handle`` to ``new``, which already has its dtype and shape."""
    check_rebindable(handle, operation)
    trace = current_trace()
    if not isinstance(new, Tracer):
        new = trace.lift(asarray(new))
    elif new._trace is not trace:
        new = trace.lift(new)
    if _is_constant(new):
        # A value known while tracing is a constant of the program: the equations that
        # computed it are dead, and an array nothing traced was written into folds.
        new = trace.lift(np.asarray(new._value))
    handle.rebind(new, user_frame_info())


def check_rebindable(handle: Tracer, operation: str) -> None:
    """Refuse to rebind a handle of a trace that ended (a leaked tracer) or of an
    enclosing trace (its program would read a value of the nested one)."""
    if not handle._trace.active:
        raise leaked_tracer_error(handle, operation)
    if handle._trace is not current_trace():
        raise InPlaceUpdateError(
            at_line(
                f"{operation} writes into an array of an enclosing traced function from "
                "inside a nested trace (a cond/while_loop/fori_loop/scan body, or a function "
                f"under grad, vmap or jit that captured it). {CAPTURED_FIX}.",
                user_frame_info(),
            )
        )


def _is_constant(x: Tracer) -> bool:
    """A value known while no concrete (eager) trace is active; under one, a known value
    may stand for an input being differentiated."""
    return x._value is not None and not any_concrete_trace()


def is_mutable(x) -> bool:
    """A handle on an array the program may write into (a Python or NumPy scalar is not)."""
    return isinstance(x, Tracer) and x._mutable and not x.weak_type


def cast_for_output(result, out: Tracer, name: str, casting: str):
    """``result`` as the value of ``out`` after ``np.<name>(..., out=out)``: NumPy's
    casting rule checked, then broadcast to the output's shape (which must not grow)."""
    dtype = result_type(result)
    if casting != "unsafe" and not np.can_cast(dtype, out.dtype, casting):
        raise InPlaceUpdateError(
            at_line(
                f"Cannot cast ufunc '{name}' output from dtype('{dtype}') to "
                f"dtype('{out.dtype}') with casting rule '{casting}' (NumPy raises "
                "UFuncTypeError here too). Bind a new array instead (x = x + v), or cast "
                "explicitly: x[...] = x + v assigns with unsafe casting",
                user_frame_info(),
            )
        )
    shape = np.shape(result)
    if broadcast_shapes(shape, out.shape, operation=name) != out.shape:
        raise ShapeError(
            at_line(
                f"non-broadcastable output operand with shape {out.shape} doesn't match "
                f"the broadcast shape {broadcast_shapes(shape, out.shape)} (NumPy raises "
                f"this too): {name} in place cannot grow its output; bind a new array "
                "instead (x = x + v)",
                user_frame_info(),
            )
        )
    return _broadcast(asarray(convert(operand(result), out.dtype)), out.shape)


def _broadcast(x, shape):
    return x if np.shape(x) == tuple(shape) else lax.broadcast_to_rank(x, shape)


def inplace_operator(ufunc, symbol: str):
    """``x op= v`` (``__iadd__`` and its kin): ``ufunc`` written into ``x``."""

    def method(self, other):
        result = ufunc(self, other)
        if not is_mutable(self):
            return result  # immutable: Python binds the name to the result
        new = cast_for_output(result, self, ufunc.__name__, "same_kind")
        write(self, new, f"`x {symbol}= v`")
        return self

    return method


def write_out(out, result, name: str, casting: str):
    """``np.<name>(..., out=out)``: write ``result`` into ``out`` and return ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise UnsupportedFunctionError(
                at_line(f"numpy.{name} with {len(out)} outputs is not traced", user_frame_info())
            )
        (out,) = out
    if not is_mutable(out):
        where = (
            f"a NumPy array {out.shape} from outside the traced function"
            if isinstance(out, np.ndarray)
            else f"a {type(out).__name__}"
        )
        raise InPlaceUpdateError(
            at_line(
                f"numpy.{name}(..., out=...) writes traced values into {where}, which cannot "
                "hold them. Create the output inside the traced function (np.empty(...)), or "
                f"pass it in. {CAPTURED_FIX}.",
                user_frame_info(),
            )
        )
    write(out, cast_for_output(result, out, name, casting), f"numpy.{name}(..., out=...)")
    return out


def setitem(x: Tracer, index, value) -> None:
    """``x[index] = value``, with NumPy's broadcasting and unsafe casting of ``value``."""
    if not is_mutable(x):
        raise InPlaceUpdateError(
            at_line(
                f"'numpy.{x.dtype}' object does not support item assignment: this 0-d value "
                "is a NumPy scalar (the result of an operation), as in NumPy. Write into the "
                "array it came from (x[i] = v), or bind a new value (s = v)",
                user_frame_info(),
            )
        )
    write(x, assigned(x, index, value), "`x[...] = v`")


def assigned(x, index, value):
    """The value of ``x`` after ``x[index] = value``, computed functionally."""
    index = known_index(index)
    value = operand(value)
    mask = _traced_mask(index)
    if mask is not None:
        return _masked_set(x, mask, value)
    if _contains_tracer(index):
        return update(x, index, value, "set")
    return _static_set(x, index, value)


def _contains_tracer(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, Tracer) for i in items)


def _static_set(x, index, value):
    """An assignment at an index known while tracing: checked as NumPy checks it."""
    try:
        target = np.broadcast_to(np.int8(0), x.shape)[index].shape
    except IndexError as err:
        raise IndexError(at_line(str(err), user_frame_info())) from None
    shape = np.shape(value)
    leading = max(len(shape) - len(target), 0)  # NumPy drops leading 1s of the value
    if any(d != 1 for d in shape[:leading]) or not broadcasts_to(shape[leading:], target):
        raise ShapeError(
            at_line(
                f"could not broadcast input array from shape {shape} into shape {target} "
                "(NumPy raises this too)",
                user_frame_info(),
            )
        )
    if not int(np.prod(target, dtype=np.int64)):
        return x
    value = asarray(convert(value, x.dtype))
    if leading:
        value = lax.reshape(value, shape[leading:])
    box = _box(x.shape, index)
    if box is None:
        return update(x, index, value, "set")
    starts, sizes = box
    update_value = lax.reshape(_broadcast(value, target), sizes)
    return lax.dynamic_update_slice(x, update_value, [np.int64(s) for s in starts])


def broadcasts_to(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _box(shape, index):
    """``(starts, sizes)`` when ``index`` names a box (ints, unit-step slices, ``...``,
    ``None``) of an array of ``shape``, else None. The index is already checked."""
    items = index if isinstance(index, tuple) else (index,)
    basic = all(
        i is None or i is Ellipsis or isinstance(i, slice) or is_int_scalar(i) for i in items
    )
    if not basic:
        return None
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    axes = []
    for i in items:
        if i is Ellipsis:
            axes += [slice(None)] * (len(shape) - consumed)
        elif i is not None:
            axes.append(i)
    axes += [slice(None)] * (len(shape) - len(axes))
    starts, sizes = [], []
    for i, size in zip(axes, shape, strict=True):
        if isinstance(i, slice):
            start, stop, step = i.indices(size)
            if step != 1:
                return None
            starts.append(start)
            sizes.append(max(stop - start, 0))
        else:
            starts.append(int(i) % size)
            sizes.append(1)
    return starts, sizes


def _traced_mask(index):
    """The traced boolean mask of ``x[mask] = v``, or None for any other index."""
    items = index if isinstance(index, tuple) else (index,)
    masks = [i for i in items if isinstance(i, Tracer) and i.dtype == dtypes.bool_]
    if not masks:
        return None
    if len(items) != 1:
        raise UnsupportedFunctionError(
            at_line(
                "x[mask, ...] = v with a traced boolean mask among other indices is not "
                "supported; write x = numpy.where(mask, v, x) with a mask of x's shape",
                user_frame_info(),
            )
        )
    return masks[0]


def _masked_set(x, mask, value):
    """``x[mask] = value`` for a traced mask: a select, when ``value`` is one value."""
    if mask.shape != x.shape[: mask.ndim]:
        raise IndexError(
            at_line(
                f"boolean index did not match indexed array: the mask's shape is "
                f"{mask.shape}, the array's {x.shape}",
                user_frame_info(),
            )
        )
    if int(np.prod(np.shape(value), dtype=np.int64)) != 1:
        raise UnsupportedFunctionError(
            at_line(
                "x[mask] = values with a traced mask: how many entries the mask selects is "
                "known only at run time, so only a single value can be assigned. Write "
                "x[...] = numpy.where(mask, values, x) with values of x's shape instead",
                user_frame_info(),
            )
        )
    value = asarray(convert(value, x.dtype))
    value = lax.broadcast_to_rank(lax.reshape(value, ()), x.shape)
    selected = lax.broadcast_in_dim(mask, x.shape, range(mask.ndim))
    return lax.select(selected, value, x)


def written_arguments(arguments, entry_vars) -> list[int]:
    """The positions of the argument handles that the traced function wrote into."""
    for i, (arg, var) in enumerate(zip(arguments, entry_vars, strict=True)):
        if arg.shape != var.aval.shape:
            raise InPlaceUpdateError(
                at_line(
                    f"the function sets the shape of its argument {i} "
                    f"({var.aval.str_short()}) in place (`x.shape = {arg.shape}`), which "
                    "in NumPy reshapes the caller's array; numbax cannot change the shape of "
                    "the caller's array. Bind a reshaped view instead: "
                    "x = x.reshape(...) (writes through it still reach the argument)",
                    arg._first_write,
                )
            )
    return [
        i
        for i, (arg, var) in enumerate(zip(arguments, entry_vars, strict=True))
        if arg._var is not var
    ]


def refuse_argument_writes(arguments, entry_vars, transform: str) -> None:
    """Refuse a write into an argument where nothing writes it back to the caller."""
    for i in written_arguments(arguments, entry_vars):
        raise InPlaceUpdateError(
            at_line(
                f"the function writes into its argument {i} ({arguments[i].aval.str_short()}) "
                f"in place, and {transform} does not write arguments back to the caller, "
                "so the caller's array would not change as NumPy would change it. Write "
                "into a copy (x = x.copy()) and return it, or jit the function: a jitted "
                "function writes its arguments back",
                arguments[i]._first_write,
            )
        )


def traced_overlap(a: Tracer, b: Tracer, numpy_function=np.shares_memory, **work) -> bool:
    """Whether two traced handles are one memory where NumPy would say so: the same
    handle, or views of one storage whose probes ``numpy_function`` finds overlapping.
    Every other traced array is memory of its own."""
    if a is b and a._view is None:
        return bool(is_mutable(a) and a.size)
    if a._view is None or b._view is None or a._view.storage is not b._view.storage:
        return False
    return bool(numpy_function(a._view.probe, b._view.probe, **work))


def _device_extent(x) -> tuple[int, int]:
    """The bytes ``[low, high)`` a device array's elements span (CUDA array interface)."""
    interface = x.__cuda_array_interface__
    shape, strides = interface["shape"], interface.get("strides")
    itemsize = np.dtype(interface["typestr"]).itemsize
    if strides is None:
        strides = tuple(
            int(np.prod(shape[k + 1 :], dtype=np.int64)) * itemsize for k in range(len(shape))
        )
    low = high = interface["data"][0]
    for n, stride in zip(shape, strides, strict=True):
        low, high = (low + (n - 1) * stride, high) if stride < 0 else (low, high + (n - 1) * stride)
    return low, high + itemsize


def _arguments_overlap(a, b) -> bool:
    """Whether two arguments of a call share memory (exactly, for NumPy arrays)."""
    if isinstance(a, Tracer) and isinstance(b, Tracer):
        return traced_overlap(a, b)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if not np.may_share_memory(a, b):
            return False
        try:
            return bool(np.shares_memory(a, b, max_work=1 << 20))
        except np.exceptions.TooHardError:
            return True  # too costly to decide exactly: taken as shared
    if all(hasattr(x, "__cuda_array_interface__") for x in (a, b)):
        if 0 in a.__cuda_array_interface__["shape"] or 0 in b.__cuda_array_interface__["shape"]:
            return False
        (low_a, high_a), (low_b, high_b) = _device_extent(a), _device_extent(b)
        return low_a < high_b and low_b < high_a
    return False


def refuse_aliased_writes(leaves, writes, name: str) -> None:
    """Refuse a call whose written argument shares memory with another argument: each
    argument is traced as an array of its own, so a write into one would not show in the
    other, as it does in NumPy."""
    for position in writes:
        for other, leaf in enumerate(leaves):
            if other != position and _arguments_overlap(leaves[position], leaf):
                written, shared = (_describe(leaves[k]) for k in (position, other))
                raise InPlaceUpdateError(
                    at_line(
                        f"{name} writes in place into an argument ({written}) that shares "
                        f"memory with another of its arguments ({shared}): one array passed "
                        "twice, or a view of it. numbax traces each argument as an array of "
                        "its own, so the write would not show in the other as it does in "
                        "NumPy. Pass a copy (x.copy()) as one of them, or pass the array once",
                        user_frame_info(),
                    )
                )


def _describe(leaf) -> str:
    shape = getattr(leaf, "shape", None)
    dtype = getattr(leaf, "dtype", None)
    return (
        f"{dtype}{list(shape)}" if shape is not None and dtype is not None else type(leaf).__name__
    )


def write_back(argument, value) -> None:
    """Put a jitted function's final value of a written argument into the caller's
    array: a traced caller's handle is rebound, a NumPy array written in place (NumPy's
    error for a read-only one). A NumPy or Python scalar is immutable: nothing to do."""
    if isinstance(argument, Tracer):
        if is_mutable(argument):
            write(argument, value, "a jitted function's write into its argument")
        return
    if isinstance(argument, np.ndarray):
        if isinstance(value, Tracer):
            raise InPlaceUpdateError(
                at_line(
                    f"a jitted function writes into its argument, a NumPy array "
                    f"{argument.shape} from outside the traced function that called it, "
                    f"which cannot hold traced values. {CAPTURED_FIX}.",
                    user_frame_info(),
                )
            )
        # The cuda backend's results are device arrays.
        np.copyto(argument, value.copy_to_host() if hasattr(value, "copy_to_host") else value)
    elif hasattr(argument, "copy_to_device"):  # a Numba device array
        argument.copy_to_device(np.ascontiguousarray(value))
    elif hasattr(argument, "__cuda_array_interface__"):  # CuPy, PyTorch
        argument[...] = value


def write_back_outputs(leaves, writes, outs) -> list:
    """Write the written arguments' final values (the last ``len(writes)`` outputs) into
    the caller's ``leaves``, as the function run by plain NumPy would have; return the
    other outputs."""
    if not writes:
        return outs
    count = len(outs) - len(writes)
    for position, value in zip(writes, outs[count:], strict=True):
        write_back(leaves[position], value)
    return outs[:count]
