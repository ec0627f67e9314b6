"""Hand-written Numba loops: the peer numbax's CPU backend has to beat with generated code.

Each loop is written once with `prange` and compiled twice: serial `njit`, where `prange` is
plain `range`, and `njit(parallel=True)`, where it is split across threads. Only the outer
loop is parallel; the inner loops stay serial, as an engineer would write them.

Constants are NumPy float32 globals (Numba freezes globals): a Python float literal is a
float64 in Numba and would widen the arithmetic, which is neither NumPy's answer nor fair.
They are compiled without `cache=True`: the serial and parallel compilations of one function
would share a cache index that does not record the `parallel` flag.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .programs import LAYER_NORM_EPSILON

ZERO = np.float32(0.0)
ONE = np.float32(1.0)
HALF = np.float32(0.5)
ONE_AND_A_HALF = np.float32(1.5)
EPSILON = np.float32(LAYER_NORM_EPSILON)


def chain_loop(x):
    out = np.empty_like(x)
    for i in prange(x.size):
        v = x[i]
        out[i] = np.tanh(v * ONE_AND_A_HALF + HALF) * HALF + v * v
    return out


def softmax_loop(x):
    out = np.empty_like(x)
    rows, cols = x.shape
    for r in prange(rows):
        row_max = x[r, 0]
        for c in range(1, cols):
            row_max = max(row_max, x[r, c])
        total = ZERO
        for c in range(cols):
            e = np.exp(x[r, c] - row_max)
            out[r, c] = e
            total += e
        for c in range(cols):
            out[r, c] /= total
    return out


def layer_norm_loop(x, gamma, beta):
    out = np.empty_like(x)
    rows, cols = x.shape
    # A float32 count: dividing a float32 by an int gives a float64 in Numba.
    count = np.float32(cols)
    for r in prange(rows):
        total = ZERO
        for c in range(cols):
            total += x[r, c]
        mean = total / count
        squares = ZERO
        for c in range(cols):
            d = x[r, c] - mean
            squares += d * d
        inverse_std = ONE / np.sqrt(squares / count + EPSILON)
        for c in range(cols):
            out[r, c] = (x[r, c] - mean) * inverse_std * gamma[c] + beta[c]
    return out


def matmul_bias_relu_loop(x, w, b):
    # np.dot is BLAS (through SciPy): nobody hand-writes a matmul loop to beat it.
    out = np.dot(x, w)
    rows, cols = out.shape
    for r in prange(rows):
        for c in range(cols):
            out[r, c] = max(out[r, c] + b[c], ZERO)
    return out


def sin_x_squared_sum_grad_loop(x):
    out = np.empty_like(x)
    for i in prange(x.size):
        v = x[i]
        out[i] = np.cos(v) * v * v + 2.0 * v * np.sin(v)
    return out


def copy_loop(src, dst):
    for i in prange(src.size):
        dst[i] = src[i]
    return dst


def add_one(x):
    return x + ONE


def serial_and_parallel(loop):
    return numba.njit(loop), numba.njit(parallel=True)(loop)


# Workload name -> (serial, parallel) dispatchers; compiled at their first call.
HAND_WRITTEN_LOOPS = {
    "chain": serial_and_parallel(chain_loop),
    "softmax": serial_and_parallel(softmax_loop),
    "layer_norm": serial_and_parallel(layer_norm_loop),
    "matmul_bias_relu": serial_and_parallel(matmul_bias_relu_loop),
    "grad": serial_and_parallel(sin_x_squared_sum_grad_loop),
}

PARALLEL_COPY = numba.njit(parallel=True)(copy_loop)
ADD_ONE = numba.njit(add_one)
