"""Simplifications of data movement: broadcasts, reshapes, transposes, reductions and
the operand layouts of ``dot_general``. All are exact (they move the same values),
except merging a sum of sums, which reassociates floating-point addition.

They also put the program in the form fusion reads: a reshape that only inserts size-1
dims is a ``broadcast_in_dim``, broadcasts compose into one, so a reduction's result
reaches the reduced-over shape as one broadcast of the reduced value (the epilogue of a
reduction kernel), and a transposed operand of ``dot_general`` is read in place.
"""

from __future__ import annotations

from ..ir.core import Atom
from .simplify_rules import SIMPLIFICATIONS, same_type

REDUCE_PRIMS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")


def insert_only_dims(old: tuple, new: tuple) -> tuple | None:
    """If reshaping ``old`` to ``new`` only inserts size-1 dims, where the old dims go
    (the ``broadcast_dimensions`` of the equivalent broadcast); else None."""
    dims, j = [], 0
    for size in old:
        while j < len(new) and new[j] != size:
            if new[j] != 1:
                return None
            j += 1
        if j == len(new):
            return None
        dims.append(j)
        j += 1
    if any(size != 1 for size in new[j:]):
        return None
    return tuple(dims)


def reshape_to(ctx, x: Atom, shape: tuple) -> Atom:
    """``x`` reshaped, as a broadcast when that only inserts size-1 dims."""
    if x.aval.shape == shape:
        return x
    dims = insert_only_dims(x.aval.shape, shape)
    if dims is not None:
        return ctx.emit("broadcast_in_dim", [x], shape=shape, broadcast_dimensions=dims)
    return ctx.emit("reshape", [x], new_sizes=shape)


def _is_reshape(eqn) -> bool:
    """A reshape, or a broadcast that is one (it adds size-1 dims only)."""
    if eqn.prim.name == "reshape":
        return True
    return eqn.prim.name == "broadcast_in_dim" and (
        eqn.inputs[0].aval.size == eqn.outputs[0].aval.size
    )


# ------------------------------------------------------------------------ broadcasts


@SIMPLIFICATIONS.rule("broadcast_in_dim")
def broadcast_to_same_shape(eqn, ctx):
    x = eqn.inputs[0]
    return x if x.aval.shape == eqn.params["shape"] else None


@SIMPLIFICATIONS.rule("broadcast_in_dim")
def broadcast_of_broadcast(eqn, ctx):
    inner = ctx.producer(eqn.inputs[0], "broadcast_in_dim")
    if inner is None:
        return None
    outer_dims = eqn.params["broadcast_dimensions"]
    dims = tuple(outer_dims[d] for d in inner.params["broadcast_dimensions"])
    return ctx.emit(
        "broadcast_in_dim", [inner.inputs[0]], shape=eqn.params["shape"], broadcast_dimensions=dims
    )


@SIMPLIFICATIONS.rule("broadcast_in_dim")
def broadcast_of_iota(eqn, ctx):
    """A broadcast iota is an iota of the bigger shape (unless its ramp is broadcast)."""
    iota = ctx.producer(eqn.inputs[0], "iota")
    if iota is None:
        return None
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    axis = iota.params["dimension"]
    if iota.params["shape"][axis] != shape[dims[axis]]:
        return None
    return ctx.emit("iota", [], dtype=iota.params["dtype"], shape=shape, dimension=dims[axis])


@SIMPLIFICATIONS.rule("broadcast_in_dim")
def broadcast_of_squeeze(eqn, ctx):
    """broadcast(reshape(x)) where the reshape only drops size-1 dims: one broadcast of
    x, the dropped dims placed anywhere between their neighbours (size 1 broadcasts)."""
    squeeze = ctx.producer(eqn.inputs[0], "reshape")
    if squeeze is None:
        return None
    x = squeeze.inputs[0]
    kept = insert_only_dims(squeeze.outputs[0].aval.shape, x.aval.shape)
    if kept is None:
        return None
    outer = eqn.params["broadcast_dimensions"]
    dims, previous = [], -1
    for axis in range(x.aval.ndim):
        if axis in kept:
            target = outer[kept.index(axis)]
        else:
            target = previous + 1  # a dropped size-1 dim: the next free output dim
        next_kept = [outer[kept.index(a)] for a in kept if a > axis]
        if target <= previous or (next_kept and target >= next_kept[0]):
            return None
        dims.append(target)
        previous = target
    if previous >= len(eqn.params["shape"]):
        return None
    return ctx.emit(
        "broadcast_in_dim", [x], shape=eqn.params["shape"], broadcast_dimensions=tuple(dims)
    )


