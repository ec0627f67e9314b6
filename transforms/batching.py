"""The batching interpreter behind ``vmap``, and its per-primitive rule table.

A jaxpr traced on one example is re-emitted for a batch: ``eval_batched`` walks the
eqns, tracking for every value its batch dimension (``None``: the same for every
example), binds an eqn unchanged when no input is batched, and otherwise calls the
primitive's rule from ``BATCH_RULES``:

    rule(args, dims, **params) -> (outs, out_dims)

where ``args`` are the batched values (tracers of the trace being recorded, or NumPy
constants) and ``dims`` their batch dimensions. Rules emit through ``tracer.lax`` (or
``bind``), so the rewrite is itself traced. Sub-jaxprs (loop bodies, branches, calls)
are batched with ``batch_subjaxpr``, where every batched value has its batch
dimension first.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.core import Jaxpr, Literal, ShapedArray, aval_of
from ..ir.errors import BatchingError, at_line
from ..ir.rules import RuleTable
from ..tracer import lax
from ..tracer.core import bind, trace_flat
from .jaxprs import JaxprCache

# Every primitive has a batching rule, ``axis_index`` excepted: it reads the process's
# position, which no example changes (``vmap`` of it is the unbatched value).
BATCH_RULES = RuleTable("batching", not_applicable=lambda prim: prim.name == "axis_index")


# ----------------------------------------------------------------- value helpers


def shape_of(x) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else ()


def dtype_of(x) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else aval_of(x).dtype


def example_shape(x, dim) -> tuple[int, ...]:
    """The shape of one example of ``x`` (its shape without the batch dimension)."""
    shape = shape_of(x)
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


def axis_size(args, dims) -> int:
    return next(shape_of(x)[d] for x, d in zip(args, dims, strict=True) if d is not None)


def batched_aval(aval: ShapedArray, size: int, dim: int = 0) -> ShapedArray:
    return aval.update(shape=aval.shape[:dim] + (size,) + aval.shape[dim:])


def moveaxis(x, source: int, destination: int):
    if source == destination:
        return x
    perm = list(range(len(shape_of(x))))
    perm.insert(destination, perm.pop(source))
    return lax.transpose(x, perm)


def broadcast_batch(x, size: int):
    """``x`` repeated for every example, along a new leading batch dimension."""
    shape = shape_of(x)
    return lax.broadcast_in_dim(x, (size,) + shape, range(1, len(shape) + 1))


def to_front(x, dim, size: int):
    """``x`` with its batch dimension first (broadcast there when it has none)."""
    return broadcast_batch(x, size) if dim is None else moveaxis(x, dim, 0)


def broadcast_lanes(x, shape):
    """A per-example scalar ``x`` of shape (B,) broadcast over a batched ``shape``."""
    return lax.broadcast_in_dim(x, tuple(shape), (0,))


# ------------------------------------------------------------------ interpreter


def eval_batched(jaxpr: Jaxpr, consts, args, dims) -> tuple[list, list]:
    """Emit ``jaxpr`` over batched ``args`` into the current trace.

    Returns the outputs and their batch dimensions (``None`` where unbatched).
    """
    env: dict = {}

    def read(atom):
        return (atom.val, None) if isinstance(atom, Literal) else env[atom]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[var] = (value, None)
    for var, value, dim in zip(jaxpr.invars, args, dims, strict=True):
        env[var] = (value, dim)
    for eqn in jaxpr.eqns:
        values = [read(a)[0] for a in eqn.inputs]
        in_dims = [read(a)[1] for a in eqn.inputs]
        if all(d is None for d in in_dims):
            outs = bind(eqn.prim, *values, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            out_dims = [None] * len(outs)
        else:
            outs, out_dims = _rule(eqn)(values, in_dims, **eqn.params)
        for var, value, dim in zip(eqn.outputs, outs, out_dims, strict=True):
            env[var] = (value, dim)
    outs = [read(a) for a in jaxpr.outvars]
    return [value for value, _ in outs], [dim for _, dim in outs]


def _rule(eqn) -> Callable:
    rule = BATCH_RULES.get(eqn.prim)
    if rule is None:
        raise BatchingError(
            at_line(
                f"vmap: primitive {eqn.prim.name!r} has no batching rule; add one to "
                "numbax.transforms.batching.BATCH_RULES",
                eqn.source_info,
            )
        )
    return rule


_subjaxpr_cache = JaxprCache()


def batch_subjaxpr(jaxpr: Jaxpr, in_batched, size: int, out_batched=None) -> tuple[Jaxpr, list]:
    """Batch a closure-converted sub-jaxpr whose batched inputs and outputs carry the
    batch dimension first.

    ``out_batched`` forces which outputs are batched (unbatched ones are broadcast);
    by default an output is batched when the rules make it so. Returns the batched
    jaxpr, closure-converted too, and which outputs are batched. Cached per jaxpr, so
    that batching the same call twice gives the same jaxpr (compiled code is cached by
    jaxpr identity).
    """
    key = (tuple(in_batched), size, None if out_batched is None else tuple(out_batched))
    batched, chosen = _subjaxpr_cache.get(
        jaxpr, key, lambda: _batch_subjaxpr(jaxpr, in_batched, size, out_batched)
    )
    return batched, list(chosen)


def _batch_subjaxpr(jaxpr, in_batched, size, out_batched):
    avals = [
        batched_aval(a, size) if b else a for a, b in zip(jaxpr.in_avals, in_batched, strict=True)
    ]
    chosen = []

    def batched(*args):
        outs, dims = eval_batched(jaxpr, [], args, [0 if b else None for b in in_batched])
        want = [d is not None for d in dims] if out_batched is None else list(out_batched)
        chosen.append(want)
        if any(d is not None and not w for d, w in zip(dims, want, strict=True)):
            raise BatchingError("vmap: internal error, a sub-jaxpr output cannot be unbatched")
        return [to_front(x, d, size) if w else x for x, d, w in zip(outs, dims, want, strict=True)]

    return trace_closed(batched, avals), tuple(chosen[0])


def trace_closed(fun, avals) -> Jaxpr:
    """Trace a batched sub-program; it captures nothing, so it has no constvars."""
    closed, _ = trace_flat(fun, avals)
    if closed.consts:
        # Rules emit constants as scalar literals (lax.full, iota), never as arrays, so
        # a batched sub-jaxpr stays closed and keeps its operand layout.
        raise BatchingError("vmap: internal error, a batching rule created an array constant")
    return closed.jaxpr
