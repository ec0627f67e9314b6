"""The linalg group (`--group linalg`): dense linear algebra and sorting, one library call each.

numbax compiles `numpy.linalg.solve`, `cholesky`, `svd` and `numpy.sort` into its program
(LAPACK through SciPy, a radix sort); the rows are that program against NumPy's own call
and JAX's `jit` of the same line, side by side (issue #13's acceptance: within 1.2x of
NumPy, no slower than JAX). Full sizes are 512x512 float64 matrices and 10^6 float64
values; quick sizes a smoke test.

An SVD's singular vectors are unique only up to signs, which differ between LAPACK
drivers, so its check is the singular values and the reconstruction `u diag(s) vt`.
"""

from __future__ import annotations

import numpy as np

from .workloads import Workload, leaves

SIZES = {"matrix": {"quick": 64, "full": 512}, "sort": {"quick": 10_000, "full": 1_000_000}}
# A factorisation's rounding grows with n and differs between LAPACK builds.
FACTORISATION = {"rtol": 1e-7, "atol": 1e-9}


def solve(xp, a, b):
    return xp.linalg.solve(a, b)


def cholesky(xp, a):
    return xp.linalg.cholesky(a)


def svd(xp, a):
    u, s, vt = xp.linalg.svd(a)  # a plain tuple: the suite's tree functions rebuild tuples
    return u, s, vt


def sort(xp, x):
    return xp.sort(x)


def _scale(scale: str) -> str:
    return "quick" if scale == "quick" else "full"


def _spd(n: int, rng) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return m @ m.T / n + np.eye(n)


def solve_workload(scale: str, rng) -> Workload:
    n = SIZES["matrix"][_scale(scale)]
    a, b = _spd(n, rng), rng.standard_normal((n, n))
    title = "numpy.linalg.solve (LU, partial pivoting)"
    size = f"{n}x{n} a, {n}x{n} b, float64"
    flops = 2 * n**3 // 3 + 2 * n**3
    return Workload(
        "linalg_solve", title, size, "forward", solve, (a, b), flops=flops, **FACTORISATION
    )


def cholesky_workload(scale: str, rng) -> Workload:
    n = SIZES["matrix"][_scale(scale)]
    title, size = "numpy.linalg.cholesky", f"{n}x{n} float64"
    a = (_spd(n, rng),)
    flops = n**3 // 3
    return Workload(
        "linalg_cholesky", title, size, "forward", cholesky, a, flops=flops, **FACTORISATION
    )


def _check_svd(a: np.ndarray):
    def check(actual, expected) -> None:
        u, s, vt = (np.asarray(leaf) for leaf in leaves(actual))
        for got, want in zip((u, s, vt), leaves(expected), strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
        np.testing.assert_allclose(s, expected[1], rtol=1e-9, atol=1e-9 * s[0])
        np.testing.assert_allclose((u * s) @ vt, a, rtol=0, atol=1e-9 * s[0])

    return check


def svd_workload(scale: str, rng) -> Workload:
    n = SIZES["matrix"][_scale(scale)]
    a = rng.standard_normal((n, n))
    title = "numpy.linalg.svd (full, with u and vt)"
    return Workload(
        "linalg_svd", title, f"{n}x{n} float64", "forward", svd, (a,), custom_check=_check_svd(a)
    )


def sort_workload(scale: str, rng) -> Workload:
    n = SIZES["sort"][_scale(scale)]
    x = rng.standard_normal(n)
    title, size = "numpy.sort", f"{n:.0e} float64".replace("e+0", "e")
    return Workload("sort", title, size, "forward", sort, (x,), rtol=0, atol=0)


# Named apart from the kernels group's `cholesky` (PolyBench's loops, not a library call).
LINALG_WORKLOAD_BUILDERS = {
    "linalg_solve": solve_workload,
    "linalg_cholesky": cholesky_workload,
    "linalg_svd": svd_workload,
    "sort": sort_workload,
}
