"""Remez exchange fits for numbax fastmath kernels (mpmath, 50 digits)."""
# Needs mpmath (not a numbax dependency): python -m pip install mpmath

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def remez(f, powers, a, b, weight=lambda t: mp.mpf(1), iters=40, grid=3000):
    """min over c of max |weight(t) * (f(t) - sum c_j t^powers[j])| on [a, b]."""
    a, b = mp.mpf(a), mp.mpf(b)
    n = len(powers)
    nodes = sorted(a + (b - a) * (1 - mp.cos(mp.pi * i / n)) / 2 for i in range(n + 1))
    grid_pts = [a + (b - a) * (1 - mp.cos(mp.pi * i / grid)) / 2 for i in range(grid + 1)]
    fvals = {}

    def fv(t):
        if t not in fvals:
            fvals[t] = (f(t), weight(t))
        return fvals[t]

    for it in range(iters):
        A = mp.matrix(n + 1, n + 1)
        rhs = mp.matrix(n + 1, 1)
        for i, t in enumerate(nodes):
            ft, wt = fv(t)
            for j, p in enumerate(powers):
                A[i, j] = t**p
            A[i, n] = (-1) ** i / wt
            rhs[i] = ft
        sol = mp.lu_solve(A, rhs)
        c = [sol[j] for j in range(n)]

        def err(t, c=c):
            ft, wt = fv(t)
            return wt * (ft - sum(cj * t**p for cj, p in zip(c, powers, strict=False)))

        e = [err(t) for t in grid_pts]
        # local extrema of e (including endpoints)
        ext = [
            i
            for i in range(len(e))
            if (i == 0 or abs(e[i]) >= abs(e[i - 1]))
            and (i == len(e) - 1 or abs(e[i]) >= abs(e[i + 1]))
        ]
        # merge same-sign runs keeping the biggest
        merged = []
        for i in ext:
            if merged and mp.sign(e[i]) == mp.sign(e[merged[-1]]):
                if abs(e[i]) > abs(e[merged[-1]]):
                    merged[-1] = i
            else:
                merged.append(i)
        while len(merged) > n + 1:
            if abs(e[merged[0]]) < abs(e[merged[-1]]):
                merged.pop(0)
            else:
                merged.pop()
        if len(merged) < n + 1:
            print("few extrema", it, len(merged), n + 1, [float(e[i]) for i in merged])
            emax = max(abs(v) for v in e)
            break
        nodes = [grid_pts[i] for i in merged]
        emax = max(abs(v) for v in e)
        if abs(emax - abs(sol[n])) / emax < 1e-4 and it > 3:
            break
    return c, float(emax)


def check(f, powers, c, a, b, weight, dtype):
    """max weighted error with coefficients rounded to dtype, Horner in mp."""
    cr = [mp.mpf(float(dtype(float(x)))) for x in c]
    ts = np.linspace(float(a), float(b), 4001)
    return max(
        abs(
            float(
                weight(mp.mpf(t))
                * (
                    f(mp.mpf(t))
                    - sum(cj * mp.mpf(t) ** p for cj, p in zip(cr, powers, strict=False))
                )
            )
        )
        for t in ts[1:]
    )


def report(name, f, powers, a, b, weight, dtype):
    c, e = remez(f, powers, a, b, weight)
    ec = check(f, powers, c, a, b, weight, dtype)
    print(
        f"{name}: deg {powers[-1]} minimax err 2^{np.log2(e):.1f}, "
        f"rounded-coeff err 2^{np.log2(ec):.1f}"
    )
    print(
        "    "
        + ", ".join(
            repr(dtype(float(x))) if dtype is np.float64 else f"{float(np.float32(float(x))).hex()}"
            for x in c
        )
    )
    print("    " + ", ".join(float(dtype(float(x))).hex() for x in c))
    return c


if __name__ == "__main__":
    import sys

    which = sys.argv[1:]
    one = lambda t: mp.mpf(1)
    # expm1(r) = r + r^2 * P(r),  P(r) = (e^r - 1 - r) / r^2; error in e^r is r^2 * dP
    P = lambda t: (mp.expm1(t) - t) / t**2 if t != 0 else mp.mpf(0.5)
    R = 0.3466 * 1.01
    for deg_hi, dt in [(10, np.float64), (5, np.float32)]:
        if "exp" in which:
            report(f"exp P {dt.__name__}", P, list(range(deg_hi + 1)), -R, R, one, dt)
    # log(1+f) = 2s + s R(z), z = s^2, R(z) = 2 atanh(s)/s - 2; error relative to log ~ dR / 2
    Rl = lambda z: (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2) / z if z else mp.mpf(2) / 3
    zmax = ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2 * 1.001
    for n, dt in [(7, np.float64), (6, np.float64), (4, np.float32), (3, np.float32)]:
        if "log" in which:
            report(f"log R/z {dt.__name__}", Rl, list(range(n)), 0, zmax, one, dt)
    # sin(r) = r + r z S(z): relative error z*dS ; cos(r) = 1 - z/2 + z^2 C(z): error z^2 dC
    S = lambda z: (mp.sin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z if z else -mp.mpf(1) / 6
    C = lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2 if z else mp.mpf(1) / 24
    zs = mp.mpf(0.786) ** 2
    for n, dt in [(6, np.float64), (5, np.float64), (4, np.float32), (3, np.float32)]:
        if "sin" in which:
            report(f"sin S {dt.__name__}", S, list(range(n)), 0, zs, one, dt)
        if "cos" in which:
            report(f"cos C {dt.__name__}", C, list(range(n)), 0, zs, one, dt)
