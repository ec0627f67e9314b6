"""Inlining: the body of every nested ``jit_call`` is spliced into its caller, so the
passes after it (fusion above all) see across function boundaries.

``checkpoint`` and ``custom_vjp_call`` are inlined too: they only tell autodiff what to
save or how to differentiate, and autodiff is over by the time the passes run (the
primal ``jaxpr`` of a ``custom_vjp_call`` takes all its operands, as a call does). So is
``kernel``, which makes ``optimize`` idempotent: a fused program is fused again.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from .rewrite import Rebuilder, map_subjaxprs

INLINED = ("jit_call", "checkpoint", "custom_vjp_call", "kernel")


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(inline_calls(closed.jaxpr, counts), closed.consts), counts


def inline_calls(jaxpr: Jaxpr, counts: Counter) -> Jaxpr:
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        if eqn.prim.name in INLINED:
            counts[eqn.prim.name] += 1
            _splice(out, inline_calls(eqn.params["jaxpr"], counts), eqn)
        else:
            out.add(map_subjaxprs(eqn, lambda sub: inline_calls(sub, counts)))
    return out.finish(jaxpr)


def _splice(out: Rebuilder, body: Jaxpr, call: Eqn) -> None:
    """Copy ``body``'s equations into ``out`` with fresh variables: the same function
    may be called twice, and SSA needs every variable defined once."""
    env: dict = dict(zip(body.invars, call.inputs, strict=True))

    def read(atom):
        return env.get(atom, atom) if isinstance(atom, Var) else atom

    for eqn in body.eqns:
        outputs = [Var(v.aval, v.suffix) for v in eqn.outputs]
        env.update(zip(eqn.outputs, outputs, strict=True))
        out.add(eqn.replace(inputs=[read(a) for a in eqn.inputs], outputs=outputs))
    for var, atom in zip(call.outputs, body.outvars, strict=True):
        out.alias(var, read(atom))
