"""Algebraic simplification: every equation is offered to the rules registered for its
primitive (``arithmetic`` and ``layout``); the first rule that fires replaces it.

One sweep rewrites each equation in program order, seeing the already rewritten
producers of its inputs, and offers the equation a rule made in its place to the rules
again (``_offer``); the cleanup group repeats the sweep (with folding, CSE and
DCE) until nothing changes.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Jaxpr
from ..ir.primitive import Pattern
from . import arithmetic, layout  # noqa: F401 - they register the rules
from .rewrite import Rebuilder, map_subjaxprs, subjaxprs, use_counts
from .simplify_rules import ELEMENTWISE_RULES, SIMPLIFICATIONS, Context

# How many times the equation that replaced another is offered to the rules again.
REOFFERS = 4


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
        _offer(eqn, Context(out, uses, eqn.source_info), counts)
    return out.finish(jaxpr)


def _offer(eqn, ctx: Context, counts: Counter) -> None:
    """Add ``eqn``, or what the first rule that fires replaces it with. The equation a
    rule emitted last, where it computes the replacement, is offered to the rules in
    turn, up to ``REOFFERS`` times: a product a rule makes of a transpose reads the
    transpose in place in this sweep (``dot_of_transpose``), not in the cleanup group's
    next round, which would run every pass once more (a transformer's 18 products)."""
    out, offered = ctx.out, eqn
    for _ in range(REOFFERS + 1):
        before = len(out.eqns)
        for rule in _rules_for(eqn):
            replacement = rule(eqn, ctx)
            if replacement is not None:
                counts[rule.__name__] += 1
                out.alias(offered.outputs[0], replacement)
                break
        else:
            out.add(eqn)
            return
        if len(out.eqns) == before or out.eqns[-1].outputs != [replacement]:
            return
        eqn = out.take_back()
    out.add(eqn)


def _rules_for(eqn):
    rules = SIMPLIFICATIONS[eqn.prim]
    if eqn.prim.pattern is Pattern.ELEMENTWISE:
        return (*rules, *ELEMENTWISE_RULES)
    return rules
