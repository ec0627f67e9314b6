"""The ``interpret`` backend: runs the jaxpr with the NumPy reference implementations.

It is the oracle the other backends are tested against, so it runs the program exactly
as traced, without optimisation passes. Its results are the caller's own arrays
(``backends.results``): a NumPy implementation's view of an argument or a constant is
copied.
"""

from __future__ import annotations

from ...ir.core import ClosedJaxpr
from ...ir.interpret import eval_jaxpr
from ..results import InterpreterResults


class InterpretExecutable:
    def __init__(self, closed: ClosedJaxpr, writes: tuple[int, ...] = ()):
        self.closed = closed
        self.executions = 0
        self._results = InterpreterResults(closed, writes)

    def __call__(self, *args):
        self.executions += 1
        outs = eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)
        return self._results.apply(outs, args)


class InterpretBackend:
    name = "interpret"

    def compile(
        self, closed: ClosedJaxpr, name: str = "fn", writes: tuple[int, ...] = ()
    ) -> InterpretExecutable:
        return InterpretExecutable(closed, writes)

    def clear_caches(self) -> None:
        """Nothing: the interpreter compiles nothing."""


backend = InterpretBackend()
