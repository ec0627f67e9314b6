"""The ``fft`` primitive (``ir/fft.py``) on the host's orders, between the kernels: a
library transform, not a kernel of numbax's own.

On a GPU CuPy's ``cupy.fft`` (cuFFT) transforms the device buffers where they are, in
the operand's precision. Without CuPy a GPU program with an FFT cannot run, and says
which package to install. Under the simulator the step copies its operand to the host
and runs the reference (``numpy.fft``), so the tests cover a program's transforms there.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ...ir.errors import MissingDependencyError
from . import device
from .host_runners import RUNNERS
from .options import simulating


@RUNNERS.rule("fft")
def run_fft(executable, step, operands: list, stream) -> list:
    eqn = step.eqn
    (operand,), (atom,), (var,) = operands, step.inputs, step.outputs
    if simulating():
        array = operand.copy_to_host(stream=stream).reshape(atom.aval.shape)
        stream.synchronize()
        (result,) = eqn.prim.impl(array, **eqn.params)
        return [device.device_input(np.ascontiguousarray(result), var.aval, stream)]
    if importlib.util.find_spec("cupy") is None:
        raise MissingDependencyError(
            "the cuda backend runs numpy.fft with CuPy's cuFFT: install cupy-cuda13x "
            "(pip install cupy-cuda13x), or run this program on the cpu backend"
        )
    return [_cupy_fft(eqn, operand, atom, var, stream)]


def _cupy_fft(eqn, operand, atom, var, stream):
    import cupy
    from numba import cuda

    stream.synchronize()  # CuPy runs on its own stream: the kernels before must be done
    x = cupy.asarray(operand).reshape(atom.aval.shape)
    lengths = tuple(eqn.params["fft_lengths"])
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    if x.size == 0 or 0 in var.aval.shape:
        result = cupy.zeros(var.aval.shape, var.aval.dtype)
    else:
        transform = {
            "fft": cupy.fft.fftn,
            "ifft": cupy.fft.ifftn,
            "rfft": cupy.fft.rfftn,
            "irfft": cupy.fft.irfftn,
        }[eqn.params["fft_type"]]
        result = transform(x, s=lengths, axes=axes)
    flat = cupy.ascontiguousarray(result, dtype=var.aval.dtype).ravel()
    cupy.cuda.get_current_stream().synchronize()
    return cuda.as_cuda_array(flat)
