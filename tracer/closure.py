"""Closure conversion: a traced jaxpr's constvars become leading invars, so a
higher-order primitive can carry it as a parameter and pass the captured values as
explicit operands.

The converted jaxpr is cached per source jaxpr (weakly), so it keeps its identity: the
caches keyed by jaxpr identity (compiled calls, the VJP split of ``grad(jit(f))``,
batched sub-jaxprs) hit when the same function is called again.
"""

from __future__ import annotations

import weakref

from ..ir.core import ClosedJaxpr, Jaxpr, Var

_closure_converted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def closure_convert(closed: ClosedJaxpr) -> tuple[Jaxpr, list]:
    """Constvars become leading invars; returns the jaxpr and the values to pass for them."""
    jaxpr = closed.jaxpr
    if not jaxpr.constvars:
        return jaxpr, []
    converted = _closure_converted.get(jaxpr)
    if converted is None:
        converted = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
        _closure_converted[jaxpr] = converted
    return converted, list(closed.consts)


def closure_convert_all(closeds: list[ClosedJaxpr]) -> tuple[list[Jaxpr], list]:
    """Closure-convert jaxprs so that all take the same leading const operands (each
    ignores the consts only the others use), as ``cond``'s branches must."""
    consts, const_avals, position = [], [], {}
    for closed in closeds:
        for var, value in zip(closed.jaxpr.constvars, closed.consts, strict=True):
            if id(value) not in position:
                position[id(value)] = len(consts)
                consts.append(value)
                const_avals.append(var.aval)
    jaxprs = []
    for closed in closeds:
        jaxpr = closed.jaxpr
        own = {position[id(v)]: var for var, v in zip(jaxpr.constvars, closed.consts, strict=True)}
        leading = [own[k] if k in own else Var(aval) for k, aval in enumerate(const_avals)]
        jaxprs.append(Jaxpr([], leading + jaxpr.invars, jaxpr.eqns, jaxpr.outvars))
    return jaxprs, consts
