"""NumPy's shape functions over tracers: reshape, transpose, swapaxes, moveaxis,
squeeze, expand_dims, broadcast_to, ravel, concatenate, stack, split, pad."""

from __future__ import annotations

import builtins

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError, UnsupportedFunctionError, at_line
from ..tracer import lax
from ..tracer.promote import (
    asarray,
    broadcast_shapes,
    convert,
    normalize_axes,
    normalize_axis,
    operand,
    result_type,
    static_shape,
)
from ..tracer.source_info import user_frame_info
from . import pad_modes


def _shape_error(message):
    return ShapeError(at_line(message, user_frame_info()))


def reshape(a, newshape=None, order="C", *, shape=None):
    x = asarray(a)
    target = shape if shape is not None else newshape
    if order != "C":
        raise UnsupportedFunctionError(
            at_line("reshape supports order='C' only", user_frame_info())
        )
    target = list(static_shape(target, "reshape"))
    if target.count(-1) > 1:
        raise _shape_error(f"reshape: can only specify one unknown dimension in {tuple(target)}")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        if known == 0 or x.size % known:
            raise _shape_error(
                f"reshape: cannot reshape array of shape {x.shape} into {tuple(target)}"
            )
        target[target.index(-1)] = x.size // known
    if int(np.prod(target, dtype=np.int64)) != x.size:
        raise _shape_error(
            f"reshape: cannot reshape array of size {x.size} (shape {x.shape}) "
            f"into shape {tuple(target)}"
        )
    return lax.reshape(x, target)


def ravel(a, order="C"):
    x = asarray(a)
    return reshape(x, (x.size,), order)


def transpose(a, axes=None):
    x = asarray(a)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    axes = normalize_axes(tuple(axes), x.ndim, "transpose")
    if len(axes) != x.ndim:
        raise _shape_error(f"transpose: axes {axes} don't match an array of shape {x.shape}")
    return lax.transpose(x, axes)


