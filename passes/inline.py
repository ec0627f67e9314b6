"""Inlining: the body of every nested ``jit_call`` is spliced into its caller, so the
passes after it (fusion above all) see across function boundaries.

``checkpoint``, ``custom_vjp_call`` and ``custom_jvp_call`` are inlined too: they only
tell autodiff what to save or how to differentiate, and autodiff is over by the time the
passes run (the primal ``jaxpr`` of a custom call takes all its operands, as a call does). So is
``kernel``, which makes ``optimize`` idempotent: a fused program is fused again.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Jaxpr
from .rewrite import Rebuilder, map_subjaxprs

INLINED = ("jit_call", "checkpoint", "custom_vjp_call", "custom_jvp_call", "kernel")


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(inline_calls(closed.jaxpr, counts), closed.consts), counts


def inline_calls(jaxpr: Jaxpr, counts: Counter | None = None, calls=INLINED) -> Jaxpr:
    """``jaxpr`` with the bodies of the ``calls`` among its eqns (and its sub-jaxprs'
    eqns) spliced in; ``counts`` counts them by primitive."""
    counts = Counter() if counts is None else counts
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        if eqn.prim.name in calls:
            counts[eqn.prim.name] += 1
            out.splice(inline_calls(eqn.params["jaxpr"], counts, calls), eqn.inputs, eqn.outputs)
        else:
            out.add(map_subjaxprs(eqn, lambda sub: inline_calls(sub, counts, calls)))
    return out.finish(jaxpr)
