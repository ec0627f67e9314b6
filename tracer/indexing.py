"""NumPy indexing over tracers (``x[...]``) and functional updates (``x.at[...]``).

Basic indices (ints, slices, None, Ellipsis) become one ``slice`` (and a
``dynamic_slice`` for traced ints, a window one wide) plus ``squeeze``/``expand_dims``;
integer arrays (and concrete boolean masks, via ``nonzero``) become one ``gather`` over
the indexed axes, placed where NumPy's advanced-indexing rules put it.

``x.at[idx].op(v)`` with a basic index (ints, traced ints, slices of any static step,
None, Ellipsis) updates the box the index names: a ``dynamic_update_slice`` of the
window when every step is 1, else the box's bounding window is read, the strided
positions of each axis written into it by a ``scatter`` along that axis (an index
array as long as the axis, never one the size of the window), and the window written
back. Any other index scatters into the flattened array at the positions an iota of
flat positions takes under the same indexing, so every index form that reads also
writes.

Out-of-range integer indices (JAX's rule; README "Out-of-range indices"): a negative
index counts from the end once, as in NumPy; what is still outside the axis then
- reads the nearest entry (clamped) when the index is traced (``x[i]``, ``take``,
  ``take_along_axis``); a concrete one raises IndexError, as NumPy does;
- drops its update in ``x.at[idx].set/add/multiply/min/max``, traced or concrete.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError, UnsupportedFunctionError
from . import lax
from .core import Tracer
from .promote import asarray, broadcast_shapes, convert, operand
from .source_info import error_at_user_line as _error


def is_int_scalar(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


class _Mask:
    """A concrete boolean mask until its axes are known (after Ellipsis expansion)."""

    def __init__(self, array):
        self.array = array


# Where a zero-width Ellipsis stood. NumPy counts it as separating the advanced indices
# on either side (``x[0, ..., idx]`` on a 2-d x puts the index dims first).
_SPLIT = object()


def _normalize(x, idx):
    """Expand Ellipsis, masks and None; return (x with new axes, list of per-dim
    indices, the position a zero-width Ellipsis split the indices at or None)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    items = []
    for i in idx:
        if isinstance(i, list):
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.dtype == bool:
            if i.ndim == 0:
                raise _error(
                    UnsupportedFunctionError, "indexing with a scalar boolean is not supported"
                )
            items.append(_Mask(i))
            continue
        if isinstance(i, Tracer) and i.dtype == dtypes.bool_:
            raise _error(
                UnsupportedFunctionError,
                "boolean mask indexing with a traced mask has a data-dependent shape; use "
                "numpy.where(mask, x, fill) to keep the shape static, or "
                "numbax.numpy.extract(mask, x, size=n) for the first n selected entries",
            )
        items.append(i)
    consuming = sum(
        i.array.ndim if isinstance(i, _Mask) else 1
        for i in items
        if i is not None and i is not Ellipsis
    )
    if consuming > x.ndim:
        raise _error(
            ShapeError,
            f"too many indices for array: array is {x.ndim}-dimensional, "
            f"but {consuming} were indexed",
        )
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise _error(ShapeError, "an index can only have a single ellipsis ('...')")
    ellipsis = next((k for k, i in enumerate(items) if i is Ellipsis), None)
    if ellipsis is not None:
        width = x.ndim - consuming
        items[ellipsis : ellipsis + 1] = [slice(None)] * width if width else [_SPLIT]
    else:
        items += [slice(None)] * (x.ndim - consuming)
    items = _expand_masks(x.shape, items)
    split = next((k for k, i in enumerate(items) if i is _SPLIT), None)
    items = [i for i in items if i is not _SPLIT]
    # Each None becomes a new size-1 axis of x indexed by a full slice.
    new_axes = [k for k, i in enumerate(items) if i is None]
    if new_axes:
        x = lax.expand_dims(x, new_axes) if isinstance(x, Tracer) else np.expand_dims(x, new_axes)
        items = [slice(None) if i is None else i for i in items]
    return x, items, split