def swapaxes(a, axis1, axis2):
    x = asarray(a)
    perm = list(range(x.ndim))
    i, j = normalize_axis(axis1, x.ndim, "swapaxes"), normalize_axis(axis2, x.ndim, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(x, perm)


def moveaxis(a, source, destination):
    x = asarray(a)
    source = normalize_axes(source, x.ndim, "moveaxis")
    destination = normalize_axes(destination, x.ndim, "moveaxis")
    if len(source) != len(destination):
        raise _shape_error("moveaxis: source and destination need the same number of axes")
    order = [i for i in range(x.ndim) if i not in source]
    for dest, src in sorted(zip(destination, source, strict=False)):
        order.insert(dest, src)
    return lax.transpose(x, order)


def squeeze(a, axis=None):
    x = asarray(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    elif x.ndim == 0 and isinstance(axis, (int, np.integer)) and int(axis) in (0, -1):
        return x  # NumPy lets a 0-d array squeeze an int axis 0 or -1 (not a tuple)
    else:
        axes = normalize_axes(axis, x.ndim, "squeeze")
        for i in axes:
            if x.shape[i] != 1:
                raise _shape_error(
                    f"squeeze: cannot select an axis to squeeze out which has "
                    f"size not equal to one (axis {i} of shape {x.shape})"
                )
    return lax.squeeze(x, axes)


def expand_dims(a, axis):
    x = asarray(a)
    ndim = x.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    return lax.expand_dims(x, normalize_axes(axis, ndim, "expand_dims"))


def broadcast_to(array, shape):
    x = asarray(array)
    shape = static_shape(shape, "broadcast_to")
    if broadcast_shapes(x.shape, shape, operation="broadcast_to") != shape:
        raise _shape_error(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return lax.broadcast_to_rank(x, shape)


def broadcast_arrays(*args):
    xs = [asarray(a) for a in args]
    shape = broadcast_shapes(*[x.shape for x in xs], operation="broadcast_arrays")
    return [lax.broadcast_to_rank(x, shape) for x in xs]


def atleast_1d(x):
    x = asarray(x)
    return lax.reshape(x, (1,)) if x.ndim == 0 else x


_CASTING_RULES = ("no", "equiv", "safe", "same_kind", "unsafe")


def cast_all(xs, dtype, casting, operation):
    """``xs`` in ``dtype`` (default: their result type), each cast checked against the
    ``casting`` rule as NumPy's ``can_cast`` does."""
    if casting not in _CASTING_RULES:
        raise ValueError(
            at_line(
                f"{operation}: casting must be one of {', '.join(map(repr, _CASTING_RULES))} "
                f"(got {casting!r})",
                user_frame_info(),
            )
        )
    target = dtypes.canonicalize(dtype) if dtype is not None else result_type(*xs)
    for x in xs:
        source = x.dtype if hasattr(x, "dtype") else dtypes.canonicalize(np.result_type(x))
        if not np.can_cast(source, target, casting):
            raise NumbaxTypeError(
                at_line(
                    f"{operation}: cannot cast array data from {source!r} to {target!r} "
                    f"according to the rule {casting!r}; pass casting='unsafe' to allow it, or "
                    "convert with x.astype(...) first",
                    user_frame_info(),
                )
            )
    return [asarray(convert(x, target)) for x in xs]


def refuse_out(operation, out):
    if out is not None:
        raise UnsupportedFunctionError(
            at_line(
                f"{operation}(..., out=) is not supported on traced arrays; use the "
                f"returned array (y = np.{operation}(...))",
                user_frame_info(),
            )
        )


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    refuse_out("concatenate", out)
    xs = [operand(a) for a in arrays]
    if not xs:
        raise _shape_error("concatenate needs at least one array")
    xs = cast_all(xs, dtype, casting, "concatenate")
    if axis is None:
        xs, axis = [lax.reshape(x, (x.size,)) for x in xs], 0
    ndim = xs[0].ndim
    if ndim == 0:
        raise _shape_error("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, ndim, "concatenate")
    for x in xs:
        same_rank = x.ndim == ndim
        if not same_rank or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape, strict=False)) if i != axis
        ):
            raise _shape_error(
                "concatenate: all input array dimensions except the concatenation axis must "
                f"match; got shapes {[tuple(v.shape) for v in xs]} along axis {axis}"
            )
    return lax.concatenate(xs, axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    refuse_out("stack", out)
    xs = [asarray(a) for a in arrays]
    if not xs:
        raise _shape_error("stack needs at least one array")
    if len({x.shape for x in xs}) != 1:
        raise _shape_error(
            f"stack: all input arrays must have the same shape, got {[tuple(x.shape) for x in xs]}"
        )
    axis = normalize_axis(axis, xs[0].ndim + 1, "stack")
    xs = cast_all(xs, dtype, casting, "stack")
    shape = tuple(xs[0].shape)
    if axis < len(shape):
        # Joined along the existing axis, then that axis split in two: the same values,
        # and a concatenate of windows that fusion reads in place (im2col's patches);
        # size-1 axes inserted before the concatenate are broadcasts it cannot read through.
        joined = concatenate(xs, axis=axis)
        return lax.reshape(joined, (*shape[:axis], len(xs), *shape[axis:]))
    return concatenate([lax.expand_dims(x, (axis,)) for x in xs], axis=axis)


def hstack(tup, *, dtype=None, casting="same_kind"):
    xs = cast_all([atleast_1d(a) for a in tup], dtype, casting, "hstack")
    return concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


def vstack(tup, *, dtype=None, casting="same_kind"):
    xs = [asarray(a) for a in tup]
    xs = [lax.reshape(x, (1, x.size)) if x.ndim < 2 else x for x in xs]
    return concatenate(cast_all(xs, dtype, casting, "vstack"), axis=0)


def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, "split")


def array_split(ary, indices_or_sections, axis=0):
    """As ``split``, but N sections of an axis of length L need not divide it: the first
    ``L % N`` sections get one element more, as NumPy's ``array_split``."""
    return _split(ary, indices_or_sections, axis, "array_split")


def _split(ary, indices_or_sections, axis, operation):
    x = asarray(ary)
    axis = normalize_axis(axis, x.ndim, operation)
    size = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise _shape_error(f"{operation}: number of sections must be larger than 0")
        each, extra = divmod(size, sections)
        if extra and operation == "split":
            raise _shape_error(
                f"split: array split does not result in an equal division ({size} into "
                f"{sections}); np.array_split allows an uneven one"
            )
        widths = [each + 1] * extra + [each] * (sections - extra)
        bounds = [0] + np.cumsum(widths).tolist()
    else:
        bounds = (
            [0]
            + [builtins.min(builtins.max(int(i), 0), size) for i in indices_or_sections]
            + [size]
        )
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
        start = [0] * x.ndim
        limit = list(x.shape)
        start[axis], limit[axis] = lo, builtins.max(lo, hi)
        out.append(lax.slice(x, start, limit))
    return out


def pad(array, pad_width, mode="constant", constant_values=0):
    x = asarray(array)
    if mode != "constant" and mode not in pad_modes.MODES:
        raise UnsupportedFunctionError(
            at_line(
                f"pad: mode={mode!r} is not supported; numbax pads with mode='constant', "
                f"{', '.join(map(repr, pad_modes.MODES))}",
                user_frame_info(),
            )
        )
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if (widths < 0).any():
        raise _shape_error("pad: pad widths must be non-negative")
    if mode != "constant":
        empty = [k for k in range(x.ndim) if x.shape[k] == 0 and widths[k].any()]
        if empty:
            raise _shape_error(
                f"pad: can't extend empty axis {empty[0]} with mode={mode!r}; use mode='constant'"
            )
        return pad_modes.pad_with_mode(x, widths.tolist(), mode)
    value = convert(operand(constant_values), x.dtype)
    if np.shape(value) != ():
        raise UnsupportedFunctionError(
            at_line("pad: constant_values must be a scalar", user_frame_info())
        )
    return lax.pad(x, value, widths.tolist())


def flip(m, axis=None):
    from ..tracer.indexing import getitem

    x = asarray(m)
    axes = normalize_axes(axis, x.ndim, "flip")
    return getitem(
        x,
        tuple(slice(None, None, -1) if i in axes else slice(None) for i in builtins.range(x.ndim)),
    )
