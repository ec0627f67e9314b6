"""Batching rules of the first-order primitives: elementwise, structural, reductions,
``dot_general``, indexing. Control flow and calls are in ``batching_control_flow``.

Most rules move the batch dimension to the front and shift the primitive's axis
params by one; elementwise ops and reductions keep it where it is when they can, so
a batched MLP does not fill up with transposes.
"""

from __future__ import annotations

import numpy as np

from ..ir.elementwise import BINARY, COMPARISONS, UNARY
from ..ir.primitive import PRIMITIVES
from ..ir.reductions import with_leading_axes
from ..tracer import lax
from ..tracer.core import bind
from .batching import (
    BATCH_RULES,
    axis_size,
    broadcast_batch,
    broadcast_lanes,
    dtype_of,
    example_shape,
    moveaxis,
    shape_of,
    to_front,
)

ELEMENTWISE = [
    *UNARY,
    *BINARY,
    *COMPARISONS,
    "integer_pow",
    "select",
    "convert_element_type",
    "stop_gradient",
    "threefry2x32",
]


def elementwise_rule(name):
    prim = PRIMITIVES[name]

    def rule(args, dims, **params):
        size = axis_size(args, dims)
        examples = [example_shape(x, d) for x, d in zip(args, dims, strict=True)]
        shape = next((s for s in examples if s), ())
        batched_dims = {d for d in dims if d is not None}
        in_place = len(batched_dims) == 1 and all(
            s == shape if d is not None else s == () for s, d in zip(examples, dims, strict=True)
        )
        if in_place:  # one shared batch dim, unbatched operands are rank-0: bind as is
            return [bind(prim, *args, **params)], [batched_dims.pop()]
        moved = []
        for x, d, s in zip(args, dims, examples, strict=True):
            if d is None:
                moved.append(x if s == () else broadcast_batch(x, size))
            else:
                x = moveaxis(x, d, 0)
                moved.append(broadcast_lanes(x, (size,) + shape) if s != shape else x)
        return [bind(prim, *moved, **params)], [0]

    return rule


for _name in ELEMENTWISE:
    BATCH_RULES.rule(_name)(elementwise_rule(_name))


def _shifted(axis: int, dim: int) -> int:
    """A per-example axis in the batched array whose batch dimension is ``dim``."""
    return axis if axis < dim else axis + 1


def _reduction_rule(name):
    prim = PRIMITIVES[name]

    def rule(args, dims, *, axes):
        (x,), (dim,) = args, dims
        shifted = tuple(_shifted(a, dim) for a in axes)
        return [bind(prim, x, axes=shifted)], [dim - sum(a < dim for a in shifted)]

    return rule


for _name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
    BATCH_RULES.rule(_name)(_reduction_rule(_name))


def _arg_rule(name):
    prim = PRIMITIVES[name]

    def rule(args, dims, *, axis, index_dtype):
        (x,), (dim,) = args, dims
        shifted = _shifted(axis, dim)
        out = bind(prim, x, axis=shifted, index_dtype=index_dtype)
        return [out], [dim - (shifted < dim)]

    return rule


for _name in ("argmax", "argmin"):
    BATCH_RULES.rule(_name)(_arg_rule(_name))


@BATCH_RULES.rule("cumsum")
def _cumsum_rule(args, dims, *, axis, reverse):
    (x,), (dim,) = args, dims
    return [lax.cumsum(x, _shifted(axis, dim), reverse)], [dim]


@BATCH_RULES.rule("sort")
def _sort_rule(args, dims, *, dimension, **params):
    size = axis_size(args, dims)
    moved = [to_front(x, d, size) for x, d in zip(args, dims, strict=True)]
    outs = bind(PRIMITIVES["sort"], *moved, dimension=dimension + 1, **params)
    return outs, [0] * len(outs)


def _front_rule(make):
    """A one-operand rule that moves the batch dimension to the front, then calls
    ``make(x, size, **params)``."""

    def rule(args, dims, **params):
        (x,), (dim,) = args, dims
        size = shape_of(x)[dim]
        return [make(moveaxis(x, dim, 0), size, **params)], [0]

    return rule


def _plus_one(axes):
    return tuple(a + 1 for a in axes)


