"""Reverse-mode rules, one per differentiable primitive.

``VJP_RULES[prim](primals, wrt, **params) -> (outs, backward)``: bind the primitive in
the forward trace and return a closure ``backward(out_cotangents) -> in_cotangents``
(``None`` = zero) that the backward pass calls later; what it reads of the forward is
what the VJP saves. ``wrt`` marks the operands that need a cotangent (call-like rules
use it to specialise their sub-jaxpr; the others compute every cotangent and let dead
code elimination drop the unused ones).

Most primitives have one output; their rule is written as ``transpose(ct, *operands,
out, **params) -> operand cotangents`` and wrapped by ``single_output``.
"""

from __future__ import annotations

from ..ir.primitive import PRIMITIVES, Primitive
from ..ir.rules import RuleTable
from ..tracer import lax
from ..tracer.core import bind
from . import derivatives as d
from .jvp import JVP_RULES, linear

# ``kernel`` comes from fusion, after the transforms: it is never differentiated.
VJP_RULES = RuleTable(
    "vjp", not_applicable=lambda prim: not prim.differentiable or prim.name == "kernel"
)
P = PRIMITIVES


def single_output(prim: Primitive, transpose):
    def rule(primals, wrt, **params):
        out = bind(prim, *primals, **params)
        return [out], lambda cts: transpose(cts[0], *primals, out, **params)

    return rule


def deflinear(prim: Primitive | str, *positions: int):
    """Decorator: ``prim`` is linear in the operands at ``positions`` (default: all) and
    the decorated ``transpose(ct, *operands, out, **params)`` is its transpose. Declares
    both derivative rules at once: the JVP is ``prim`` of the tangents (``jvp.linear``),
    the VJP the transpose (as JAX's ``deflinear2``)."""

    def register(transpose):
        JVP_RULES.rule(prim, build=lambda key, _: linear(key, *positions))(transpose)
        return VJP_RULES.rule(prim, build=single_output)(transpose)

    return register


def elementwise(partials):
    def transpose(ct, *operands_and_out, **params):
        operands = operands_and_out[:-1]
        return [
            None if partial is None else d.unbroadcast(partial(ct, *operands_and_out, **params), x)
            for partial, x in zip(partials, operands, strict=True)
        ]

    return transpose


for _name, _partials in d.ELEMENTWISE.items():
    VJP_RULES.rule(_name, build=single_output)(elementwise(_partials))


@VJP_RULES.rule("convert_element_type", build=single_output)
def _convert_element_type(ct, x, out, *, new_dtype):
    # A cotangent flows back only between float dtypes, converted to the operand's.
    return [lax.convert_element_type(ct, d.aval(x).dtype) if d.has_tangent(d.aval(x)) else None]


# --------------------------------------------------------------------------------------
# Structural: each rule is the transpose of a linear map.


@deflinear("broadcast_in_dim", 0)
def _broadcast_in_dim(ct, x, out, *, shape, broadcast_dimensions):
    # Sum over the new axes and over the size-1 axes that were stretched.
    x_shape = d.aval(x).shape
    stretched = [
        out_dim
        for in_dim, out_dim in enumerate(broadcast_dimensions)
        if x_shape[in_dim] == 1 and shape[out_dim] != 1
    ]
    new = [i for i in range(len(shape)) if i not in broadcast_dimensions]
    return [lax.reshape(lax.reduce_sum(ct, new + stretched), x_shape)]


deflinear("reshape", 0)(lambda ct, x, out, *, new_sizes: [lax.reshape(ct, d.aval(x).shape)])
deflinear("squeeze", 0)(lambda ct, x, out, *, dimensions: [lax.reshape(ct, d.aval(x).shape)])
deflinear("expand_dims", 0)(lambda ct, x, out, *, dimensions: [lax.reshape(ct, d.aval(x).shape)])


@deflinear("transpose", 0)
def _transpose(ct, x, out, *, permutation):
    inverse = sorted(range(len(permutation)), key=lambda i: permutation[i])
    return [lax.transpose(ct, inverse)]


