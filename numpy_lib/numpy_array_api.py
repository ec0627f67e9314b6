"""NumPy 2's array-API spellings: ``astype``, ``around``, ``rollaxis``, ``matrix_transpose``,
``unstack``, ``cumulative_sum``/``cumulative_prod``; the gufuncs ``matvec``, ``vecmat``,
``vecdot`` and the ufunc ``bitwise_count``; and ``numpy.linalg``'s array-API variants
(``LINALG_FUNCTIONS``, which ``numpy_linalg.FUNCTIONS`` takes in). The dtype and memory
queries are in ``numpy_queries``.

Decisions:

- Views are NumPy's: ``rollaxis``, ``matrix_transpose`` and ``unstack`` return views, and
  ``linalg.diagonal`` a read-only one, because they are built from the view-returning
  functions of ``numbax.numpy`` (``numpy_lib/views.py``). ``astype(..., copy=False)`` to the
  dtype the array has returns a view of it (NumPy returns the array itself: a write
  through either reaches the other in both).
- The gufuncs are ``matmul`` on a vector made a matrix (``dot_general``), so their dtypes
  are matmul's (bools stay bools) and ``vecdot``/``vecmat`` conjugate their vector first.
  ``numbax.numpy``'s spelling takes ``axes=`` and (``vecdot``) ``axis=`` as NumPy does;
  other ufunc keywords (``keepdims``, ``dtype``, ...) are refused by name. They have no
  ``.outer``/``.reduce`` methods, which NumPy refuses for gufuncs too.
- ``bitwise_count`` counts the bits of ``|x|`` (NumPy's rule; ``|min|`` wraps to itself,
  whose unsigned bits are one bit, as NumPy counts) with shifts and masks, in uint8.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..ir import dtypes
from ..ir.errors import AxisError, NumbaxTypeError, ShapeError, at_line
from ..tracer import lax
from ..tracer.promote import asarray, is_array, normalize_axis
from ..tracer.source_info import error_at_user_line as _error
from ..tracer.source_info import user_frame_info
from . import (
    linalg,
    numpy_complex,
    numpy_construction,
    numpy_statistics,
    reductions,
    shapes,
    ufuncs,
    views,
)
from .creation import array

# --------------------------------------------------------------------------------------
# Conversions, axes and views


def astype(x, dtype, /, *, copy=True, device=None):
    if not (is_array(x) or np.isscalar(x)):
        raise _error(
            NumbaxTypeError,
            f"numpy.astype: x must be an array or a scalar, not a {type(x).__name__} (NumPy "
            "refuses it too); convert it with numpy.asarray first",
        )
    if device not in (None, "cpu"):
        raise _error(ValueError, f"numpy.astype: device must be None or 'cpu', not {device!r}")
    x = asarray(x)
    if not copy and x.dtype == dtypes.canonicalize(dtype):
        return views.getitem(x, Ellipsis)
    return array(x, dtype=dtype)


def rollaxis(a, axis, start=0):
    """NumPy's ``rollaxis``: ``axis`` moved to before position ``start``, as a view."""
    a = asarray(a)
    ndim = a.ndim
    axis = normalize_axis(axis, ndim, "rollaxis")
    start = operator.index(start)
    if start < 0:
        start += ndim
    if not 0 <= start <= ndim:
        raise AxisError(
            at_line(
                f"rollaxis: 'start' arg requires {-ndim} <= start < {ndim + 1}, but {start} was "
                "passed in",
                user_frame_info(),
            ),
            start,
            ndim,
        )
    if axis < start:
        start -= 1  # the axis is taken out before it is put back
    if axis == start:
        return views.getitem(a, Ellipsis)
    order = [d for d in range(ndim) if d != axis]
    order.insert(start, axis)
    return views.FUNCTIONS["transpose"](a, order)


