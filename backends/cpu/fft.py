"""The ``fft`` primitive (``ir/fft.py``) in the compiled program: one call per eqn into a
helper here, which calls ``np.fft`` inside Numba through Rocket-FFT (pocketfft, the
library NumPy's own ``numpy.fft`` runs, made callable from ``njit`` code).

Rocket-FFT registers its ``np.fft`` implementations with Numba when Numba starts (an
entry point); importing it here makes sure it is there before the helpers compile, and
says which package is missing if it is not installed.
"""

from __future__ import annotations

import importlib.util

import numpy as np
from numba import njit

from ...ir.errors import MissingDependencyError
from .loopnest import tuple_source
from .opaque_emitters import EMITTERS

MODULE = "numbax.backends.cpu.fft"
IMPORTS = {MODULE: ("nbx_fft", "from numbax.backends.cpu import fft as nbx_fft")}

_JIT = {"error_model": "numpy", "no_cfunc_wrapper": True, "cache": True}

if importlib.util.find_spec("rocket_fft") is not None:
    import rocket_fft  # noqa: F401 - registers np.fft with Numba


@njit(**_JIT)
def fft(x, axes):
    return np.fft.fftn(x, axes=axes)


@njit(**_JIT)
def ifft(x, axes):
    return np.fft.ifftn(x, axes=axes)


@njit(**_JIT)
def rfft(x, axes):
    return np.fft.rfftn(x, axes=axes)


@njit(**_JIT)
def irfft(x, lengths, axes):
    return np.fft.irfftn(x, s=lengths, axes=axes)


def _check_rocket_fft() -> None:
    if importlib.util.find_spec("rocket_fft") is None:
        raise MissingDependencyError(
            "the cpu backend runs numpy.fft inside the compiled program with Rocket-FFT: "
            "install it (pip install rocket-fft), or run this program on the interpret backend"
        )


@EMITTERS.rule("fft")
def _fft(program, eqn, inputs, out) -> list[str]:
    _check_rocket_fft()
    (x,), params = inputs, eqn.params
    ndim, lengths = eqn.inputs[0].aval.ndim, params["fft_lengths"]
    axes = tuple_source(range(ndim - len(lengths), ndim))
    out_aval = eqn.outputs[0].aval
    if 0 in eqn.inputs[0].aval.shape or 0 in out_aval.shape:  # pocketfft refuses empty arrays
        return [f"{out} = np.zeros({tuple_source(out_aval.shape)}, np.{out_aval.dtype.name})"]
    helper = program.function(MODULE, params["fft_type"])
    if params["fft_type"] == "irfft":
        return [f"{out} = {helper}({x}, {tuple_source(lengths)}, {axes})"]
    return [f"{out} = {helper}({x}, {axes})"]
