"""Scalar kernels folded into the map kernels that read them: no launch of one thread.

A loop body computes scalars of its own: the wrapped and clamped index of ``fict[t]``,
the in-range test of a traced ``.at[i]``. Fusion keeps such a kernel apart when more
than one kernel reads it, and on the device each is a launch that one thread runs, on
the critical path of every iteration. A map kernel computes each value per element from
its operands (``writer.value``), so it can compute those scalars itself: every thread
then runs the few scalar ops, and the scalar kernel is gone.

A kernel is folded when its inputs and outputs are all scalars, it is elementwise, and
every reader of its outputs is a map kernel (``is_map``); one whose value is a result of
the block, or is read by a host step, control flow or another kind of kernel, stays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ...ir.core import Eqn, Jaxpr, Var
from ...ir.higher_order import kernel_p
from ...passes.inline import inline_calls


def fold_scalar_kernels(
    jaxpr: Jaxpr, is_map: Callable[[Eqn], bool], rewrites: Counter | None = None
) -> Jaxpr:
    """``jaxpr`` with its foldable scalar kernels spliced into their readers; ``rewrites``
    counts the kernels folded."""
    rewrites = Counter() if rewrites is None else rewrites
    eqns = list(jaxpr.eqns)
    readers: dict[Var, list[int]] = {}
    for index, eqn in enumerate(eqns):
        for atom in eqn.inputs:
            if isinstance(atom, Var):
                readers.setdefault(atom, []).append(index)
    results = {v for v in jaxpr.outvars if isinstance(v, Var)}
    dropped: set[int] = set()
    for index, eqn in enumerate(eqns):
        if not _scalar_kernel(eqn) or any(v in results for v in eqn.outputs):
            continue
        consumers = sorted({k for v in eqn.outputs for k in readers.get(v, ())})
        if not consumers or not all(is_map(eqns[k]) for k in consumers):
            continue
        for k in consumers:
            eqns[k] = _spliced(eqn, eqns[k])
            for atom in eqn.inputs:  # the consumer reads the scalar kernel's operands now
                if isinstance(atom, Var):
                    readers.setdefault(atom, []).append(k)
        dropped.add(index)
    kept = [eqn for index, eqn in enumerate(eqns) if index not in dropped]
    rewrites["scalar_kernels_folded"] += len(dropped)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars)


def _scalar_kernel(eqn: Eqn) -> bool:
    return (
        eqn.prim is kernel_p
        and eqn.params["kind"] == "elementwise"
        and all(a.aval.shape == () for a in eqn.inputs)
        and all(v.aval.shape == () for v in eqn.outputs)
    )


def _spliced(scalar: Eqn, consumer: Eqn) -> Eqn:
    """``consumer`` computing ``scalar``'s outputs itself, from ``scalar``'s operands: the
    scalar body (fresh variables, as each consumer gets its own copy) comes first."""
    inner = inline_calls(scalar.params["jaxpr"])
    fresh: dict = {v: Var(v.aval) for v in inner.invars}

    def rename(atom):
        return fresh.get(atom, atom) if isinstance(atom, Var) else atom

    spliced_eqns = []
    for eqn in inner.eqns:
        outputs = [Var(v.aval) for v in eqn.outputs]
        spliced_eqns.append(eqn.replace(inputs=[rename(a) for a in eqn.inputs], outputs=outputs))
        fresh.update(zip(eqn.outputs, outputs, strict=True))
    made = {out: rename(v) for out, v in zip(scalar.outputs, inner.outvars, strict=True)}
    body = consumer.params["jaxpr"]
    inputs, invars, read = [], [], {}
    for atom, invar in zip(consumer.inputs, body.invars, strict=True):
        if isinstance(atom, Var) and atom in made:
            read[invar] = made[atom]
        else:
            inputs.append(atom)
            invars.append(invar)
    inputs += scalar.inputs
    invars += [fresh[v] for v in inner.invars]

    def use(atom):
        return read.get(atom, atom) if isinstance(atom, Var) else atom

    eqns = spliced_eqns + [e.replace(inputs=[use(a) for a in e.inputs]) for e in body.eqns]
    new_body = Jaxpr(body.constvars, invars, eqns, [use(v) for v in body.outvars])
    return consumer.replace(inputs=inputs, params={**consumer.params, "jaxpr": new_body})
