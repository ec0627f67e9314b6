"""Common-subexpression elimination: two equations with the same primitive, params and
inputs compute the same value, so the second one goes, unless they have side effects
(two prints of one value print twice).

Literals compare by their bytes, so ``-0.0`` and ``0.0`` stay different constants;
sub-jaxprs compare by structure, so two identical kernels are merged after fusion.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Jaxpr
from ..ir.primitive import has_side_effects
from .rewrite import Rebuilder, atom_key, map_subjaxprs, params_key


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(eliminate_common_subexpressions(closed.jaxpr, counts), closed.consts), counts


def eliminate_common_subexpressions(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    counts = Counter() if counts is None else counts
    out = Rebuilder()
    seen: dict = {}
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(
            out.substituted(eqn), lambda sub: eliminate_common_subexpressions(sub, counts)
        )
        if has_side_effects(eqn):
            out.add(eqn)
            continue
        key = (eqn.prim.name, tuple(atom_key(a) for a in eqn.inputs), params_key(eqn.params))
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = eqn.outputs
            out.add(eqn)
            continue
        counts["merged"] += 1
        for var, same in zip(eqn.outputs, earlier, strict=True):
            out.alias(var, same)
    return out.finish(jaxpr)
