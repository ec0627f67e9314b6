"""The ``cpu`` backend: each fused loop kernel compiled once as a unit of its own, and the
program as one ``numba.njit`` launcher that calls them.

``backend.compile(closed_jaxpr, name)`` runs the optimisation passes, writes the program
(``program.py``: a loop nest per kernel, BLAS for contractions, ``prange`` for large
kernels; a large program as parts that its function calls, and a large kernel as several
loops, ``parts.py``, so that compile time grows linearly with the program). Each
elementwise or reduction kernel, each product on one thread and its epilogue, is a
module of its own keyed by its text, compiled once per distinct kernel as a
``numba.cfunc`` and cached in memory and on disk (``units.py``); the launcher, the rest
of the program, calls them by address and is compiled with Numba and cached in memory
and in the disk cache (``cache.py``, under ``config.cache_dir``). The executable shows
its source (the launcher, then its kernels' modules), kernels, LLVM IR and assembly::

    >>> import numpy as np, numbax
    >>> compiled = numbax.jit(lambda x: x * 2.0 + 1.0).lower(np.ones(3)).compile()
    >>> "def " in compiled.source
    True

Numba is imported on the first compile, not when numbax is imported. Importing numbax
changes nothing of the process: no environment variable, no BLAS thread count. Each call
of a program with parallel loops or BLAS calls runs on the threads the process may use
then (``threads.py``: Numba's thread count, capped by the CPU affinity and the cgroup
quota; BLAS on one thread, a large product on as many), both set back when the call
returns. The first compile starts Numba's threads (``threads.launch_numba_threads``:
OpenMP threads that spin briefly after a parallel loop, then sleep, unless the user chose
``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``) and tells
glibc to keep the memory programs free for their next call (``heap.py``;
``NUMBAX_HEAP_TUNING=0`` leaves it as it is).
"""

from __future__ import annotations

import importlib

from ...config import config
from ...ir.core import ClosedJaxpr, Jaxpr
from ...passes.manager import Pass
from ...passes.rewrite import subjaxprs
from ...passes.verify import check_fused
from .. import compile_progress
from ..compile_stats import CompileStats, Stopwatch

# A kernel runs its outer loop on all cores (prange) from this much work on: its number
# of elements, times 1 + 6 per expensive op (exp, tanh, division, ...) in its body. Waking
# the threads costs ~50 us on a 2-core VM, the time a million cheap elements or ~150k
# tanh take on one core; below that the threads cost more than they save.
PARALLEL_MIN_WORK = 1 << 20
# The modules every compile imports, imported by ``start_runtime`` ahead of the first.
COMPILE_PATH = ("executable", "kind_writers", "program", "step_machine", "units")


def _bounded_kernels(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, dict[str, int]]:
    """Kernels too large for LLVM split into consecutive kernels (``parts.py``)."""
    from .parts import bounded_kernels

    bounded = bounded_kernels(closed)
    return bounded, {"kernels_added": _kernels(bounded.jaxpr) - _kernels(closed.jaxpr)}


def _kernels(jaxpr: Jaxpr) -> int:
    """The kernel eqns of ``jaxpr`` and of its control flow's bodies."""
    return sum(
        1 if eqn.prim.name == "kernel" else sum(map(_kernels, subjaxprs(eqn))) for eqn in jaxpr.eqns
    )


