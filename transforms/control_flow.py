"""Derivatives of ``cond``, ``while`` and ``scan`` (layouts in ``ir/control_flow.py``).

Each rule transforms the sub-jaxprs (``jvp_jaxpr``, ``vjp_split``) and binds the same
control-flow primitive over the results, so the program stays one loop or one switch:

- ``cond``: forward mode switches over the branches' JVPs. Reverse mode switches over
  the branches' forward halves, each returning every branch's residuals (zeros for
  the others', so all branches have one type), then over their backward halves.
- ``while``: forward mode carries the tangents along. Reverse mode would need every
  iteration's residuals without knowing the trip count: it raises, as in JAX (use
  ``fori_loop`` with Python bounds or ``scan``, which are differentiable).
- ``scan``: forward mode scans the body's JVP. Reverse mode scans the body's forward
  half, stacking its residuals as extra outputs, then scans the backward half in the
  other direction, carrying the cotangents of the carry and of the constants.

Sub-jaxprs are closure-converted, so values a rewritten body captures (rarely any)
become leading operands; ``share_consts`` gives several branches one signature.
"""

from __future__ import annotations

from ..ir.control_flow import cond_p, scan_p, while_p
from ..ir.core import Jaxpr, Var
from ..ir.errors import GradientError, at_line
from ..tracer import lax
from ..tracer.closure import closure_convert
from ..tracer.core import bind, trace_flat
from ..tracer.source_info import user_frame_info
from . import derivatives as d
from .jaxprs import dce_closed
from .jvp import JVP_RULES, jvp_jaxpr
from .vjp import vjp_split
from .vjp_rules import VJP_RULES


def share_consts(pairs) -> tuple[list[Jaxpr], list]:
    """``[(jaxpr, consts)]`` with consts as leading invars -> jaxprs that all take every
    pair's consts first (ignoring the others'), and the concatenated consts."""
    all_consts = [c for _, consts in pairs for c in consts]
    if not all_consts:
        return [jaxpr for jaxpr, _ in pairs], []
    jaxprs = []
    for k, (jaxpr, consts) in enumerate(pairs):
        leading = []
        for j, (other, other_consts) in enumerate(pairs):
            own = other.invars[: len(other_consts)]
            leading += own if j == k else [Var(v.aval) for v in own]
        jaxprs.append(Jaxpr([], leading + jaxpr.invars[len(consts) :], jaxpr.eqns, jaxpr.outvars))
    return jaxprs, all_consts


def _build(fun, in_avals) -> tuple[Jaxpr, list]:
    closed, _ = trace_flat(fun, in_avals)
    return closure_convert(dce_closed(closed))


def _float_nonzeros(jaxpr: Jaxpr, tangents) -> tuple[bool, ...]:
    return tuple(
        t is not None and d.has_tangent(v.aval) for t, v in zip(tangents, jaxpr.invars, strict=True)
    )


def _split_outputs(results, outvars):
    """``(*outs, *float tangents)`` -> outs and one tangent (or None) per output."""
    float_outputs = [d.has_tangent(v.aval) for v in outvars]
    return results[: len(outvars)], d.in_place(results[len(outvars) :], float_outputs)


# --------------------------------------------------------------------------------------
# cond


@JVP_RULES.rule(cond_p)
def _cond_jvp(primals, tangents, *, branches):
    index, operands = primals[0], primals[1:]
    nonzeros = _float_nonzeros(branches[0], tangents[1:])
    jvp_branches, consts = share_consts([jvp_jaxpr(b, nonzeros) for b in branches])
    given = [t for t, nz in zip(tangents[1:], nonzeros, strict=True) if nz]
    results = bind(cond_p, index, *consts, *operands, *given, branches=tuple(jvp_branches))
    return _split_outputs(results, branches[0].outvars)