def matrix_transpose(x, /):
    if np.ndim(x) < 2:
        raise _error(
            ShapeError,
            f"matrix_transpose: the array must be at least 2-dimensional, but it is "
            f"{np.ndim(x)}-dimensional (NumPy raises ValueError too)",
        )
    return views.FUNCTIONS["swapaxes"](x, -1, -2)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, a tuple of views."""
    x = asarray(x)
    if x.ndim == 0:
        raise _error(ShapeError, "unstack: the array must be at least 1-d (NumPy raises too)")
    return tuple(views.FUNCTIONS["moveaxis"](x, normalize_axis(axis, x.ndim, "unstack"), 0))


def _cumulative(scan, identity, name):
    """``cumulative_sum``/``cumulative_prod``: ``scan`` (cumsum or cumprod, which give NumPy's
    accumulation dtypes) along ``axis``, after the identity when ``include_initial``."""

    def fn(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if out is not None:
            reductions.refuse_unsupported(name, {"out": out})
        x = reductions.as_1d_if_scalar(asarray(x))
        if axis is None and x.ndim > 1:
            raise _error(
                ShapeError,
                f"{name}: axis= is required for an array of more than one dimension ({x.shape}; "
                "NumPy raises too)",
            )
        axis = normalize_axis(0 if axis is None else axis, x.ndim, name)
        result = scan(x, axis, dtype)
        if not include_initial:
            return result
        padding = [(1, 0) if d == axis else (0, 0) for d in range(x.ndim)]
        return lax.pad(result, np.asarray(identity, result.dtype), padding)

    fn.__name__ = fn.__qualname__ = name
    return fn


cumulative_sum = _cumulative(reductions.cumsum, 0, "cumulative_sum")
cumulative_prod = _cumulative(numpy_statistics.cumprod, 1, "cumulative_prod")


# --------------------------------------------------------------------------------------
# The gufuncs matvec, vecmat, vecdot and the ufunc bitwise_count

# Each gufunc's signature and the number of core axes of its operands and of its result.
_SIGNATURES = {
    "matvec": ("(m,n),(n)->(m)", (2, 1), 1),
    "vecmat": ("(n),(n,m)->(m)", (1, 2), 1),
    "vecdot": ("(n),(n)->()", (1, 1), 0),
}


def _core_axes(name, axes, axis):
    """``axes=``/``axis=`` as one tuple of core axes per operand and one for the result."""
    signature, ranks, out_rank = _SIGNATURES[name]
    if axis is not None:
        if axes is not None:
            raise _error(NumbaxTypeError, f"{name}: cannot specify both 'axis' and 'axes'")
        if set(ranks) != {1}:
            raise _error(
                NumbaxTypeError,
                f"{name}: axis= can only be used with a single shared core dimension, not with "
                f"the signature {signature} (NumPy refuses it too); use axes=",
            )
        return [(axis,)] * len(ranks), ()
    axes = list(axes)
    if out_rank == 0 and len(axes) == len(ranks):
        axes.append(())
    if len(axes) != len(ranks) + 1:
        raise _error(
            ShapeError,
            f"{name}: axes= needs an entry for each of the {len(ranks)} inputs and the output "
            f"(signature {signature}); the output's can be left out only when it has no core "
            "axes",
        )
    entries = [(entry,) if isinstance(entry, (int, np.integer)) else tuple(entry) for entry in axes]
    for entry, rank in zip(entries, (*ranks, out_rank), strict=True):
        if len(entry) != rank:
            raise _error(
                ShapeError,
                f"{name}: axes= entry {entry} does not name the {rank} core axes of its operand "
                f"(signature {signature})",
            )
    return entries[:-1], entries[-1]


def _gufunc(name, compute):
    """The gufuncs' front end: core axes moved last (``axes=``/``axis=``), their sizes checked
    against the signature, ``compute`` on the matrices, the result's core axes put back."""
    signature, ranks, out_rank = _SIGNATURES[name]

    def fn(x1, x2, /, *, axes=None, axis=None, **unsupported):
        reductions.refuse_unsupported(name, unsupported)
        operands = [asarray(x1), asarray(x2)]
        for i, (x, rank) in enumerate(zip(operands, ranks, strict=True)):
            if x.ndim < rank:
                raise _error(
                    ShapeError,
                    f"{name}: input operand {i} has {x.ndim} dimension(s), but the signature "
                    f"{signature} needs at least {rank} (NumPy raises too)",
                )
        out_axes = None
        if axes is not None or axis is not None:
            in_axes, out_axes = _core_axes(name, axes, axis)
            operands = [
                _moved_last(x, entry, f"{name} (axes=)")
                for x, entry in zip(operands, in_axes, strict=True)
            ]
        first, second = operands
        contracted = first.shape[-1], second.shape[-ranks[1]]
        if contracted[0] != contracted[1]:
            raise _error(
                ShapeError,
                f"{name}: the core dimension n of the signature {signature} is {contracted[0]} "
                f"in the first operand {first.shape} and {contracted[1]} in the second "
                f"{second.shape} (NumPy raises too)",
            )
        result = compute(first, second)
        if out_axes is None or not out_rank:
            return result
        return shapes.moveaxis(result, -1, normalize_axis(out_axes[0], result.ndim, name))

    fn.__name__ = fn.__qualname__ = name
    return fn


def _moved_last(x, entry, operation):
    sources = [normalize_axis(a, x.ndim, operation) for a in entry]
    return shapes.moveaxis(x, sources, list(range(x.ndim - len(entry), x.ndim)))


def _conjugated(x):
    return numpy_complex.conj(x) if dtypes.is_complex(x.dtype) else x


def _squeezed(x, *axes_from_end):
    return lax.squeeze(x, [x.ndim - k for k in axes_from_end])


