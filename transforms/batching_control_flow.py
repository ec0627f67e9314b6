"""Batching rules of the primitives that carry sub-jaxprs: calls and control flow.

Sub-jaxprs are batched with every batched value's batch dimension first. Loops find
which carries are batched by iterating to a fixed point (a carry becomes batched when
the body makes it depend on a batched value). A batched predicate turns ``cond`` into
a ``select`` of every branch, and ``while`` into a loop that runs until every example
is done, leaving finished examples' carries unchanged.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.control_flow import cond_p, scan_p, while_p
from ..ir.higher_order import checkpoint_p, custom_jvp_call_p, custom_vjp_call_p, jit_call_p
from ..tracer import lax
from ..tracer.core import bind
from .batching import (
    BATCH_RULES,
    axis_size,
    batch_subjaxpr,
    batched_aval,
    broadcast_batch,
    broadcast_lanes,
    eval_batched,
    moveaxis,
    shape_of,
    to_front,
    trace_closed,
)
from .jaxprs import JaxprCache


def _front(args, dims):
    """Batch dims moved first; returns the values and which are batched."""
    moved = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    return moved, [d is not None for d in dims]


def _out_dims(batched, dim=0):
    return [dim if b else None for b in batched]


def _call_rule(prim):
    def rule(args, dims, *, jaxpr, **params):
        size = axis_size(args, dims)
        args, in_batched = _front(args, dims)
        body, out_batched = batch_subjaxpr(jaxpr, in_batched, size)
        return bind(prim, *args, jaxpr=body, **params), _out_dims(out_batched)

    return rule


BATCH_RULES.rule("jit_call")(_call_rule(jit_call_p))
BATCH_RULES.rule("checkpoint")(_call_rule(checkpoint_p))


@BATCH_RULES.rule("kernel")
def _kernel_rule(args, dims, *, jaxpr, kind, name):
    # A batched kernel no longer has its kind's shape; it becomes a plain call that
    # fusion may fuse again.
    return _call_rule(jit_call_p)(args, dims, jaxpr=jaxpr, name=name)


def _batched_everywhere(prim, args, dims, jaxprs: dict, **params):
    """``prim`` bound with every argument and every input and output of its sub-jaxprs
    (``jaxprs``, by parameter name) batched at axis 0."""
    size = axis_size(args, dims)
    args = [to_front(x, d, size) for x, d in zip(args, dims, strict=True)]
    batched = {
        name: batch_subjaxpr(sub, [True] * len(sub.invars), size, [True] * len(sub.outvars))[0]
        for name, sub in jaxprs.items()
    }
    outs = bind(prim, *args, **batched, **params)
    return outs, [0] * len(outs)


@BATCH_RULES.rule("custom_vjp_call")
def _custom_vjp_call_rule(args, dims, *, const_counts, **jaxprs):
    # Everything batched, inputs and outputs of all three jaxprs: the backward pass will
    # receive batched cotangents whatever the forward's batching, and one uniform layout
    # keeps the primal, forward and backward jaxprs consistent with each other.
    return _batched_everywhere(custom_vjp_call_p, args, dims, jaxprs, const_counts=const_counts)


@BATCH_RULES.rule("custom_jvp_call")
def _custom_jvp_call_rule(args, dims, *, const_counts, **jaxprs):
    # Everything batched, as for custom_vjp_call: the tangents a later jvp or vjp gives
    # the rule have the batched arguments' shapes, whatever the arguments' batching.
    return _batched_everywhere(custom_jvp_call_p, args, dims, jaxprs, const_counts=const_counts)


# ------------------------------------------------------------------------- cond


@BATCH_RULES.rule("cond")
def _cond_rule(args, dims, *, branches):
    size = axis_size(args, dims)
    (index, *operands), (index_dim, *operand_dims) = args, dims
    operands, in_batched = _front(operands, operand_dims)
    if index_dim is None:
        out_batched = [False] * len(branches[0].outvars)
        for branch in branches:
            _, batched = batch_subjaxpr(branch, in_batched, size)
            out_batched = [a or b for a, b in zip(out_batched, batched, strict=True)]
        batched = tuple(batch_subjaxpr(b, in_batched, size, out_batched)[0] for b in branches)
        outs = bind(cond_p, index, *operands, branches=batched)
        return outs, _out_dims(out_batched)
    # A different branch per example: run them all, then pick per example. The index
    # clamps into range, so branch k is taken where index >= k and no later one is.
    index = moveaxis(index, index_dim, 0)
    results = []
    for branch in branches:
        outs, out_dims = eval_batched(branch, [], operands, _out_dims(in_batched))
        results.append([to_front(x, d, size) for x, d in zip(outs, out_dims, strict=True)])
    chosen = results[0]
    for k, outs in enumerate(results[1:], start=1):
        take = lax.ge(index, np.asarray(k, index.dtype))
        chosen = [
            lax.select(broadcast_lanes(take, shape_of(new)), new, old)
            for new, old in zip(outs, chosen, strict=True)
        ]
    return chosen, [0] * len(chosen)


# ------------------------------------------------------------------------ loops


def _carry_fixed_point(body, const_batched, carry_batched, extra_batched, size):
    """Which carries are batched: start from the initial values and add every carry the
    body makes batched, until nothing changes. Also returns the body's other outputs'."""
    while True:
        in_batched = const_batched + carry_batched + extra_batched
        _, out_batched = batch_subjaxpr(body, in_batched, size)
        grown = [
            a or b for a, b in zip(carry_batched, out_batched[: len(carry_batched)], strict=True)
        ]
        if grown == carry_batched:
            return carry_batched, out_batched[len(carry_batched) :]
        carry_batched = grown


def _broadcast_init(init, init_batched, carry_batched, size):
    return [
        broadcast_batch(x, size) if want and not have else x
        for x, have, want in zip(init, init_batched, carry_batched, strict=True)
    ]


@BATCH_RULES.rule("while")
def _while_rule(args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = axis_size(args, dims)
    args, batched = _front(args, dims)
    split = (cond_nconsts, cond_nconsts + body_nconsts)
    cond_consts, body_consts, init = args[: split[0]], args[split[0] : split[1]], args[split[1] :]
    cond_b, body_b, init_b = batched[: split[0]], batched[split[0] : split[1]], batched[split[1] :]
    carry_b, _ = _carry_fixed_point(body_jaxpr, body_b, init_b, [], size)
    _, (pred_batched,) = batch_subjaxpr(cond_jaxpr, cond_b + carry_b, size)
    if pred_batched:
        return _while_batched_predicate(
            size, cond_jaxpr, body_jaxpr, cond_consts, body_consts, init, cond_b, body_b, init_b
        )
    outs = bind(
        while_p,
        *cond_consts,
        *body_consts,
        *_broadcast_init(init, init_b, carry_b, size),
        cond_jaxpr=batch_subjaxpr(cond_jaxpr, cond_b + carry_b, size, [False])[0],
        body_jaxpr=batch_subjaxpr(body_jaxpr, body_b + carry_b, size, carry_b)[0],
        cond_nconsts=cond_nconsts,
        body_nconsts=body_nconsts,
    )
    return outs, _out_dims(carry_b)


def _while_batched_predicate(
    size, cond_jaxpr, body_jaxpr, cond_consts, body_consts, init, cond_b, body_b, init_b
):
    """Loop while any example's predicate holds; the body updates only those examples.

    The new body also evaluates the predicate, so it takes the cond's consts too."""
    cond_new, body_new = _masked_loop.get(
        body_jaxpr,
        (cond_jaxpr, tuple(cond_b), tuple(body_b), size),
        lambda: _build_masked_loop(cond_jaxpr, body_jaxpr, cond_b, body_b, size),
    )
    outs = bind(
        while_p,
        *cond_consts,
        *cond_consts,
        *body_consts,
        *_broadcast_init(init, init_b, [True] * len(init), size),
        cond_jaxpr=cond_new,
        body_jaxpr=body_new,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(cond_consts) + len(body_consts),
    )
    return outs, [0] * len(outs)


