"""What ``complex_math`` and ``complex_arctrig`` are written with: a complex value's
parts, real constants of a part's dtype, and the boolean combinations of masks."""

from __future__ import annotations

import numpy as np

from ..tracer import lax
from ..tracer import lax_complex as cx


def parts(z):
    """``z``'s real and imaginary parts."""
    return cx.real_part(z), cx.imag_part(z)


def scalar(value, dtype):
    """``value`` as a constant of ``dtype`` (a Python number would be weakly typed)."""
    return np.asarray(value, dtype)


def filled(like, value):
    """An array of ``like``'s shape and dtype holding ``value`` everywhere."""
    return lax.full(like.shape, value, like.dtype)


def either(a, b):
    """Elementwise ``a or b`` of two masks."""
    return lax.bitwise_or(a, b)


def both(a, b):
    """Elementwise ``a and b`` of two masks."""
    return lax.bitwise_and(a, b)
