"""Forward, reverse and batching rules of ``fft`` (``ir/fft.py``), as JAX's.

The transform is linear, so its tangent is the same transform of the tangent. Its
transpose (under the pairing ``<ct, t> = Re(ct * t)`` of ``complex_rules``):

- ``fft`` and ``ifft``: the DFT matrix is symmetric, so each is its own transpose;
- ``rfft`` is ``fft`` of the real signal, cut to ``n // 2 + 1``: its transpose pads the
  cotangent back to ``n`` with zeros, transforms it, and keeps the real part;
- ``irfft`` reads each frequency strictly between 0 and ``n/2`` twice (it and its mirror
  image) and those two once: its transpose is ``rfft`` of the cotangent, weighted by
  ``1, 2, ..., 2, (1)`` and ``1/n``, conjugated (JAX's convention for complex
  cotangents, https://github.com/jax-ml/jax/issues/6223).

Batching: the transform acts on the trailing axes, so a batch dimension among the
leading ones stays where it is; one among the transformed axes moves to the front.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..ir.fft import fft_p
from ..tracer import lax
from ..tracer import lax_complex as cx
from ..tracer.core import bind
from ..tracer.lax_complex import fft_primitive
from . import derivatives as d
from .batching import BATCH_RULES, moveaxis
from .vjp_rules import deflinear


@deflinear(fft_p)
def _fft_transpose(ct, x, out, *, fft_type, fft_lengths):
    if fft_type in ("fft", "ifft"):
        return [fft_primitive(ct, fft_type, fft_lengths)]
    if fft_type == "rfft":
        return [_rfft_transpose(ct, fft_lengths)]
    return [_irfft_transpose(ct, fft_lengths)]


def _rfft_transpose(ct, fft_lengths):
    shape = d.aval(ct).shape
    config = [(0, 0)] * (len(shape) - 1) + [(0, fft_lengths[-1] - shape[-1])]
    full = lax.pad(ct, np.zeros((), d.aval(ct).dtype), config)
    return cx.real_part(fft_primitive(full, "fft", fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    spectrum = fft_primitive(ct, "rfft", fft_lengths)
    size, n = d.aval(spectrum).shape[-1], fft_lengths[-1]
    weights = np.full(size, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0  # the frequency n/2 has no mirror image
    aval = d.aval(spectrum)
    scale = (weights / math.prod(fft_lengths)).astype(dtypes.real_dtype(aval.dtype))
    spread = lax.broadcast_in_dim(scale.astype(aval.dtype), aval.shape, (aval.ndim - 1,))
    return cx.conj(lax.mul(spectrum, spread))


@BATCH_RULES.rule(fft_p)
def _fft_batched(args, dims, *, fft_type, fft_lengths):
    (x,), (dim,) = args, dims
    if dim >= d.aval(x).ndim - len(fft_lengths):  # among the transformed axes
        x, dim = moveaxis(x, dim, 0), 0
    return [bind(fft_p, x, fft_type=fft_type, fft_lengths=fft_lengths)], [dim]
