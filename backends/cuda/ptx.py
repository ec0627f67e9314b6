"""PTX for a program's kernels, without a GPU: ``numba.cuda.compile_ptx`` for sm_90.

This is how the GPU variant of the generated code (warp shuffles on, full-size launch
shapes) is checked on machines without a GPU. It needs the real ``numba.cuda``, so it
cannot run under the simulator. ``assembled`` then runs NVIDIA's assembler, ``ptxas``
(from the ``nvidia-cuda-nvcc`` wheel of the ``cuda`` extra, or the CUDA toolkit), on a
kernel's PTX for sm_90 and reads what it reports: registers per thread, bytes spilled to
local memory, static shared memory. A kernel that spills is slow on every GPU.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from ...ir.core import ClosedJaxpr
from .loader import PTX_COMPUTE_CAPABILITY, compile_ptx, load_module
from .options import CudaOptions, simulating

# Kernel code (its name and comments left out) -> PTX: kernels equal but for their name
# (the same op in two programs) compile once per process and share the first one's PTX.
_PTX: dict = {}


def program_ptx(
    closed: ClosedJaxpr,
    name: str = "fn",
    options: CudaOptions | None = None,
    cc=PTX_COMPUTE_CAPABILITY,
) -> list[tuple[str, str]]:
    """``[(kernel name, PTX), ...]``, one per kernel of the compiled program (control-flow
    bodies' kernels included)."""
    from . import CudaBackend

    if simulating():
        raise RuntimeError("PTX needs the real numba.cuda: unset NUMBA_ENABLE_CUDASIM")
    program = CudaBackend(options or CudaOptions.for_gpu()).lower(closed, name)
    module, _ = load_module(program.module_name, program.source)
    result = []
    for step in program.kernels:
        code = re.sub(r"#.*", "", step.kernel.source).replace(step.kernel.name, "kernel")
        key = (code, cc)
        if key not in _PTX:
            _PTX[key] = compile_ptx(getattr(module, step.kernel.name), step.kernel, cc)
        result.append((step.kernel.name, _PTX[key]))
    return result


@functools.cache
def ptx_toolchain_problem() -> str | None:
    """Why this machine cannot compile PTX, or None when it can.

    Compiling PTX needs the ``numba-cuda`` package (the ``cuda`` extra) and the CUDA
    compiler libraries it brings (NVRTC); Numba's own bundled ``numba.cuda`` wants a GPU
    driver even for that. The answer comes from compiling a small kernel, so it holds
    whatever the reason (Numba's bundled ``numba.cuda`` compiles simple kernels, but asks
    for a driver at the first warp shuffle)."""
    if simulating():
        return "PTX needs the real numba.cuda: unset NUMBA_ENABLE_CUDASIM"
    try:
        from numba import cuda

        def probe(out):  # what generated kernels use: shared memory, libdevice, shuffles
            staged = cuda.shared.array(32, "float32")
            staged[0] = cuda.libdevice.sinf(out[0])
            cuda.syncthreads()
            out[cuda.grid(1)] = staged[0] + cuda.shfl_down_sync(0xFFFFFFFF, out[0], 1)

        cuda.compile_ptx(probe, "void(float32[::1])", cc=PTX_COMPUTE_CAPABILITY)
    except Exception as error:  # noqa: BLE001 - any failure means: no toolchain here
        reason = " ".join(f"{type(error).__name__}: {error}".split())[:200]
        return f"no CUDA PTX toolchain ({reason}); install the extra: pip install -e '.[cuda]'"
    return None


@dataclass(frozen=True)
class Assembled:
    """What ``ptxas -v`` reports for one kernel's sm_90 machine code."""

    registers: int  # per thread
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    shared: int  # bytes of static shared memory
    stack: int  # bytes of stack frame


@functools.cache
def ptxas() -> str | None:
    """The path of ``ptxas``: the ``nvidia-cuda-nvcc`` wheel's, else the one on PATH."""
    spec = importlib.util.find_spec("nvidia")
    for folder in spec.submodule_search_locations if spec else ():
        for sub in ("cu13", "cuda_nvcc", "cu12"):
            path = os.path.join(folder, sub, "bin", "ptxas")
            if os.access(path, os.X_OK):
                return path
    return shutil.which("ptxas")


_USED = re.compile(r"Used (\d+) registers")
_SHARED_USED = re.compile(r"(\d+) bytes smem")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def assembled(ptx: str, arch: str = "sm_90") -> Assembled:
    """Assemble one kernel's ``ptx`` with ``ptxas`` for ``arch``; its report. Raises
    RuntimeError with ptxas's message where it refuses the PTX."""
    tool = ptxas()
    if tool is None:
        raise RuntimeError("ptxas not found: pip install nvidia-cuda-nvcc (the cuda extra)")
    with tempfile.TemporaryDirectory(prefix="numbax-ptxas-") as folder:
        source = os.path.join(folder, "kernel.ptx")
        with open(source, "w", encoding="utf-8") as file:
            file.write(ptx)
        command = [tool, f"-arch={arch}", "-v", "-o", os.path.join(folder, "kernel.cubin"), source]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"ptxas refused the PTX: {done.stderr.strip()[-2000:]}")
    report = done.stderr + done.stdout
    registers = _USED.search(report)
    frame = _FRAME.search(report)
    shared = _SHARED_USED.search(report)
    stack, stores, loads = (int(x) for x in frame.groups()) if frame else (0, 0, 0)
    return Assembled(
        int(registers[1]) if registers else 0, stores, loads, int(shared[1]) if shared else 0, stack
    )
