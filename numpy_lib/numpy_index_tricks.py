"""Flat indices and bits: ravel_multi_index, unravel_index, ix_, the ``*_indices_from``,
packbits and unpackbits; compositions of primitives. Each name in ``FUNCTIONS`` joins
``numbax.numpy`` and NumPy's dispatch tables (``numpy_lib/numpy_api.py``).

Out-of-range traced indices cannot raise at run time: under ``mode='raise'`` they take the
nearest valid entry, as numbax's ``take`` does (a concrete one raises what NumPy raises).
The ``*_indices_from`` return NumPy constants (they depend only on the shape); the
arguments that set a shape (``dims``, ``count``, ``k``) are static.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import ConcretizationError, NumbaxTypeError, ShapeError
from ..tracer import lax
from ..tracer.core import known_value
from ..tracer.indexing import known_index
from ..tracer.promote import asarray, convert, normalize_axis
from ..tracer.source_info import error_at_user_line as _error
from . import shapes, ufuncs
from .numpy_construction import static_ints, static_value
from .numpy_placement import array_sequence, check_entries, check_mode, wrap_or_clip

# --------------------------------------------------------------------------------------
# Flat indices and the *_indices_from


def _check_order(order, name: str):
    if order not in ("C", "F"):
        raise _error(ValueError, f"numpy.{name}: only 'C' or 'F' order is permitted")


def _shape_arg(dims, name: str) -> tuple[int, ...]:
    dims = static_ints(dims, name, "the shape")
    if min(dims, default=0) < 0:
        raise _error(ShapeError, f"numpy.{name}: dimensions must be non-negative, not {dims}")
    return dims


def _strides(dims: tuple[int, ...], order: str) -> list[int]:
    """The flat-index step of each axis of an array of ``dims`` in ``order``."""
    if order == "F":
        return [int(np.prod(dims[:k], dtype=np.int64)) for k in range(len(dims))]
    return [int(np.prod(dims[k + 1 :], dtype=np.int64)) for k in range(len(dims))]


def _int_index(i, name: str):
    x = asarray(known_index(i))
    if not (dtypes.is_integer(x.dtype) or x.dtype == dtypes.bool_):
        raise _error(NumbaxTypeError, f"numpy.{name}: only int indices permitted, not {x.dtype}")
    return convert(x, dtypes.int64)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    dims = _shape_arg(dims, "ravel_multi_index")
    _check_order(order, "ravel_multi_index")
    coordinates = array_sequence(multi_index, "ravel_multi_index", "multi_index")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if 0 in dims or len(coordinates) != len(dims) or len(modes) != len(dims):
        raise _error(
            ShapeError,
            f"numpy.ravel_multi_index: {len(coordinates)} coordinate arrays and "
            f"{len(modes)} modes for the shape {dims}: give one of each per axis of a shape "
            "with entries",
        )
    total = np.int64(0)
    for coordinate, size, step, each in zip(
        coordinates, dims, _strides(dims, order), modes, strict=True
    ):
        check_mode(each, "numpy.ravel_multi_index")
        index = _int_index(coordinate, "ravel_multi_index")
        if each == "raise":
            check_entries(index, 0, size, "invalid entry in coordinates array")
        index = wrap_or_clip(index, size, "wrap" if each == "wrap" else "clip")
        total = ufuncs.add(total, ufuncs.multiply(index, np.int64(step)))
    return total


def unravel_index(indices, shape, order="C"):
    dims = _shape_arg(shape, "unravel_index")
    _check_order(order, "unravel_index")
    index = _int_index(indices, "unravel_index")
    size = int(np.prod(dims, dtype=np.int64))
    if size == 0 and index.size:
        raise _error(ValueError, f"numpy.unravel_index: the shape {dims} has no entries")
    check_entries(index, 0, size, f"index out of bounds for array with size {size}")
    index = wrap_or_clip(index, size, "clip") if index.size else index
    return tuple(
        ufuncs.remainder(ufuncs.floor_divide(index, np.int64(step)), np.int64(d))
        for d, step in zip(dims, _strides(dims, order), strict=True)
    )


def ix_(*args):
    """An open mesh of 1-d index arrays, each on its own axis, as ``numpy.ix_``. A boolean
    mask stands for its True positions: a count that sets the shape, so its value must be
    known while tracing."""
    meshed = []
    for k, arg in enumerate(args):
        x = asarray(np.zeros(0, np.intp) if isinstance(arg, (list, tuple)) and not arg else arg)
        if x.ndim != 1:
            raise _error(ShapeError, "numpy.ix_: Cross index must be 1 dimensional")
        if x.dtype == dtypes.bool_:
            mask = known_value(x)
            if mask is None:
                raise _error(
                    ConcretizationError,
                    f"numpy.ix_: argument {k} is a traced boolean mask, whose number of True "
                    "entries sets the result's shape; pass integer positions instead, such as "
                    "numbax.numpy.nonzero(mask, size=n)[0] with a static n",
                )
            x = asarray(np.flatnonzero(mask))
        meshed.append(lax.reshape(x, (1,) * k + x.shape + (1,) * (len(args) - k - 1)))
    return tuple(meshed)


def diag_indices_from(arr):
    shape = np.shape(arr)
    if len(shape) < 2:
        raise _error(ShapeError, "numpy.diag_indices_from: input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise _error(
            ShapeError, "numpy.diag_indices_from: all dimensions of input must be of equal length"
        )
    return np.diag_indices(shape[0], len(shape))


def _indices_from(triangle, name: str):
    def indices_from(arr, k=0):
        shape = np.shape(arr)
        if len(shape) != 2:
            raise _error(ShapeError, f"numpy.{name}: input array must be 2-d, not {shape}")
        return triangle(shape[0], int(static_value(k, name, "k")), shape[1])

    indices_from.__name__ = name
    return indices_from


tril_indices_from = _indices_from(np.tril_indices, "tril_indices_from")
triu_indices_from = _indices_from(np.triu_indices, "triu_indices_from")


# --------------------------------------------------------------------------------------
# packbits and unpackbits


def _bit_axis(x, axis, name: str):
    """``x`` and the axis its bits run along (the flattened array for ``axis=None``)."""
    if axis is None:
        return shapes.ravel(x), 0
    x = shapes.atleast_1d(x)
    return x, normalize_axis(axis, x.ndim, name)


def _bit_shifts(bitorder: str, ndim: int, axis: int, name: str):
    """The position of each of a byte's 8 bits, the most significant first for ``'big'``,
    shaped to broadcast along a new axis after ``axis``."""
    if bitorder not in ("big", "little"):
        raise _error(ValueError, f"numpy.{name}: 'order' must be either 'little' or 'big'")
    shifts = np.arange(8, dtype=np.uint8)
    shifts = shifts[::-1] if bitorder == "big" else shifts
    return shifts.reshape((8,) + (1,) * (ndim - axis - 1))


def packbits(a, axis=None, bitorder="big"):
    x = asarray(a)
    if not (dtypes.is_integer(x.dtype) or x.dtype == dtypes.bool_):
        raise _error(
            NumbaxTypeError,
            f"numpy.packbits: expected an input array of integer or boolean data type, "
            f"not {x.dtype}",
        )
    x, axis = _bit_axis(x, axis, "packbits")
    shifts = _bit_shifts(bitorder, x.ndim, axis, "packbits")
    bytes_ = -(-x.shape[axis] // 8)
    bits = lax.convert_element_type(ufuncs.not_equal(x, 0), dtypes.uint8)
    padding = [(0, 8 * bytes_ - x.shape[axis] if k == axis else 0) for k in range(x.ndim)]
    bits = lax.pad(bits, np.uint8(0), padding)
    grouped = lax.reshape(bits, x.shape[:axis] + (bytes_, 8) + x.shape[axis + 1 :])
    return lax.reduce_sum(ufuncs.left_shift(grouped, shifts), (axis + 1,))


def unpackbits(a, axis=None, count=None, bitorder="big"):
    x = asarray(a)
    if x.dtype != dtypes.uint8:
        raise _error(
            NumbaxTypeError,
            f"numpy.unpackbits: expected an input array of unsigned byte data type, not {x.dtype}",
        )
    x, axis = _bit_axis(x, axis, "unpackbits")
    shifts = _bit_shifts(bitorder, x.ndim, axis, "unpackbits")
    bits = ufuncs.bitwise_and(ufuncs.right_shift(lax.expand_dims(x, (axis + 1,)), shifts), 1)
    length = 8 * x.shape[axis]
    bits = lax.reshape(bits, x.shape[:axis] + (length,) + x.shape[axis + 1 :])
    if count is None:
        return bits
    count = int(static_ints(count, "unpackbits", "count")[0])
    if count < -length:
        raise _error(ShapeError, "numpy.unpackbits: -count larger than number of elements")
    kept = count if count >= 0 else length + count
    limits = [kept if k == axis else n for k, n in enumerate(bits.shape)]
    padding = [(0, max(kept - length, 0) if k == axis else 0) for k in range(x.ndim)]
    bits = lax.pad(bits, np.uint8(0), padding)
    return lax.slice(bits, (0,) * x.ndim, limits)


FUNCTIONS = {
    "ix_": ix_,
    "diag_indices_from": diag_indices_from,
    "packbits": packbits,
    "ravel_multi_index": ravel_multi_index,
    "tril_indices_from": tril_indices_from,
    "triu_indices_from": triu_indices_from,
    "unpackbits": unpackbits,
    "unravel_index": unravel_index,
}
UFUNCS: dict = {}
