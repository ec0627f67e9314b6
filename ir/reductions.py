"""Reductions, scans and contractions: reduce_*, argmax/argmin, cumsum, dot_general."""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .primitive import Pattern, check, register


def _reduce_rule(name):
    def rule(x: ShapedArray, *, axes):
        check(all(0 <= a < x.ndim for a in axes), name, f"axes {axes} out of range")
        check(len(set(axes)) == len(axes), name, "repeated axis")
        if name in ("reduce_max", "reduce_min"):
            check(all(x.shape[a] > 0 for a in axes), name, "zero-size reduction has no identity")
        return ShapedArray([d for i, d in enumerate(x.shape) if i not in axes], x.dtype)

    return rule


def _accumulating_in_float32(impl):
    """``impl`` that reads float16 and bfloat16 operands as float32 and rounds its result
    to the narrow dtype once: the sums, products and contractions of narrow floats
    accumulate in float32, as the compiled backends do (``passes/narrow_floats.py``) and
    as NumPy's float16 ``sum`` does along a contiguous axis. (NumPy rounds after every
    step along other axes, and ml_dtypes' bfloat16 loops always do: an order-dependent
    result that the compiled code could not match.)"""

    def accumulating(*operands, **params):
        narrow = operands[0].dtype
        if not dtypes.is_narrow_float(narrow):
            return impl(*operands, **params)
        wide = [np.asarray(x, np.float32) for x in operands]
        with np.errstate(over="ignore"):  # a float32 result too large for the narrow dtype
            return np.asarray(impl(*wide, **params)).astype(narrow)

    return accumulating


def _reducer(np_fn):
    def impl(x, *, axes):
        with np.errstate(all="ignore"):
            return np.asarray(np_fn(x, axis=tuple(axes)), dtype=x.dtype)

    return impl if np_fn in (np.max, np.min) else _accumulating_in_float32(impl)


REDUCTIONS = {
    "reduce_sum": np.sum,
    "reduce_max": np.max,
    "reduce_min": np.min,
    "reduce_prod": np.prod,
}
for _name, _fn in REDUCTIONS.items():
    register(_name, Pattern.REDUCTION, _reduce_rule(_name), _reducer(_fn), expensive=True)


def _arg_rule(name):
    def rule(x: ShapedArray, *, axis, index_dtype):
        check(0 <= axis < x.ndim, name, f"axis {axis} out of range")
        check(x.shape[axis] > 0, name, "empty axis")
        return ShapedArray(x.shape[:axis] + x.shape[axis + 1 :], index_dtype)

    return rule


def _arg_impl(np_fn):
    def impl(x, *, axis, index_dtype):
        return np_fn(x, axis=axis).astype(index_dtype)

    return impl


for _name, _fn in {"argmax": np.argmax, "argmin": np.argmin}.items():
    register(
        _name,
        Pattern.REDUCTION,
        _arg_rule(_name),
        _arg_impl(_fn),
        differentiable=False,
        expensive=True,
    )


def _cumsum_rule(x: ShapedArray, *, axis, reverse):
    check(0 <= axis < x.ndim, "cumsum", "axis out of range")
    check(x.dtype != dtypes.bool_, "cumsum", "bool input; convert first")
    return x


@_accumulating_in_float32
def _cumsum(x, *, axis, reverse):
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
    return np.cumsum(x, axis=axis, dtype=x.dtype)


register("cumsum", Pattern.OPAQUE, _cumsum_rule, _cumsum, expensive=True)


def dot_general_shape(lhs_shape, rhs_shape, dimension_numbers):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    batch = [lhs_shape[d] for d in lhs_batch]
    lhs_free = [d for i, d in enumerate(lhs_shape) if i not in lhs_contract + lhs_batch]
    rhs_free = [d for i, d in enumerate(rhs_shape) if i not in rhs_contract + rhs_batch]
    return tuple(batch + lhs_free + rhs_free)


def with_leading_axes(dimension_numbers, lhs_ndim: int, leading: tuple[bool, bool]):
    """A ``dot_general``'s dimension numbers once the operands ``leading`` marks have
    gained a new leading axis (vmap's batch, a scan's iterations), and where that axis
    lies in the product: where both have one, a batch dimension paired up in front;
    else among the free dimensions of the one that has it (a product lists its batch
    dims, then the left operand's free dims, then the right's). ``lhs_ndim`` is the
    left operand's rank, its new axis included."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    lhs_shift, rhs_shift = (int(flag) for flag in leading)
    lhs_contract = tuple(d + lhs_shift for d in lhs_contract)
    lhs_batch = tuple(d + lhs_shift for d in lhs_batch)
    rhs_contract = tuple(d + rhs_shift for d in rhs_contract)
    rhs_batch = tuple(d + rhs_shift for d in rhs_batch)
    if lhs_shift and rhs_shift:
        return ((lhs_contract, rhs_contract), ((0, *lhs_batch), (0, *rhs_batch))), 0
    numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
    if lhs_shift:
        return numbers, len(lhs_batch)
    return numbers, lhs_ndim - len(lhs_contract)  # after the batch and lhs free dims


def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    check(lhs.dtype == rhs.dtype, "dot_general", "operand dtypes differ")
    check(len(lhs_contract) == len(rhs_contract), "dot_general", "contracting dims differ")
    check(len(lhs_batch) == len(rhs_batch), "dot_general", "batch dims differ")
    for operand, dims in ((lhs, lhs_contract + lhs_batch), (rhs, rhs_contract + rhs_batch)):
        if not (all(0 <= d < operand.ndim for d in dims) and len(set(dims)) == len(dims)):
            message = f"dimensions {dims} of {operand.str_short()} out of range or repeated"
            check(False, "dot_general", message)
    sizes_differ = any(
        lhs.shape[a] != rhs.shape[b]
        for a, b in zip(lhs_contract + lhs_batch, rhs_contract + rhs_batch, strict=False)
    )
    check(
        not sizes_differ,
        "dot_general",
        lambda: f"dimension sizes differ: {lhs.str_short()} and {rhs.str_short()}",
    )
    return ShapedArray(dot_general_shape(lhs.shape, rhs.shape, dimension_numbers), lhs.dtype)


@_accumulating_in_float32
def _dot_general(lhs, rhs, *, dimension_numbers):
    """Move dims to (batch, free, contract) order and use matmul (BLAS)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    lhs_free = [i for i in range(lhs.ndim) if i not in lhs_contract + lhs_batch]
    rhs_free = [i for i in range(rhs.ndim) if i not in rhs_contract + rhs_batch]
    size = lambda x, dims: int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    batch_size = size(lhs, lhs_batch)
    lhs3 = np.transpose(lhs, list(lhs_batch) + lhs_free + list(lhs_contract)).reshape(
        batch_size, size(lhs, lhs_free), size(lhs, lhs_contract)
    )
    rhs3 = np.transpose(rhs, list(rhs_batch) + list(rhs_contract) + rhs_free).reshape(
        batch_size, size(rhs, rhs_contract), size(rhs, rhs_free)
    )
    out = np.matmul(lhs3, rhs3)
    return out.reshape(dot_general_shape(lhs.shape, rhs.shape, dimension_numbers))


register("dot_general", Pattern.CONTRACTION, _dot_general_rule, _dot_general, expensive=True)
