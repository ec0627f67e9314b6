"""The ``lax``-style binders of the complex primitives (``ir/complex.py``) and of the FFT
(``ir/fft.py``): what the transforms' rules and the NumPy library's complex functions
bind. NumPy's own functions of complex numbers are ``numpy_lib/numpy_complex.py``."""

from __future__ import annotations

from ..ir.complex import complex_p, conj_p, imag_p, real_p
from ..ir.fft import fft_p
from .core import bind


def real_part(x):
    return bind(real_p, x)


def imag_part(x):
    return bind(imag_p, x)


def conj(x):
    return bind(conj_p, x)


def make_complex(x, y):
    """The complex number ``x + i y`` of two operands of one real float dtype."""
    return bind(complex_p, x, y)


def fft_primitive(x, fft_type: str, fft_lengths):
    """``lax.fft``: ``fft_type`` over the trailing ``len(fft_lengths)`` axes."""
    return bind(fft_p, x, fft_type=fft_type, fft_lengths=tuple(int(n) for n in fft_lengths))