@deflinear("slice", 0)
def _slice(ct, x, out, *, start_indices, limit_indices, strides):
    # Put the slice back in place among zeros: spread strided axes apart, then pad.
    x_shape = d.aval(x).shape
    if 0 in d.aval(ct).shape:
        return [lax.zeros_like_aval(d.aval(x))]
    for axis, stride in enumerate(strides):
        if stride > 1:
            ct = _interleave_zeros(ct, axis, stride)
    config = [
        (start, size - start - extent)
        for start, size, extent in zip(start_indices, x_shape, d.aval(ct).shape, strict=True)
    ]
    return [lax.pad(ct, d.typed(0, ct), config)]


def _interleave_zeros(t, axis: int, stride: int):
    """``stride - 1`` zeros after each element along ``axis`` (none after the last)."""
    shape = d.aval(t).shape
    n = shape[axis]
    spread = lax.pad(
        lax.expand_dims(t, (axis + 1,)),
        d.typed(0, t),
        [(0, 0)] * (axis + 1) + [(0, stride - 1)] + [(0, 0)] * (len(shape) - axis - 1),
    )
    flat = lax.reshape(spread, shape[:axis] + (n * stride,) + shape[axis + 1 :])
    limit = list(shape)
    limit[axis] = (n - 1) * stride + 1
    return lax.slice(flat, [0] * len(shape), limit)


@deflinear("concatenate")
def _concatenate(ct, *operands_and_out, dimension):
    operands = operands_and_out[:-1]
    cts, start = [], 0
    shape = d.aval(ct).shape
    for x in operands:
        size = d.aval(x).shape[dimension]
        starts = [0] * len(shape)
        limits = list(shape)
        starts[dimension], limits[dimension] = start, start + size
        cts.append(lax.slice(ct, starts, limits))
        start += size
    return cts


@deflinear("pad", 0, 1)
def _pad(ct, x, padding_value, out, *, padding_config):
    x_shape = d.aval(x).shape
    starts = [lo for lo, _ in padding_config]
    inner = lax.slice(ct, starts, [lo + n for lo, n in zip(starts, x_shape, strict=True)])
    every_axis = range(len(x_shape))
    # Each padded position holds the padding value: its cotangent is the rest of the sum.
    padding_ct = lax.reduce_sum(ct, every_axis) - lax.reduce_sum(inner, every_axis)
    return [inner, padding_ct]


@deflinear("dynamic_slice", 0)
def _dynamic_slice(ct, x, *starts_and_out, slice_sizes):
    starts = starts_and_out[:-1]
    zeros = lax.zeros_like_aval(d.aval(x))
    return [lax.dynamic_update_slice(zeros, ct, starts)] + [None] * len(starts)


@deflinear("dynamic_update_slice", 0, 1)
def _dynamic_update_slice(ct, x, update, *starts_and_out):
    starts = starts_and_out[:-1]
    update_aval = d.aval(update)
    ct_x = lax.dynamic_update_slice(ct, lax.zeros_like_aval(update_aval), starts)
    ct_update = lax.dynamic_slice(ct, starts, update_aval.shape)
    return [ct_x, ct_update] + [None] * len(starts)


@deflinear("gather", 0)
def _gather(ct, x, indices, out, *, axis):
    # Repeated indices read one entry several times: their cotangents add up. An
    # out-of-range index read the clamped entry, so its cotangent goes there (the
    # scatter would drop it).
    read = d.clamped_indices(indices, d.aval(x).shape[axis])
    return [lax.scatter(lax.zeros_like_aval(d.aval(x)), read, ct, axis, "add"), None]


