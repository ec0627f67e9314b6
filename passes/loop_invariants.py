"""Loop-invariant code motion: an equation in a ``while`` or ``scan`` body that reads
only the loop's constants (not the carry, not the scanned slices) computes the same
value on every iteration, so it moves in front of the loop, runs once, and its result
enters the loop as a new constant.

An equation with side effects (a print) runs once per iteration, so it stays. Every
other primitive is pure, so computing the value even when the loop runs zero times
changes no result, with one exception: a ``while`` (or anything containing one) may
not terminate, so it leaves only a body known to run (a scan's of length >= 1, or a
``while``'s predicate, which runs at least once). Two more kinds of equation stay
inside:

- equations that read nothing but literals (``iota``, a broadcast literal): they are
  constants already, and folding handles the scalar ones;
- cheap equations whose result is bigger than their inputs (a ``broadcast_in_dim``):
  inside the body fusion recomputes them in registers, while hoisted they would be
  written to memory and read back on every iteration.

Bodies are processed innermost first, so an invariant of an inner loop that is also
invariant in the outer one moves all the way out. The constants a body no longer
reads are dropped by ``loop_dce``.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import Atom, ClosedJaxpr, Eqn, Jaxpr, Var
from ..ir.primitive import Pattern, has_side_effects
from .rewrite import Rebuilder, map_subjaxprs, subjaxprs


def acts_on() -> frozenset[str]:
    """The loops whose bodies this pass hoists from (``manager.Pass.acts_on``)."""
    return frozenset({"while", "scan"})


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(hoist_loop_invariants(closed.jaxpr, counts), closed.consts), counts


def hoist_loop_invariants(jaxpr: Jaxpr, counts: Counter) -> Jaxpr:
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(out.substituted(eqn), lambda sub: hoist_loop_invariants(sub, counts))
        if eqn.prim.name == "while":
            eqn = _hoist_while(out, eqn, counts)
        elif eqn.prim.name == "scan":
            eqn = _hoist_scan(out, eqn, counts)
        out.add(eqn)
    return out.finish(jaxpr)


def _hoist_while(out: Rebuilder, eqn: Eqn, counts: Counter) -> Eqn:
    params = eqn.params
    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    cond_consts = eqn.inputs[:cond_n]
    body_consts = eqn.inputs[cond_n : cond_n + body_n]
    inits = eqn.inputs[cond_n + body_n :]
    # The predicate runs at least once, the body perhaps never.
    cond_jaxpr, cond_consts = _hoist_from(out, params["cond_jaxpr"], cond_consts, True, counts)
    body_jaxpr, body_consts = _hoist_from(out, params["body_jaxpr"], body_consts, False, counts)
    return eqn.replace(
        inputs=cond_consts + body_consts + inits,
        params={
            **params,
            "cond_jaxpr": cond_jaxpr,
            "body_jaxpr": body_jaxpr,
            "cond_nconsts": len(cond_consts),
            "body_nconsts": len(body_consts),
        },
    )


def _hoist_scan(out: Rebuilder, eqn: Eqn, counts: Counter) -> Eqn:
    num_consts = eqn.params["num_consts"]
    consts, rest = eqn.inputs[:num_consts], eqn.inputs[num_consts:]
    runs = eqn.params["length"] > 0
    body, consts = _hoist_from(out, eqn.params["jaxpr"], consts, runs, counts)
    return eqn.replace(
        inputs=consts + rest, params={**eqn.params, "jaxpr": body, "num_consts": len(consts)}
    )


def _hoist_from(out: Rebuilder, body: Jaxpr, consts: list[Atom], runs: bool, counts: Counter):
    """Move ``body``'s invariant equations (over its leading ``len(consts)`` invars)
    into ``out``; returns the body and its const operands, the hoisted values
    appended after the old constants. ``runs``: the body is known to run."""
    invariant = set(body.invars[: len(consts)])
    hoisted: list[Eqn] = []
    kept: list[Eqn] = []
    for eqn in body.eqns:
        movable = (runs or not _contains_while(eqn)) and not has_side_effects(eqn)
        if movable and _reads_only(eqn, invariant) and _worth_hoisting(eqn):
            hoisted.append(eqn)
            invariant.update(eqn.outputs)
        else:
            kept.append(eqn)
    if not hoisted:
        return body, consts
    counts["eqns_hoisted"] += len(hoisted)
    still_read = {a for e in kept for a in e.inputs} | set(body.outvars)
    entering = [v for e in hoisted for v in e.outputs if v in still_read]
    # The hoisted equations run once, outside, on the loop's const operands; inside,
    # the variables they defined become invars, bound to their outside copies.
    moved = Jaxpr([], body.invars[: len(consts)], hoisted, entering)
    outside = [Var(v.aval, v.suffix) for v in entering]
    out.splice(moved, consts, outside)
    new_consts = list(consts) + [out.read(v) for v in outside]
    num_old = len(consts)
    invars = body.invars[:num_old] + entering + body.invars[num_old:]
    return Jaxpr(body.constvars, invars, kept, body.outvars), new_consts


def _reads_only(eqn: Eqn, invariant: set) -> bool:
    variables = [a for a in eqn.inputs if isinstance(a, Var)]
    return bool(variables) and all(v in invariant for v in variables)


def _contains_while(eqn: Eqn) -> bool:
    return eqn.prim.name == "while" or any(
        _contains_while(inner) for sub in subjaxprs(eqn) for inner in sub.eqns
    )


def _worth_hoisting(eqn: Eqn) -> bool:
    if eqn.prim.pattern is Pattern.CONTROL or eqn.prim.expensive:
        return True
    in_size = sum(a.aval.size for a in eqn.inputs)
    return all(v.aval.size <= max(1, in_size) for v in eqn.outputs)