# ------------------------------------------------------------ reshapes and transposes


@SIMPLIFICATIONS.rule("reshape")
def reshape_simplified(eqn, ctx):
    """A reshape to the same shape is nothing; a reshape of a reshape is one reshape;
    a reshape that only inserts size-1 dims is a broadcast."""
    x, shape = eqn.inputs[0], tuple(eqn.params["new_sizes"])
    inner = ctx.producer(x)
    if inner is not None and _is_reshape(inner):
        return reshape_to(ctx, inner.inputs[0], shape)
    if x.aval.shape == shape or insert_only_dims(x.aval.shape, shape) is not None:
        return reshape_to(ctx, x, shape)
    return None


@SIMPLIFICATIONS.rule("squeeze", "expand_dims")
def squeeze_as_reshape(eqn, ctx):
    """One form for moving size-1 dims around: reshape (or broadcast, if it inserts)."""
    return reshape_to(ctx, eqn.inputs[0], eqn.outputs[0].aval.shape)


@SIMPLIFICATIONS.rule("transpose")
def transpose_simplified(eqn, ctx):
    x, perm = eqn.inputs[0], eqn.params["permutation"]
    inner = ctx.producer(x, "transpose")
    if inner is not None:
        x, perm = inner.inputs[0], tuple(inner.params["permutation"][p] for p in perm)
    if perm == tuple(range(len(perm))):
        return x
    return ctx.emit("transpose", [x], permutation=perm) if inner is not None else None


@SIMPLIFICATIONS.rule("slice")
def full_slice(eqn, ctx):
    x = eqn.inputs[0]
    return same_type(eqn, x) if all(s == 1 for s in eqn.params["strides"]) else None


@SIMPLIFICATIONS.rule("pad")
def zero_padding(eqn, ctx):
    return same_type(eqn, eqn.inputs[0])


@SIMPLIFICATIONS.rule("concatenate")
def concatenate_one(eqn, ctx):
    return eqn.inputs[0] if len(eqn.inputs) == 1 else None


# ------------------------------------------------------------------------ reductions


@SIMPLIFICATIONS.rule(*REDUCE_PRIMS)
def reduce_nothing(eqn, ctx):
    """A reduction over no axes, or over size-1 axes only, is a reshape."""
    x, axes = eqn.inputs[0], eqn.params["axes"]
    if all(x.aval.shape[a] == 1 for a in axes):
        return reshape_to(ctx, x, eqn.outputs[0].aval.shape)
    return None


@SIMPLIFICATIONS.rule(*REDUCE_PRIMS)
def reduce_of_reduce(eqn, ctx):
    """sum(sum(x, a), b) = sum(x, a + b), and so for max, min and product, when the
    inner result is read nowhere else. Floating-point sums are reassociated."""
    inner = ctx.producer(eqn.inputs[0], eqn.prim.name)
    if inner is None or ctx.uses(inner.outputs[0]) != 1:
        return None
    x, inner_axes = inner.inputs[0], set(inner.params["axes"])
    kept = [d for d in range(x.aval.ndim) if d not in inner_axes]
    axes = tuple(sorted(inner_axes | {kept[a] for a in eqn.params["axes"]}))
    return ctx.emit(eqn.prim.name, [x], axes=axes)


# ---------------------------------------------------------------------- contraction


