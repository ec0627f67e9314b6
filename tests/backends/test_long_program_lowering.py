"""A Python loop traced unrolled compiles on every backend: the generated source is one
statement per equation, and the generators walk a fused chain of a thousand operations
(operands nested a thousand deep, past Python's recursion limit) without recursing."""

from __future__ import annotations

import numpy as np
import pytest

import numbax

pytestmark = pytest.mark.slow  # a scale test: NUMBAX_TEST_SLOW=1 runs it (see conftest.py)

ITERATIONS = 1000


def diagonal_tanh_sum(a):
    t = 0.0
    for i in range(ITERATIONS):
        t = t + np.tanh(a[i % 10, i % 10])
    return t


def _argument(rng) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, size=(10, 10))


def test_a_thousand_iteration_loop_compiles(compiled_backend, rng):
    a = _argument(rng)
    result = compiled_backend.to_host(numbax.jit(diagonal_tanh_sum, backend=compiled_backend)(a))
    np.testing.assert_allclose(result, diagonal_tanh_sum(a), rtol=1e-12)


def test_the_gradient_of_a_thousand_iteration_loop_compiles(compiled_backend, rng):
    a = _argument(rng)
    gradient = numbax.jit(numbax.grad(diagonal_tanh_sum), backend=compiled_backend)(a)
    step = 1e-6
    expected = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[index] += step
        down[index] -= step
        expected[index] = (diagonal_tanh_sum(up) - diagonal_tanh_sum(down)) / (2 * step)
    np.testing.assert_allclose(compiled_backend.to_host(gradient), expected, rtol=1e-6, atol=1e-8)