def _expand_masks(shape, items):
    """Each mask becomes its ``nonzero`` integer arrays, after checking its shape
    against the axes it indexes (NumPy raises IndexError on a mismatch)."""
    out, axis = [], 0
    for i in items:
        if isinstance(i, _Mask):
            covered = shape[axis : axis + i.array.ndim]
            if i.array.shape != covered:
                raise _error(
                    IndexError,
                    f"boolean index did not match indexed array along "
                    f"axis {axis}: the array's size is {covered} but the boolean "
                    f"mask's is {i.array.shape}",
                )
            out.extend(np.nonzero(i.array))
            axis += i.array.ndim
            continue
        out.append(i)
        axis += i is not None and i is not _SPLIT
    return out


def known_index(idx):
    """``idx`` with each tracer whose value is known while tracing (an array the function
    created, a closure constant) replaced by that value, so it indexes as the NumPy array
    it stands for: a boolean mask keeps a static shape, an int a static position."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if not any(isinstance(i, Tracer) and i._value is not None for i in items):
        return idx
    known = tuple(_known(i) for i in items)
    return known if isinstance(idx, tuple) else known[0]


def _known(i):
    if not (isinstance(i, Tracer) and i._value is not None):
        return i
    value = np.asarray(i._value)
    return int(value) if value.ndim == 0 and dtypes.is_integer(value.dtype) else value


def getitem(x, idx):
    return _index(*_normalize(asarray(x), known_index(idx)))


def _index(x, items, split):
    """``x`` indexed by normalized ``items`` (one per axis)."""
    arrays = _has_arrays(items)
    advanced = [
        k
        for k, i in enumerate(items)
        if arrays and (isinstance(i, (np.ndarray, Tracer)) or is_int_scalar(i))
    ]
    # Basic indexing first, as one slice: slices, and (when no arrays are present) ints;
    # then negative steps, and a traced int's window one wide at its traced start.
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    reversed_axes, traced, squeeze = [], {}, []
    for axis, i in enumerate(items):
        if axis in advanced:
            continue
        size = x.shape[axis]
        if is_int_scalar(i):
            i = int(i)
            if not -size <= i < size:
                raise _error(
                    IndexError, f"index {i} is out of bounds for axis {axis} with size {size}"
                )
            i %= size
            starts[axis], limits[axis] = i, i + 1
            squeeze.append(axis)
        elif _is_traced_int(i):
            traced[axis] = _wrapped(i, size)
            squeeze.append(axis)
        elif isinstance(i, slice):
            start, stop, step = i.indices(size)
            if step > 0:
                starts[axis], limits[axis], strides[axis] = start, max(start, stop), step
            else:
                reversed_axes.append((axis, np.arange(start, stop, step, dtype=np.int64)))
        else:
            raise _error(
                NumbaxTypeError,
                f"unsupported index {i!r} of type "
                f"{type(i).__name__}; use ints, slices, None, ..., or integer arrays",
            )
    x = lax.slice(x, starts, limits, strides)
    for axis, positions in reversed_axes:
        x = lax.gather(x, positions, axis)
    if traced:
        # dynamic_slice clamps the start into the axis: a traced index past either end
        # reads the nearest entry, as the gather it replaces did.
        window = [1 if a in traced else n for a, n in enumerate(x.shape)]
        x = lax.dynamic_slice(x, [traced.get(a, np.int64(0)) for a in range(x.ndim)], window)
    if advanced:
        x = _advanced(x, items, advanced, split)
        shift = len(_index_shape(items, advanced)) - len(advanced)
        squeeze = [a if a < advanced[0] else a + shift for a in squeeze]
    return lax.squeeze(x, squeeze)


def _is_traced_int(i) -> bool:
    """A traced integer scalar: without arrays beside it, it indexes as an int does."""
    return isinstance(i, Tracer) and i.shape == () and dtypes.is_integer(i.dtype)


def _wrapped(i: Tracer, size: int) -> Tracer:
    """A traced index as int64, a negative one counted from the end once (NumPy's rule)."""
    i = lax.convert_element_type(i, dtypes.int64)
    return lax.select(lax.lt(i, np.int64(0)), lax.add(i, np.int64(size)), i)


def _has_arrays(items) -> bool:
    """Whether an integer array takes part (a traced scalar alone is no array)."""
    return any(
        isinstance(i, np.ndarray) or (isinstance(i, Tracer) and not _is_traced_int(i))
        for i in items
    )


def index_array(i, size, axis):
    """An integer index array with negative entries wrapped (and checked, if concrete)."""
    if isinstance(i, Tracer):
        if not dtypes.is_integer(i.dtype):
            raise _error(
                NumbaxTypeError, f"arrays used as indices must be of integer type, got {i.dtype}"
            )
        index_dtype = i.dtype
        return lax.select(
            lax.lt(i, np.asarray(0, index_dtype)), lax.add(i, np.asarray(size, index_dtype)), i
        )
    i = np.asarray(i)
    if not dtypes.is_integer(i.dtype):
        raise _error(
            NumbaxTypeError, f"arrays used as indices must be of integer type, got {i.dtype}"
        )
    if i.size and (i.min() < -size or i.max() >= size):
        raise _error(IndexError, f"index out of bounds for axis {axis} with size {size}")
    return np.where(i < 0, i + size, i).astype(np.int64)


def _index_shape(items, advanced):
    return broadcast_shapes(*[np.shape(items[a]) for a in advanced], operation="indexing")


def _advanced(x, items, advanced, split=None):
    shape = _index_shape(items, advanced)
    indices = [index_array(items[a], x.shape[a], a) for a in advanced]
    indices = [
        lax.broadcast_to_rank(asarray(i), shape) if np.shape(i) != shape else i for i in indices
    ]
    first = advanced[0]
    if len(advanced) == 1:
        return lax.gather(x, indices[0], first)
    # Several arrays: move their axes to the front, flatten them into one, and gather
    # with the linear index.
    rest = [a for a in range(x.ndim) if a not in advanced]
    moved = lax.transpose(x, advanced + rest)
    sizes = [x.shape[a] for a in advanced]
    flat = lax.reshape(moved, (int(np.prod(sizes, dtype=np.int64)),) + moved.shape[len(sizes) :])
    linear = None
    strides = np.cumprod([1] + sizes[::-1][:-1])[::-1]
    for index, size, stride in zip(indices, sizes, strides, strict=True):
        index = asarray(convert(index, dtypes.int64))
        if isinstance(index, Tracer):
            # Clamp each index in its own axis: the gather's clamp of the linear index
            # would carry an overflow into the neighbouring row.
            index = lax.min(lax.max(index, np.int64(0)), np.int64(max(size - 1, 0)))
        term = lax.mul(index, np.int64(stride)) if stride != 1 else index
        linear = term if linear is None else lax.add(linear, term)
    out = lax.gather(flat, linear, 0)
    adjacent = advanced == list(range(first, first + len(advanced))) and not (
        split is not None and first < split <= advanced[-1]
    )
    if adjacent and first > 0:
        k = len(shape)
        order = list(range(k, k + first)) + list(range(k)) + list(range(k + first, out.ndim))
        out = lax.transpose(out, order)
    return out


def _contains_tracer(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, Tracer) for i in items)


