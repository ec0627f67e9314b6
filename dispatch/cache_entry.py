"""One traced signature of a jitted function and its executable, compiled at its first
concrete call, or tiered: interpreted while it compiles in the background."""

from __future__ import annotations

import functools
import threading

from .. import compile_log, passes
from ..backends import tiered as tiering
from ..config import config
from ..ir.core import ClosedJaxpr
from . import compiling


class CacheEntry:
    """One traced signature of a jitted function. Compiling waits for the first concrete
    call: a function only ever traced under another transform (``grad(jit(f))``) is
    compiled as part of that transform's program instead. The first thread to call it
    compiles it; the others wait for that executable. Tiered (``jit(tiered=True)``), the
    first call starts the compile in a thread and the calls until it is ready are
    interpreted (``backends/tiered.py``)."""

    __slots__ = (
        "closed",
        "out_tree",
        "backend_name",
        "traced",
        "writes",
        "_executable",
        "_compiling",
        "tiered",
    )

    def __init__(
        self, closed: ClosedJaxpr, out_tree, backend_name: str, traced: str | None, writes=()
    ):
        self.closed, self.out_tree, self.backend_name = closed, out_tree, backend_name
        # The argument leaves the function writes into: outputs after out_tree's.
        self.writes = tuple(writes)
        self.traced = traced  # what the compile log says of the trace, until it says it
        self._executable = None
        self._compiling = threading.Lock()
        self.tiered: tiering.TieredExecutable | None = None

    def executable(self, name: str, tiered: bool = False):
        """The compiled executable; tiered, the interpreting one until it is compiled."""
        if self._executable is None:
            with self._compiling:
                if self._executable is None and self.tiered is None:
                    self._start(name, tiered)
                if self.tiered is not None and self.tiered.compiled is not None:
                    self._executable = self.tiered.compiled
        return self._executable or self.tiered

    def _start(self, name: str, tiered: bool) -> None:
        why, self.traced = self.traced or "(traced earlier)", None
        program = self.closed
        if tiered and self.backend_name in tiering.TIERED_BACKENDS:
            # The interpreter runs the program cleaned (no fusion): fewer eqns to execute;
            # the compile goes on from it (its cleanup is then at its fixed point).
            program = passes.clean(program)
        worth, reason = tiering.worth_interpreting(program, self.backend_name)
        writes = self.writes  # the last outputs: written back into these arguments
        if not (tiered and worth):
            self._executable = compiling.compile_closed(
                program, self.backend_name, name, why, writes
            )
            return
        if config.log_compiles:
            compile_log.log_tiered(name, why, self.backend_name, reason)
        why = f"{why}, compiled in the background"
        compile_program = functools.partial(
            compiling.compile_closed, program, self.backend_name, name, why, writes
        )
        self.tiered = tiering.TieredExecutable(program, compile_program, name, writes=writes)

    @property
    def compiled(self) -> bool:
        return self._executable is not None

    def log_trace_only(self, name: str) -> None:
        """A signature first traced inside another trace is compiled within that program."""
        if self.traced is not None:
            compile_log.log_trace_only(name, self.traced)
            self.traced = None
