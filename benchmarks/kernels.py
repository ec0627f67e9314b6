"""Scientific kernels (PolyBench and friends), each written once in NumPy/JAX style.

A kernel is `kernel(xnp, loops, *arrays)`: `xnp` is the array module (`numbax.numpy`,
`jax.numpy`, `numpy`) and `loops` the control flow and functional updates of the library
(`Loops`): `loops.fori_loop`, `loops.scan`, and `loops.at(x)[index].set(v)` for JAX's
`x.at[index].set(v)`. numbax and JAX run the same source under `jit`; NumPy runs it eagerly,
with Python loops and copy-on-update arrays (`EAGER_NUMPY`), as the reference every
implementation is checked against. Loop counts and coefficients are keyword arguments the
workload binds as Python values, so they are static under every `jit`.

The hand-written Numba loops of the same kernels are in kernel_loops.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Loops:
    """What a kernel needs beyond the array module, in one library's spelling."""

    fori_loop: Callable
    scan: Callable
    at: Callable  # at(x)[index] -> an updater with .set(v), .add(v), .min(v)


def _at_attribute(x):
    return x.at


def library_loops(fori_loop: Callable, scan: Callable) -> Loops:
    """The helpers of a library with JAX's API: `jax.lax` or numbax."""
    return Loops(fori_loop, scan, _at_attribute)


def _eager_fori_loop(lower, upper, body, value):
    for i in range(lower, upper):
        value = body(i, value)
    return value


def _eager_scan(f, init, xs, reverse=False):
    carry, ys = init, []
    steps = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in steps:
        carry, y = f(carry, xs[i])
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, np.stack(ys)


class _CopyUpdate:
    """`x.at[index]` for NumPy: each update returns a new array, as JAX's do."""

    def __init__(self, array: np.ndarray, index):
        self.array, self.index = array, index

    def _updated(self, combine) -> np.ndarray:
        out = self.array.copy()
        out[self.index] = combine(out[self.index])
        return out

    def set(self, value):
        return self._updated(lambda _: value)

    def add(self, value):
        return self._updated(lambda old: old + value)

    def min(self, value):
        return self._updated(lambda old: np.minimum(old, value))


class _CopyIndexer:
    def __init__(self, array: np.ndarray):
        self.array = array

    def __getitem__(self, index) -> _CopyUpdate:
        return _CopyUpdate(self.array, index)


EAGER_NUMPY = Loops(_eager_fori_loop, _eager_scan, _CopyIndexer)


# --- stencils -----------------------------------------------------------------------------


def jacobi_2d(xnp, loops, a, b, *, steps):
    """PolyBench jacobi-2d: two five-point averaging sweeps per step, A -> B -> A."""

    def sweep(src, dst):
        average = 0.2 * (
            src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] + src[2:, 1:-1] + src[:-2, 1:-1]
        )
        return loops.at(dst)[1:-1, 1:-1].set(average)

    def step(t, grids):
        a, b = grids
        b = sweep(a, b)
        return sweep(b, a), b

    return loops.fori_loop(0, steps, step, (a, b))


def seidel_2d(xnp, loops, a, *, steps):
    """PolyBench seidel-2d: in-place nine-point Gauss-Seidel, rows top to bottom.

    Every neighbour of a row's point except its new left one is known when the row starts,
    so the row is one vector sum and a first-order recurrence along it.
    """
    n = a.shape[1]

    def row(i, a):
        above, here, below = a[i - 1], a[i], a[i + 1]
        known = (
            above[:-2] + above[1:-1] + above[2:] + here[1:-1] + here[2:]
            + below[:-2] + below[1:-1] + below[2:]
        )  # fmt: skip

        def point(j, new_row):
            return loops.at(new_row)[j].set((new_row[j - 1] + known[j - 1]) / 9.0)

        return loops.at(a)[i].set(loops.fori_loop(1, n - 1, point, here))

    def step(t, a):
        return loops.fori_loop(1, a.shape[0] - 1, row, a)

    return loops.fori_loop(0, steps, step, a)


def heat_3d(xnp, loops, a, b, *, steps):
    """PolyBench heat-3d: a seven-point explicit heat step, A -> B -> A."""

    def sweep(src, dst):
        c = src[1:-1, 1:-1, 1:-1]
        new = (
            0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1])
            + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1])
            + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2])
            + c
        )
        return loops.at(dst)[1:-1, 1:-1, 1:-1].set(new)

    def step(t, grids):
        a, b = grids
        b = sweep(a, b)
        return sweep(b, a), b

    return loops.fori_loop(0, steps, step, (a, b))