def in_axis_or_past_end(i, size: int):
    """An integer index with NumPy's negatives wrapped once, and every entry still outside
    ``[0, size)`` replaced by ``size``: the position one past the end of the axis."""
    if is_int_scalar(i):
        i = int(i) + size if i < 0 else int(i)
        return i if 0 <= i < size else size
    if isinstance(i, Tracer):
        i = lax.convert_element_type(i, dtypes.int64)
        wrapped = lax.select(lax.lt(i, np.int64(0)), lax.add(i, np.int64(size)), i)
        inside = lax.bitwise_and(lax.ge(wrapped, np.int64(0)), lax.lt(wrapped, np.int64(size)))
        return lax.select(inside, wrapped, np.int64(size))
    i = np.asarray(i).astype(np.int64)
    wrapped = np.where(i < 0, i + size, i)
    return np.where((wrapped >= 0) & (wrapped < size), wrapped, size)


def _updated_positions(shape, idx):
    """The flat position of each entry of an array of ``shape`` that ``idx`` names.

    An update at an out-of-range integer index is dropped, as in JAX: each integer-indexed
    axis gets one extra entry holding the position one past the whole array, every
    out-of-range index is sent to it, and the scatter drops what lands past the end.
    """
    size = int(np.prod(shape, dtype=np.int64))
    traced = _contains_tracer(idx)
    if traced:
        positions = lax.reshape(lax.iota(dtypes.int64, (size,)), shape)
    else:
        positions = np.arange(size, dtype=np.int64).reshape(shape)
    positions, items, split = _normalize(positions, idx)
    padding = [(0, 0)] * len(items)
    for axis, i in enumerate(items):
        is_array = isinstance(i, (np.ndarray, Tracer)) and dtypes.is_integer(i.dtype)
        if is_array or is_int_scalar(i):
            items[axis] = in_axis_or_past_end(i, positions.shape[axis])
            padding[axis] = (0, 1)
    if traced:
        return _index(lax.pad(positions, np.int64(size), padding), items, split)
    padded = np.pad(positions, padding, constant_values=size)
    if split is not None:  # keep the zero-width Ellipsis that separates the arrays
        items.insert(split, Ellipsis)
    return padded[tuple(items)]


