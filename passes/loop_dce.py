"""Dead loop state: the parts of a ``while`` or ``scan`` nobody needs are dropped.

- a carry is dead when the program does not read its final value, the ``while``
  predicate does not read it, no equation with side effects (a print) reads a value
  computed from it, and no live carry or ``y`` is computed from it (a fixed point over
  the body's dependencies: a carry feeding a live one is live);
- a ``y`` of a scan is dead when the program does not read it;
- a loop constant or scanned operand the bodies no longer read is dropped.

(``dce`` removes a loop whose outputs are all unread; this pass trims live loops.)
Bodies are trimmed outside in: the body of a trimmed loop has fewer outputs, which
may leave a loop inside it with dead state of its own.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from ..ir.primitive import has_side_effects
from ..ir.rules import RuleTable
from .dce import eliminate_dead_code
from .rewrite import map_subjaxprs, use_counts

# ``prune(eqn, used, counts) -> eqn`` without the carries nothing reads: only loops carry.
PRUNERS = RuleTable("loop pruners", not_applicable=lambda prim: prim.name not in {"while", "scan"})


def acts_on() -> frozenset[str]:
    """The primitives this pass prunes (``manager.Pass.acts_on``)."""
    return frozenset(prim.name for prim in PRUNERS)


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(prune_loops(closed.jaxpr, counts), closed.consts), counts


def prune_loops(jaxpr: Jaxpr, counts: Counter) -> Jaxpr:
    uses = use_counts(jaxpr)
    eqns = []
    for eqn in jaxpr.eqns:
        used = [uses[v] > 0 for v in eqn.outputs]
        if eqn.prim in PRUNERS and any(used):
            eqn = PRUNERS[eqn.prim](eqn, used, counts)
        eqns.append(map_subjaxprs(eqn, lambda sub: prune_loops(sub, counts)))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


@PRUNERS.rule("while")
def _prune_while(eqn: Eqn, used: list[bool], counts: Counter) -> Eqn:
    params = eqn.params
    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    cond, body = params["cond_jaxpr"], params["body_jaxpr"]
    carries = body.invars[body_n:]
    cond_reads = _read(cond)
    live = [u or cond.invars[cond_n + k] in cond_reads for k, u in enumerate(used)]
    live = _close_over_dependencies(body, carries, live, [])
    body = _restrict(body, body_n, live, live)
    cond_invars = cond.invars[:cond_n] + _kept(cond.invars[cond_n:], live)
    cond = Jaxpr([], cond_invars, cond.eqns, cond.outvars)
    cond_consts, cond = _drop_unread_consts(eqn.inputs[:cond_n], cond, counts)
    body_consts, body = _drop_unread_consts(eqn.inputs[cond_n : cond_n + body_n], body, counts)
    _count(counts, "carries_removed", live)
    return eqn.replace(
        inputs=cond_consts + body_consts + _kept(eqn.inputs[cond_n + body_n :], live),
        outputs=_kept(eqn.outputs, live),
        params={
            **params,
            "cond_jaxpr": cond,
            "body_jaxpr": body,
            "cond_nconsts": len(cond_consts),
            "body_nconsts": len(body_consts),
        },
    )


@PRUNERS.rule("scan")
def _prune_scan(eqn: Eqn, used: list[bool], counts: Counter) -> Eqn:
    params = eqn.params
    num_consts, num_carry, body = params["num_consts"], params["num_carry"], params["jaxpr"]
    carries = body.invars[num_consts : num_consts + num_carry]
    live_ys = used[num_carry:]
    live = _close_over_dependencies(body, carries, used[:num_carry], live_ys)
    body = _restrict(body, num_consts, live, live + live_ys)
    # The scanned operands follow the carries; drop those the body no longer reads.
    reads = _read(body)
    num_live = sum(live)
    xs_vars = body.invars[num_consts + num_live :]
    xs_live = [v in reads for v in xs_vars]
    invars = body.invars[: num_consts + num_live] + _kept(xs_vars, xs_live)
    body = Jaxpr([], invars, body.eqns, body.outvars)
    consts, body = _drop_unread_consts(eqn.inputs[:num_consts], body, counts)
    _count(counts, "carries_removed", live)
    _count(counts, "ys_removed", live_ys)
    _count(counts, "xs_removed", xs_live)
    init = eqn.inputs[num_consts : num_consts + num_carry]
    xs = eqn.inputs[num_consts + num_carry :]
    return eqn.replace(
        inputs=consts + _kept(init, live) + _kept(xs, xs_live),
        outputs=_kept(eqn.outputs, live + live_ys),
        params={**params, "jaxpr": body, "num_consts": len(consts), "num_carry": num_live},
    )


def _close_over_dependencies(body: Jaxpr, carries, live_carries, live_ys) -> list[bool]:
    """The live carries: those given, every carry an equation with side effects reads
    from, and every carry a live carry or ``y`` is computed from, to a fixed point."""
    depends = _dependencies(body)
    effects_read = set().union(
        *(
            depends.get(a, set())
            for eqn in body.eqns
            if has_side_effects(eqn)
            for a in eqn.inputs
            if isinstance(a, Var)
        )
    )
    live = list(live_carries)
    outs = body.outvars
    num_carry = len(carries)
    while True:
        needed = set(effects_read)
        for k, out in enumerate(outs):
            is_live = live[k] if k < num_carry else live_ys[k - num_carry]
            if is_live and isinstance(out, Var):
                needed |= depends.get(out, set())
        grown = [was or carry in needed for was, carry in zip(live, carries, strict=True)]
        if grown == live:
            return live
        live = grown


def _dependencies(body: Jaxpr) -> dict[Var, set[Var]]:
    """For every variable, the invars it is computed from (an equation's outputs
    depend on all of its inputs)."""
    depends: dict[Var, set[Var]] = {v: {v} for v in body.invars}
    for eqn in body.eqns:
        sources = set().union(*(depends.get(a, set()) for a in eqn.inputs if isinstance(a, Var)))
        for var in eqn.outputs:
            depends[var] = sources
    return depends


def _restrict(body: Jaxpr, num_consts: int, live_carries, live_outs) -> Jaxpr:
    """``body`` with only the live carries in and the live outputs out."""
    trimmed = eliminate_dead_code(Jaxpr([], body.invars, body.eqns, _kept(body.outvars, live_outs)))
    carries = body.invars[num_consts : num_consts + len(live_carries)]
    rest = body.invars[num_consts + len(live_carries) :]
    invars = body.invars[:num_consts] + _kept(carries, live_carries) + rest
    return Jaxpr([], invars, trimmed.eqns, trimmed.outvars)


def _drop_unread_consts(operands, body: Jaxpr, counts: Counter):
    """The leading const invars ``body`` reads, and their operands."""
    reads = _read(body)
    keep = [v in reads for v in body.invars[: len(operands)]]
    _count(counts, "consts_removed", keep)
    invars = _kept(body.invars[: len(operands)], keep) + body.invars[len(operands) :]
    return _kept(operands, keep), Jaxpr([], invars, body.eqns, body.outvars)


def _read(jaxpr: Jaxpr) -> set:
    return {a for e in jaxpr.eqns for a in e.inputs if isinstance(a, Var)} | {
        a for a in jaxpr.outvars if isinstance(a, Var)
    }


def _kept(items, flags) -> list:
    return [x for x, keep in zip(items, flags, strict=True) if keep]


def _count(counts: Counter, what: str, flags) -> None:
    removed = list(flags).count(False)
    if removed:
        counts[what] += removed
