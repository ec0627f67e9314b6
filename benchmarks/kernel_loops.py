"""Hand-written Numba loops of the kernels in kernels.py: what an engineer writes with njit.

Each is the kernel's PolyBench (or NPBench) loop nest, serial, taking the same arrays and
returning the same results as its NumPy/JAX-style source; inputs are never modified. Loop
counts and coefficients come after the arrays, as plain arguments. float32 kernels keep
their constants float32: a Python float is a float64 in Numba and would widen the arithmetic.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .kernels import deriche_coefficients


@numba.njit
def jacobi_2d_loop(a, b, steps):
    a, b = a.copy(), b.copy()
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                b[i, j] = 0.2 * (a[i, j] + a[i, j - 1] + a[i, j + 1] + a[i + 1, j] + a[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                a[i, j] = 0.2 * (b[i, j] + b[i, j - 1] + b[i, j + 1] + b[i + 1, j] + b[i - 1, j])
    return a, b


@numba.njit
def seidel_2d_loop(a, steps):
    a = a.copy()
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                a[i, j] = (
                    a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1]
                    + a[i, j - 1] + a[i, j] + a[i, j + 1]
                    + a[i + 1, j - 1] + a[i + 1, j] + a[i + 1, j + 1]
                ) / 9.0  # fmt: skip
    return a


@numba.njit
def _heat_sweep(src, dst):
    n = src.shape[0]
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            for k in range(1, n - 1):
                c = src[i, j, k]
                dst[i, j, k] = (
                    0.125 * (src[i + 1, j, k] - 2.0 * c + src[i - 1, j, k])
                    + 0.125 * (src[i, j + 1, k] - 2.0 * c + src[i, j - 1, k])
                    + 0.125 * (src[i, j, k + 1] - 2.0 * c + src[i, j, k - 1])
                    + c
                )


@numba.njit
def heat_3d_loop(a, b, steps):
    a, b = a.copy(), b.copy()
    for _ in range(steps):
        _heat_sweep(a, b)
        _heat_sweep(b, a)
    return a, b


@numba.njit
def fdtd_2d_loop(ex, ey, hz, fict):
    ex, ey, hz = ex.copy(), ey.copy(), hz.copy()
    nx, ny = ex.shape
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                curl = ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j]
                hz[i, j] = hz[i, j] - 0.7 * curl
    return ex, ey, hz


@numba.njit
def hdiff_loop(field, coeff):
    ni, nj, nk = coeff.shape
    laplacian = np.empty((ni + 2, nj + 2, nk))
    for i in range(ni + 2):
        for j in range(nj + 2):
            for k in range(nk):
                laplacian[i, j, k] = 4.0 * field[i + 1, j + 1, k] - (
                    field[i + 2, j + 1, k] + field[i, j + 1, k]
                    + field[i + 1, j + 2, k] + field[i + 1, j, k]
                )  # fmt: skip
    flux_x = np.empty((ni + 1, nj, nk))
    for i in range(ni + 1):
        for j in range(nj):
            for k in range(nk):
                flux = laplacian[i + 1, j + 1, k] - laplacian[i, j + 1, k]
                steepens = flux * (field[i + 2, j + 2, k] - field[i + 1, j + 2, k]) > 0
                flux_x[i, j, k] = 0.0 if steepens else flux
    flux_y = np.empty((ni, nj + 1, nk))
    for i in range(ni):
        for j in range(nj + 1):
            for k in range(nk):
                flux = laplacian[i + 1, j + 1, k] - laplacian[i + 1, j, k]
                steepens = flux * (field[i + 2, j + 2, k] - field[i + 2, j + 1, k]) > 0
                flux_y[i, j, k] = 0.0 if steepens else flux
    out = np.empty_like(coeff)
    for i in range(ni):
        for j in range(nj):
            for k in range(nk):
                divergence = (
                    flux_x[i + 1, j, k] - flux_x[i, j, k] + flux_y[i, j + 1, k] - flux_y[i, j, k]
                )
                out[i, j, k] = field[i + 2, j + 2, k] - coeff[i, j, k] * divergence
    return out


@numba.njit
def adi_loop(u, steps):
    u = u.copy()
    n = u.shape[0]
    v, p, q = np.zeros_like(u), np.zeros_like(u), np.zeros_like(u)
    mul1, mul2 = 2.0 * n * n / steps, 1.0 * n * n / steps
    a, b, d, e = -mul1 / 2.0, 1.0 + mul1, -mul2 / 2.0, 1.0 + mul2
    c, f = a, d
    for _ in range(steps):
        for i in range(1, n - 1):  # column sweep
            v[0, i], p[i, 0], q[i, 0] = 1.0, 0.0, 1.0
            for j in range(1, n - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = (
                    -d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1]
                    - a * q[i, j - 1]
                ) / (a * p[i, j - 1] + b)  # fmt: skip
            v[n - 1, i] = 1.0
            for j in range(n - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        for i in range(1, n - 1):  # row sweep
            u[i, 0], p[i, 0], q[i, 0] = 1.0, 0.0, 1.0
            for j in range(1, n - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = (
                    -a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j]
                    - d * q[i, j - 1]
                ) / (d * p[i, j - 1] + e)  # fmt: skip
            u[i, n - 1] = 1.0
            for j in range(n - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]
    return u


@numba.njit
def _deriche_loop(image, zero, a1, a2, a3, a4, b1, b2):
    w, h = image.shape
    y1, y2, out = np.empty_like(image), np.empty_like(image), np.empty_like(image)
    for i in range(w):
        x1 = y_1 = y_2 = zero
        for j in range(h):
            y1[i, j] = a1 * image[i, j] + a2 * x1 + b1 * y_1 + b2 * y_2
            x1, y_2, y_1 = image[i, j], y_1, y1[i, j]
        x1 = x2 = y_1 = y_2 = zero
        for j in range(h - 1, -1, -1):
            y2[i, j] = a3 * x1 + a4 * x2 + b1 * y_1 + b2 * y_2
            x2, x1, y_2, y_1 = x1, image[i, j], y_1, y2[i, j]
    for i in range(w):
        for j in range(h):
            out[i, j] = y1[i, j] + y2[i, j]
    for j in range(h):
        x1 = y_1 = y_2 = zero
        for i in range(w):
            y1[i, j] = a1 * out[i, j] + a2 * x1 + b1 * y_1 + b2 * y_2
            x1, y_2, y_1 = out[i, j], y_1, y1[i, j]
        x1 = x2 = y_1 = y_2 = zero
        for i in range(w - 1, -1, -1):
            y2[i, j] = a3 * x1 + a4 * x2 + b1 * y_1 + b2 * y_2
            x2, x1, y_2, y_1 = x1, out[i, j], y_1, y2[i, j]
    return y1 + y2


def deriche_loop(image, alpha):
    c = {name: image.dtype.type(value) for name, value in deriche_coefficients(alpha).items()}
    zero = image.dtype.type(0.0)
    return _deriche_loop(image, zero, c["a1"], c["a2"], c["a3"], c["a4"], c["b1"], c["b2"])


@numba.njit
def cholesky_loop(a):
    n = a.shape[0]
    factor = np.zeros_like(a)
    for i in range(n):
        for j in range(i + 1):
            total = a[i, j]
            for k in range(j):
                total -= factor[i, k] * factor[j, k]
            factor[i, j] = math.sqrt(total) if i == j else total / factor[j, j]
    return factor


@numba.njit
def lu_loop(a):
    a = a.copy()
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                a[i, j] -= a[i, k] * a[k, j]
            a[i, j] /= a[j, j]
        for j in range(i, n):
            for k in range(i):
                a[i, j] -= a[i, k] * a[k, j]
    return a


@numba.njit
def doitgen_loop(a, c4):
    r, q, p = a.shape
    out = np.empty_like(a)
    for i in range(r):
        for j in range(q):
            for s in range(p):
                total = 0.0
                for t in range(p):
                    total += a[i, j, t] * c4[t, s]
                out[i, j, s] = total
    return out


@numba.njit
def floyd_warshall_loop(path):
    path = path.copy()
    n = path.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                path[i, j] = min(path[i, j], path[i, k] + path[k, j])
    return path


@numba.njit
def conv2d_bias_loop(x, w, bias):
    batch, rows, cols, channels_in = x.shape
    k, channels_out = w.shape[0], w.shape[3]
    height, width = rows - k + 1, cols - k + 1
    out = np.empty((batch, height, width, channels_out), dtype=x.dtype)
    for n in range(batch):
        for i in range(height):
            for j in range(width):
                for o in range(channels_out):
                    total = bias[o]
                    for di in range(k):
                        for dj in range(k):
                            for c in range(channels_in):
                                total += x[n, i + di, j + dj, c] * w[di, dj, c, o]
                    out[n, i, j, o] = total
    return out
