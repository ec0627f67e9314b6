"""Dead-code elimination: an equation none of whose outputs is read is removed unless it
has side effects (a print, or control flow whose body prints), and so is a constvar
nothing reads.

Higher-order primitives lose their unused outputs too where the outputs are exactly
their sub-jaxprs' outputs (``jit_call``, ``checkpoint``, ``kernel``, ``cond``): the
output is dropped from the sub-jaxpr, whose dead equations then go, and operands the
sub-jaxprs no longer read are dropped as well. Loop bodies (``while``, ``scan``) keep
their signature: a carry feeds the next iteration even when the caller ignores it
(``loop_dce`` works out which carries nothing needs).

One backward pass sees every read, so a jaxpr DCE made or left alone has nothing dead and
is given back as it is (``rewrite.done_in_one_run``): the cleanup after fusion does not
rebuild every kernel each round.
"""

from __future__ import annotations

from collections import Counter

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from ..ir.primitive import has_side_effects
from . import kernels
from .rewrite import done_in_one_run, map_subjaxprs

CALLS = ("jit_call", "checkpoint", "kernel")


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    jaxpr = eliminate_dead_code(closed.jaxpr, counts)
    read = _read_vars(jaxpr)
    kept = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts, strict=True) if v in read]
    if len(kept) < len(jaxpr.constvars):
        counts["constvars_removed"] += len(jaxpr.constvars) - len(kept)
    jaxpr = Jaxpr([v for v, _ in kept], jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return ClosedJaxpr(jaxpr, [c for _, c in kept]), counts


@done_in_one_run
def eliminate_dead_code(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    """``jaxpr`` without dead equations; same constvars, invars and outvars (``jaxpr``
    itself where nothing is dead)."""
    counts = Counter() if counts is None else counts
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    kept: list[Eqn] = []
    changed = False
    for original in reversed(jaxpr.eqns):
        used = [v in live for v in original.outputs]
        if not any(used) and not has_side_effects(original):
            counts["eqns_removed"] += 1
            changed = True
            continue
        eqn = _prune(original, used, counts)
        changed |= eqn is not original
        live.update(a for a in eqn.inputs if isinstance(a, Var))
        kept.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept[::-1], jaxpr.outvars) if changed else jaxpr


def _prune(eqn: Eqn, used: list[bool], counts: Counter) -> Eqn:
    if eqn.prim.name in CALLS:
        return _prune_call(eqn, used, counts)
    if eqn.prim.name == "cond":
        return _prune_cond(eqn, used, counts)
    return map_subjaxprs(eqn, lambda sub: eliminate_dead_code(sub, counts))


def _prune_call(eqn: Eqn, used: list[bool], counts: Counter) -> Eqn:
    body = eqn.params["jaxpr"]
    if all(used) and eliminate_dead_code(body) is body and set(body.invars) <= _read_vars(body):
        return eqn  # every output read, nothing dead, every operand read
    inner: Counter = Counter()
    [body], inputs_used = _prune_bodies([eqn.params["jaxpr"]], used, inner)
    if eqn.prim.name == "kernel" and not _still_a_kernel(body, eqn.params["kind"]):
        # Dropping an output may leave, say, a reduction kernel without its reduction,
        # which its kind no longer describes: keep the kernel whole instead.
        return map_subjaxprs(eqn, lambda sub: eliminate_dead_code(sub, counts))
    counts.update(inner)
    return _pruned_eqn(eqn, used, inputs_used, counts, jaxpr=body)


def _prune_cond(eqn: Eqn, used: list[bool], counts: Counter) -> Eqn:
    branches, operands_used = _prune_bodies(list(eqn.params["branches"]), used, counts)
    # Operand 0 is the branch index; the rest map onto every branch's invars.
    return _pruned_eqn(eqn, used, [True] + operands_used, counts, branches=tuple(branches))


def _prune_bodies(bodies: list[Jaxpr], used: list[bool], counts: Counter):
    """Drop unused outputs from each body, then the inputs no body reads any more."""
    bodies = [
        eliminate_dead_code(
            Jaxpr([], b.invars, b.eqns, [v for v, u in zip(b.outvars, used, strict=True) if u]),
            counts,
        )
        for b in bodies
    ]
    reads = [_read_vars(b) for b in bodies]
    inputs_used = [
        any(b.invars[i] in r for b, r in zip(bodies, reads, strict=True))
        for i in range(len(bodies[0].invars))
    ]
    bodies = [
        Jaxpr([], [v for v, u in zip(b.invars, inputs_used, strict=True) if u], b.eqns, b.outvars)
        for b in bodies
    ]
    return bodies, inputs_used


def _pruned_eqn(eqn: Eqn, used, inputs_used, counts: Counter, **params) -> Eqn:
    for what, flags in (("outputs_pruned", used), ("inputs_pruned", inputs_used)):
        if not all(flags):
            counts[what] += flags.count(False)
    return eqn.replace(
        inputs=[a for a, u in zip(eqn.inputs, inputs_used, strict=True) if u],
        outputs=[v for v, u in zip(eqn.outputs, used, strict=True) if u],
        params={**eqn.params, **params},
    )


def _still_a_kernel(body: Jaxpr, kind: str) -> bool:
    spec = kernels.classify(body.eqns)
    return spec is not None and spec.kind == kind


def _read_vars(jaxpr: Jaxpr) -> set:
    read = {a for eqn in jaxpr.eqns for a in eqn.inputs if isinstance(a, Var)}
    return read | {a for a in jaxpr.outvars if isinstance(a, Var)}
