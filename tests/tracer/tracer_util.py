"""What the tracer tests share: jit on the reference interpreter, the check that a refusal
names the user's line, and central finite differences (the derivatives' oracle)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import numbax


def jit(fn, **kwargs):
    """``numbax.jit`` on the reference interpreter: the tracer's output, without a compile."""
    return numbax.jit(fn, backend="interpret", **kwargs)


def assert_error(error, fn, *args, says=()):
    """``fn(*args)`` raises ``error`` naming the calling test file (the user's line there)
    and each text of ``says``."""
    caller = sys._getframe(1).f_code.co_filename
    with pytest.raises(error) as info:
        fn(*args)
    message = str(info.value)
    assert f"{caller}:" in message, message
    for text in says:
        assert text in message, f"{text!r} not in {message!r}"


def central_differences(f, x, eps=1e-6):
    """The gradient of the scalar ``f`` at the float64 array ``x``, entry by entry."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad
