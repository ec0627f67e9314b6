"""``erf``, ``erfc`` and ``erfinv`` written in numbax primitives, against SciPy, eagerly
and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.numpy_lib.special import erf, erfc, erfinv

special = pytest.importorskip("scipy.special", reason="SciPy is the oracle of erf")

X = np.concatenate([np.linspace(-6.0, 6.0, 4001), np.linspace(2.0, 26.0, 1001), [0.0, -0.0]])
U = np.concatenate([np.linspace(-1.0, 1.0, 4001)[1:-1], 1.0 - np.logspace(-16, -1, 200)])


def test_float64_accuracy():
    assert np.max(np.abs(erf(X) - special.erf(X))) < 2e-15
    assert np.max(np.abs(erfc(X) / special.erfc(X) - 1)) < 2e-13
    reference = special.erfinv(U)
    nonzero = reference != 0
    assert np.max(np.abs(erfinv(U)[nonzero] / reference[nonzero] - 1)) < 2e-14
    assert list(erfinv(np.array([-1.0, 0.0, 1.0]))) == [-np.inf, 0.0, np.inf]


def test_float32_keeps_its_dtype_and_precision():
    x, u = X.astype(np.float32), U[np.abs(U) < 0.9999].astype(np.float32)
    assert erf(x).dtype == erfinv(u).dtype == np.float32
    assert np.max(np.abs(erf(x) - special.erf(x.astype(np.float64)))) < 1e-6
    reference = special.erfinv(u.astype(np.float64))
    nonzero = reference != 0
    assert np.max(np.abs(erfinv(u)[nonzero] / reference[nonzero] - 1)) < 1e-5


def test_compiled_matches_eager(backend):
    x = np.linspace(-3.0, 3.0, backend.size(64, simulated=6))
    u = np.tanh(x)
    got = backend.to_host(
        numbax.jit(lambda x, u: (erf(x), erfc(x), erfinv(u)), backend=backend)(x, u)
    )
    for actual, expected in zip(got, (erf(x), erfc(x), erfinv(u)), strict=True):
        np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=1e-15)
