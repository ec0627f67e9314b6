"""The ``cuda`` backend: every fused kernel becomes a ``numba.cuda.jit`` kernel.

    >>> import numpy as np, numbax
    >>> f = numbax.jit(lambda x: np.tanh(x) * 2.0, backend="cuda")  # doctest: +SKIP
    >>> y = f(np.ones(3, np.float32))   # a device array; np.asarray(y) copies it back

The pipeline: ``passes.optimize`` fuses the program into kernels; ``program`` gives each
kernel a generator (``elementwise``, ``reduction``, ``contraction``, ``scatter``,
``cumsum``) that writes readable Python source, named after the user's function and
commented with the eqns each line computes; ``loader`` compiles it with Numba;
``launcher`` runs it with device-resident buffers, and ``control`` runs ``cond``,
``while`` and ``scan`` on the host, launching their bodies' kernels. ``ptx`` compiles the
same kernels to PTX for sm_90 without a GPU.

Tested without a GPU under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), where the
same kernels run with small launch shapes and without warp shuffles (see ``options``).
"""

from __future__ import annotations

from numba.cuda.cudadrv.error import CudaSupportError

from ...ir.core import ClosedJaxpr
from ...ir.errors import MissingDependencyError
from ...passes import optimize
from ..compile_stats import Stopwatch
from .launcher import CudaExecutable
from .loader import compile_stats
from .options import CudaOptions
from .program import CudaProgram, build_program

__all__ = [
    "CudaBackend",
    "CudaExecutable",
    "CudaOptions",
    "CudaProgram",
    "backend",
    "build_program",
]


class CudaBackend:
    name = "cuda"
    # The memory plan is of each block the backend builds from the fused program, after
    # its own rewrites (``program.build_block``), not the pipeline's.
    plans_memory = True

    def __init__(self, options: CudaOptions | None = None):
        self._options = options

    @property
    def options(self) -> CudaOptions:
        """The given options, else the preset for a GPU or for the simulator."""
        return self._options or CudaOptions.default()

    def lower(self, closed: ClosedJaxpr, name: str = "fn") -> CudaProgram:
        """The fused program and its generated kernels, not compiled."""
        closed, log = optimize(closed, name=name, memory_plan=not self.plans_memory)
        return build_program(closed, name, self.options, log)

    def clear_caches(self) -> None:
        """Forget the kernels compiled in this process and their PTX (the disk cache
        stays)."""
        from . import loader, ptx

        loader._COMPILED.clear()
        ptx._PTX.clear()

    def compile(
        self, closed: ClosedJaxpr, name: str = "fn", writes: tuple[int, ...] = ()
    ) -> CudaExecutable:
        """The executable of ``closed``, whose last outputs the caller writes into its
        arguments ``writes`` (``backends.results``)."""
        clock = Stopwatch()
        fused, log = optimize(closed, name=name, memory_plan=not self.plans_memory)
        optimize_s = clock.lap()
        program = build_program(fused, name, self.options, log)
        codegen_s = clock.lap()
        try:
            executable = CudaExecutable(program, writes)
        except CudaSupportError as error:
            found = " ".join(str(error).split())
            raise MissingDependencyError(
                f"the cuda backend needs an NVIDIA GPU and its driver, and found none "
                f"({found}). Run on the CPU with jit(..., backend='cpu'), or set "
                "NUMBA_ENABLE_CUDASIM=1 for Numba's CUDA simulator (slow, for tests)."
            ) from error
        counts = executable.kernel_counts
        executable.compile_stats = compile_stats(optimize_s, codegen_s, clock.lap(), counts)
        return executable


backend = CudaBackend()