@VJP_RULES.rule(cond_p)
def _cond_vjp(primals, wrt, *, branches):
    index, operands = primals[0], primals[1:]
    splits = [vjp_split(b, wrt[1:]) for b in branches]
    residual_avals = [split.residual_avals for split in splits]
    in_avals = branches[0].in_avals

    def forward_branch(k, split):
        def forward(*ops):
            outs, residuals = split.run_forward(list(ops))
            for j, avals in enumerate(residual_avals):
                outs += residuals if j == k else [lax.zeros_like_aval(a) for a in avals]
            return outs

        return _build(forward, in_avals)

    forward_branches, consts = share_consts([forward_branch(k, s) for k, s in enumerate(splits)])
    results = bind(cond_p, index, *consts, *operands, branches=tuple(forward_branches))
    num_outs = len(branches[0].outvars)
    outs, residuals = results[:num_outs], results[num_outs:]

    def backward(cts):
        mask = splits[0].cotangent_mask
        given = [d.instantiate(ct, out) for ct, out, m in zip(cts, outs, mask, strict=True) if m]

        def backward_branch(k, split):
            start = sum(len(a) for a in residual_avals[:k])

            def run(*args):
                own = list(args[start : start + len(residual_avals[k])])
                return split.run_backward(own, list(args[len(residuals) :]))

            return _build(run, [d.aval(r) for r in residuals] + [d.aval(c) for c in given])

        backward_branches, consts = share_consts(
            [backward_branch(k, s) for k, s in enumerate(splits)]
        )
        in_cts = bind(cond_p, index, *consts, *residuals, *given, branches=tuple(backward_branches))
        return [None] + d.in_place(in_cts, splits[0].wrt)

    return outs, backward


# --------------------------------------------------------------------------------------
# while


@JVP_RULES.rule(while_p)
def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = primals[:cond_nconsts]
    body_consts = primals[cond_nconsts : cond_nconsts + body_nconsts]
    carry = primals[cond_nconsts + body_nconsts :]
    const_tangents = tangents[cond_nconsts : cond_nconsts + body_nconsts]
    carry_tangents = tangents[cond_nconsts + body_nconsts :]
    # Every float carry takes a tangent: one that starts at zero may not stay zero.
    const_nonzeros = tuple(
        t is not None and d.has_tangent(d.aval(c))
        for t, c in zip(const_tangents, body_consts, strict=True)
    )
    carry_nonzeros = tuple(d.has_tangent(d.aval(c)) for c in carry)
    body, consts = jvp_jaxpr(body_jaxpr, const_nonzeros + carry_nonzeros)
    # The JVP body takes (consts, consts', carry, carry', tangents ...) in the order
    # (jvp consts, primals, tangents); while wants its consts before its carry.
    n_jc, n_bc, n_ct = len(consts), len(body_consts), sum(const_nonzeros)
    invars = body.invars
    primal_consts, primal_carry = invars[n_jc : n_jc + n_bc], invars[n_jc + n_bc :]
    primal_carry = primal_carry[: len(carry)]
    tangent_vars = invars[n_jc + n_bc + len(carry) :]
    body = Jaxpr(
        [],
        invars[:n_jc] + primal_consts + tangent_vars[:n_ct] + primal_carry + tangent_vars[n_ct:],
        body.eqns,
        body.outvars,
    )
    tangent_carry_avals = [d.aval(c) for c, nz in zip(carry, carry_nonzeros, strict=True) if nz]
    cond = Jaxpr(
        [],
        cond_jaxpr.invars + [Var(a) for a in tangent_carry_avals],
        cond_jaxpr.eqns,
        cond_jaxpr.outvars,
    )
    given_consts = [t for t, nz in zip(const_tangents, const_nonzeros, strict=True) if nz]
    given_carry = [
        d.instantiate(t, c)
        for t, c, nz in zip(carry_tangents, carry, carry_nonzeros, strict=True)
        if nz
    ]
    results = bind(
        while_p,
        *cond_consts,
        *consts,
        *body_consts,
        *given_consts,
        *carry,
        *given_carry,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=cond_nconsts,
        body_nconsts=n_jc + n_bc + n_ct,
    )
    return _split_outputs(results, body_jaxpr.outvars)