@VJP_RULES.rule("scatter", build=single_output)
def _scatter(ct, x, indices, updates, out, *, axis, mode):
    if mode == "add":
        # A dropped update (its index outside the axis) reaches nothing: zero cotangent.
        lands = d.scatter_lands(indices, updates, axis, d.aval(x).shape[axis])
        return [ct, None, lax.select(lands, lax.gather(ct, indices, axis), d.typed(0, ct))]
    if mode == "set":
        # Overwritten entries of x get nothing; of repeated indices only the update
        # written last reaches the output, and a dropped one never wins.
        ct_x = lax.scatter(ct, indices, lax.zeros_like_aval(d.aval(updates)), axis, "set")
        winner = _last_writer_mask(indices, d.aval(x).shape[axis])
        spread = lax.broadcast_in_dim(
            winner, d.aval(updates).shape, range(axis, axis + d.aval(indices).ndim)
        )
        ct_updates = lax.select(spread, lax.gather(ct, indices, axis), d.typed(0, ct))
        return [ct_x, None, ct_updates]
    if mode in ("max", "min"):
        x_weight, updates_weight = d.scatter_chooser_weights(x, indices, updates, out, axis)
        return [ct * x_weight, None, lax.gather(ct, indices, axis) * updates_weight]
    raise d.scatter_mode_error(mode)


def _last_writer_mask(indices, size: int):
    """Which positions of ``indices`` win a ``set`` scatter (the last of duplicates):
    scatter each position's own number, read back what stayed. A dropped position wrote
    nothing, so the (clamped) entry it reads back holds another's number or -1."""
    index_aval = d.aval(indices)
    ids = lax.reshape(lax.iota(index_aval.dtype, (index_aval.size,)), index_aval.shape)
    owners = lax.scatter(lax.full((size,), -1, index_aval.dtype), indices, ids, 0, "set")
    return lax.gather(owners, indices, 0) == ids


# --------------------------------------------------------------------------------------
# Reductions and contractions


def _spread(ct, x, axes):
    """A reduced cotangent broadcast back over the reduced axes."""
    shape = d.aval(x).shape
    return lax.broadcast_in_dim(ct, shape, [i for i in range(len(shape)) if i not in axes])


deflinear("reduce_sum", 0)(lambda ct, x, out, *, axes: [_spread(ct, x, axes)])
VJP_RULES.rule("reduce_max", build=single_output)(
    lambda ct, x, out, *, axes: [_spread(ct, x, axes) * d.reduce_chooser_weights(x, out, axes)],
)
VJP_RULES.rule("reduce_min", build=single_output)(
    lambda ct, x, out, *, axes: [_spread(ct, x, axes) * d.reduce_chooser_weights(x, out, axes)],
)
VJP_RULES.rule("reduce_prod", build=single_output)(
    lambda ct, x, out, *, axes: [_spread(ct, x, axes) * d.reduce_prod_partials(x, axes)],
)
deflinear("cumsum", 0)(lambda ct, x, out, *, axis, reverse: [lax.cumsum(ct, axis, not reverse)])


@VJP_RULES.rule("sort")
def _sort(primals, wrt, **params):
    outs, positions = d.sort_with_order(primals, **params)
    return outs, lambda cts: [None if ct is None else d.scatter_flat(ct, positions) for ct in cts]


def _ranges_like(*lists):
    start = 0
    for items in lists:
        yield list(range(start, start + len(items)))
        start += len(items)


def _remaining(ndim, *removed):
    taken = {i for dims in removed for i in dims}
    return [i for i in range(ndim) if i not in taken]


def _dot_transpose_lhs(ct, x, y, dimension_numbers, swap_ans=False):
    """The cotangent of dot_general's lhs: contract ``ct`` with ``y`` over y's free and
    batch dims, then put the axes back in x's order (as jax.lax's transpose rule)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim, y_ndim = d.aval(x).ndim, d.aval(y).ndim
    x_kept = _remaining(x_ndim, x_contract, x_batch)
    y_kept = _remaining(y_ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, list(y_batch)))
    x_contract_by_y = [
        x_contract[i] for i in sorted(range(len(y_contract)), key=lambda i: y_contract[i])
    ]
    order = list(x_batch) + x_kept + x_contract_by_y
    inverse = sorted(range(len(order)), key=lambda i: order[i])
    return lax.transpose(lax.dot_general(ct, y, dims), inverse)


@VJP_RULES.rule("dot_general", build=single_output)
def _dot_general(ct, x, y, out, *, dimension_numbers):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return [
        _dot_transpose_lhs(ct, x, y, dimension_numbers),
        _dot_transpose_lhs(ct, y, x, swapped, swap_ans=True),
    ]
