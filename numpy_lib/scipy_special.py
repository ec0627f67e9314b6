"""``numbax.scipy.special``: the ``scipy.special`` functions a model uses, written over
``numbax.numpy`` (so they trace, differentiate, batch and compile like any program), as
``jax.scipy.special`` has them. A float input keeps its dtype; an integer or bool input
gives float64, as SciPy's. SciPy's own ufuncs of these names (``scipy.special.expit(x)``
in a plain NumPy program) run these where they meet a traced array.

>>> import numpy as np
>>> from numbax.scipy.special import expit, logsumexp
>>> expit(np.array([0.0, 2.0]))
array([0.5       , 0.88079708])
>>> float(logsumexp(np.array([1000.0, 1000.0])))
1000.6931471805599
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..ir import dtypes
from ..ir.errors import UnsupportedFunctionError, at_line
from ..tracer import lax
from ..tracer.promote import asarray
from ..tracer.source_info import user_frame_info
from . import nn
from . import numpy_api as xnp
from .special import erf, erfc, erfinv

__all__ = [
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "log_softmax",
    "logit",
    "logsumexp",
    "ndtr",
    "ndtri",
    "softmax",
    "xlog1py",
    "xlogy",
]

# The functions here that SciPy has as ufuncs (the rest are Python functions over arrays).
UFUNC_NAMES = frozenset(
    ["entr", "erf", "erfc", "erfinv", "expit", "logit", "ndtr", "ndtri", "xlog1py", "xlogy"]
)

_NDTRI_NEWTON_STEPS = 3


def for_scipy_ufunc(ufunc):
    """This module's function for SciPy's ufunc ``ufunc`` (``scipy.special.expit``), or
    None: NumPy hands a ufunc called on a traced array to the tracer
    (``array_methods._array_ufunc``). SciPy is not imported for it: the ufunc came from it."""
    special = sys.modules.get("scipy.special")
    name = getattr(ufunc, "__name__", None)
    if special is None or name not in UFUNC_NAMES or getattr(special, name, None) is not ufunc:
        return None
    return globals()[name]


def _float(x):
    x = asarray(x)
    return x if dtypes.is_float(x.dtype) else lax.convert_element_type(x, dtypes.float64)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return lax.logistic(_float(x))


def logit(x):
    """The inverse of ``expit``: ``log(x / (1 - x))``."""
    x = _float(x)
    return xnp.log(xnp.divide(x, xnp.subtract(1.0, x)))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over ``axis``, without overflow for large ``a``."""
    if return_sign:
        raise UnsupportedFunctionError(
            at_line(
                "numbax.scipy.special.logsumexp(return_sign=True) is not supported: keep the "
                "weights b non-negative, or compute the sign separately",
                user_frame_info(),
            )
        )
    a = _float(a)
    if b is not None:
        with np.errstate(divide="ignore"):  # log(0) = -inf: a zero weight drops its term
            a = xnp.add(a, xnp.log(_float(b)))
    return nn.logsumexp(a, axis=axis, keepdims=keepdims)


def softmax(x, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (every axis by default, as SciPy's)."""
    return nn.softmax(_float(x), axis=axis)


def log_softmax(x, axis=None):
    """``log(softmax(x, axis))``, computed without the round trip through ``exp``."""
    return nn.log_softmax(_float(x), axis=axis)


def xlogy(x, y):
    """``x * log(y)``, and 0 where ``x`` is 0 (even where ``y`` is 0)."""
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        product = xnp.multiply(x, xnp.log(y))
    return xnp.where(xnp.equal(x, 0), xnp.zeros_like(product), product)


def xlog1py(x, y):
    """``x * log1p(y)``, and 0 where ``x`` is 0."""
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        product = xnp.multiply(x, xnp.log1p(y))
    return xnp.where(xnp.equal(x, 0), xnp.zeros_like(product), product)


def entr(x):
    """``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below."""
    x = _float(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        positive = xnp.negative(xnp.multiply(x, xnp.log(x)))
    negative = xnp.full_like(x, -np.inf)
    return xnp.where(x > 0, positive, xnp.where(xnp.equal(x, 0), xnp.zeros_like(x), negative))


def ndtr(x):
    """The standard normal distribution function ``(1 + erf(x / sqrt(2))) / 2``."""
    x = _float(x)
    return xnp.multiply(0.5, erfc(xnp.multiply(-1.0 / math.sqrt(2.0), x)))


def ndtri(p):
    """The inverse of ``ndtr``, with its relative accuracy deep in both tails."""
    p = _float(p)
    # The lower tail q = min(p, 1 - p) (1 - p is exact for p >= 1/2): start from erfinv,
    # whose argument 1 - 2q has lost q's low bits (below 1e-10, where it has lost them
    # all, from the tail's asymptotic form), then take Newton steps on ndtr(y) = q, where
    # ndtr of a negative y is an erfc, accurate relative to q.
    lower = p < 0.5
    q = xnp.where(lower, p, xnp.subtract(1.0, p))
    central = xnp.multiply(-math.sqrt(2.0), erfinv(xnp.subtract(1.0, xnp.multiply(2.0, q))))
    with np.errstate(divide="ignore", invalid="ignore"):
        twice_log = xnp.multiply(-2.0, xnp.log(q))  # -2 log q, > 46 in the far tail
        square = xnp.subtract(twice_log, xnp.log(xnp.multiply(2.0 * math.pi, twice_log)))
        far = xnp.negative(xnp.sqrt(xnp.maximum(square, np.asarray(0, q.dtype))))
    y = xnp.where(q < 1e-10, far, central)
    for _ in range(_NDTRI_NEWTON_STEPS):
        density = xnp.multiply(1.0 / math.sqrt(2.0 * math.pi), xnp.exp(-0.5 * y * y))
        step = xnp.divide(xnp.subtract(ndtr(y), q), density)
        y = xnp.where(xnp.isfinite(step), xnp.subtract(y, step), y)
    y = xnp.where(xnp.equal(q, 0), xnp.full_like(y, -np.inf), y)
    return xnp.where(lower, y, xnp.negative(y))