@VJP_RULES.rule(while_p)
def _while_vjp(primals, wrt, **params):
    raise GradientError(
        at_line(
            "reverse-mode differentiation (grad, vjp, jacrev) of a while_loop is not supported: "
            "its trip count is only known at run time, so its residuals cannot be stored. Use "
            "fori_loop with Python int bounds or scan (both differentiable), or forward mode "
            "(jvp, jacfwd).",
            user_frame_info(),
        )
    )


# --------------------------------------------------------------------------------------
# scan


@JVP_RULES.rule(scan_p)
def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry):
    consts, carry, xs = _scan_parts(primals, num_consts, num_carry)
    const_t, carry_t, xs_t = _scan_parts(tangents, num_consts, num_carry)
    const_nz = tuple(
        t is not None and d.has_tangent(d.aval(c)) for t, c in zip(const_t, consts, strict=True)
    )
    carry_nz = tuple(d.has_tangent(d.aval(c)) for c in carry)
    xs_nz = tuple(t is not None and d.has_tangent(d.aval(x)) for t, x in zip(xs_t, xs, strict=True))
    body, jvp_consts = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz)
    # Reorder the JVP body's (consts, carry, xs, their tangents) and (carry, ys, their
    # tangents) into scan's layout: consts, carry, xs each followed by its tangents.
    n_jc, n_c, n_k, n_x = len(jvp_consts), len(consts), len(carry), len(xs)
    invars = body.invars[n_jc:]
    primal_c, primal_k = invars[:n_c], invars[n_c : n_c + n_k]
    primal_x = invars[n_c + n_k : n_c + n_k + n_x]
    tangent_vars = invars[n_c + n_k + n_x :]
    tangent_c = tangent_vars[: sum(const_nz)]
    tangent_k = tangent_vars[sum(const_nz) : sum(const_nz) + sum(carry_nz)]
    tangent_x = tangent_vars[sum(const_nz) + sum(carry_nz) :]
    outvars = body.outvars
    num_outs = len(jaxpr.outvars)
    float_out = [d.has_tangent(v.aval) for v in jaxpr.outvars]
    out_tangents = outvars[num_outs:]
    carry_tangents_out = out_tangents[: sum(float_out[:n_k])]
    ys_tangents_out = out_tangents[sum(float_out[:n_k]) :]
    body = Jaxpr(
        [],
        body.invars[:n_jc] + primal_c + tangent_c + primal_k + tangent_k + primal_x + tangent_x,
        body.eqns,
        outvars[:n_k] + carry_tangents_out + outvars[n_k:num_outs] + ys_tangents_out,
    )
    given_consts = [t for t, nz in zip(const_t, const_nz, strict=True) if nz]
    given_carry = [
        d.instantiate(t, c) for t, c, nz in zip(carry_t, carry, carry_nz, strict=True) if nz
    ]
    given_xs = [t for t, nz in zip(xs_t, xs_nz, strict=True) if nz]
    results = bind(
        scan_p,
        *jvp_consts,
        *consts,
        *given_consts,
        *carry,
        *given_carry,
        *xs,
        *given_xs,
        jaxpr=body,
        length=length,
        reverse=reverse,
        num_consts=n_jc + n_c + len(given_consts),
        num_carry=n_k + len(given_carry),
    )
    # Results: carry, carry tangents, ys, ys tangents.
    ys_start = n_k + len(carry_tangents_out)
    ys_tangents_start = ys_start + num_outs - n_k
    out_tangents = d.in_place(results[n_k:ys_start], float_out[:n_k]) + d.in_place(
        results[ys_tangents_start:], float_out[n_k:]
    )
    return results[:n_k] + results[ys_start:ys_tangents_start], out_tangents


def _scan_parts(values, num_consts, num_carry):
    values = list(values)
    return (
        values[:num_consts],
        values[num_consts : num_consts + num_carry],
        values[num_consts + num_carry :],
    )


