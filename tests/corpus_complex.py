"""Corpus cases for complex numbers and ``numpy.fft`` (registered into ``corpus.CASES``).

Values are checked against NumPy with their dtype (complex64 stays complex64, a float32
array times ``1j`` is complex64 by NEP 50), on every backend, and batched against a
loop. Derivatives of complex programs are checked in tests/transforms/test_complex_grad.py
(finite differences in the real and the imaginary direction, and JAX's own results):
the corpus' ``grad`` oracle differentiates real arguments only.
"""

from __future__ import annotations

import numpy as np
from corpus import POSITIVE, c64, c128, case, f32, f64, i32

FFT = 100.0  # pocketfft's order of operations differs between NumPy and Rocket-FFT


@case(
    "complex_arithmetic",
    [(c128(3, 4), c128(4)), (c64(2, 3), c64(2, 3)), (c128(), c128(5)), (c64(0, 2), c64(2))],
    tags=["ufunc", "complex"],
)
def complex_arithmetic(z, w):
    return z * w - z / (w + 2.0), -z + 1j * w, z**2 + w**3, z == z, z != w


@case(
    "complex_functions",
    [(c128(3, 4, values=POSITIVE),), (c64(5, values=POSITIVE),), (c128(),)],
    tags=["ufunc", "complex"],
    tolerance=10.0,
)
def complex_functions(z):
    return (
        np.exp(z), np.log(z), np.sqrt(z), np.sin(z), np.cos(z), np.tan(z), np.tanh(z),
        np.sinh(z), np.cosh(z), np.abs(z), np.angle(z), np.conj(z), np.real(z), np.imag(z),
        z.real * z.imag, z.conj(), np.reciprocal(z), np.square(z), np.power(z, 0.5 + 1j),
    )  # fmt: skip


@case(
    "complex_promotion",
    [(f32(3), f32(3)), (f64(2, 2), f64(2)), (i32(4), f64(4)), (f32(2, 3), f32())],
    tags=["ufunc", "complex"],
)
def complex_promotion(x, y):
    # NEP 50: a Python complex takes the array's precision (float32 * 1j is complex64).
    z = x + 1j * y
    return (
        z,
        x * (2 - 1j),
        x.astype(np.complex128) + y,
        np.angle(x),
        np.real(x),
        np.imag(x),
        np.conj(x),
    )


@case(
    "complex_reductions",
    [(c128(3, 4),), (c64(2, 5),), (c128(0, 3),), (c128(6),)],
    tags=["reduction", "complex"],
)
def complex_reductions(z):
    return z.sum(), np.sum(z, axis=0), np.prod(z, axis=-1), np.mean(z), z.mean(axis=-1)


@case(
    "complex_dot",
    [(c128(3, 4), c128(4, 2)), (c64(2, 3), c64(3, 3)), (c128(4), c128(4, 5))],
    tags=["linalg", "complex"],
    tolerance=10.0,
)
def complex_dot(a, b):
    return np.dot(a, b), a @ b, np.conj(a) @ b


@case(
    "fft_round_trip",
    [(c128(3, 8),), (c64(2, 7),), (c128(5),), (c128(2, 3, 4),)],
    tags=["fft", "complex"],
    tolerance=FFT,
)
def fft_round_trip(z):
    return (
        np.fft.fft(z), np.fft.ifft(np.fft.fft(z)), np.fft.fft(z, n=6, axis=0, norm="ortho"),
        np.fft.ifft(z, norm="forward"), np.fft.fftn(z), np.fft.ifftn(z, axes=(0,), norm="ortho"),
        np.fft.fftshift(z), np.fft.ifftshift(z, axes=-1),
    )  # fmt: skip


@case(
    "rfft_round_trip",
    [(f64(3, 8),), (f32(2, 9),), (f64(6),), (f64(2, 3, 5),)],
    tags=["fft", "complex"],
    tolerance=FFT,
)
def rfft_round_trip(x):
    n = x.shape[-1]
    spectrum, full = np.fft.rfft(x), np.fft.rfftn(x)
    return (
        spectrum, np.fft.irfft(spectrum, n), np.fft.rfft(x, n=4, norm="forward"),
        np.fft.irfft(spectrum, norm="ortho"), full, np.fft.irfftn(full, x.shape, range(x.ndim)),
        np.fft.rfft2(x, norm="ortho") if x.ndim > 1 else spectrum, np.abs(spectrum) ** 2,
        np.fft.rfftfreq(n, 0.5), np.fft.fftfreq(n),
    )  # fmt: skip


@case(
    "complex_order",
    [(c128(3, 4), c128(3, 4)), (c64(2, 5), c64(5)), (c128(), c128(4)), (c64(0, 3), c64(3))],
    tags=["ufunc", "complex"],
)
def complex_order(z, w):
    # NumPy orders complex numbers lexicographically, the real part first.
    return (
        z < w, z <= w, z > w, z >= w, np.maximum(z, w), np.minimum(z, w), np.fmax(z, w),
        np.fmin(z, w), np.clip(z, -1 - 1j, w),
    )  # fmt: skip


@case(
    "complex_math",
    [(c128(3, 4),), (c64(2, 5),), (c128(),), (c64(0, 2),)],
    tags=["ufunc", "complex"],
    tolerance=10.0,
)
def complex_math(z):
    return (
        np.sign(z), np.log1p(z), np.expm1(z), np.log2(z), np.log10(z), np.exp2(z),
        np.power(2.0, z), z**-2, np.float_power(z, 2), np.isnan(z), np.isinf(z),
        np.isfinite(z), np.round(z, 1), np.rint(z * 3),
    )  # fmt: skip


@case(
    "complex_extrema",
    [(c128(3, 4),), (c64(2, 5),), (c128(6),), (c128(2, 3, 4),)],
    tags=["reduction", "complex"],
)
def complex_extrema(z):
    return (
        np.max(z), np.min(z, axis=0), np.argmax(z), np.argmin(z, axis=-1),
        z.max(axis=-1, keepdims=True), np.sort(z, axis=-1), np.argsort(z, axis=0),
    )  # fmt: skip


@case(
    "hermitian_fft",
    [(c128(3, 5), f64(3, 6)), (c64(2, 4), f32(4, 7)), (c128(6), f64(5))],
    tags=["fft", "complex"],
    tolerance=FFT,
)
def hermitian_fft(z, x):
    return (
        np.fft.hfft(z), np.fft.hfft(z, 7, axis=0, norm="ortho"), np.fft.ihfft(x),
        np.fft.ihfft(x, n=4, axis=0, norm="forward"), np.fft.hfft(np.fft.ihfft(x), x.shape[-1]),
    )  # fmt: skip
