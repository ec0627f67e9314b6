"""The ``interpret`` backend: runs the jaxpr with the NumPy reference implementations.

It is the oracle the other backends are tested against, so it runs the program exactly
as traced, without optimisation passes.
"""

from __future__ import annotations

from ...ir.core import ClosedJaxpr
from ...ir.interpret import eval_jaxpr


class InterpretExecutable:
    def __init__(self, closed: ClosedJaxpr):
        self.closed = closed
        self.executions = 0

    def __call__(self, *args):
        self.executions += 1
        return eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)


class InterpretBackend:
    name = "interpret"

    def compile(self, closed: ClosedJaxpr, name: str = "fn") -> InterpretExecutable:
        return InterpretExecutable(closed)


backend = InterpretBackend()