class CpuBackend:
    name = "cpu"
    # Its rewrite of the fused program, run in the pipeline before the memory plan.
    passes = (Pass("bounded_kernels", _bounded_kernels, verify=check_fused),)

    def lower(self, closed: ClosedJaxpr, name: str = "fn", optimize: bool = True):
        """The generated program of ``closed`` (its ``source`` is the module), not compiled."""
        from .program import write_program

        fused, log, plan = _optimize(closed, name) if optimize else (closed, None, None)
        generated = write_program(fused.jaxpr, name, PARALLEL_MIN_WORK, plan)
        generated.pass_log = _record_refusals(log, fused, generated)
        return generated

    def initialise(self) -> None:
        """Start what every compile needs once per process, as a compile does: Numba's
        threading layer and its extensions (Rocket-FFT's entry point imports SciPy's FFT,
        half a second), and the compile workers (``compile_workers.prestart``). A process
        that wants its first compile to pay only for the program calls this first, as JAX
        starts its client."""
        from . import compile_workers

        self.start_runtime()
        compile_workers.prestart(config.cache_dir)

    def start_runtime(self) -> None:
        """What every compile needs once per process (``initialise``, workers aside: a
        compile starts them only for enough new kernels), and what a compile worker does
        before it says it is ready: the modules of the compile path imported and the
        math helpers' module made (0.1 s a first compile paid), Numba's threads and
        extensions, llvmlite's engine."""
        from numba.core import entrypoints

        from . import heap, llvm_kernels, mathlib, threads

        for module in COMPILE_PATH:
            importlib.import_module(f"{__name__}.{module}")
        heap.keep_freed_memory()
        threads.launch_numba_threads()
        entrypoints.init_all()
        mathlib.functions  # noqa: B018 - generated (or loaded) once per process
        if config.llvm_kernels:
            llvm_kernels.start()

    def clear_caches(self) -> None:
        """Forget the kernels and launchers compiled or loaded in this process (the disk
        cache stays; machine code already loaded stays mapped, unused)."""
        from . import cache, units

        cache.forget()
        units.forget()

    @compile_progress.reported
    def compile(
        self,
        closed: ClosedJaxpr,
        name: str = "fn",
        optimize: bool = True,
        writes: tuple[int, ...] = (),
    ):
        """The executable of ``closed``; ``optimize=False`` skips the passes (each eqn is
        then its own kernel), for tests and for debugging the passes. The caller writes
        the last outputs into its arguments ``writes`` (``backends.results``)."""
        from . import cache, step_machine, units
        from .executable import CpuExecutable
        from .program import write_program

        self.start_runtime()
        clock = Stopwatch()
        fused, log, plan = _optimize(closed, name) if optimize else (closed, None, None)
        optimize_s = clock.lap()
        # New kernels compile in worker processes as they are written, and while the
        # launcher compiles here.
        early = units.EarlyStart(config.cache_dir)
        generated = write_program(fused.jaxpr, name, PARALLEL_MIN_WORK, plan, early)
        log = _record_refusals(log, fused, generated)
        codegen_s = clock.lap()
        started = early.finish(generated.units)
        progress = compile_progress.current()
        progress.expect(generated.units, started)
        stepper = step_machine.launcher(generated.steps_plan) if generated.steps_plan else None
        if stepper is not None:  # no launcher code to compile (``step_machine``)
            in_memory, function = False, stepper
        else:
            in_memory = cache.is_loaded(generated.launcher)
            function = cache.load(generated.launcher, generated.function_name, config.cache_dir)
        launcher_s = clock.elapsed()
        progress.launcher_done()
        addresses, kernels = units.addresses(
            generated.units, config.cache_dir, started, progress.kernel_done
        )
        kernels_s = clock.elapsed() - launcher_s
        if generated.steps:  # the machine that runs them, after the kernels (``steps``)
            addresses = step_machine.with_machine(addresses)
        if stepper is not None:
            outcome, llvm_s = "none", None
        else:
            outcome = "memory" if in_memory else cache.outcome(function, config.cache_dir)
            llvm_s = None if in_memory else cache.llvm_seconds(function)
        kernels = kernels if generated.units else None
        stats = CompileStats(
            optimize_s,
            codegen_s,
            clock.lap(),
            outcome,
            llvm_s,
            kernels,
            kernels_s,
            generated.steps,
            units.by_llvmlite(generated.units),
        )
        addresses = addresses if generated.units else None
        return CpuExecutable(
            function, fused.consts, generated, fused, log, stats, writes, addresses
        )


def _optimize(closed: ClosedJaxpr, name: str):
    """The fused program, its kernels bounded in size for LLVM (``parts.py``), the pass
    log and the memory plan, made once, of that program, in the pipeline."""
    from ... import passes

    fused, log = passes.optimize(closed, name=name, backend_passes=CpuBackend.passes)
    return fused, log, log.memory_plan


def _record_refusals(log, fused: ClosedJaxpr, generated):
    """``log`` (a new one where no pass ran, ``optimize=False``) with the kernels the
    writer split, by reason, recorded as the pass ``cpu_write`` where it split any
    (``unfusable.WriterRefusal``)."""
    from ...passes import PassLog

    log = PassLog() if log is None else log
    if generated.refusals:
        eqns = len(fused.jaxpr.eqns)
        changes = {"kernels_split": sum(generated.refusals.values()), **generated.refusals}
        log.add("cpu_write", changes, eqns, eqns)
    return log


backend = CpuBackend()