@SIMPLIFICATIONS.rule("dot_general")
def dot_of_transpose(eqn, ctx):
    """dot_general reads a transposed operand in place, through its dimension numbers,
    when the operand's free dims keep their order (they fix the output's layout)."""
    (contract, batch) = eqn.params["dimension_numbers"]
    for side in (0, 1):
        transpose = ctx.producer(eqn.inputs[side], "transpose")
        if transpose is None:
            continue
        perm = transpose.params["permutation"]
        side_contract, side_batch = contract[side], batch[side]
        free = [perm[d] for d in range(len(perm)) if d not in side_contract + side_batch]
        if free != sorted(free):
            continue
        contract = _with(contract, side, tuple(perm[d] for d in side_contract))
        batch = _with(batch, side, tuple(perm[d] for d in side_batch))
        inputs = _with(tuple(eqn.inputs), side, transpose.inputs[0])
        return ctx.emit("dot_general", list(inputs), dimension_numbers=(contract, batch))
    return None


@SIMPLIFICATIONS.rule("dot_general")
def dot_of_batch_broadcast(eqn, ctx):
    """A batched matmul whose right operand is the same matrix in every batch (broadcast
    along the batch dims, as ``(R, Q, 1, P) @ (P, P)`` traces, or from size-1 dims, as
    ``x @ w[i, j]`` of a 4-D ``w`` becomes once its squeeze and broadcast are one) is one
    product of the left operand's every row with that matrix: its batch dims become free
    dims, and the backend runs one large GEMM instead of a GEMM per batch over a
    broadcast copy."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = eqn.params["dimension_numbers"]
    broadcast = ctx.producer(eqn.inputs[1], "broadcast_in_dim")
    if broadcast is None or not rhs_batch:
        return None
    source, dims = broadcast.inputs[0], tuple(broadcast.params["broadcast_dimensions"])
    lhs, rhs = eqn.inputs
    kept = [d for d in range(lhs.aval.ndim) if d not in lhs_contract]
    # The product's layout is (batch, lhs free, rhs free); without batch dims it is
    # (lhs dims but the contracted ones, rhs free): the same when lhs leads with them.
    same_layout = kept == list(lhs_batch) + [d for d in kept if d not in lhs_batch]
    if any(d not in dims for d in range(rhs.aval.ndim) if d not in rhs_batch):
        return None  # broadcast along a contracted or free dim too: not one matrix
    if not same_layout or list(dims) != sorted(dims):
        return None
    # The source's dims: a batch dim's is of size 1 (broadcast along it), the matrix's
    # dims are as they are (none widened).
    matrix_dims = []  # the rhs dims the matrix keeps, in order
    for k, d in enumerate(dims):
        size = source.aval.shape[k]
        if d in rhs_batch and size != 1 or d not in rhs_batch and size != rhs.aval.shape[d]:
            return None
        if d not in rhs_batch:
            matrix_dims.append(d)
    matrix = reshape_to(ctx, source, tuple(rhs.aval.shape[d] for d in matrix_dims))
    contract = tuple(matrix_dims.index(d) for d in rhs_contract)
    numbers = ((tuple(lhs_contract), contract), ((), ()))
    return ctx.emit("dot_general", [lhs, matrix], dimension_numbers=numbers)


@SIMPLIFICATIONS.rule("transpose")
def transposed_dot(eqn, ctx):
    """transpose(dot_general(a, b)) = dot_general(b, a) when the transpose swaps the
    free dims of a and b as two blocks (batch dims first, in place), as the VJP of a
    matmul writes its weight gradient; not when the product is read elsewhere too."""
    dot = ctx.producer(eqn.inputs[0], "dot_general")
    if dot is None or ctx.uses(dot.outputs[0]) != 1:
        return None
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dot.params["dimension_numbers"]
    lhs, rhs = dot.inputs
    n_batch = len(lhs_batch)
    n_lhs_free = lhs.aval.ndim - len(lhs_contract) - n_batch
    n_out = eqn.outputs[0].aval.ndim
    swapped = (
        list(range(n_batch)) + list(range(n_batch + n_lhs_free, n_out))
        + list(range(n_batch, n_batch + n_lhs_free))
    )  # fmt: skip
    if list(eqn.params["permutation"]) != swapped:
        return None
    numbers = ((rhs_contract, lhs_contract), (rhs_batch, lhs_batch))
    return ctx.emit("dot_general", [rhs, lhs], dimension_numbers=numbers)


def _with(pair: tuple, side: int, value) -> tuple:
    return (value, pair[1]) if side == 0 else (pair[0], value)
