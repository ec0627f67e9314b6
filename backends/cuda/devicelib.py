"""The math library generated kernels call: ``libdevice`` (``expf`` for float32,
``exp`` for float64, ...), and ``complex_power``, NumPy's complex power.

On a GPU ``libdevice`` is ``numba.cuda.libdevice``, NVIDIA's device math library: every
function has an explicit float32 variant, so float32 code never widens to float64. Under
the simulator Numba's libdevice functions are empty stubs and Python's ``math`` raises on
``log(-1)`` or ``exp(1000)``, so the same names are provided from NumPy, computing in
the argument's precision and returning inf/nan quietly as the GPU does.

``complex_power`` is ``backends/complex_functions.py``'s, the cpu backend's algorithm:
on a GPU compiled into each kernel that calls it (``inlined``), under the simulator run
as Python with NumPy's functions as its math library. ``threefry`` holds the
``threefry2x32`` primitive's helpers (``backends/threefry.py``), compiled the same way;
generated code calls ``threefry2x32_xor(key0, key1, count0, count1)``.
"""

from __future__ import annotations

import inspect
import math
import types

import numpy as np

from ..complex_functions import complex_functions
from ..threefry import threefry_functions
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
    "erf": math.erf,  # NumPy has none; math.erf of a NumPy scalar is quiet (erf(inf) = 1)
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


# ``math``'s names, from NumPy: quiet on NumPy scalars where Python's math raises.
SIMULATED_MATH = types.SimpleNamespace(
    exp=np.exp, log=np.log, cos=np.cos, sin=np.sin, hypot=np.hypot, atan2=np.arctan2,
    copysign=np.copysign, isnan=np.isnan, isinf=np.isinf, isfinite=np.isfinite,
    inf=np.inf, nan=np.nan,
)  # fmt: skip


def as_python(signature):
    """``complex_functions``' ``compile`` under the simulator: the functions as they are
    (the simulator runs kernels, and what they call, as Python)."""
    return lambda function: function


def inlined(intrinsic):
    """``complex_functions``' ``compile`` on a GPU: each function becomes an ``intrinsic``
    whose code is the function compiled into its caller (once per process, then linked),
    with the kernel's flags (NumPy's error model: a division by zero is inf or NaN),
    the caller's arguments converted to ``signature``'s types.

    Not a device function (``cuda.jit(device=True)``): compiling one asks the GPU driver
    for its compute capability, even for PTX, which is checked on machines without a GPU.
    """

    def with_signature(signature):
        def compile_into_caller(function):
            def codegen(context, builder, _, args):
                return context.compile_internal(builder, function, signature, args)

            def typer(typingctx, *args):
                return signature, codegen

            # Numba reads an intrinsic's arity from its typer's signature.
            context = inspect.Parameter("typingctx", inspect.Parameter.POSITIONAL_ONLY)
            parameters = inspect.signature(function).parameters.values()
            typer.__signature__ = inspect.Signature([context, *parameters])
            typer.__name__ = typer.__qualname__ = f"complex_{function.__name__}"
            return intrinsic(typer)

        return compile_into_caller

    return with_signature


if simulating():
    libdevice = SimulatedLibdevice()
    complex_power = complex_functions(as_python, SIMULATED_MATH).power
    threefry = threefry_functions(as_python)
else:
    from numba.cuda import libdevice  # noqa: F401 - re-exported for generated code

    try:
        from numba.cuda.extending import intrinsic
    except ImportError:  # no numba-cuda: no kernel compiles, so nothing calls it
        complex_power = threefry = None
    else:
        complex_power = complex_functions(inlined(intrinsic), math).power
        threefry = threefry_functions(inlined(intrinsic))

# Generated code calls each by its name: Numba cannot type a tuple of functions as a global.
threefry2x32_word0, threefry2x32_word1, threefry2x32_xor, threefry2x32_bits64 = (
    threefry or (None,) * 4
)
