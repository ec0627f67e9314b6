"""Results whose size depends on the data: nonzero, argwhere, flatnonzero, compress,
extract, trim_zeros (the set operations, built on them, are in ``numpy_sets``).

How many entries these return depends on the values, which ``jit`` does not know while
tracing. As in ``jax.numpy``, the ``numbax.numpy`` spellings take a static ``size=``: the
first ``size`` entries, padded with ``fill_value``. NumPy's own spelling (no ``size=``)
uses the count when the value is known while tracing (eagerly under ``grad``, an array
the function built from constants) and is otherwise a ``ConcretizationError`` naming the
``numbax.numpy`` call to write. Each is a composition of ``cumsum``, ``scatter`` (the
positions of the true entries, ``sorting.nonzero_positions``), ``gather`` and ``sort``,
so the selected values have derivatives and every backend runs them.

Decisions where NumPy leaves room: the padding is 0 for the positions and the selections
(JAX's default). ``trim_zeros`` has no ``size=``: the trimmed box is the data's (JAX
refuses it under ``jit`` too). A ``compress`` condition longer than the axis is fine
where its extra entries are known to be false; unknown, it is refused (NumPy's IndexError
for a true one cannot be checked).

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.errors import ConcretizationError, ShapeError
from ..tracer import lax
from ..tracer.core import known_value
from ..tracer.functionalize import write_out
from ..tracer.promote import asarray, normalize_axes, normalize_axis
from ..tracer.source_info import error_at_user_line as _error
from . import shapes, ufuncs
from .numpy_statistics import as_bool
from .sorting import (
    nonzero_positions,
    padding_value,
    static_size,
)

INDEX_DTYPE = dtypes.int64


def first_true(mask, size: int):
    """The positions of the first ``size`` true entries of the 1-D ``mask`` (padded with 0)
    and which of them are real."""
    positions = nonzero_positions(mask, size)
    count = lax.reduce_sum(lax.convert_element_type(mask, INDEX_DTYPE), (0,))
    return positions, lax.iota(INDEX_DTYPE, (size,), 0) < count


def take_padded(values, positions, real, fill, axis=0):
    """``values`` at ``positions`` along ``axis``, ``fill`` where the slot is not real;
    ``fill=None`` (1-D only): the first real entry, or 0 when there is none."""
    shape = values.shape[:axis] + (positions.shape[0],) + values.shape[axis + 1 :]
    if values.shape[axis] == 0:
        return lax.full(shape, 0 if fill is None else fill, values.dtype)
    taken = lax.gather(values, positions, axis)
    if positions.shape[0] == 0:
        return taken
    if fill is None:
        fill = ufuncs.where(real[0], taken[0], np.zeros((), values.dtype))
    return ufuncs.where(lax.broadcast_in_dim(real, shape, (axis,)), taken, fill)


def compact(values, mask, size: int, fill=None):
    """The first ``size`` entries of the 1-D ``values`` where ``mask`` holds, padded."""
    positions, real = first_true(mask, size)
    return take_padded(values, positions, real, fill)


def _count_nonzero(value) -> int:
    return int(np.count_nonzero(value))


def given_size(size, name: str):
    """``size=`` as an int (None stays None): a static, non-negative count."""
    if size is None:
        return None
    size = int(size)
    if size < 0:
        raise _error(ShapeError, f"numpy.{name}: size={size} must not be negative")
    return size


# --------------------------------------------------------------------------------------
# nonzero and the selections built on it


def _fills(fill_value, ndim: int, name: str):
    """One padding value (or None) per axis: ``fill_value`` is a scalar or a tuple."""
    if not isinstance(fill_value, tuple):
        return [fill_value] * ndim
    if len(fill_value) != ndim:
        raise _error(
            ShapeError,
            f"numpy.{name}: fill_value= has {len(fill_value)} entries for an array of "
            f"{ndim} dimensions; give one per dimension, or a scalar",
        )
    return list(fill_value)


def _coordinates(x, size, fill_value, name: str, call: str):
    """The coordinates of ``x``'s first ``size`` nonzero entries, one array per axis."""
    mask = lax.reshape(as_bool(x), (x.size,))
    size = given_size(size, name)
    if size is None:
        size = static_size([mask], _count_nonzero, name, "nonzero entries", call)
    flat, real = first_true(mask, size)
    coordinates = []
    for axis, fill in enumerate(_fills(fill_value, x.ndim, name)):
        stride = int(np.prod(x.shape[axis + 1 :], dtype=np.int64))
        coordinate = flat if x.size == 0 else (flat // stride) % np.int64(x.shape[axis])
        if fill is not None:
            coordinate = ufuncs.where(real, coordinate, padding_value(fill, INDEX_DTYPE, name))
        coordinates.append(coordinate)
    return coordinates


def nonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero entries, one array per axis, as ``numpy.nonzero``; with
    ``size=``, the first ``size`` of them, padded with ``fill_value`` (default 0; a scalar
    or one per axis), as ``jax.numpy.nonzero``.

    >>> import numbax
    >>> numbax.jit(lambda x: numbax.numpy.nonzero(x > 1, size=3, fill_value=-1))(
    ...     numbax.numpy.asarray([0.5, 2.0, 3.0, 1.0]))
    (array([ 1,  2, -1]),)
    """
    x = asarray(a)
    if x.ndim == 0:
        raise _error(
            ValueError,
            "numpy.nonzero: calling nonzero on 0d arrays is not allowed (as in NumPy); use "
            "np.atleast_1d(scalar).nonzero() instead",
        )
    call = "nonzero(x, size=n, fill_value=v)"
    return tuple(_coordinates(x, size, fill_value, "nonzero", call))


def argwhere(a, *, size=None, fill_value=None):
    """The indices of the nonzero entries, one row each, as ``numpy.argwhere``; ``size=``
    and ``fill_value=`` as in ``nonzero``. A 0-d array has rows of no columns, as in NumPy."""
    x = asarray(a)
    flat = lax.reshape(x, (1,)) if x.ndim == 0 else x
    coordinates = _coordinates(flat, size, fill_value, "argwhere", "argwhere(x, size=n)")
    rows = shapes.stack(coordinates, axis=1)
    return rows[:, :0] if x.ndim == 0 else rows


def flatnonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero entries of the flattened array, as
    ``numpy.flatnonzero``; ``size=`` and ``fill_value=`` as in ``nonzero``."""
    call = "flatnonzero(x, size=n)"
    return _coordinates(shapes.ravel(a), size, fill_value, "flatnonzero", call)[0]


def _fitted_condition(condition, n: int, name: str):
    """The 1-D truth of ``condition`` as long as the axis: shorter is padded with False
    (NumPy truncates the selection); longer is fine where the extra entries are false."""
    mask = as_bool(condition)
    extra = mask.shape[0] - n
    if extra <= 0:
        return shapes.concatenate([mask, np.zeros(-extra, bool)])
    value = known_value(mask)
    if value is None:
        raise _error(
            ShapeError,
            f"numpy.{name}: the condition has {mask.shape[0]} entries for an axis of {n}; "
            "NumPy raises IndexError when one of the extra entries is true, which jit cannot "
            f"check while tracing. Pass condition[:{n}]",
        )
    if value[n:].any():
        index = n + int(np.flatnonzero(value[n:])[0])
        raise _error(IndexError, f"numpy.{name}: index {index} is out of bounds for size {n}")
    return mask[:n]


def _compress(condition, x, axis, size, fill_value, name: str, call: str):
    """The slices of ``x`` along ``axis`` where the 1-D ``condition`` is true, padded."""
    mask = _fitted_condition(condition, x.shape[axis], name)
    size = given_size(size, name)
    if size is None:
        size = static_size([mask], _count_nonzero, name, "selected entries", call)
    positions, real = first_true(mask, size)
    fill = padding_value(fill_value, x.dtype, name)
    return take_padded(x, positions, real, fill, axis)


def compress(condition, a, axis=None, out=None, *, size=None, fill_value=0):
    """The slices of ``a`` along ``axis`` (None: of the flattened ``a``) where the 1-D
    ``condition`` is true, as ``numpy.compress``; with ``size=``, the first ``size``,
    padded with ``fill_value``, as ``jax.numpy.compress``."""
    condition = asarray(condition)
    if condition.ndim != 1:
        raise _error(
            ShapeError,
            f"numpy.compress: condition must be a 1-d array (as NumPy requires), not of shape "
            f"{condition.shape}",
        )
    x = shapes.ravel(a) if axis is None else asarray(a)
    axis = 0 if axis is None else normalize_axis(axis, x.ndim, "compress")
    call = "compress(condition, a, axis, size=n)"
    result = _compress(condition, x, axis, size, fill_value, "compress", call)
    return result if out is None else write_out(out, result, "compress", "unsafe")


def extract(condition, arr, *, size=None, fill_value=0):
    """The entries of the flattened ``arr`` where the flattened ``condition`` is true, as
    ``numpy.extract``; with ``size=``, the first ``size``, padded with ``fill_value``."""
    call = "extract(condition, arr, size=n)"
    return _compress(
        shapes.ravel(condition), shapes.ravel(arr), 0, size, fill_value, "extract", call
    )


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading (``'f'``) and trailing (``'b'``) zeros along ``axis``
    (None: every axis), as ``numpy.trim_zeros``: a view, for a value known while tracing."""
    x = asarray(filt)
    trim = trim.lower()
    if trim not in ("fb", "bf", "f", "b"):
        raise _error(ValueError, f"numpy.trim_zeros: unexpected character(s) in trim: {trim!r}")
    axes = normalize_axes(axis, x.ndim, "trim_zeros")
    if not axes:
        return x
    value = known_value(x)
    if value is None:
        raise _error(
            ConcretizationError,
            "numpy.trim_zeros: how much to trim depends on the data, which jit does not know "
            "while tracing (jax.numpy.trim_zeros refuses under jit too). Trim before calling "
            "the jitted function, or keep the shape: numpy.where(x != 0, ...) or "
            "numbax.numpy.flatnonzero(x, size=n) give the bounds as traced values",
        )
    nonzero_at = np.argwhere(value)
    start, stop = [0] * x.ndim, [0] * x.ndim
    if nonzero_at.size:
        start = nonzero_at.min(0).tolist() if "f" in trim else [None] * x.ndim
        stop = (nonzero_at.max(0) + 1).tolist() if "b" in trim else [None] * x.ndim
    box = tuple(slice(start[k], stop[k]) if k in axes else slice(None) for k in range(x.ndim))
    return x[box]


FUNCTIONS: dict = {
    "nonzero": nonzero,
    "argwhere": argwhere,
    "flatnonzero": flatnonzero,
    "compress": compress,
    "extract": extract,
    "trim_zeros": trim_zeros,
}
UFUNCS: dict = {}
