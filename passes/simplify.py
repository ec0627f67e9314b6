"""Algebraic simplification: every equation is offered to the rules registered for its
primitive (``arithmetic`` and ``layout``); the first rule that fires replaces it.

One sweep rewrites each equation once, in program order, seeing the already rewritten
producers of its inputs; the cleanup group repeats the sweep (with folding, CSE and
DCE) until nothing changes.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Jaxpr
from ..ir.primitive import Pattern
from . import arithmetic, layout  # noqa: F401 - they register the rules
from .rewrite import Rebuilder, map_subjaxprs, subjaxprs, use_counts
from .simplify_rules import ELEMENTWISE_RULES, SIMPLIFICATIONS, Context


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(simplify(closed.jaxpr, counts), closed.consts), counts


def simplify(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    counts = Counter() if counts is None else counts
    out = Rebuilder()
    uses = use_counts(jaxpr)
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        if subjaxprs(eqn):
            out.add(map_subjaxprs(eqn, lambda sub: simplify(sub, counts)))
            continue
        ctx = Context(out, uses, eqn.source_info)
        for rule in _rules_for(eqn):
            replacement = rule(eqn, ctx)
            if replacement is not None:
                counts[rule.__name__] += 1
                out.alias(eqn.outputs[0], replacement)
                break
        else:
            out.add(eqn)
    return out.finish(jaxpr)


def _rules_for(eqn):
    rules = SIMPLIFICATIONS[eqn.prim]
    if eqn.prim.pattern is Pattern.ELEMENTWISE:
        return (*rules, *ELEMENTWISE_RULES)
    return rules
