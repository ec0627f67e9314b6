"""Jaxpr plumbing the transforms share: dead-code elimination and
the per-jaxpr caches that keep a transformed sub-jaxpr the same object across calls.

Compiled programs are cached by jaxpr identity (``jit_call``'s eager implementation),
so ``grad(jit(f))`` called twice must produce the very same forward and backward
jaxprs the second time; the caches here are keyed weakly by the source jaxpr.
"""

from __future__ import annotations

import weakref

from ..ir.core import ClosedJaxpr, Jaxpr, Var
from ..ir.primitive import has_side_effects


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drop equations whose outputs nothing reads, unless they have side effects."""
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outputs) or has_side_effects(eqn):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars)


def used_vars(jaxpr: Jaxpr) -> set[Var]:
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in jaxpr.eqns:
        used.update(a for a in eqn.inputs if isinstance(a, Var))
    return used


def dce_closed(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``dce``, then drop the constvars (and their values) nothing reads any more."""
    jaxpr = dce(closed.jaxpr)
    used = used_vars(jaxpr)
    kept = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts, strict=True) if v in used]
    jaxpr = Jaxpr([v for v, _ in kept], jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return ClosedJaxpr(jaxpr, [c for _, c in kept])


class JaxprCache:
    """``(jaxpr, *hashable key) -> value``, held only as long as the jaxpr lives."""

    def __init__(self):
        self._entries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, jaxpr: Jaxpr, key, build):
        per_jaxpr = self._entries.setdefault(jaxpr, {})
        if key not in per_jaxpr:
            per_jaxpr[key] = build()
        return per_jaxpr[key]