BATCH_RULES.rule("broadcast_in_dim")(
    _front_rule(
        lambda x, size, *, shape, broadcast_dimensions: lax.broadcast_in_dim(
            x, (size,) + tuple(shape), (0,) + _plus_one(broadcast_dimensions)
        )
    )
)
BATCH_RULES.rule("reshape")(
    _front_rule(lambda x, size, *, new_sizes: lax.reshape(x, (size,) + tuple(new_sizes)))
)
BATCH_RULES.rule("transpose")(
    _front_rule(lambda x, size, *, permutation: lax.transpose(x, (0,) + _plus_one(permutation)))
)
BATCH_RULES.rule("squeeze")(
    _front_rule(lambda x, size, *, dimensions: lax.squeeze(x, _plus_one(dimensions)))
)
BATCH_RULES.rule("expand_dims")(
    _front_rule(lambda x, size, *, dimensions: lax.expand_dims(x, _plus_one(dimensions)))
)
BATCH_RULES.rule("slice")(
    _front_rule(
        lambda x, size, *, start_indices, limit_indices, strides: lax.slice(
            x, (0,) + tuple(start_indices), (size,) + tuple(limit_indices), (1,) + tuple(strides)
        )
    )
)


@BATCH_RULES.rule("iota")
def _iota_rule(args, dims, **params):
    # iota has no operands, so the interpreter never asks; kept so the table is total.
    return [bind(PRIMITIVES["iota"], **params)], [None]


@BATCH_RULES.rule("concatenate")
def _concatenate_rule(args, dims, *, dimension):
    size = axis_size(args, dims)
    moved = [to_front(x, d, size) for x, d in zip(args, dims, strict=True)]
    return [lax.concatenate(moved, dimension + 1)], [0]


@BATCH_RULES.rule("pad")
def _pad_rule(args, dims, *, padding_config):
    (x, value), (x_dim, value_dim) = args, dims
    size = axis_size(args, dims)
    x = to_front(x, x_dim, size)
    config = ((0, 0),) + tuple(padding_config)
    if value_dim is None:
        return [lax.pad(x, value, config)], [0]
    # A per-example padding value: pad with zeros, then select the value where a mask
    # of the original extent is False.
    dtype = dtype_of(x)
    padded = lax.pad(x, np.zeros((), dtype), config)
    inside = lax.pad(lax.full(shape_of(x), True, np.bool_), np.asarray(False), config)
    fill = broadcast_lanes(moveaxis(value, value_dim, 0), shape_of(padded))
    return [lax.select(inside, padded, fill)], [0]


@BATCH_RULES.rule("dot_general")
def _dot_general_rule(args, dims, *, dimension_numbers):
    (lhs, rhs), (lhs_dim, rhs_dim) = args, dims
    if lhs_dim is not None:
        lhs = moveaxis(lhs, lhs_dim, 0)
    if rhs_dim is not None:
        rhs = moveaxis(rhs, rhs_dim, 0)
    leading = (lhs_dim is not None, rhs_dim is not None)
    numbers, out_dim = with_leading_axes(dimension_numbers, len(shape_of(lhs)), leading)
    return [lax.dot_general(lhs, rhs, numbers)], [out_dim]


# --------------------------------------------------------------------- indexing


def _flat_indices(indices, extent: int, *, drop: bool = False):
    """Per-example indices (B, ...) into an axis of ``extent``, offset so that they index
    the batch and that axis flattened together (B * extent). An out-of-range index is
    clamped into its example's row (a gather's rule) or, with ``drop``, sent past the end
    of the flattened axis (a scatter's rule), never into a neighbouring example."""
    dtype = dtype_of(indices)
    clamped = lax.min(lax.max(indices, np.zeros((), dtype)), np.asarray(extent - 1, dtype))
    offsets = lax.mul(lax.iota(dtype, shape_of(indices), 0), np.asarray(extent, dtype))
    flat = lax.add(clamped, offsets)
    if not drop:
        return flat
    past_end = np.asarray(shape_of(indices)[0] * extent, dtype)
    return lax.select(lax.eq(clamped, indices), flat, past_end)


def _fold_axis(x, axis: int):
    """(B, pre, A, post) -> (B * A, pre, post): the batch and ``axis`` flattened."""
    shape = shape_of(x)
    size, example = shape[0], shape[1:]
    x = moveaxis(x, axis + 1, 1)
    rest = example[:axis] + example[axis + 1 :]
    return lax.reshape(x, (size * example[axis],) + rest)


def take_batched(x, indices, axis: int):
    """Per-example ``take(x[b], indices[b], axis, mode='clip')``; both batched first."""
    example = shape_of(x)[1:]
    gathered = lax.gather(_fold_axis(x, axis), _flat_indices(indices, example[axis]), 0)
    # gathered is (B, I..., pre, post); the per-example layout is (pre, I..., post).
    n_index, n_pre, n_post = len(shape_of(indices)) - 1, axis, len(example) - axis - 1
    return lax.transpose(gathered, _swap_blocks(n_index, n_pre, n_post))


def _swap_blocks(first: int, second: int, rest: int) -> list[int]:
    """The permutation of ``(B, first..., second..., rest...)`` axes to
    ``(B, second..., first..., rest...)``."""
    return (
        [0]
        + [1 + first + k for k in range(second)]
        + [1 + k for k in range(first)]
        + [1 + first + second + k for k in range(rest)]
    )