_masked_loop = JaxprCache()


def _build_masked_loop(cond_jaxpr, body_jaxpr, cond_b, body_b, size):
    num_cond, num_body = len(cond_b), len(body_b)
    carry_avals = [batched_aval(a, size) for a in cond_jaxpr.in_avals[num_cond:]]
    cond_const_avals = _maybe_batched(cond_jaxpr.in_avals[:num_cond], cond_b, size)
    body_const_avals = _maybe_batched(body_jaxpr.in_avals[:num_body], body_b, size)

    def predicate(consts, carry):
        (pred,), (dim,) = eval_batched(
            cond_jaxpr, [], consts + carry, _out_dims(cond_b) + [0] * len(carry)
        )
        return to_front(pred, dim, size)

    def any_running(*flat):
        pred = predicate(list(flat[:num_cond]), list(flat[num_cond:]))
        running = lax.reduce_max(lax.convert_element_type(pred, dtypes.int32), (0,))
        return [lax.ne(running, np.zeros((), dtypes.int32))]

    def masked_body(*flat):
        consts, carry = list(flat[: num_cond + num_body]), list(flat[num_cond + num_body :])
        running = predicate(consts[:num_cond], carry)
        outs, out_dims = eval_batched(
            body_jaxpr, [], consts[num_cond:] + carry, _out_dims(body_b) + [0] * len(carry)
        )
        return [
            lax.select(broadcast_lanes(running, shape_of(old)), to_front(new, d, size), old)
            for new, d, old in zip(outs, out_dims, carry, strict=True)
        ]

    cond_new = trace_closed(any_running, cond_const_avals + carry_avals)
    body_new = trace_closed(masked_body, cond_const_avals + body_const_avals + carry_avals)
    return cond_new, body_new


def _maybe_batched(avals, batched, size):
    return [batched_aval(a, size) if b else a for a, b in zip(avals, batched, strict=True)]


@BATCH_RULES.rule("scan")
def _scan_rule(args, dims, *, jaxpr, length, reverse, num_consts, num_carry):
    size = axis_size(args, dims)
    split = (num_consts, num_consts + num_carry)
    consts, const_b = _front(args[: split[0]], dims[: split[0]])
    init, init_b = _front(args[split[0] : split[1]], dims[split[0] : split[1]])
    # Scanned operands keep the scan axis first; their batch dim goes second, so each
    # slice the body sees has its batch dim first.
    xs = [
        x if d is None else moveaxis(x, d, 1)
        for x, d in zip(args[split[1] :], dims[split[1] :], strict=True)
    ]
    xs_b = [d is not None for d in dims[split[1] :]]
    carry_b, ys_b = _carry_fixed_point(jaxpr, const_b, init_b, xs_b, size)
    body, _ = batch_subjaxpr(jaxpr, const_b + carry_b + xs_b, size, carry_b + ys_b)
    outs = bind(
        scan_p,
        *consts,
        *_broadcast_init(init, init_b, carry_b, size),
        *xs,
        jaxpr=body,
        length=length,
        reverse=reverse,
        num_consts=num_consts,
        num_carry=num_carry,
    )
    return outs, _out_dims(carry_b) + _out_dims(ys_b, dim=1)
