"""logaddexp: NumPy's values at the infinities and NaN, and first and second derivatives
against float64 central differences, at x == y (where a max/abs formulation gets the
second derivative wrong), far below and far above y, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import numbax

POINTS = [(1.0, 1.0), (-0.3, -0.3), (-8.0, 0.0), (8.0, 0.0), (-3.0, 2.5), (40.0, -40.0)]
STEP = 1e-4


def _first(x, y, wrt):
    dx, dy = (STEP, 0.0) if wrt == 0 else (0.0, STEP)
    return (np.logaddexp(x + dx, y + dy) - np.logaddexp(x - dx, y - dy)) / (2 * STEP)


def _second(x, y, first_wrt, then_wrt):
    """d/d(then) of d/d(first), central differences of central differences."""
    dx, dy = (STEP, 0.0) if then_wrt == 0 else (0.0, STEP)
    up, down = _first(x + dx, y + dy, first_wrt), _first(x - dx, y - dy, first_wrt)
    return (up - down) / (2 * STEP)


def test_values_at_infinities_and_nan_match_numpy(backend):
    special = [np.inf, -np.inf, np.nan, 0.0, 5.0, -40.0]
    x, y = (np.array(v) for v in zip(*[(a, b) for a in special for b in special], strict=True))
    got = backend.to_host(numbax.jit(np.logaddexp, backend=backend)(x, y))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, np.logaddexp(x, y))


def test_second_derivative_at_a_tie_is_a_quarter():
    assert numbax.grad(numbax.grad(np.logaddexp))(1.0, 1.0) == pytest.approx(0.25)


@pytest.mark.parametrize("x, y", POINTS)
def test_first_and_second_derivatives_match_finite_differences(backend, x, y):
    first = [numbax.grad(np.logaddexp, argnums=k) for k in (0, 1)]
    second = {
        (i, j): numbax.jit(numbax.grad(first[i], argnums=j), backend=backend)
        for i in (0, 1)
        for j in (0, 1)
    }
    for k in (0, 1):
        got = numbax.jit(first[k], backend=backend)(x, y)
        np.testing.assert_allclose(got, _first(x, y, k), rtol=1e-7, atol=1e-9)
    for (i, j), fn in second.items():
        np.testing.assert_allclose(fn(x, y), _second(x, y, i, j), rtol=1e-5, atol=1e-6)


def test_forward_over_reverse_second_derivative_at_a_tie():
    grad_x = numbax.grad(np.logaddexp)
    _, curvature = numbax.jvp(lambda x: grad_x(x, 2.0), (2.0,), (1.0,))
    assert curvature == pytest.approx(0.25)
