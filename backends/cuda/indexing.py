"""Data-movement primitives as index maps: one rule per primitive.

A rule answers "what is this eqn's output at ``index``?" by mapping the index to its
operands' indices and asking the writer for their values. Broadcasts, reshapes,
transposes and slices are pure index arithmetic; pad, concatenate and
dynamic_update_slice choose an operand with a branch (each branch loads only inside its
operand); gather and dynamic_slice load an index first and clamp it, as the reference
does (out-of-range indices clamp, a compiled program cannot raise IndexError).

These rules make a data-movement op one thread per output element when it runs alone
(an opaque kernel) and free when fused into an elementwise kernel.
"""

from __future__ import annotations

from ...ir import dtypes
from ...ir.primitive import Pattern
from ...ir.rules import RuleTable
from .scalar import cast, constant
from .writer import SCALAR, Index

# Every broadcast and every injective primitive is an index map; so are the opaque
# gather, dynamic_slice and dynamic_update_slice (``host_runners`` reads which).
INDEX_RULES = RuleTable(
    "cuda index maps",
    not_applicable=lambda prim: prim.pattern not in (Pattern.BROADCAST, Pattern.INJECTIVE),
)


def parenthesize(expr: str) -> str:
    return expr if expr.replace("_", "").isalnum() else f"({expr})"


def offset(expr: str, add: int) -> str:
    if add == 0:
        return expr
    return f"{parenthesize(expr)} + {add}" if add > 0 else f"{parenthesize(expr)} - {-add}"


@INDEX_RULES.rule("broadcast_in_dim")
def _broadcast_in_dim(w, eqn, index):
    (x,) = eqn.inputs
    if x.aval.shape == index.shape:
        return w.value(x, index)
    if x.aval.shape == ():
        return w.value(x, SCALAR)
    dims = w.dims(index)
    inner = tuple(
        "0" if size == 1 else dims[out_dim]
        for size, out_dim in zip(x.aval.shape, eqn.params["broadcast_dimensions"], strict=True)
    )
    return w.value(x, Index(x.aval.shape, dims=inner))


@INDEX_RULES.rule("reshape", "squeeze", "expand_dims")
def _reshape(w, eqn, index):
    """Same elements in the same (C) order: the flat position carries over. When only
    size-1 axes differ, the other axes' indices carry over one to one."""
    (x,) = eqn.inputs
    shape = x.aval.shape
    if index.dims is None:
        return w.value(x, Index(shape, flat=index.flat))
    big_out = [d for d, size in zip(index.dims, index.shape, strict=True) if size != 1]
    if [s for s in shape if s != 1] == [s for s in index.shape if s != 1]:
        it = iter(big_out)
        inner = tuple("0" if size == 1 else next(it) for size in shape)
        return w.value(x, Index(shape, dims=inner))
    return w.value(x, Index(shape, flat=w.flat(index)))


@INDEX_RULES.rule("transpose")
def _transpose(w, eqn, index):
    (x,) = eqn.inputs
    permutation = eqn.params["permutation"]
    if list(permutation) == sorted(permutation):
        return w.value(x, index)
    dims = w.dims(index)
    inner = [None] * len(dims)
    for out_dim, in_dim in enumerate(permutation):
        inner[in_dim] = dims[out_dim]
    return w.value(x, Index(x.aval.shape, dims=tuple(inner)))


@INDEX_RULES.rule("slice")
def _slice(w, eqn, index):
    (x,) = eqn.inputs
    dims = w.dims(index)
    inner = []
    for d, start, stride in zip(
        dims, eqn.params["start_indices"], eqn.params["strides"], strict=True
    ):
        scaled = d if stride == 1 else f"{parenthesize(d)} * {stride}"
        inner.append(offset(scaled, start))
    return w.value(x, Index(x.aval.shape, dims=tuple(inner)))


