"""The verifier run after fusion in debug mode: the fused program keeps the contract
the backends are written against (``kernel_p`` in ir/higher_order.py)."""

from __future__ import annotations

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from ..ir.errors import TypecheckError
from ..ir.primitive import Pattern
from .kernels import classify
from .rewrite import subjaxprs


def check_fused(program: ClosedJaxpr | Jaxpr) -> None:
    """Every equation is a kernel that keeps the contract, or control flow whose
    bodies are fused programs themselves."""
    jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
    for index, eqn in enumerate(jaxpr.eqns):
        if eqn.prim.name == "kernel":
            check_kernel(eqn, f"eqn {index}")
        elif eqn.prim.pattern is Pattern.CONTROL:
            for body in subjaxprs(eqn):
                check_fused(body)
        else:
            raise TypecheckError(f"eqn {index}: {eqn.prim.name} is outside any kernel")


def check_kernel(eqn: Eqn, where: str = "kernel") -> None:
    body: Jaxpr = eqn.params["jaxpr"]
    name, kind = eqn.params["name"], eqn.params["kind"]
    where = f"{where} ({name})"
    if body.constvars:
        raise TypecheckError(f"{where}: a kernel body has no constvars")
    if any(not isinstance(v, Var) or v in body.invars for v in body.outvars):
        raise TypecheckError(f"{where}: every output must be computed by the kernel")
    spec = classify(body.eqns)
    if spec is None or spec.kind != kind:
        found = "no kernel" if spec is None else f"a {spec.kind} kernel"
        raise TypecheckError(f"{where}: declared {kind} but its body is {found}")
