"""What the fastmath tests (``tests/backends/test_fastmath*.py``) measure with: NumPy's
function for each of ``fastmath``'s names, evaluated by the caller in a wider dtype,
and an njit loop that calls a fastmath function the way the generated code does."""

from __future__ import annotations

import numpy as np
from numba import njit

from numbax.backends.cpu import fastmath


def logistic(x):
    return 1 / (1 + np.exp(-x))


REFERENCES = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "logistic": logistic,
    "sin": np.sin,
    "cos": np.cos,
}

_loops: dict = {}


def njit_loop(name: str, dtype):
    """``apply(x, out)``: ``out[i] = f(x[i])`` for fastmath's ``name`` in ``dtype``, in an
    njit loop compiled once per process."""
    key = (name, np.dtype(dtype))
    if key not in _loops:
        function = fastmath.FUNCTIONS[key]

        @njit
        def apply(x, out):
            for i in range(x.size):
                out[i] = function(x[i])

        _loops[key] = apply
    return _loops[key]
