"""Cold start: a new Python process that imports a library, jits the 20-op program and calls it.

The parent times the whole process (`process_call`); this module is also the program the
process runs (`python -m benchmarks.cold_start LIBRARY BACKEND CACHE_DIR OUT_FILE`). Every
process of one row shares CACHE_DIR, so after the first (the warm-up, whose answer is
checked) each finds its compiled code on disk:

  numbax  NUMBAX_CACHE_DIR=CACHE_DIR
  jax     the persistent compilation cache in CACHE_DIR, for every entry however small/fast
  numba   njit(cache=True), NUMBA_CACHE_DIR=CACHE_DIR
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .implementation import NotSupportedYet
from .programs import make_twenty_op_program
from .workloads import COLD_START_CONSTANT, compile_input

# Exit status of a process whose library cannot run the program yet (not a failure).
NOT_SUPPORTED_EXIT = 3

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent

# A process that hangs (a deadlocked import, a compiler loop) fails its row, not the suite.
PROCESS_TIMEOUT_S = 300


def run_checked(command: list[str], env: dict, timeout_s: float) -> None:
    """Run a benchmark process from the repository root. Raises NotSupportedYet when it
    says so (exit NOT_SUPPORTED_EXIT), RuntimeError when it fails or outlives
    ``timeout_s``."""
    try:
        done = subprocess.run(
            command, cwd=REPOSITORY_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"process still running after {timeout_s} s") from error
    if done.returncode == NOT_SUPPORTED_EXIT:
        raise NotSupportedYet(done.stdout.strip())
    if done.returncode != 0:
        last_lines = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"process exited {done.returncode}: {last_lines}")


def process_call(library: str, backend: str, cache_dir: str) -> Callable[..., np.ndarray]:
    """A callable that runs one cold-start process and returns its answer.

    Raises NotSupportedYet when the process says so, RuntimeError when it fails.
    """
    env = dict(os.environ, NUMBAX_CACHE_DIR=cache_dir, NUMBA_CACHE_DIR=cache_dir)
    if backend != "cuda":
        # A GPU-enabled JAX would otherwise spend the process initialising CUDA.
        env["JAX_PLATFORMS"] = "cpu"

    def run_process(*_inputs) -> np.ndarray:
        out_file = os.path.join(cache_dir, "answer.npy")
        command = [sys.executable, "-m", "benchmarks.cold_start", library, backend, cache_dir]
        run_checked([*command, out_file], env, PROCESS_TIMEOUT_S)
        return np.load(out_file)

    return run_process


def new_cache_dir(scratch_dir: str, library: str) -> str:
    """An empty disk cache for one row's processes."""
    return tempfile.mkdtemp(prefix=f"cold-start-{library}-", dir=scratch_dir)


def _run_numbax(backend: str, x: np.ndarray) -> np.ndarray | None:
    from .peers import numbax_unsupported_reason

    try:
        import numbax
        import numbax.numpy as xnp

        # Not tiered: the row measures loading the compiled program from the disk cache.
        program = numbax.jit(
            make_twenty_op_program(xnp, COLD_START_CONSTANT), backend=backend, tiered=False
        )
        result = program(x)
    except Exception as error:
        reason = numbax_unsupported_reason(error, backend)
        if reason is None:
            raise
        print(reason)
        return None
    if hasattr(result, "copy_to_host"):
        return result.copy_to_host()
    if hasattr(result, "__cuda_array_interface__"):
        from numba import cuda

        return cuda.as_cuda_array(result).copy_to_host()
    return np.asarray(result)


def _run_jax(cache_dir: str, x: np.ndarray) -> np.ndarray:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_compilation_cache_dir", cache_dir)
    # By default JAX only persists compilations slower than 1 s; this one is far quicker.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    program = jax.jit(make_twenty_op_program(jnp, COLD_START_CONSTANT))
    return np.asarray(program(x))


def _run_numba(x: np.ndarray) -> np.ndarray:
    import numba

    return numba.njit(cache=True)(make_twenty_op_program(np, COLD_START_CONSTANT))(x)


def main(argv: list[str]) -> int:
    library, backend, cache_dir, out_file = argv
    x = compile_input()
    if library == "numbax":
        result = _run_numbax(backend, x)
        if result is None:
            return NOT_SUPPORTED_EXIT
    elif library == "jax":
        result = _run_jax(cache_dir, x)
    elif library == "numba":
        result = _run_numba(x)
    else:
        raise SystemExit(f"unknown library {library!r}")
    np.save(out_file, result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