@INDEX_RULES.rule("pad")
def _pad(w, eqn, index):
    x, padding_value = eqn.inputs
    pad = w.value(padding_value, SCALAR)
    if x.aval.size == 0:
        return pad
    dims = w.dims(index)
    inner, inside = [], []
    for d, (low, high), size in zip(dims, eqn.params["padding_config"], x.aval.shape, strict=True):
        shifted = offset(d, -low)
        if low:
            inside.append(f"{d} >= {low}")
        if high:
            inside.append(f"{shifted} < {size}")
        inner.append(shifted)
    if not inside:
        return w.value(x, Index(x.aval.shape, dims=tuple(inner)))
    result = w.temp("pad")
    w.line(f"{result} = {pad}")
    with w.block(f"if {' and '.join(inside)}:"):
        w.line(f"{result} = {w.value(x, Index(x.aval.shape, dims=tuple(inner)))}")
    return result


@INDEX_RULES.rule("concatenate")
def _concatenate(w, eqn, index):
    axis = eqn.params["dimension"]
    parts, at = [], 0
    for x in eqn.inputs:
        if x.aval.shape[axis]:
            parts.append((x, at))
        at += x.aval.shape[axis]
    dims = w.dims(index)

    def part_value(x, start):
        inner = dims[:axis] + (offset(dims[axis], -start),) + dims[axis + 1 :]
        return w.value(x, Index(x.aval.shape, dims=inner))

    if len(parts) == 1:
        return part_value(*parts[0])
    result = w.temp("cat")
    for k, (x, start) in enumerate(parts):
        end = start + x.aval.shape[axis]
        if k == 0:
            header = f"if {dims[axis]} < {end}:"
        elif k < len(parts) - 1:
            header = f"elif {dims[axis]} < {end}:"
        else:
            header = "else:"
        with w.block(header):
            w.line(f"{result} = {part_value(x, start)}")
    return result


def _clamp(w, expr: str, high: int) -> str:
    name = w.temp("k")
    w.line(f"{name} = min(max({expr}, 0), {high})")
    return name


@INDEX_RULES.rule("gather")
def _gather(w, eqn, index):
    x, indices = eqn.inputs
    axis, depth = eqn.params["axis"], indices.aval.ndim
    size = x.aval.shape[axis]
    if size == 0:
        return constant(0, x.aval.dtype)
    dims = w.dims(index)
    position = w.value(indices, Index(indices.aval.shape, dims=dims[axis : axis + depth]))
    inner = dims[:axis] + (_clamp(w, position, size - 1),) + dims[axis + depth :]
    return w.value(x, Index(x.aval.shape, dims=inner))


def clamped_starts(w, starts, sizes, shape) -> list[str]:
    return [
        _clamp(w, w.value(start, SCALAR), full - size)
        for start, size, full in zip(starts, sizes, shape, strict=True)
    ]


@INDEX_RULES.rule("dynamic_slice")
def _dynamic_slice(w, eqn, index):
    x, *starts = eqn.inputs
    dims = w.dims(index)
    clamped = clamped_starts(w, starts, eqn.params["slice_sizes"], x.aval.shape)
    inner = tuple(f"{s} + {parenthesize(d)}" for s, d in zip(clamped, dims, strict=True))
    return w.value(x, Index(x.aval.shape, dims=inner))


@INDEX_RULES.rule("dynamic_update_slice")
def _dynamic_update_slice(w, eqn, index):
    x, update, *starts = eqn.inputs
    if update.aval.size == 0:
        return w.value(x, index)
    if x.aval.ndim == 0:
        return w.value(update, SCALAR)
    dims = w.dims(index)
    clamped = clamped_starts(w, starts, update.aval.shape, x.aval.shape)
    inside = " and ".join(
        f"{s} <= {d} < {s} + {n}" for s, d, n in zip(clamped, dims, update.aval.shape, strict=True)
    )
    inner = tuple(f"{parenthesize(d)} - {s}" for s, d in zip(clamped, dims, strict=True))
    result = w.temp("upd")
    with w.block(f"if {inside}:"):
        w.line(f"{result} = {w.value(update, Index(update.aval.shape, dims=inner))}")
    with w.block("else:"):
        w.line(f"{result} = {w.value(x, index)}")
    return result


@INDEX_RULES.rule("iota")
def _iota(w, eqn, index):
    dtype = eqn.params["dtype"]
    position = w.dims(index)[eqn.params["dimension"]]
    if dtypes.canonicalize(dtype) == dtypes.bool_:
        return f"({position} != 0)"
    return cast(position, dtype)
