"""The discrete Fourier transform: one primitive, ``fft``, as ``jax.lax.fft``.

``fft(x, fft_type, fft_lengths)`` transforms the trailing ``len(fft_lengths)`` axes of
``x`` (1 to 3 of them) and leaves the leading ones as a batch:

- ``"fft"`` / ``"ifft"``: complex to complex, forward or inverse; ``ifft`` carries the
  ``1/n`` of NumPy's default (``norm="backward"``);
- ``"rfft"``: real to complex, the last axis ``n -> n // 2 + 1`` (the other half is the
  conjugate mirror image);
- ``"irfft"``: complex to real, the inverse of ``rfft``: the last axis
  ``n // 2 + 1 -> n`` with ``n = fft_lengths[-1]`` (the imaginary parts that a real
  signal cannot have, at 0 and at ``n/2``, are dropped, as NumPy's).

``n`` (padding or truncating), ``axis``/``axes`` and ``norm`` are the front end's
(``numpy_lib/numpy_fft.py``): pads, slices, transposes and a scale around this primitive.
The reference is ``numpy.fft``, in the operand's precision (NumPy 2 transforms float32
and complex64 in single precision).
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .primitive import Pattern, check, register

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")


def _fft_rule(x: ShapedArray, *, fft_type, fft_lengths) -> ShapedArray:
    check(fft_type in FFT_TYPES, "fft", f"fft_type {fft_type!r} is not one of {FFT_TYPES}")
    rank = len(fft_lengths)
    check(1 <= rank <= min(3, x.ndim), "fft", f"{rank} axes of a rank {x.ndim} operand")
    check(all(n >= 1 for n in fft_lengths), "fft", f"fft_lengths {fft_lengths} must be >= 1")
    trailing = x.shape[x.ndim - rank :]
    if fft_type == "rfft":
        check(dtypes.is_float(x.dtype), "fft", f"rfft needs a real float operand, got {x.dtype}")
        check(trailing == tuple(fft_lengths), "fft", f"rfft of {trailing} by {fft_lengths}")
        shape = (*x.shape[:-1], fft_lengths[-1] // 2 + 1)
        return ShapedArray(shape, dtypes.complex_dtype(x.dtype))
    check(dtypes.is_complex(x.dtype), "fft", f"{fft_type} needs a complex operand, got {x.dtype}")
    if fft_type == "irfft":
        expected = (*fft_lengths[:-1], fft_lengths[-1] // 2 + 1)
        check(trailing == expected, "fft", f"irfft of {trailing} to {fft_lengths}")
        return ShapedArray((*x.shape[:-1], fft_lengths[-1]), dtypes.real_dtype(x.dtype))
    check(trailing == tuple(fft_lengths), "fft", f"{fft_type} of {trailing} by {fft_lengths}")
    return x


_NUMPY = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn}


def _fft(x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out_aval = _fft_rule(ShapedArray(x.shape, x.dtype), fft_type=fft_type, fft_lengths=fft_lengths)
    if 0 in x.shape:  # pocketfft refuses empty batches
        return np.zeros(out_aval.shape, out_aval.dtype)
    result = _NUMPY[fft_type](x, s=tuple(fft_lengths), axes=axes)
    return np.asarray(result, dtype=out_aval.dtype)


fft_p = register("fft", Pattern.OPAQUE, _fft_rule, _fft, expensive=True)
