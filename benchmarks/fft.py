"""The fft group (`--group fft`): `numpy.fft` inside a compiled program.

numbax lowers `np.fft.fft` and `np.fft.rfft` to one call of Rocket-FFT (pocketfft, the
library behind NumPy's own `numpy.fft`) inside the njit program; the rows are that
program against NumPy's call and JAX's `jit` of the same line (issue #16's acceptance:
within 1.2x of `numpy.fft`, no slower than JAX). Full sizes are a 2^20-point complex128
transform and a batch of 256 real signals of 1024 points; quick sizes a smoke test.
"""

from __future__ import annotations

import math

from .workloads import Workload

SIZES = {
    "fft": {"quick": 1 << 12, "full": 1 << 20},
    "rfft": {"quick": (8, 256), "full": (256, 1024)},
}
# Transforms of n points round like log2(n) additions of values up to sqrt(n) in size.
TOLERANCE = {"rtol": 1e-9, "atol": 1e-8}


def fft(xp, z):
    return xp.fft.fft(z)


def rfft(xp, x):
    return xp.fft.rfft(x, axis=-1)


def _scale(scale: str) -> str:
    return "quick" if scale == "quick" else "full"


def _flops(n: int, batch: int = 1, real: bool = False) -> int:
    """The conventional 5 n log2 n of a complex transform (half of it for a real one)."""
    return int(batch * 5 * n * math.log2(n) / (2 if real else 1))


def fft_workload(scale: str, rng) -> Workload:
    n = SIZES["fft"][_scale(scale)]
    z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    size = f"2^{int(math.log2(n))} complex128"
    return Workload(
        "fft", "numpy.fft.fft", size, "forward", fft, (z,), flops=_flops(n), **TOLERANCE
    )


def rfft_workload(scale: str, rng) -> Workload:
    batch, n = SIZES["rfft"][_scale(scale)]
    x = rng.standard_normal((batch, n))
    size = f"{batch}x{n} float64, last axis"
    flops = _flops(n, batch, real=True)
    return Workload(
        "rfft_batched",
        "numpy.fft.rfft (batched)",
        size,
        "forward",
        rfft,
        (x,),
        flops=flops,
        **TOLERANCE,
    )


FFT_WORKLOAD_BUILDERS = {"fft": fft_workload, "rfft_batched": rfft_workload}
