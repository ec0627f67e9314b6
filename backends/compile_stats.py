"""What one compile cost, stage by stage, and where its machine code came from.

A compiling backend's executable carries its ``CompileStats`` (``compile_stats``);
``NUMBAX_LOG_COMPILES=1`` prints them, one line per compile, next to the trace time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Where the machine code came from, as the log says it.
CACHE_OUTCOMES = {
    "memory": "compiled earlier in this process",
    "disk hit": "disk cache hit",
    "disk miss": "disk cache miss, compiled",
    "off": "no disk cache, compiled",
    "none": "none to compile",  # a program of steps: the machine runs it (cpu/step_machine)
}


@dataclass(frozen=True)
class CompileStats:
    optimize_s: float  # the passes, fusion and memory planning
    codegen_s: float  # writing the program's source
    backend_s: float  # Numba/LLVM, or loading its result from a cache
    cache: str  # a key of CACHE_OUTCOMES
    # The part of ``backend_s`` spent in LLVM (optimising and emitting machine code); the
    # rest is Numba's typing and lowering. None where the backend does not tell it.
    llvm_s: float | None = None
    # The program's distinct kernels compiled as units of their own, by outcome:
    # "compiled" (here), "worker" (in a compile worker, while the launcher compiled),
    # "memory" (compiled or loaded earlier in this process), "disk" (loaded from the disk
    # cache). None where the backend compiles no kernel on its own.
    kernels: dict | None = None
    # The part of ``backend_s`` spent compiling or loading those kernels after the
    # program that launches them (the rest, and ``llvm_s``) was compiled.
    kernels_s: float = 0.0
    # The launcher runs the program as steps (``cpu/steps.py``): a few lines to compile.
    steps: bool = False
    # How many of the distinct kernels are llvmlite's machine code, not Numba's
    # (``cpu/llvm_kernels.py``), whether compiled now or earlier.
    llvmlite: int = 0

    def __str__(self) -> str:
        backend = f"backend {_ms(self.backend_s)}"
        split = ""
        if self.llvm_s is not None and self.cache != "disk hit":
            numba_s = max(self.backend_s - self.kernels_s - self.llvm_s, 0.0)
            split = f"Numba {_ms(numba_s)}, LLVM {_ms(self.llvm_s)}"
        outcome = CACHE_OUTCOMES[self.cache]
        if self.kernels is None:
            backend += f" ({split}) ({outcome})" if split else f" ({outcome})"
        else:
            counts = [self.kernels.get(k, 0) for k in ("compiled", "memory", "disk")]
            workers = self.kernels.get("worker", 0)
            new = f"{counts[0] + workers} new" + (f" ({workers} in workers)" if workers else "")
            backend += " (kernels {}: {}, {} from memory, {} from disk, {} by llvmlite; ".format(
                _ms(self.kernels_s), new, *counts[1:], self.llvmlite
            )
            launcher = "launcher of steps" if self.steps else "launcher"
            backend += f"{launcher}: {split}{', ' if split else ''}{outcome})"
        return f"optimise {_ms(self.optimize_s)}, codegen {_ms(self.codegen_s)}, {backend}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


class Stopwatch:
    """Seconds since it started, or since the last ``lap``."""

    def __init__(self):
        self._last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        elapsed, self._last = now - self._last, now
        return elapsed

    def elapsed(self) -> float:
        """Seconds since it started or since the last ``lap``, without starting a new lap."""
        return time.perf_counter() - self._last
