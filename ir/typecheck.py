"""``typecheck``: re-derive every output type from the primitives' rules.

Run after every transform and every pass in the test suite (and in debug mode), so a
rewrite that breaks the IR is caught at the pass that broke it.
"""

from __future__ import annotations

from .core import ClosedJaxpr, Jaxpr, Literal, Var
from .errors import TypecheckError


def typecheck(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    if isinstance(jaxpr, ClosedJaxpr):
        _check_consts(jaxpr)
        jaxpr = jaxpr.jaxpr
    defined: set[Var] = set()

    def define(var):
        if not isinstance(var, Var):
            raise TypecheckError(f"binder {var!r} is not a Var")
        if var in defined:
            raise TypecheckError(f"variable {var!r} is defined twice")
        defined.add(var)

    def read(atom, where):
        if isinstance(atom, Literal):
            return atom.aval
        if atom not in defined:
            raise TypecheckError(f"{where}: variable {atom!r} is used before it is defined")
        return atom.aval

    for var in jaxpr.constvars + jaxpr.invars:
        define(var)
    for index, eqn in enumerate(jaxpr.eqns):
        where = f"eqn {index} ({eqn.prim.name})"
        in_avals = [read(a, where) for a in eqn.inputs]
        for value in eqn.params.values():
            for sub in _subjaxprs(value):
                typecheck(sub)
        try:
            expected = eqn.prim.abstract_eval(*in_avals, **eqn.params)
        except TypecheckError as err:
            raise TypecheckError(f"{where}: {err}") from None
        recorded = [v.aval for v in eqn.outputs]
        if expected != recorded:
            raise TypecheckError(
                f"{where}: outputs recorded as {[a.str_short() for a in recorded]} "
                f"but the rule gives {[a.str_short() for a in expected]}"
            )
        for var in eqn.outputs:
            define(var)
    for atom in jaxpr.outvars:
        read(atom, "outvars")


def _subjaxprs(param):
    """The jaxprs in a param: itself, or the items of a tuple (``cond``'s branches)."""
    if isinstance(param, (Jaxpr, ClosedJaxpr)):
        return [param]
    if isinstance(param, tuple):
        return [sub for item in param for sub in _subjaxprs(item)]
    return []


def _check_consts(closed: ClosedJaxpr) -> None:
    if len(closed.consts) != len(closed.jaxpr.constvars):
        raise TypecheckError("number of consts does not match constvars")
    for var, const in zip(closed.jaxpr.constvars, closed.consts, strict=False):
        shape, dtype = getattr(const, "shape", None), getattr(const, "dtype", None)
        if shape is not None and (tuple(shape) != var.aval.shape or dtype != var.aval.dtype):
            raise TypecheckError(
                f"const of shape {shape} and dtype {dtype} bound to {var.aval.str_short()}"
            )
