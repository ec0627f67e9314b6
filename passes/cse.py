"""Common-subexpression elimination: two equations with the same primitive, params and
inputs compute the same value, so the second one goes, unless they have side effects
(two prints of one value print twice).

Literals compare by their bytes, so ``-0.0`` and ``0.0`` stay different constants;
sub-jaxprs compare by structure, so two identical kernels are merged after fusion.

One pass leaves nothing to merge (each equation is keyed by the inputs it reads once
rewritten): a jaxpr CSE made or left alone is given back as it is
(``rewrite.done_in_one_run``), so fusion's kernel bodies, merged as each is built, are not
walked again by the cleanup after fusion.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Jaxpr
from ..ir.primitive import has_side_effects
from .rewrite import Rebuilder, atom_key, done_in_one_run, map_subjaxprs, params_key


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(eliminate_common_subexpressions(closed.jaxpr, counts), closed.consts), counts


@done_in_one_run
def eliminate_common_subexpressions(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    """``jaxpr`` with each repeated computation computed once; ``jaxpr`` itself where
    there is none."""
    counts = Counter() if counts is None else counts
    out = Rebuilder()
    seen: dict = {}
    changed = False
    for original in jaxpr.eqns:
        eqn = map_subjaxprs(
            out.substituted(original), lambda sub: eliminate_common_subexpressions(sub, counts)
        )
        changed |= eqn is not original
        if has_side_effects(eqn):
            out.add(eqn)
            continue
        earlier = _earlier(seen, eqn)
        if earlier is None:
            out.add(eqn)
            continue
        counts["merged"] += 1
        changed = True
        for var, same in zip(eqn.outputs, earlier, strict=True):
            out.alias(var, same)
    return out.finish(jaxpr) if changed else jaxpr


def _earlier(seen: dict, eqn) -> list | None:
    """The outputs of the first equation in ``seen`` computing what ``eqn`` does, or None
    (``eqn`` is then added to ``seen``). Equations are looked up by primitive and inputs;
    the params' key (a walk of every param) is made only for those that share both,
    where it decides: most share them with no other."""
    key = (eqn.prim.name, tuple(atom_key(a) for a in eqn.inputs))
    same_inputs = seen.get(key)
    if same_inputs is None:
        seen[key] = [[eqn, None]]
        return None
    wanted = params_key(eqn.params)
    for entry in same_inputs:
        if entry[1] is None:
            entry[1] = params_key(entry[0].params)
        if entry[1] == wanted:
            return entry[0].outputs
    same_inputs.append([eqn, wanted])
    return None
