"""PTX for a program's kernels, without a GPU: ``numba.cuda.compile_ptx`` for sm_90.

This is how the GPU variant of the generated code (warp shuffles on, full-size launch
shapes) is checked on machines without a GPU. It needs the real ``numba.cuda``, so it
cannot run under the simulator.
"""

from __future__ import annotations

import re

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