@VJP_RULES.rule(scan_p)
def _scan_vjp(primals, wrt, *, jaxpr, length, reverse, num_consts, num_carry):
    consts, carry, xs = _scan_parts(primals, num_consts, num_carry)
    const_wrt, _, xs_wrt = _scan_parts(wrt, num_consts, num_carry)
    n_c, n_k = num_consts, num_carry
    # Every float carry gets a cotangent: it may depend on differentiated consts or xs.
    split = vjp_split(jaxpr, tuple(const_wrt) + (True,) * n_k + tuple(xs_wrt))
    num_saved = len(split.residual_avals) - len(split.forwarded)
    # Residuals that are body inputs: consts stay consts, xs are already stacked, the
    # carry's values per iteration are stacked by the forward scan.
    forwarded_carry = [i for i in split.forwarded if n_c <= i < n_c + n_k]

    def forward(*args):
        outs, residuals = split.run_forward(list(args))
        return outs + residuals[:num_saved] + [args[i] for i in forwarded_carry]

    body, body_consts = _build(forward, jaxpr.in_avals)
    results = bind(
        scan_p,
        *body_consts,
        *consts,
        *carry,
        *xs,
        jaxpr=body,
        length=length,
        reverse=reverse,
        num_consts=len(body_consts) + n_c,
        num_carry=n_k,
    )
    num_outs = len(jaxpr.outvars)
    outs = results[:num_outs]
    stacked = results[num_outs:]  # saved residuals, then the carry values, per iteration

    def backward(cts):
        mask = split.cotangent_mask
        given = [d.instantiate(ct, out) for ct, out, m in zip(cts, outs, mask, strict=True) if m]
        num_carry_cts = sum(mask[:n_k])
        ct_carry, ct_ys = given[:num_carry_cts], given[num_carry_cts:]
        wrt_consts, wrt_carry, wrt_xs = _scan_parts(split.wrt, n_c, n_k)
        ct_consts = [
            lax.zeros_like_aval(d.aval(c)) for c, w in zip(consts, wrt_consts, strict=True) if w
        ]
        const_residuals = [primals[i] for i in split.forwarded if i < n_c]
        per_iteration = [jaxpr.in_avals[i] for i in split.forwarded if i >= n_c]
        slice_avals = (
            split.residual_avals[:num_saved]
            + per_iteration
            + [v.aval for v, m in zip(jaxpr.outvars[n_k:], mask[n_k:], strict=True) if m]
        )
        carry_avals = [d.aval(c) for c in ct_carry + ct_consts]

        def step(*args):
            it = iter(args)
            own_consts = [next(it) for _ in const_residuals]
            ct_carry_in = [next(it) for _ in ct_carry]
            ct_consts_in = [next(it) for _ in ct_consts]
            saved = [next(it) for _ in range(num_saved)]
            forwarded = {i: (own_consts.pop(0) if i < n_c else next(it)) for i in split.forwarded}
            ct_y = list(it)
            residuals = saved + [forwarded[i] for i in split.forwarded]
            in_cts = split.run_backward(residuals, ct_carry_in + ct_y)
            n_cw = len(ct_consts)
            ct_carry_out = in_cts[n_cw : n_cw + len(ct_carry)]
            totals = [a + b for a, b in zip(ct_consts_in, in_cts[:n_cw], strict=True)]
            return ct_carry_out + totals + in_cts[n_cw + len(ct_carry) :]

        step_avals = [d.aval(c) for c in const_residuals] + carry_avals + slice_avals
        body, body_consts = _build(step, step_avals)
        forwarded_xs = [xs[i - n_c - n_k] for i in split.forwarded if i >= n_c + n_k]
        # ``stacked`` holds the saved residuals then the forwarded carry values, which
        # is the order ``split.forwarded`` lists carries before xs in.
        results = bind(
            scan_p,
            *body_consts,
            *const_residuals,
            *ct_carry,
            *ct_consts,
            *stacked,
            *forwarded_xs,
            *ct_ys,
            jaxpr=body,
            length=length,
            reverse=not reverse,
            num_consts=len(body_consts) + len(const_residuals),
            num_carry=len(carry_avals),
        )
        ct_init, ct_consts_total = (
            results[: len(ct_carry)],
            results[len(ct_carry) : len(carry_avals)],
        )
        return (
            d.in_place(ct_consts_total, wrt_consts)
            + d.in_place(ct_init, wrt_carry)
            + d.in_place(results[len(carry_avals) :], wrt_xs)
        )

    return outs, backward