def fdtd_2d(xnp, loops, ex, ey, hz, fict):
    """PolyBench fdtd-2d: one step per entry of `fict`, the source on ey's first row."""

    def step(t, fields):
        ex, ey, hz = fields
        ey = loops.at(ey)[0].set(fict[t])
        ey = loops.at(ey)[1:].set(ey[1:] - 0.5 * (hz[1:] - hz[:-1]))
        ex = loops.at(ex)[:, 1:].set(ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1]))
        curl = ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]
        hz = loops.at(hz)[:-1, :-1].set(hz[:-1, :-1] - 0.7 * curl)
        return ex, ey, hz

    return loops.fori_loop(0, fict.shape[0], step, (ex, ey, hz))


def hdiff(xnp, loops, field, coeff):
    """Horizontal diffusion (COSMO weather model): a Laplacian, flux-limited differences of
    it, and their divergence. `field` has a halo of two on each side of axes 0 and 1."""
    laplacian = 4.0 * field[1:-1, 1:-1] - (
        field[2:, 1:-1] + field[:-2, 1:-1] + field[1:-1, 2:] + field[1:-1, :-2]
    )
    # A flux that would steepen the field's local gradient is dropped (the limiter).
    flux_x = laplacian[1:, 1:-1] - laplacian[:-1, 1:-1]
    flux_x = xnp.where(flux_x * (field[2:-1, 2:-2] - field[1:-2, 2:-2]) > 0, 0.0, flux_x)
    flux_y = laplacian[1:-1, 1:] - laplacian[1:-1, :-1]
    flux_y = xnp.where(flux_y * (field[2:-2, 2:-1] - field[2:-2, 1:-2]) > 0, 0.0, flux_y)
    divergence = flux_x[1:] - flux_x[:-1] + flux_y[:, 1:] - flux_y[:, :-1]
    return field[2:-2, 2:-2] - coeff * divergence


# --- recurrences --------------------------------------------------------------------------


def _tridiagonal_sweep(loops, src, solver, source):
    """One half-step of ADI: for every interior column i, the tridiagonal system along rows j
    whose right-hand side is `src[j]`'s three-point stencil around i; rows 0 and n-1 are 1."""
    lower, diagonal, upper = solver
    left, right = source
    n = src.shape[0]

    def forward(j, pq):
        p, q = pq
        denominator = lower * p[j - 1] + diagonal
        rhs = -left * src[j, :-2] + (1.0 + 2.0 * left) * src[j, 1:-1] - right * src[j, 2:]
        p = loops.at(p)[j].set(-upper / denominator)
        q = loops.at(q)[j].set((rhs - lower * q[j - 1]) / denominator)
        return p, q

    zero = src[:, 1:-1] * 0.0
    p, q = loops.fori_loop(1, n - 1, forward, (zero, loops.at(zero)[0].set(1.0)))

    def backward(k, solution):
        j = n - 2 - k
        return loops.at(solution)[j].set(p[j] * solution[j + 1] + q[j])

    return loops.fori_loop(0, n - 2, backward, zero + 1.0)


def adi(xnp, loops, u, *, steps):
    """PolyBench adi: alternating-direction implicit 2-D heat steps, column then row sweep."""
    n = u.shape[0]
    mul1, mul2 = 2.0 * n * n / steps, 1.0 * n * n / steps
    a, b, d, e = -mul1 / 2.0, 1.0 + mul1, -mul2 / 2.0, 1.0 + mul2

    def step(t, u):
        # v[j, i] for interior i; its columns 0 and n-1 are never read.
        columns = _tridiagonal_sweep(loops, u, (a, b, a), (d, d))
        v = loops.at(xnp.zeros_like(u))[:, 1:-1].set(columns)
        rows = _tridiagonal_sweep(loops, v.T, (d, e, d), (a, a))
        return loops.at(u)[1:-1].set(rows.T)

    return loops.fori_loop(0, steps, step, u)


def deriche_coefficients(alpha: float) -> dict[str, float]:
    """PolyBench deriche's filter coefficients (the same for both directions)."""
    decay = math.exp(-alpha)
    k = (1.0 - decay) ** 2 / (1.0 + 2.0 * alpha * decay - math.exp(2.0 * alpha))
    return {
        "a1": k,
        "a2": k * decay * (alpha - 1.0),
        "a3": k * decay * (alpha + 1.0),
        "a4": -k * math.exp(-2.0 * alpha),
        "b1": 2.0**-alpha,
        "b2": -math.exp(-2.0 * alpha),
    }


