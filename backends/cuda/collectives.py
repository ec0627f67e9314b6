"""Collectives (``ir/collectives.py``) on the CUDA backend: host staging through MPI.

A collective is a step the host runs between the kernels, as a callback is
(``callbacks.py``): it waits for the kernels before it, copies its operand to the host,
makes the MPI call of the interpreter's implementation (mpi4py on NumPy arrays), and
copies the result to the device for the kernels after it. Device-to-device transfers
(CUDA-aware MPI, NCCL through CuPy) would skip both copies; host staging works with
every MPI library, and is what docs/distributed.md states.
"""

from __future__ import annotations

from . import device
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


def run_collective(executable, step, operands: list, stream) -> list:
    results = step.eqn.prim.impl(*_on_host(step, operands, stream), **step.eqn.params)
    return [
        device.device_input(result, var.aval, stream)
        for result, var in zip(results, step.outputs, strict=True)
    ]


RUNNERS = dict.fromkeys(NAMES, run_collective)
