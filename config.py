"""Every option and environment variable numbax reads, in one place.

| variable                   | meaning                                                     |
|----------------------------|-------------------------------------------------------------|
| NUMBAX_BACKEND             | default backend of ``jit``: cpu, interpret or cuda          |
| NUMBAX_LOG_COMPILES        | 1: log every trace/compile: why, stage times, cache hit     |
| NUMBAX_CACHE_DIR           | on-disk compile cache folder ("" or "off" disables it)      |
| NUMBAX_DUMP                | folder for the IR after every pass and the generated source |
| NUMBAX_DEBUG_CHECKS        | 1: typecheck after every pass (always on in the tests)      |
| NUMBAX_CUDA_CUBLAS         | 1: cuda backend's large f32/f64 matmuls via cuBLAS (CuPy)   |
| NUMBAX_TRACEBACK_FILTERING | off: keep numbax's own frames in error tracebacks           |
| NUMBAX_TIERED              | 0: first calls wait for the compiled program, not interpret |
| NUMBAX_HEAP_TUNING         | 0: leave glibc's heap thresholds alone (backends/cpu/heap)  |
| NUMBAX_COMPILE_WORKERS     | processes compiling kernels beside a compile (cpus - 1)     |
| NUMBAX_MPI_CHECK           | 1: processes check each collective matches (distributed.md) |
| NUMBAX_CUDA_NCCL           | 0: cuda collectives staged through MPI, not NCCL (CuPy)     |
| NUMBAX_PROGRESS            | 0: no progress line on stderr during a long compile         |
| NUMBAX_STEPS               | 0: cpu launchers compiled as code, never run as steps       |
| NUMBAX_LLVM_KERNELS        | 0: every cpu kernel compiled by Numba, none by llvmlite     |

This module imports nothing from numbax, so every stage may read it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _on_unless_off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("0", "false", "no", "off")


def _count(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ValueError(f"{name} must be a whole number of processes, not {value!r}")
    return int(value)


def _default_cache_dir() -> str | None:
    value = os.environ.get("NUMBAX_CACHE_DIR")
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0", "none") else value
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numbax")


@dataclass
class Config:
    backend: str | None = field(default_factory=lambda: os.environ.get("NUMBAX_BACKEND") or None)
    log_compiles: bool = field(default_factory=lambda: _flag("NUMBAX_LOG_COMPILES"))
    cache_dir: str | None = field(default_factory=_default_cache_dir)
    dump_dir: str | None = field(default_factory=lambda: os.environ.get("NUMBAX_DUMP") or None)
    debug_checks: bool = field(default_factory=lambda: _flag("NUMBAX_DEBUG_CHECKS"))
    cuda_cublas: bool = field(default_factory=lambda: _flag("NUMBAX_CUDA_CUBLAS"))
    traceback_filtering: bool = field(
        default_factory=lambda: _on_unless_off("NUMBAX_TRACEBACK_FILTERING")
    )
    # ``jit``'s default for ``tiered``: first calls interpreted while the program compiles.
    tiered: bool = field(default_factory=lambda: _on_unless_off("NUMBAX_TIERED"))
    # Whether the first cpu compile sets glibc's heap thresholds (backends/cpu/heap.py).
    heap_tuning: bool = field(default_factory=lambda: _on_unless_off("NUMBAX_HEAP_TUNING"))
    # Worker processes that compile a program's new kernels while its launcher compiles
    # (backends/cpu/compile_workers.py); None: one fewer than the CPUs numbax may use.
    compile_workers: int | None = field(default_factory=lambda: _count("NUMBAX_COMPILE_WORKERS"))
    # Before each collective, processes exchange what they call and raise on a mismatch.
    mpi_check: bool = field(default_factory=lambda: _flag("NUMBAX_MPI_CHECK"))
    # The cuda backend's collectives through NCCL (CuPy) where present; off: staged
    # through the host and MPI (backends/cuda/collectives.py).
    cuda_nccl: bool = field(default_factory=lambda: _on_unless_off("NUMBAX_CUDA_NCCL"))
    # A compile running past two seconds shows its progress on stderr, when stderr is a
    # terminal or compiles are logged (backends/compile_progress.py).
    progress: bool = field(default_factory=lambda: _on_unless_off("NUMBAX_PROGRESS"))
    # A cpu program of kernel calls alone runs as steps, with no launcher code of its own
    # to compile (backends/cpu/steps.py); off: every launcher is compiled code.
    steps: bool = field(default_factory=lambda: _on_unless_off("NUMBAX_STEPS"))
    # A cpu kernel is compiled by llvmlite from its text where the translation knows every
    # construct in it (backends/cpu/llvm_kernels.py); off: Numba compiles every kernel.
    llvm_kernels: bool = field(default_factory=lambda: _on_unless_off("NUMBAX_LLVM_KERNELS"))


config = Config()


def cuda_simulator() -> bool:
    """Whether Numba's CUDA simulator is on: the one place numbax asks. Numba reads
    ``NUMBA_ENABLE_CUDASIM`` once, when it is first imported, and its answer is the
    switch from then on; before that, the variable as Numba will parse it (an integer,
    anything else off)."""
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None:
        return bool(numba_config.ENABLE_CUDASIM)
    try:
        return bool(int(os.environ.get("NUMBA_ENABLE_CUDASIM", "0")))
    except ValueError:
        return False