def _recursive_filter(xnp, loops, image, c):
    """Deriche's causal plus anti-causal second-order filter along axis 0."""

    def causal(carry, x):
        x1, y1, y2 = carry
        y = c["a1"] * x + c["a2"] * x1 + c["b1"] * y1 + c["b2"] * y2
        return (x, y, y1), y

    def anticausal(carry, x):
        x1, x2, y1, y2 = carry
        y = c["a3"] * x1 + c["a4"] * x2 + c["b1"] * y1 + c["b2"] * y2
        return (x, x1, y, y1), y

    zero = xnp.zeros_like(image[0])
    _, forward = loops.scan(causal, (zero, zero, zero), image)
    _, backward = loops.scan(anticausal, (zero, zero, zero, zero), image, reverse=True)
    return forward + backward


def deriche(xnp, loops, image, *, alpha):
    """PolyBench deriche: edge-detecting recursive filter, along each row, then each column."""
    c = deriche_coefficients(alpha)
    along_rows = _recursive_filter(xnp, loops, image.T, c).T
    return _recursive_filter(xnp, loops, along_rows, c)


# --- linear algebra and dynamic programming -----------------------------------------------


def cholesky(xnp, loops, a):
    """The lower Cholesky factor of a symmetric positive-definite `a`, column by column."""
    n = a.shape[0]
    index = xnp.arange(n)

    def column(j, factor):
        row = factor[j]  # L[j, :j]; its entries from j on are still zero
        diagonal = xnp.sqrt(a[j, j] - xnp.sum(row * row))
        below = (a[:, j] - factor @ row) / diagonal
        new = xnp.where(index > j, below, xnp.where(index == j, diagonal, 0.0))
        return loops.at(factor)[:, j].set(new)

    return loops.fori_loop(0, n, column, xnp.zeros_like(a))


def lu(xnp, loops, a):
    """PolyBench lu: Doolittle LU without pivoting, L (unit, below the diagonal) and U in one
    matrix, by right-looking rank-1 updates."""
    index = xnp.arange(a.shape[0])

    def eliminate(k, a):
        below = index > k
        multipliers = xnp.where(below, a[:, k] / a[k, k], 0.0)
        pivot_row = xnp.where(below, a[k], 0.0)
        a = a - multipliers[:, None] * pivot_row[None, :]
        return loops.at(a)[:, k].set(xnp.where(below, multipliers, a[:, k]))

    return loops.fori_loop(0, a.shape[0], eliminate, a)


def doitgen(xnp, loops, a, c4):
    """PolyBench doitgen: every (r, q) row of `a` times `c4`, as a batched matmul."""
    r, q, p = a.shape
    return (a.reshape(r, q, 1, p) @ c4).reshape(r, q, p)


def floyd_warshall(xnp, loops, path):
    """PolyBench floyd-warshall: all-pairs shortest paths, one relaxation per middle vertex."""

    def relax(k, path):
        return xnp.minimum(path, path[:, k][:, None] + path[k][None, :])

    return loops.fori_loop(0, path.shape[0], relax, path)


def conv2d_bias(xnp, loops, x, w, bias):
    """A valid 2-D convolution, NHWC input and (K, K, C_in, C_out) weights, plus a bias."""
    k = w.shape[0]
    height, width = x.shape[1] - k + 1, x.shape[2] - k + 1
    out = x[:, :height, :width] @ w[0, 0]
    for di in range(k):
        for dj in range(k):
            if di or dj:
                out = out + x[:, di : di + height, dj : dj + width] @ w[di, dj]
    return out + bias


def jacobi_2d_inplace(xnp, loops, a, b, *, steps):
    """jacobi-2d as NumPy code is usually written: slice assignments into two grids, in a
    `fori_loop`. numbax traces the writes into functional updates and writes them back in
    place; JAX, whose arrays are immutable, cannot run it. The grids are copied first, so
    the caller's stay as they were."""
    a, b = a.copy(), b.copy()

    def step(t, grids):
        a, b = grids
        b[1:-1, 1:-1] = 0.2 * (
            a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1]
        )
        a[1:-1, 1:-1] = 0.2 * (
            b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] + b[:-2, 1:-1]
        )
        return a, b

    return loops.fori_loop(0, steps, step, (a, b))
