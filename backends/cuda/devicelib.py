"""The math library generated kernels call: ``libdevice`` (``expf`` for float32,
``exp`` for float64, ...).

On a GPU it is ``numba.cuda.libdevice``, NVIDIA's device math library: every function
has an explicit float32 variant, so float32 code never widens to float64. Under the
simulator Numba's libdevice functions are empty stubs and Python's ``math`` raises on
``log(-1)`` or ``exp(1000)``, so the same names are provided from NumPy, computing in
the argument's precision and returning inf/nan quietly as the GPU does.
"""

from __future__ import annotations

import numpy as np

from .options import simulating

# libdevice name (the float64 variant; the float32 one adds "f") -> NumPy equivalent.
FUNCTIONS = {
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "floor": np.floor,
    "ceil": np.ceil,
    "rint": np.rint,
    "pow": np.power,
    "atan2": np.arctan2,
    "fmod": np.fmod,
    # The parts of complex functions (backends/cuda/complex.py).
    "sinh": np.sinh,
    "cosh": np.cosh,
    "hypot": np.hypot,
    "copysign": np.copysign,
}


def _simulated(function, dtype):
    def call(*args):
        with np.errstate(all="ignore"):
            return dtype.type(function(*(dtype.type(a) for a in args)))

    return call


class SimulatedLibdevice:
    """The libdevice functions the generator uses, from NumPy, for the simulator."""

    def __init__(self):
        for name, function in FUNCTIONS.items():
            setattr(self, name, _simulated(function, np.dtype("float64")))
            setattr(self, name + "f", _simulated(function, np.dtype("float32")))


if simulating():
    libdevice = SimulatedLibdevice()
else:
    from numba.cuda import libdevice  # noqa: F401 - re-exported for generated code
