"""The kernels group (`--group kernels`): each kernel of kernels.py with its inputs, twice.

`NAME` (style "kernel") times the compiled kernel, numbax against JAX's `jit` of the same
source and the hand-written Numba loop; `NAME_first_call` (style "first_call") times one
call of a newly compiled instance, trace to result, in a process that has imported and
warmed up every library, with nothing of the instance in any cache (see
`implementation.first_calls`). NumPy runs the kernel eagerly once, as the reference.

Full sizes are PolyBench's SMALL or MEDIUM datasets (NPBench's for hdiff and conv2d), what a
2-core machine runs in seconds per row; quick sizes are a smoke test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import kernel_loops, kernels
from .workloads import Workload

FLOAT64 = {"rtol": 1e-9, "atol": 1e-9}
# A factorisation's rounding grows with n; the orders of the loops differ between peers.
FACTORISATION = {"rtol": 1e-7, "atol": 1e-9}
FLOAT32 = {"rtol": 1e-4, "atol": 1e-3}


def with_static(kernel: Callable, **static) -> Callable:
    """`kernel` with its loop counts and coefficients bound, named after it (numbax names
    its generated code after the function)."""

    def program(xnp, loops, *arrays):
        return kernel(xnp, loops, *arrays, **static)

    program.__name__ = program.__qualname__ = kernel.__name__
    return program


def loop_with_static(loop: Callable, *static) -> Callable:
    def run(*arrays):
        return loop(*arrays, *static)

    return run


# Per kernel: (quick, full) sizes, the shapes the builders below take apart.
SIZES = {
    "jacobi_2d": ((32, 5), (250, 100)),  # (n, steps): MEDIUM
    "seidel_2d": ((16, 2), (120, 40)),  # SMALL
    "heat_3d": ((10, 3), (40, 100)),  # SMALL
    "fdtd_2d": ((16, 20, 4), (200, 240, 100)),  # (nx, ny, steps): MEDIUM
    "hdiff": ((8, 8, 4), (64, 64, 60)),  # (I, J, K): NPBench S
    "adi": ((12, 3), (60, 40)),  # SMALL
    "deriche": ((16, 12), (720, 480)),  # (W, H): MEDIUM
    "cholesky": (8, 400),  # MEDIUM
    "lu": (8, 400),  # MEDIUM
    "doitgen": ((3, 4, 5), (50, 40, 60)),  # (R, Q, P): MEDIUM
    "floyd_warshall": (10, 500),  # MEDIUM
    "conv2d_bias": ((2, 8, 8, 3, 4), (8, 64, 64, 16, 32)),  # (N, H, W, C_in, C_out), K = 3
}

DERICHE_ALPHA = 0.25
CONV_KERNEL = 3


def _spd(n: int, rng) -> np.ndarray:
    """A well-conditioned symmetric positive-definite matrix: no pivoting needed."""
    m = rng.standard_normal((n, n))
    return m @ m.T / n + np.eye(n)


def jacobi_2d(size, rng):
    n, steps = size
    grids = (rng.uniform(0.0, 1.0, (n, n)), rng.uniform(0.0, 1.0, (n, n)))
    return "jacobi-2d", f"{n}x{n}, {steps} steps, float64", {"steps": steps}, grids, FLOAT64


def seidel_2d(size, rng):
    n, steps = size
    grid = (rng.uniform(0.0, 1.0, (n, n)),)
    return "seidel-2d", f"{n}x{n}, {steps} steps, float64", {"steps": steps}, grid, FLOAT64


def heat_3d(size, rng):
    n, steps = size
    grids = (rng.uniform(0.0, 1.0, (n, n, n)), rng.uniform(0.0, 1.0, (n, n, n)))
    return "heat-3d", f"{n}^3, {steps} steps, float64", {"steps": steps}, grids, FLOAT64


def fdtd_2d(size, rng):
    nx, ny, steps = size
    fields = tuple(rng.uniform(0.0, 1.0, (nx, ny)) for _ in range(3))
    fict = np.arange(steps, dtype=np.float64)
    return "fdtd-2d", f"{nx}x{ny}, {steps} steps, float64", {}, (*fields, fict), FLOAT64


def hdiff(size, rng):
    ni, nj, nk = size
    field = rng.uniform(0.0, 1.0, (ni + 4, nj + 4, nk))
    coeff = rng.uniform(0.0, 0.1, (ni, nj, nk))
    title = "horizontal diffusion (hdiff)"
    return title, f"{ni}x{nj}x{nk}, float64", {}, (field, coeff), FLOAT64


def adi(size, rng):
    n, steps = size
    grid = (rng.uniform(0.0, 1.0, (n, n)),)
    return "adi", f"{n}x{n}, {steps} steps, float64", {"steps": steps}, grid, FLOAT64


def deriche(size, rng):
    w, h = size
    image = (rng.uniform(0.0, 1.0, (w, h)).astype(np.float32),)
    static = {"alpha": DERICHE_ALPHA}
    return "deriche recursive filter", f"{w}x{h}, float32", static, image, FLOAT32


def cholesky(n, rng):
    return "cholesky", f"{n}x{n}, float64", {}, (_spd(n, rng),), FACTORISATION


def lu(n, rng):
    return "lu (no pivoting)", f"{n}x{n}, float64", {}, (_spd(n, rng),), FACTORISATION


def doitgen(size, rng):
    r, q, p = size
    arrays = (rng.uniform(0.0, 1.0, (r, q, p)), rng.uniform(0.0, 1.0, (p, p)))
    return "doitgen: (R,Q,1,P) @ (P,P)", f"R={r} Q={q} P={p}, float64", {}, arrays, FLOAT64


def floyd_warshall(n, rng):
    path = rng.integers(1, 100, (n, n), dtype=np.int32)
    np.fill_diagonal(path, 0)
    return "floyd-warshall", f"{n} vertices, int32", {}, (path,), {"rtol": 0, "atol": 0}


def conv2d_bias(size, rng):
    batch, height, width, c_in, c_out = size
    k = CONV_KERNEL
    x = rng.standard_normal((batch, height, width, c_in), dtype=np.float32)
    w = rng.standard_normal((k, k, c_in, c_out), dtype=np.float32) / np.float32(k * np.sqrt(c_in))
    bias = rng.standard_normal(c_out, dtype=np.float32)
    size_text = f"{batch}x{height}x{width}x{c_in} * {k}x{k}x{c_in}x{c_out}, float32"
    return "conv2d + bias (NHWC, valid)", size_text, {}, (x, w, bias), FLOAT32


# name -> (inputs, the kernel, its Numba loop); the loop takes the static values in order.
KERNELS = {
    "jacobi_2d": (jacobi_2d, kernels.jacobi_2d, kernel_loops.jacobi_2d_loop),
    "seidel_2d": (seidel_2d, kernels.seidel_2d, kernel_loops.seidel_2d_loop),
    "heat_3d": (heat_3d, kernels.heat_3d, kernel_loops.heat_3d_loop),
    "fdtd_2d": (fdtd_2d, kernels.fdtd_2d, kernel_loops.fdtd_2d_loop),
    "hdiff": (hdiff, kernels.hdiff, kernel_loops.hdiff_loop),
    "adi": (adi, kernels.adi, kernel_loops.adi_loop),
    "deriche": (deriche, kernels.deriche, kernel_loops.deriche_loop),
    "cholesky": (cholesky, kernels.cholesky, kernel_loops.cholesky_loop),
    "lu": (lu, kernels.lu, kernel_loops.lu_loop),
    "doitgen": (doitgen, kernels.doitgen, kernel_loops.doitgen_loop),
    "floyd_warshall": (floyd_warshall, kernels.floyd_warshall, kernel_loops.floyd_warshall_loop),
    "conv2d_bias": (conv2d_bias, kernels.conv2d_bias, kernel_loops.conv2d_bias_loop),
}


def jacobi_2d_inplace(size, rng):
    _, size_text, static, grids, tolerance = jacobi_2d(size, rng)
    return "jacobi-2d, in-place NumPy", size_text, static, grids, tolerance


# In-place NumPy (slice assignment), which JAX cannot run: the same Numba loop.
SIZES["jacobi_2d_inplace"] = ((32, 5), (512, 100))  # (n, steps)
KERNELS["jacobi_2d_inplace"] = (
    jacobi_2d_inplace,
    kernels.jacobi_2d_inplace,
    kernel_loops.jacobi_2d_loop,
)
NUMPY_IN_PLACE = {"jacobi_2d_inplace"}

FIRST_CALL = "_first_call"


def kernel_workload(name: str, scale: str, rng, first_call: bool = False) -> Workload:
    make_inputs, kernel, loop = KERNELS[name]
    quick, full = SIZES[name]
    title, size, static, inputs, tolerance = make_inputs(quick if scale == "quick" else full, rng)
    if first_call:
        name, title = name + FIRST_CALL, f"{title}: first call, trace to result, no cache"
    return Workload(
        name,
        title,
        size,
        "first_call" if first_call else "kernel",
        with_static(kernel, **static),
        inputs,
        by_hand=loop_with_static(loop, *static.values()),
        **tolerance,
    )


def _builder(name: str, first_call: bool) -> Callable[[str, object], Workload]:
    def build(scale: str, rng) -> Workload:
        return kernel_workload(name, scale, rng, first_call)

    return build


# In run order: each kernel, then its first call.
KERNEL_WORKLOAD_BUILDERS = {
    workload_name: _builder(name, first_call)
    for name in KERNELS
    for workload_name, first_call in ((name, False), (name + FIRST_CALL, True))
}
