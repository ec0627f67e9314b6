"""Fits for fastmath's erf (backends/cpu/fastmath_special.py): Remez for float64, a
rational minimax by Lawson's iteration for float32.

float64 (needs mpmath, not a numbax dependency: python -m pip install mpmath):
    python tools/fit_erf.py erf64
float32 (NumPy and SciPy only), then the rounded coefficients nudged by ulps against the
float32 evaluation (emulated bit for bit: FMA and division rounded once):
    python tools/fit_erf.py erf32
    python tools/fit_erf.py nudge32
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


def nudge_float32(rounds=4):
    """Greedy steps of 1, 2 or 4 ulps on each of fastmath's float32 erf coefficients while
    the worst error falls, over every float32 of [2, 4] (where erf is near 1 and the
    evaluation's roundings weigh most) and every 53rd of [0.25, 2]."""
    from scipy.special import erf

    from numbax.backends.cpu import fastmath

    table = fastmath._FLOAT32
    coefficients = [np.float32(c) for c in (*table.erf_numerator, *table.erf_denominator)]
    split = len(table.erf_numerator)
    bits = lambda v: int(np.float32(v).view(np.int32))
    x = np.r_[np.arange(bits(0.25), bits(2), 53), np.arange(bits(2), bits(4) + 1)]
    x = x.astype(np.int32).view(np.float32).astype(np.float64)
    exact = erf(x)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    single = lambda v: v.astype(np.float32).astype(np.float64)

    def horner(z, cs):
        total = np.full_like(z, float(cs[-1]))
        for c in cs[-2::-1]:
            total = single(total * z + float(c))  # an FMA: the product is exact
        return total

    def worst(cs):
        z = single(x * x)
        denominator = single(z * horner(z, cs[split:]) + 1.0)
        y = single(single(x * horner(z, cs[:split])) / denominator)
        return (np.abs(y - exact) / ulp).max()

    best = worst(coefficients)
    for _ in range(rounds):
        start = best
        for i in range(len(coefficients)):
            for step in (1, -1, 2, -2, 4, -4):
                trial = list(coefficients)
                trial[i] = np.array([bits(trial[i]) + step], np.int32).view(np.float32)[0]
                error = worst(trial)
                if error < best - 1e-3:
                    best, coefficients = error, trial
        if best == start:
            break
    print(f"nudged: {best:.2f} ulps")
    print("    P:", ", ".join(float(c).hex() for c in coefficients[:split]))
    print("    Q (after 1):", ", ".join(float(c).hex() for c in coefficients[split:]))


if __name__ == "__main__":
    if "erf64" in sys.argv[1:]:
        fit_float64()
    if "erf32" in sys.argv[1:]:
        fit_float32()
    if "nudge32" in sys.argv[1:]:
        nudge_float32()
