"""Reshapes between kernels cost nothing on the device: every buffer is flat and
C-ordered, so a reshape kernel is dropped and its readers read its operand's buffer."""

from __future__ import annotations

from ...ir.core import Eqn, Jaxpr, Var
from .callbacks import host_call, sole_op
from .steps import HOST_OPS

_VIEWS = ("reshape", "squeeze", "expand_dims")


def drop_views(jaxpr: Jaxpr) -> Jaxpr:
    """Remove reshape kernels: their readers (and the outputs) use the operand instead.
    A view that a host step reads stays: the host reads an operand by its variable's
    shape, which must be the one the op was traced with."""
    host_read = {a for e in jaxpr.eqns if host_call(e, HOST_OPS) for a in e.inputs}
    alias: dict = {}

    def read(atom):
        return alias.get(atom, atom) if isinstance(atom, Var) else atom

    eqns = []
    for eqn in jaxpr.eqns:
        eqn = eqn.replace(inputs=[read(a) for a in eqn.inputs])
        source = _view_of(eqn)
        if source is not None and eqn.outputs[0] not in host_read:
            alias[eqn.outputs[0]] = source
        else:
            eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(v) for v in jaxpr.outvars])


def _view_of(eqn: Eqn):
    """The operand a kernel only reshapes (same elements, same order), else None."""
    inner = sole_op(eqn, _VIEWS)
    if inner is None:
        return None
    body = eqn.params["jaxpr"]
    (source,) = inner.inputs
    if not isinstance(source, Var) or body.outvars != inner.outputs:
        return None
    return eqn.inputs[body.invars.index(source)]