def update(x, idx, values, mode: str):
    """Functional ``x[idx] op= values``: an update of the box a basic index names (see
    the module docstring), else a scatter into the flattened array. An update whose
    integer index is outside its axis (after wrapping a negative one once) is dropped,
    traced or concrete, as JAX does."""
    x = asarray(x)
    idx = known_index(idx)
    axes = _basic_axes(x.ndim, idx)
    if axes is not None:
        return _update_box(x, axes, values, mode)
    positions = _updated_positions(x.shape, idx)
    values = asarray(convert(operand(values), x.dtype))
    target = np.shape(positions)
    if broadcast_shapes(np.shape(values), target, operation=f".at[].{mode}") != target:
        raise _error(
            ShapeError,
            f".at[].{mode}: values of shape {np.shape(values)} do not "
            f"broadcast to the indexed shape {target}",
        )
    values = lax.broadcast_to_rank(values, target)
    count = int(np.prod(target, dtype=np.int64))
    flat = lax.reshape(x, (x.size,))
    out = lax.scatter(
        flat, lax.reshape(asarray(positions), (count,)), lax.reshape(values, (count,)), 0, mode
    )
    return lax.reshape(out, x.shape)


def _basic_axes(ndim: int, idx) -> list | None:
    """A basic index as one entry per axis of x (an int, a traced int or a static slice)
    with its Nones kept in place; None if it has arrays, masks or a traced slice bound
    (the general path reads those, and raises what NumPy raises)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    basic = all(
        i is None or i is Ellipsis or is_int_scalar(i) or _is_traced_int(i) or _static_slice(i)
        for i in items
    )
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    ellipses = sum(1 for i in items if i is Ellipsis)
    if not basic or consumed > ndim or ellipses > 1:
        return None
    axes = []
    for i in items:
        axes += [slice(None)] * (ndim - consumed) if i is Ellipsis else [i]
    return axes + [slice(None)] * (ndim - consumed) * (1 - ellipses)


def _static_slice(i) -> bool:
    bounds = (i.start, i.stop, i.step) if isinstance(i, slice) else (0.5,)
    return all(b is None or is_int_scalar(b) for b in bounds)


def _update_box(x, axes, values, mode: str):
    """``x`` with the box ``axes`` names updated (``update`` for a basic index)."""
    lows, counts, steps, inside, target, dropped = [], [], [], [], [], False
    for i in axes:
        if i is None:
            target.append(1)
            continue
        size = x.shape[len(lows)]
        if isinstance(i, slice):
            start, stop, step = i.indices(size)
            count = len(range(start, stop, step))
            lows.append(np.int64(start if step > 0 else start + (count - 1) * step))
            counts.append(count)
            steps.append(step)
            target.append(count)
            continue
        if is_int_scalar(i):
            position = int(i) + size if i < 0 else int(i)
            dropped |= not 0 <= position < size
            lows.append(np.int64(position))
        else:
            position = _wrapped(i, size)
            inside.append(
                lax.bitwise_and(lax.ge(position, np.int64(0)), lax.lt(position, np.int64(size)))
            )
            lows.append(position)
        counts.append(1)
        steps.append(1)
    values = asarray(convert(operand(values), x.dtype))
    target = tuple(target)
    if broadcast_shapes(np.shape(values), target, operation=f".at[].{mode}") != target:
        raise _error(
            ShapeError,
            f".at[].{mode}: values of shape {np.shape(values)} do not "
            f"broadcast to the indexed shape {target}",
        )
    if dropped or 0 in counts:
        return x
    values = lax.reshape(lax.broadcast_to_rank(values, target), counts)
    spans = [(n - 1) * abs(step) + 1 for n, step in zip(counts, steps, strict=True)]
    strided = [
        (axis, np.arange(n, dtype=np.int64) * step - min(0, (n - 1) * step))
        for axis, (n, step) in enumerate(zip(counts, steps, strict=True))
        if step != 1
    ]
    old = None
    if strided or mode != "set" or inside:
        old = lax.dynamic_slice(x, lows, spans)
    if strided:
        window = _scatter_axes(old, values, strided, mode)
    else:
        window = values if mode == "set" else _combine(mode, old, values)
    if inside:
        every = inside[0]
        for also in inside[1:]:
            every = lax.bitwise_and(every, also)
        window = lax.select(lax.broadcast_to_rank(every, spans), window, old)
    return lax.dynamic_update_slice(x, window, lows)


def _scatter_axes(box, values, axes, mode: str):
    """``box`` with ``values`` combined in at the strided positions of each of ``axes``
    ((axis, positions) pairs), one scatter along each axis, innermost last."""
    (axis, positions), rest = axes[0], axes[1:]
    if not rest:
        return lax.scatter(box, positions, values, axis, mode)
    inner = _scatter_axes(lax.gather(box, positions, axis), values, rest, mode)
    return lax.scatter(box, positions, inner, axis, "set")


def _combine(mode: str, old, new):
    """``old`` op ``new`` as the scatter of ``mode`` combines them (booleans: or, and)."""
    if old.dtype == dtypes.bool_ and mode in ("add", "mul"):
        return lax.bitwise_or(old, new) if mode == "add" else lax.bitwise_and(old, new)
    return {"add": lax.add, "mul": lax.mul, "min": lax.min, "max": lax.max}[mode](old, new)


class IndexUpdateRef:
    """``x.at[idx]``: functional updates that return a new array, as in JAX."""

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self):
        return getitem(self.array, self.index)

    def set(self, values):
        return update(self.array, self.index, values, "set")

    def add(self, values):
        return update(self.array, self.index, values, "add")

    def multiply(self, values):
        return update(self.array, self.index, values, "mul")

    mul = multiply

    def min(self, values):
        return update(self.array, self.index, values, "min")

    def max(self, values):
        return update(self.array, self.index, values, "max")


class IndexUpdateHelper:
    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return IndexUpdateRef(self.array, index)


def take(a, indices, axis=None, mode=None):
    x = asarray(a)
    if axis is None or x.ndim == 0:  # NumPy's take sees a 0-d array as shape (1,)
        x, axis = lax.reshape(x, (x.size,)), 0 if axis is None else axis
    from .promote import normalize_axis

    axis = normalize_axis(axis, x.ndim, "take")
    indices = operand(indices) if isinstance(indices, Tracer) else np.asarray(indices)
    size = x.shape[axis]
    if mode == "wrap" and size:
        indices = np.remainder(indices, size)  # dispatches to numbax for a tracer
    elif mode == "clip" and size:
        indices = np.clip(indices, 0, size - 1)
    elif mode not in (None, "raise", "wrap", "clip"):
        raise _error(ValueError, f"take: mode must be 'raise', 'wrap' or 'clip', not {mode!r}")
    return lax.gather(x, index_array(indices, size, axis), axis)


def take_along_axis(arr, indices, axis):
    x = asarray(arr)
    from .promote import normalize_axis

    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    axis = normalize_axis(axis, x.ndim, "take_along_axis")
    indices = indices if isinstance(indices, Tracer) else np.asarray(indices)
    if np.ndim(indices) != x.ndim:
        raise _error(
            ShapeError,
            f"take_along_axis: indices and arr must have the same number "
            f"of dimensions ({np.ndim(indices)} vs {x.ndim})",
        )
    # Index every other axis with a broadcast iota, so this is one advanced index.
    shape = broadcast_shapes(
        tuple(d for k, d in enumerate(x.shape) if k != axis),
        tuple(d for k, d in enumerate(np.shape(indices)) if k != axis),
        operation="take_along_axis",
    )
    full_shape = list(shape)
    full_shape.insert(axis, np.shape(indices)[axis])
    items = []
    for k in range(x.ndim):
        if k == axis:
            items.append(lax.broadcast_to_rank(asarray(indices), full_shape))
        else:
            items.append(lax.iota(dtypes.int64, full_shape, k))
    return getitem(x, tuple(items))
