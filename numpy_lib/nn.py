"""``numbax.nn``: the usual neural-network functions, written over ``numbax.numpy``.

Softmax, log_softmax and logsumexp subtract the maximum (under ``stop_gradient``, which
changes nothing mathematically) so they are stable for large inputs.

Dtypes: a function of a float array returns that array's dtype (a float32 model stays
float32); an integer or bool input computes in float64, as NumPy's ``exp`` of one does
(``relu`` keeps any dtype). ``one_hot``, which has no float input to follow, returns
float32 unless told otherwise, as ``jax.nn.one_hot``: its result usually meets a model's
float32 outputs in a loss, which a float64 one would silently turn float64.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..tracer import lax
from ..tracer.promote import asarray
from . import numpy_api as xnp

__all__ = ["gelu", "log_softmax", "logsumexp", "one_hot", "relu", "sigmoid", "softmax"]


def relu(x):
    x = asarray(x)
    return xnp.maximum(x, np.asarray(0, x.dtype))


def sigmoid(x):
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        x = lax.convert_element_type(x, dtypes.float64)
    return lax.logistic(x)


def gelu(x, approximate: bool = True):
    """GELU; the tanh approximation by default, as ``jax.nn.gelu``; with
    ``approximate=False`` the exact ``x/2 (1 + erf(x / sqrt 2))``."""
    x = asarray(x)
    if not dtypes.is_float(x.dtype):
        x = lax.convert_element_type(x, dtypes.float64)
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        inner = xnp.multiply(c, xnp.add(x, xnp.multiply(0.044715, xnp.power(x, 3))))
        return xnp.multiply(xnp.multiply(0.5, x), xnp.add(1.0, xnp.tanh(inner)))
    erf = lax.erf(xnp.multiply(x, 1 / math.sqrt(2.0)))
    return xnp.multiply(xnp.multiply(0.5, x), xnp.add(1.0, erf))


def _stable_max(x, axis):
    big = lax.stop_gradient(xnp.max(x, axis=axis, keepdims=True))
    # A row of -inf has max -inf; subtracting it would give NaN, so shift by 0 instead.
    return xnp.where(xnp.isfinite(big), big, np.asarray(0, x.dtype))


def logsumexp(x, axis=None, keepdims=False):
    x = asarray(x)
    shift = _stable_max(x, axis)
    total = xnp.sum(xnp.exp(xnp.subtract(x, shift)), axis=axis, keepdims=True)
    out = xnp.add(xnp.log(total), shift)
    return out if keepdims else xnp.squeeze(out, axis=axis)


def softmax(x, axis=-1):
    x = asarray(x)
    unnormalized = xnp.exp(xnp.subtract(x, _stable_max(x, axis)))
    return xnp.true_divide(unnormalized, xnp.sum(unnormalized, axis=axis, keepdims=True))


def log_softmax(x, axis=-1):
    x = asarray(x)
    shifted = xnp.subtract(x, _stable_max(x, axis))
    return xnp.subtract(shifted, xnp.log(xnp.sum(xnp.exp(shifted), axis=axis, keepdims=True)))


def one_hot(x, num_classes: int, dtype=dtypes.float32, axis=-1):
    """``x``'s integer classes as one-hot vectors of length ``num_classes`` along
    ``axis``; float32 by default, as ``jax.nn.one_hot`` (a class outside the range gives
    a row of zeros).

    >>> import numpy as np, numbax
    >>> numbax.nn.one_hot(np.array([0, 2]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    x = asarray(x)
    classes = xnp.arange(num_classes)
    x = xnp.expand_dims(x, axis)
    ndim = x.ndim
    classes = xnp.reshape(classes, [num_classes if i == axis % ndim else 1 for i in range(ndim)])
    return xnp.array(xnp.equal(x, classes), dtype=dtype)
