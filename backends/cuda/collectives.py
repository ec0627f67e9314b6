"""Collectives (``ir/collectives.py``) on the CUDA backend: through NCCL where CuPy has
it, else staged through the host and MPI.

A collective is a step the host runs between the kernels, as a callback is
(``callbacks.py``). ``run_collective`` picks how, per call:

- NCCL (``nccl.py``), when CuPy imports with NCCL, the operand is on the device, NCCL
  has the reduction's type, and ``config.cuda_nccl`` is on (``NUMBAX_CUDA_NCCL=0``
  turns it off): the call is enqueued on the executable's stream, on the program's
  device buffers, with no copy and no wait.
- host staging otherwise: wait for the kernels before, copy the operand to the host,
  make the MPI call of the interpreter's implementation (mpi4py on NumPy arrays), and
  copy the result to the device for the kernels after it. It works with every MPI
  library; ``axis_index`` (no data to move) always runs here.

docs/distributed.md states which runs when.
"""

from __future__ import annotations

from . import device, nccl
from .callbacks import _on_host

NAMES = (
    "psum",
    "pmax",
    "pmin",
    "all_gather",
    "psum_scatter",
    "all_to_all",
    "ppermute",
    "broadcast",
    "axis_index",
)


def run_staged(executable, step, operands: list, stream) -> list:
    results = step.eqn.prim.impl(*_on_host(step, operands, stream), **step.eqn.params)
    return [
        device.device_input(result, var.aval, stream)
        for result, var in zip(results, step.outputs, strict=True)
    ]


def run_collective(executable, step, operands: list, stream) -> list:
    if nccl.chosen(step, operands):
        return nccl.run(step, operands, stream)
    return run_staged(executable, step, operands, stream)


RUNNERS = dict.fromkeys(NAMES, run_collective)