@BATCH_RULES.rule("gather")
def _gather_rule(args, dims, *, axis):
    (x, indices), (x_dim, index_dim) = args, dims
    if index_dim is None:
        return [lax.gather(moveaxis(x, x_dim, 0), indices, axis + 1)], [0]
    if x_dim is None:
        return [lax.gather(x, moveaxis(indices, index_dim, 0), axis)], [axis]
    return [take_batched(moveaxis(x, x_dim, 0), moveaxis(indices, index_dim, 0), axis)], [0]


@BATCH_RULES.rule("scatter")
def _scatter_rule(args, dims, *, axis, mode):
    size = axis_size(args, dims)
    (x, indices, updates), (x_dim, index_dim, update_dim) = args, dims
    x, updates = to_front(x, x_dim, size), to_front(updates, update_dim, size)
    if index_dim is None:
        return [lax.scatter(x, indices, updates, axis + 1, mode)], [0]
    indices = moveaxis(indices, index_dim, 0)
    example = shape_of(x)[1:]
    n_index, n_pre, n_post = len(shape_of(indices)) - 1, axis, len(example) - axis - 1
    # updates (B, pre, I..., post) -> (B, I..., pre, post), the layout for axis 0.
    perm = _swap_blocks(n_pre, n_index, n_post)
    flat_indices = _flat_indices(indices, example[axis], drop=True)
    out = lax.scatter(_fold_axis(x, axis), flat_indices, lax.transpose(updates, perm), 0, mode)
    unfolded = lax.reshape(out, (size, example[axis]) + example[:axis] + example[axis + 1 :])
    return [moveaxis(unfolded, 1, axis + 1)], [0]


def _clamped_starts(starts, dims, size, extents, sizes):
    """Per-example starts (B,), clamped so the window stays inside, as XLA does."""
    out = []
    for start, dim, extent, n in zip(starts, dims, extents, sizes, strict=True):
        start = to_front(start, dim, size)
        dtype = dtype_of(start)
        out.append(lax.min(lax.max(start, np.zeros((), dtype)), np.asarray(extent - n, dtype)))
    return out


@BATCH_RULES.rule("dynamic_slice")
def _dynamic_slice_rule(args, dims, *, slice_sizes):
    size = axis_size(args, dims)
    (x, *starts), (x_dim, *start_dims) = args, dims
    x = to_front(x, x_dim, size)
    if all(d is None for d in start_dims):
        zero = np.zeros((), dtype_of(starts[0]))
        return [lax.dynamic_slice(x, [zero, *starts], (size,) + tuple(slice_sizes))], [0]
    extents = shape_of(x)[1:]
    starts = _clamped_starts(starts, start_dims, size, extents, slice_sizes)
    # Per-example windows: one batched take per dimension.
    for axis, (start, n) in enumerate(zip(starts, slice_sizes, strict=True)):
        dtype = dtype_of(start)
        window = lax.add(broadcast_lanes(start, (size, n)), lax.iota(dtype, (size, n), 1))
        x = take_batched(x, window, axis)
    return [x], [0]


@BATCH_RULES.rule("dynamic_update_slice")
def _dynamic_update_slice_rule(args, dims):
    size = axis_size(args, dims)
    (x, update, *starts), (x_dim, update_dim, *start_dims) = args, dims
    x, update = to_front(x, x_dim, size), to_front(update, update_dim, size)
    if all(d is None for d in start_dims):
        zero = np.zeros((), dtype_of(starts[0]))
        return [lax.dynamic_update_slice(x, update, [zero, *starts])], [0]
    extents, sizes = shape_of(x)[1:], shape_of(update)[1:]
    if 0 in sizes:
        return [x], [0]
    starts = _clamped_starts(starts, start_dims, size, extents, sizes)
    # Per-example windows: spread the update over x's shape with batched takes, then
    # select it inside the window.
    inside = None
    for axis, (start, extent, n) in enumerate(zip(starts, extents, sizes, strict=True)):
        dtype = dtype_of(start)
        lanes = broadcast_lanes(start, (size, extent))
        offset = lax.sub(lax.iota(dtype, (size, extent), 1), lanes)
        offset = lax.min(lax.max(offset, np.zeros((), dtype)), np.asarray(n - 1, dtype))
        update = take_batched(update, offset, axis)
        position = lax.iota(dtype, shape_of(x), axis + 1)
        low = broadcast_lanes(start, shape_of(x))
        high = lax.add(low, np.asarray(n, dtype))
        here = lax.bitwise_and(lax.ge(position, low), lax.lt(position, high))
        inside = here if inside is None else lax.bitwise_and(inside, here)
    return [lax.select(inside, update, x)], [0]
