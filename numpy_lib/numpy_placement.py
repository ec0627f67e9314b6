"""Writes into arrays and index construction: the in-place functions (copyto, put, putmask,
place, put_along_axis, fill_diagonal), choose, block, resize, diagflat, the flat-index
apply_along_axis and apply_over_axes; compositions of primitives. The flat-index
conversions and the bit packing are in ``numpy_index_tricks``.

The in-place functions return None and write into their first argument as ``x[i] = v``
does (``tracer/functionalize.py``): every handle and view of it sees the write, a jitted
function writes its arguments back, and a write into an array of an enclosing trace is
refused. Each converts its values as NumPy does: ``copyto`` under its ``casting=`` rule,
``putmask`` and ``place`` an array safely, ``put``, ``put_along_axis`` and
``fill_diagonal`` unsafely; a Python scalar (or a list of them) everywhere as
``numpy.array(values, dtype)`` would, a Python int outside the dtype's range refused.

Out-of-range indices follow numbax's ``take`` and ``x.at[]`` (JAX's rule): a concrete one
raises what NumPy raises; a traced one cannot raise at run time, so a write (``put``,
``put_along_axis``) is dropped and a read (``choose``, ``ravel_multi_index``,
``unravel_index`` with ``mode='raise'``) takes the nearest valid entry. Where an index
repeats, NumPy keeps the last write; numbax's scatter does not promise which (as JAX).
``place`` consumes its values in order over the True entries with a cumulative-sum rank
of the mask, so a traced mask keeps a static shape.

``apply_along_axis`` traces its function once and maps it over the slices as a loop
(``map_rows``, a ``scan``), so the program does not grow with their number; an array
whose value is known while tracing is sliced in Python, as NumPy does.
Arguments that set a shape (``new_shape``, ``dims``, ``count``, ``k``) are static.
NumPy's ``choose`` converts choices with a wrap-around for a Python int outside their
dtype; numbax refuses it (``ScalarOverflowError``), as everywhere else.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import (
    ConcretizationError,
    InPlaceUpdateError,
    NumbaxTypeError,
    ShapeError,
)
from ..tracer import lax
from ..tracer.control_flow import map_rows
from ..tracer.core import Tracer, known_value
from ..tracer.functionalize import CAPTURED_FIX, broadcasts_to, is_mutable, write, write_out
from ..tracer.indexing import (
    getitem,
    in_axis_or_past_end,
    index_array,
    known_index,
    take_along_axis,
    update,
)
from ..tracer.promote import (
    asarray,
    broadcast_shapes,
    convert,
    is_weak,
    normalize_axis,
    operand,
    python_scalar_as,
    result_type,
)
from ..tracer.source_info import error_at_user_line as _error
from . import reductions, shapes, ufuncs
from .numpy_construction import diag, static_ints, static_value, tile

# --------------------------------------------------------------------------------------
# Writing into the first argument


def _target(a, name: str) -> Tracer:
    """``a``, the array ``numpy.<name>`` writes into, if the program may write into it."""
    if is_mutable(a):
        return a
    if isinstance(a, np.ndarray):
        raise _error(
            InPlaceUpdateError,
            f"numpy.{name} writes traced values into its first argument, a NumPy array "
            f"{a.shape} from outside the traced function, which cannot hold them. "
            f"{CAPTURED_FIX}.",
        )
    if isinstance(a, Tracer):
        raise _error(
            InPlaceUpdateError,
            f"numpy.{name} writes into its first argument, a NumPy scalar (the 0-d result "
            "of an operation), which NumPy cannot write into either. Write into the array "
            "it came from",
        )
    raise _error(
        NumbaxTypeError,
        f"numpy.{name}() argument 1 must be a numpy.ndarray, not {type(a).__name__} "
        "(NumPy raises TypeError too)",
    )


def _values(values, dtype, casting: str, name: str):
    """``values`` in ``dtype`` as ``numpy.<name>`` converts them: an array under the
    ``casting`` rule; Python and NumPy scalars, and lists of them, as
    ``numpy.array(values, dtype)`` does (a Python int out of range is refused)."""
    if isinstance(values, (list, tuple)) and isinstance(asarray(values), Tracer):
        values = asarray(values)  # a list holding tracers
    if isinstance(values, (np.ndarray, Tracer)) and not is_weak(values):
        return shapes.cast_all([values], dtype, casting, f"numpy.{name}")[0]
    if isinstance(values, Tracer):  # a Python scalar argument of jit
        return convert(values, dtype)
    return python_scalar_as(values, dtype)


def _cycled(values, shape):
    """``values`` flattened and repeated cyclically to fill ``shape`` (NumPy's resize)."""
    size = int(np.prod(shape, dtype=np.int64))
    flat = shapes.ravel(values)
    repeats = -(-size // flat.shape[0])
    return lax.reshape(lax.slice(tile(flat, repeats), (0,), (size,)), shape)


def _write_flat(x, positions, values, name: str) -> None:
    """Write ``values`` (as many as ``positions``) into ``x`` at its flat ``positions``."""
    new = update(shapes.ravel(x), positions, values, "set")
    write(x, lax.reshape(new, x.shape), f"numpy.{name}")


def copyto(dst, src, casting="same_kind", where=True):
    x = _target(dst, "copyto")
    src = operand(src)
    if is_weak(src) and casting != "unsafe" and result_type(src, x) == x.dtype:
        casting = "unsafe"  # NEP 50: a Python scalar fits any dtype of its kind or above
    (value,) = shapes.cast_all([src], x.dtype, casting, "numpy.copyto")
    if not broadcasts_to(value.shape, x.shape):
        raise _error(
            ShapeError,
            f"numpy.copyto: could not broadcast input array from shape {value.shape} into "
            f"shape {x.shape} (NumPy raises this too)",
        )
    value = lax.broadcast_to_rank(value, x.shape)
    if not reductions.is_unmasked(where):
        value = lax.select(reductions.where_mask(where, x.shape, "numpy.copyto"), value, x)
    write(x, value, "numpy.copyto")


def check_mode(mode, name: str):
    if mode not in (None, "raise", "wrap", "clip"):
        raise _error(
            ValueError, f"{name}: mode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})"
        )


def wrap_or_clip(index, size: int, mode: str):
    """An index into ``size`` entries under ``mode='wrap'`` or ``'clip'`` (NumPy's)."""
    if mode == "wrap":
        return np.remainder(index, size)  # dispatches to numbax for a tracer
    return np.clip(index, 0, size - 1)


def put(a, ind, v, mode="raise"):
    x = _target(a, "put")
    check_mode(mode, "numpy.put")
    positions = shapes.ravel(convert(asarray(known_index(ind)), dtypes.int64))
    values = _values(v, x.dtype, "unsafe", "put")
    if positions.shape[0] == 0 or np.size(values) == 0:
        return
    if x.size == 0:
        raise _error(IndexError, "numpy.put: cannot replace elements of an empty array")
    if mode not in (None, "raise"):
        positions = wrap_or_clip(positions, x.size, mode)
    elif not isinstance(positions, Tracer):
        positions = index_array(positions, x.size, 0)  # NumPy's IndexError out of range
    # update drops a write at a traced position out of range
    _write_flat(x, positions, _cycled(values, positions.shape), "put")


def _mask_of(mask, x, name: str):
    """``mask``'s truth values, one per entry of ``x`` in flat order, in ``x``'s shape."""
    mask = asarray(mask)
    if mask.size != x.size:
        raise _error(ShapeError, f"numpy.{name}: mask and data must be the same size")
    truth = mask if mask.dtype == dtypes.bool_ else ufuncs.not_equal(mask, 0)
    return lax.reshape(truth, x.shape)


def putmask(a, mask, values):
    """``a.flat[n] = values[n % len(values)]`` wherever ``mask.flat[n]``, as NumPy's."""
    x = _target(a, "putmask")
    truth = _mask_of(mask, x, "putmask")
    values = _values(values, x.dtype, "safe", "putmask")
    if np.size(values) == 0 or x.size == 0:
        return
    write(x, lax.select(truth, _cycled(values, x.shape), x), "numpy.putmask")


def place(arr, mask, vals):
    """The True entries of ``mask`` take ``vals`` in order (repeated cyclically): entry n
    takes ``vals[r % len(vals)]``, r the number of True entries before it."""
    x = _target(arr, "place")
    truth = _mask_of(mask, x, "place")
    values = shapes.ravel(_values(vals, x.dtype, "safe", "place"))
    if values.shape[0] == 0:
        _refuse_empty_place(truth)
        return
    if x.size == 0:
        return
    before = lax.sub(lax.cumsum(lax.convert_element_type(shapes.ravel(truth), dtypes.int64), 0), 1)
    slot = lax.rem(lax.max(before, np.int64(0)), np.int64(values.shape[0]))
    taken = lax.reshape(lax.gather(values, slot, 0), x.shape)
    write(x, lax.select(truth, taken, x), "numpy.place")


def _refuse_empty_place(truth):
    known = known_value(truth)
    if known is None:
        raise _error(
            ConcretizationError,
            "numpy.place with an empty vals: NumPy raises ValueError when the mask selects "
            "any entry, which jit cannot know of a traced mask while tracing. Pass at least "
            "one value, or skip the call where the mask selects nothing",
        )
    if np.any(known):
        raise _error(ShapeError, "numpy.place: Cannot insert from an empty array!")


def put_along_axis(arr, indices, values, axis):
    x = _target(arr, "put_along_axis")
    indices = known_index(indices)
    indices = indices if isinstance(indices, Tracer) else np.asarray(indices)
    if not dtypes.is_integer(indices.dtype):
        raise _error(IndexError, "numpy.put_along_axis: `indices` must be an integer array")
    lines = x
    if axis is None:
        if indices.ndim != 1:
            raise _error(ShapeError, "numpy.put_along_axis: when axis=None, `indices` must be 1-d")
        lines, axis = shapes.ravel(x), 0
    axis = normalize_axis(axis, lines.ndim, "put_along_axis")
    size = lines.shape[axis]
    if not isinstance(indices, Tracer):
        index_array(indices, size, axis)  # NumPy's IndexError for a concrete one
    # The flat position of every entry, one past the whole array for an index out of range
    # (a traced one), where the write is dropped.
    padding = [(0, int(k == axis)) for k in range(lines.ndim)]
    grid = np.pad(np.arange(x.size).reshape(lines.shape), padding, constant_values=x.size)
    positions = take_along_axis(grid, in_axis_or_past_end(indices, size), axis)
    values = _values(values, x.dtype, "unsafe", "put_along_axis")
    if not broadcasts_to(np.shape(values), positions.shape):
        raise _error(
            ShapeError,
            f"numpy.put_along_axis: shape mismatch: value array of shape {np.shape(values)} "
            f"could not be broadcast to indexing result of shape {positions.shape}",
        )
    _write_flat(
        x, positions, lax.broadcast_to_rank(asarray(values), positions.shape), "put_along_axis"
    )


def fill_diagonal(a, val, wrap=False):
    x = _target(a, "fill_diagonal")
    if x.ndim < 2:
        raise _error(ShapeError, "numpy.fill_diagonal: array must be at least 2-d")
    if x.ndim == 2:
        step, end = x.shape[1] + 1, None if wrap else x.shape[1] * x.shape[1]
    elif len(set(x.shape)) != 1:
        raise _error(
            ShapeError, "numpy.fill_diagonal: all dimensions of input must be of equal length"
        )
    else:
        step, end = 1 + int(np.cumprod(x.shape[:-1]).sum()), None
    positions = np.arange(x.size, dtype=np.int64)[:end:step]
    values = _values(val, x.dtype, "unsafe", "fill_diagonal")
    if positions.size and np.size(values):
        _write_flat(x, positions, _cycled(values, positions.shape), "fill_diagonal")


# --------------------------------------------------------------------------------------
# choose, block, resize, diagflat


def choose(a, choices, out=None, mode="raise"):
    index = asarray(a)
    if not np.can_cast(index.dtype, dtypes.int64, "safe"):
        raise _error(
            NumbaxTypeError,
            f"numpy.choose: cannot cast array data from {index.dtype!r} to int64 according "
            "to the rule 'safe' (NumPy raises this too): pass integer indices",
        )
    check_mode(mode, "numpy.choose")
    options = array_sequence(choices, "choose", "choices")
    count = len(options)
    if mode in (None, "raise"):
        check_entries(index, 0, count, "invalid entry in choice array")
    # A traced index out of range under 'raise' reads the nearest choice, as take reads.
    index = wrap_or_clip(convert(index, dtypes.int64), count, "wrap" if mode == "wrap" else "clip")
    shape = broadcast_shapes(np.shape(index), *(np.shape(c) for c in options), operation="choose")
    dtype = result_type(*options)
    stacked = shapes.stack([_broadcast(convert(c, dtype), shape) for c in options])
    picked = take_along_axis(stacked, lax.expand_dims(_broadcast(index, shape), (0,)), 0)
    result = lax.reshape(picked, shape)
    return result if out is None else write_out(out, result, "choose", "unsafe")


def _broadcast(x, shape):
    return lax.broadcast_to_rank(asarray(x), shape)


def array_sequence(arrays, name: str, what: str) -> list:
    """The arrays of a sequence argument (the rows of an array), Python scalars kept."""
    if isinstance(arrays, (Tracer, np.ndarray)):
        items = [getitem(arrays, k) for k in range(arrays.shape[0] if arrays.ndim else 0)]
    else:
        items = [operand(c) for c in arrays]
    if not items:
        raise _error(ShapeError, f"numpy.{name}: {what} is a 0-length sequence")
    return items


def check_entries(index, low: int, high: int, message: str):
    """NumPy's ValueError for a concrete index outside ``[low, high)``."""
    known = index._value if isinstance(index, Tracer) else np.asarray(index)
    if known is not None and known.size and (known.min() < low or known.max() >= high):
        raise _error(ValueError, f"{message} (NumPy raises ValueError too)")


def resize(a, new_shape):
    x = asarray(a)
    shape = static_ints(new_shape, "resize", "new_shape")
    if min(shape, default=0) < 0:
        raise _error(ShapeError, "numpy.resize: all elements of `new_shape` must be non-negative")
    if x.size == 0 or 0 in shape:
        return lax.full(shape, 0, x.dtype)
    return _cycled(x, shape)


def block(arrays):
    depth, rank = _block_depth(arrays, "arrays")
    return _block(arrays, depth, max(depth, rank))


def _block_depth(arrays, where: str) -> tuple[int, int]:
    """(list depth, the largest rank of a leaf), with NumPy's checks of the nesting."""
    if isinstance(arrays, tuple):
        raise _error(
            NumbaxTypeError,
            f"numpy.block: {where} is a tuple. Only lists can be used to arrange blocks",
        )
    if not isinstance(arrays, list):
        return 0, np.ndim(arrays)
    if not arrays:
        raise _error(ShapeError, f"numpy.block: list at {where} cannot be empty")
    inner = [_block_depth(e, f"{where}[{k}]") for k, e in enumerate(arrays)]
    if len({depth for depth, _ in inner}) > 1:
        raise _error(ShapeError, f"numpy.block: list depths are mismatched in {where}")
    return inner[0][0] + 1, max(rank for _, rank in inner)


def _block(arrays, depth: int, rank: int):
    """Innermost lists join along the last axis, each list around them one axis before."""
    if depth == 0:
        x = asarray(arrays)
        return lax.reshape(x, (1,) * (rank - x.ndim) + x.shape)
    return shapes.concatenate([_block(e, depth - 1, rank) for e in arrays], axis=rank - depth)


def diagflat(v, k=0):
    return diag(shapes.ravel(v), int(static_value(k, "diagflat", "k")))


# --------------------------------------------------------------------------------------
# apply_along_axis and apply_over_axes


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` of each 1-d slice along ``axis``; its result's axes take ``axis``'s place.
    Under jit one trace of ``func1d`` runs over every slice (``map_rows``), however many;
    where the array's value is known while tracing (eager ``grad``), each slice is traced
    with its value, so ``func1d`` may branch on it in Python, as under NumPy."""
    x = asarray(arr)
    axis = normalize_axis(axis, x.ndim, "apply_along_axis")
    lines = shapes.moveaxis(x, axis, -1)
    outer = lines.shape[:-1]
    if 0 in outer:
        raise _error(
            ShapeError, "numpy.apply_along_axis: cannot apply when any iteration dimension is 0"
        )
    rows = lax.reshape(lines, (int(np.prod(outer)), lines.shape[-1]))

    def one(row):
        return asarray(func1d(row, *args, **kwargs))

    if known_value(x) is None:
        stacked = map_rows(one, rows)
    else:
        results = [one(getitem(rows, i)) for i in range(rows.shape[0])]
        first = results[0]
        # NumPy fills a buffer of the first result's dtype and shape with every result.
        stacked = shapes.stack(
            [shapes.broadcast_to(convert(r, first.dtype), first.shape) for r in results]
        )
    stacked = lax.reshape(stacked, outer + stacked.shape[1:])
    moved = list(range(len(outer), stacked.ndim))
    return lax.transpose(stacked, list(range(axis)) + moved + list(range(axis, len(outer))))


def apply_over_axes(func, a, axes):
    value = asarray(a)
    ndim = value.ndim
    for axis in static_ints(axes, "apply_over_axes", "axes"):
        axis = axis + ndim if axis < 0 else axis
        result = asarray(func(value, axis))
        if result.ndim != value.ndim:
            result = lax.expand_dims(result, (axis,))
        if result.ndim != value.ndim:
            raise _error(
                ShapeError,
                "numpy.apply_over_axes: the function is not returning an array of the "
                "correct shape",
            )
        value = result
    return value


FUNCTIONS = {
    "apply_along_axis": apply_along_axis, "apply_over_axes": apply_over_axes, "block": block,
    "choose": choose, "copyto": copyto, "diagflat": diagflat, "fill_diagonal": fill_diagonal,
    "place": place, "put": put, "put_along_axis": put_along_axis, "putmask": putmask,
    "resize": resize,
}  # fmt: skip
UFUNCS: dict = {}