matvec = _gufunc(
    "matvec", lambda a, v: _squeezed(linalg.matmul(a, lax.expand_dims(v, (v.ndim,))), 1)
)
vecmat = _gufunc(
    "vecmat",
    lambda v, a: _squeezed(linalg.matmul(lax.expand_dims(_conjugated(v), (v.ndim - 1,)), a), 2),
)
vecdot = _gufunc(
    "vecdot",
    lambda u, v: _squeezed(
        linalg.matmul(
            lax.expand_dims(_conjugated(u), (u.ndim - 1,)), lax.expand_dims(v, (v.ndim,))
        ),
        1,
        2,
    ),
)


def bitwise_count(x, /):
    """The number of 1-bits of ``|x|``, in uint8: pairs, nibbles and bytes summed in place
    (shifts and masks), then the bytes added up."""
    x = asarray(x)
    if x.dtype == dtypes.bool_:
        return lax.convert_element_type(x, dtypes.uint8)
    if not dtypes.is_integer(x.dtype):
        raise _error(
            NumbaxTypeError,
            f"numpy.bitwise_count is defined for integers and bools, not {x.dtype} (NumPy "
            "refuses it too)",
        )
    if x.dtype.kind == "i":
        x = ufuncs.absolute(x)
    size = x.dtype.itemsize
    bits = lax.convert_element_type(x, np.dtype(f"uint{8 * size}"))

    def constant(value):
        return np.asarray(value, bits.dtype)

    def every_byte(byte):
        return constant(int.from_bytes(bytes([byte]) * size, "little"))

    def shifted(value, count):
        return lax.shift_right_arithmetic(value, constant(count))  # logical: unsigned

    bits = lax.sub(bits, lax.bitwise_and(shifted(bits, 1), every_byte(0x55)))
    pairs = every_byte(0x33)
    bits = lax.add(lax.bitwise_and(bits, pairs), lax.bitwise_and(shifted(bits, 2), pairs))
    bits = lax.bitwise_and(lax.add(bits, shifted(bits, 4)), every_byte(0x0F))
    for count in (8, 16, 32)[: int(math.log2(size))]:
        bits = lax.add(bits, shifted(bits, count))
    return lax.convert_element_type(lax.bitwise_and(bits, constant(0xFF)), dtypes.uint8)


# --------------------------------------------------------------------------------------
# numpy.linalg's array-API variants: NumPy's functions over the last two axes (or one)


def linalg_cross(x1, x2, /, *, axis=-1):
    """``numpy.linalg.cross``: ``numpy.cross`` of 3-vectors only."""
    x1, x2 = asarray(x1), asarray(x2)
    sizes = [x.shape[normalize_axis(axis, x.ndim, "linalg.cross")] for x in (x1, x2)]
    if sizes != [3, 3]:
        raise _error(
            ShapeError,
            "numpy.linalg.cross: both arrays must be (arrays of) 3-dimensional vectors, but "
            f"they are {sizes[0]} and {sizes[1]} dimensional (NumPy raises too); numpy.cross "
            "takes 2-vectors",
        )
    return numpy_construction.cross(x1, x2, axis=axis)


def linalg_diagonal(x, /, *, offset=0):
    return views.FUNCTIONS["diagonal"](x, offset, -2, -1)


def linalg_outer(x1, x2, /):
    """``numpy.linalg.outer``: ``numpy.outer`` of 1-d arrays only."""
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise _error(
            ShapeError,
            "numpy.linalg.outer: the arrays must be one-dimensional, but they are "
            f"{x1.ndim}- and {x2.ndim}-dimensional (NumPy raises too); numpy.outer flattens them",
        )
    return linalg.outer(x1, x2)


def linalg_trace(x, /, *, offset=0, dtype=None):
    return numpy_construction.trace(x, offset, -2, -1, dtype)


def linalg_vecdot(x1, x2, /, *, axis=-1):
    return vecdot(x1, x2, axis=axis)


FUNCTIONS = {
    "around": ufuncs.round,
    "astype": astype,
    "cumulative_prod": cumulative_prod,
    "cumulative_sum": cumulative_sum,
    "matrix_transpose": matrix_transpose,
    "rollaxis": rollaxis,
    "unstack": unstack,
}
UFUNCS = {"bitwise_count": bitwise_count, "matvec": matvec, "vecdot": vecdot, "vecmat": vecmat}
LINALG_FUNCTIONS = {
    "cross": linalg_cross,
    "diagonal": linalg_diagonal,
    "matmul": linalg.matmul,
    "matrix_transpose": matrix_transpose,
    "outer": linalg_outer,
    "tensordot": linalg.tensordot,
    "trace": linalg_trace,
    "vecdot": linalg_vecdot,
}
for _name in ("cross", "diagonal", "outer", "trace", "vecdot"):  # numpy.linalg's names
    LINALG_FUNCTIONS[_name].__name__ = LINALG_FUNCTIONS[_name].__qualname__ = _name
