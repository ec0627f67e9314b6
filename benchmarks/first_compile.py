"""Time to compiled code: a fresh process jits one models-group workload and runs it once.

The parent calls `first_compile_call` once per sample; each call starts
`python -m benchmarks.first_compile LIBRARY NAME SCALE OUT_DIR`, which

- imports its library and initialises it (numbax, and Numba's threading layer and
  extensions: ``CpuBackend.initialise``; JAX's CPU client), not timed: the figure is
  about the program, not the import;
- builds the workload's callable exactly as the steady-state row does (peers.py), then
  times trace to first result: `build()`, one call, its sync;
- writes the seconds and the answer into OUT_DIR; the parent checks the answer against the
  workload's reference, as every row is checked.

Nothing is warm: the process is new, and its caches are empty and its own.
  numbax  NUMBAX_CACHE_DIR an empty folder (Numba caches each module beside it), and
          `tiered=False`: the call waits for the compiled program (trace, passes, codegen,
          Numba and LLVM, run)
  jax     no persistent compilation cache (trace, lower, XLA compile, run)
  torch, torch.compile
          PyTorch eager, and `torch.compile` with Inductor's caches in an empty folder
          (Dynamo's trace, AOTAutograd, Inductor's C++ compile, run)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .cold_start import NOT_SUPPORTED_EXIT, run_checked
from .implementation import tree_map
from .workloads import leaves

# A compile that hangs fails its row, not the group; numbax's largest rows have taken
# minutes on a loaded 2-core machine (issue #34).
PROCESS_TIMEOUT_S = 1800


def first_compile_call(library: str, name: str, scale: str, scratch_dir: str) -> Callable:
    """A callable whose every call runs one fresh process: (seconds, answer leaves, the
    disk cache it filled).

    Raises NotSupportedYet when the process says so, RuntimeError when it fails.
    """

    def run_process() -> tuple[float, list[np.ndarray], str]:
        out_dir = tempfile.mkdtemp(prefix=f"first-compile-{library}-{name}-", dir=scratch_dir)
        cache_dir = os.path.join(out_dir, "cache")
        # NUMBA_CACHE_DIR stays unset, as in the parent: Numba's index of each compiled
        # module then lies beside it in `cache_dir`, where the parent's steady row finds it.
        env = dict(os.environ, NUMBAX_CACHE_DIR=cache_dir)
        env.pop("NUMBA_CACHE_DIR", None)
        env.update(JAX_PLATFORMS="cpu", NUMBAX_TIERED="0")
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
        command = [sys.executable, "-m", "benchmarks.first_compile", library, name, scale]
        run_checked([*command, out_dir], env, PROCESS_TIMEOUT_S)
        figures = json.loads(Path(out_dir, "figures.json").read_text())
        with np.load(Path(out_dir, "answer.npz")) as answer:
            arrays = [answer[f"arr_{i}"] for i in range(len(answer.files))]
        return figures["seconds"], arrays, cache_dir

    return run_process


def initialised_peer(library: str, scratch_dir: str):
    """The library imported and started, outside the timed part."""
    from .peers import JaxPeer, NumbaxPeer, TorchCpuPeer

    if library == "numbax":
        import numbax  # noqa: F401
        import numbax.backends.cpu
        import numbax.numpy  # noqa: F401

        numbax.backends.cpu.backend.initialise()  # Numba's threads and extensions

        return NumbaxPeer("cpu", scratch_dir)
    if library == "jax":
        return JaxPeer(False, scratch_dir)  # imports JAX and starts its CPU client
    if library in TorchCpuPeer.LABELS:
        return TorchCpuPeer()  # imports torch
    raise SystemExit(f"unknown library {library!r}")


def main(argv: list[str]) -> int:
    from .model_workloads import model_workload

    library, name, scale, out_dir = argv
    start = time.perf_counter()
    peer = initialised_peer(library, out_dir)
    import_s = time.perf_counter() - start
    workload = model_workload(name, scale)
    [implementation] = [row for row in peer.implement(workload) if row.label == library]
    inputs = tree_map(implementation.to_device, workload.inputs)
    try:
        start = time.perf_counter()
        function = implementation.build()
        result = function(*inputs)
        implementation.sync(result)
        seconds = time.perf_counter() - start
    except Exception as error:
        reason = implementation.unsupported_reason(error)
        if reason is None:
            raise
        print(reason)
        return NOT_SUPPORTED_EXIT
    answer = leaves(tree_map(implementation.to_numpy, result))
    np.savez(Path(out_dir, "answer.npz"), *answer)
    figures = {"seconds": seconds, "import_s": import_s}
    Path(out_dir, "figures.json").write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
