"""Fits for fastmath's erf (backends/cpu/fastmath_special.py): Remez for float64, a
rational minimax by Lawson's iteration for float32.

float64 (needs mpmath, not a numbax dependency: python -m pip install mpmath):
    python tools/fit_erf.py erf64
float32 (NumPy and SciPy only):
    python tools/fit_erf.py erf32
"""

import sys

import numpy as np


def fit_float64():
    import mpmath as mp
    from fit_fastmath import report

    mp.mp.dps = 50
    # |x| < 1: erf(x) = x + x G(z), z = x^2; an error dG is dG / (1 + G) relative to erf.
    G = lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1 if z else 2 / mp.sqrt(mp.pi) - 1
    for n in (10, 11, 12):
        report("erf G float64", G, list(range(n + 1)), 0, 1, lambda z: 1 / (1 + G(z)), np.float64)
    # 1 <= a <= 6: erfc(a) = exp(-a^2 + E(a - 3.5)); an error dE is erfc(a) dE in erf(a).
    E = lambda t: mp.log(mp.erfc(t + 3.5)) + (t + 3.5) ** 2
    weight = lambda t: mp.erfc(t + 3.5) / mp.erf(t + 3.5)
    for n in (18, 20, 22):
        report("erf E float64", E, list(range(n + 1)), -2.5, 2.5, weight, np.float64)


def fit_float32(n=6, m=5, clamp=4.0):
    """erf(x) = x P(z) / Q(z), z = x^2, on |x| <= clamp: relative minimax by Lawson's
    iteratively reweighted least squares on the linearised problem P - f Q = 0, in
    z / clamp^2 (powers of two rescale the coefficients exactly)."""
    from scipy.special import erf

    x = np.unique(
        np.r_[clamp * np.sin(np.linspace(0, np.pi / 2, 6000)), np.linspace(0, clamp, 6000)]
    )
    v = x * x / clamp**2
    f = np.where(x == 0, 2 / np.sqrt(np.pi), erf(x) / np.where(x == 0, 1, x))
    vp = np.vander(v, n + 1, increasing=True)
    vq = np.vander(v, m + 1, increasing=True)[:, 1:]
    weights, previous_q, best = np.ones_like(v), np.ones_like(v), (np.inf, None)
    for _ in range(400):
        scale = np.sqrt(weights) / (f * previous_q)
        system = np.hstack([vp, -f[:, None] * vq]) * scale[:, None]
        solution = np.linalg.lstsq(system, f * scale, rcond=None)[0]
        previous_q = 1 + vq @ solution[n + 1 :]
        error = (vp @ solution[: n + 1] / previous_q - f) / f
        if np.abs(error).max() < best[0]:
            best = (np.abs(error).max(), solution)
        weights = np.maximum(weights * np.abs(error), 1e-300)
        weights /= weights.sum()
    error, solution = best
    p = solution[: n + 1] / clamp ** (2 * np.arange(n + 1))
    q = solution[n + 1 :] / clamp ** (2 * np.arange(1, m + 1))
    print(f"erf float32 x P/Q, degrees {n}/{m}: relative error 2^{np.log2(error):.1f}")
    print("    P:", ", ".join(float(np.float32(c)).hex() for c in p))
    print("    Q (after 1):", ", ".join(float(np.float32(c)).hex() for c in q))


if __name__ == "__main__":
    if "erf64" in sys.argv[1:]:
        fit_float64()
    if "erf32" in sys.argv[1:]:
        fit_float32()
