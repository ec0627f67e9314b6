"""Polynomials and signals (convolve, correlate, the ``poly*`` functions, vander, trapezoid,
ediff1d, unwrap, i0), as compositions of traced NumPy functions, so derivatives, batching
and every backend come with them.

Decisions where NumPy's answer is not static:

- ``convolve``/``correlate`` multiply a window matrix (a gather with constant indices)
  by the shorter operand, one contraction; past a million window entries, a loop over
  the shorter operand adds shifted copies of the longer one, in the result's memory.
- ``polydiv``'s remainder drops its leading coefficients while they are close to 0, a
  length decided by the values: it is taken from them when they are known while
  tracing, else ``numbax.numpy.polydiv(u, v, size=n)`` gives the last ``n``.
- ``poly`` of a square matrix, and ``roots``, need the eigenvalues of a general matrix
  (complex ones), refused for the reason ``numpy.linalg.eig`` is; ``poly`` of complex
  roots is real in NumPy when they pair up, a dtype decided by the values: refused
  unless they are known while tracing.
- ``polyfit`` does not warn of a poor rank (a value); ``full=True`` returns ``lstsq``'s
  static residuals and int32 rank (``numpy_linalg``'s decisions).
- ``i0`` evaluates NumPy's own Chebyshev series (its coefficient tables, read from
  NumPy) on both sides of 8, each side fed inputs in its domain, so the unused side
  has no infinity that a derivative would turn into NaN.

Each name in ``FUNCTIONS`` joins ``numbax.numpy`` and NumPy's dispatch tables
(``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib import _function_base_impl as numpy_function_base

from ..ir import dtypes
from ..ir.errors import (
    ConcretizationError,
    NumbaxTypeError,
    ShapeError,
    UnsupportedFunctionError,
)
from ..tracer import indexing, lax
from ..tracer.control_flow import fori_loop
from ..tracer.core import known_value
from ..tracer.indexing import update
from ..tracer.promote import asarray, convert, normalize_axis, result_type
from ..tracer.source_info import error_at_user_line as _error
from . import creation, linalg, numpy_complex, reductions, shapes, ufuncs
from .numpy_construction import slice_axis
from .numpy_differences import diff
from .numpy_linalg import LIMITATIONS, inv, lstsq
from .numpy_statistics import cumprod

# --------------------------------------------------------------------------------------
# Convolution and correlation

_MODES = {"valid": 0, "same": 1, "full": 2}


def _mode(mode) -> int:
    """NumPy's mode: a name or its number (0, 1, 2)."""
    if isinstance(mode, str) and mode in _MODES:
        return _MODES[mode]
    if not isinstance(mode, (str, bool)) and mode in (0, 1, 2):
        return int(mode)
    raise _error(
        ShapeError, f"convolve/correlate: mode must be 'valid', 'same' or 'full', not {mode!r}"
    )


def _vector(x, name: str, what: str):
    x = shapes.atleast_1d(asarray(x))
    if x.ndim != 1:
        raise _error(ShapeError, f"{name}: {what} must be one-dimensional (got shape {x.shape})")
    if x.shape[0] == 0:
        raise _error(ShapeError, f"{name}: {what} cannot be empty (NumPy refuses too)")
    return x


# Up to this many window entries (8 MiB of float64), the windows are gathered into one
# matrix and multiplied by ``v``: one contraction. Past it, a loop over ``v``'s entries
# adds shifted copies of ``a`` instead, in memory of the result's size.
_WINDOW_ENTRIES = 1 << 20


def _sliding_dot(a, v, mode: int):
    """``out[i] = sum_j padded[i + j] * v[j]``, ``a`` padded with zeros as NumPy's
    correlation pads it for ``mode``; ``a`` is at least as long as ``v``."""
    n, m = a.shape[0], v.shape[0]
    left = (0, m // 2, m - 1)[mode]
    right = (0, m - 1 - m // 2, m - 1)[mode]
    dtype = result_type(a, v)
    padded = lax.pad(convert(a, dtype), np.zeros((), dtype), [(left, right)])
    v = convert(v, dtype)
    length = n + left + right - m + 1
    if length * m <= _WINDOW_ENTRIES:
        windows = np.arange(length)[:, None] + np.arange(m)
        return linalg.matmul(indexing.take(padded, windows), v)

    def add_shifted(j, total):
        return total + lax.dynamic_slice(padded, (j,), (length,)) * v[j]

    return fori_loop(0, m, add_shifted, lax.full((length,), 0, dtype))


def convolve(a, v, mode="full"):
    a, v = _vector(a, "convolve", "a"), _vector(v, "convolve", "v")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    return _sliding_dot(a, shapes.flip(v), _mode(mode))


def correlate(a, v, mode="valid"):
    """NumPy's ``correlate``: ``v`` conjugated; a longer ``v`` is slid along ``a`` and the
    result reversed, as NumPy computes it (which matters for ``mode='same'``)."""
    a = _vector(a, "correlate", "the first array argument")
    v = _vector(v, "correlate", "the second array argument")
    mode = _mode(mode)
    v = numpy_complex.conjugate(v) if dtypes.is_complex(v.dtype) else v
    if v.shape[0] > a.shape[0]:
        return shapes.flip(_sliding_dot(v, a, mode))
    return _sliding_dot(a, v, mode)


# --------------------------------------------------------------------------------------
# Polynomials: coefficient arrays, highest power first


def _coefficients(p, name: str):
    p = asarray(p)
    if p.ndim == 0:
        raise _error(NumbaxTypeError, f"{name}: p must be a sequence of coefficients, not 0-d")
    return p


def polyval(p, x):
    """Horner's rule, as NumPy: ``y = y * x + p[k]`` from ``zeros_like(x)``."""
    p, x = _coefficients(p, "polyval"), asarray(x)
    y = creation.zeros_like(x)
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


def _aligned(name, a1, a2, combine):
    a1, a2 = shapes.atleast_1d(asarray(a1)), shapes.atleast_1d(asarray(a2))
    if a1.ndim != 1 or a2.ndim != 1:
        raise _error(ShapeError, f"{name}: the coefficients must be one-dimensional")
    shorter, longer = sorted([a1, a2], key=lambda a: a.shape[0])
    padded = lax.pad(
        shorter, np.zeros((), shorter.dtype), [(longer.shape[0] - shorter.shape[0], 0)]
    )
    return combine(padded, a2) if shorter is a1 else combine(a1, padded)


def polyadd(a1, a2):
    return _aligned("polyadd", a1, a2, ufuncs.add)


def polysub(a1, a2):
    return _aligned("polysub", a1, a2, ufuncs.subtract)


def polymul(a1, a2):
    return convolve(shapes.atleast_1d(asarray(a1)), shapes.atleast_1d(asarray(a2)))


def _order(m, name: str) -> int:
    m = operator.index(m)
    if m < 0:
        raise _error(ShapeError, f"{name}: the order m must be non-negative (got {m})")
    return m


def polyder(p, m=1):
    p = _coefficients(p, "polyder")
    for _ in range(_order(m, "polyder")):
        n = p.shape[0] - 1
        p = p[:-1] * np.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    m = _order(m, "polyint")
    k = shapes.atleast_1d(asarray(np.zeros(m) if k is None else k))
    if k.shape[0] == 1 and m > 1:
        k = k[0] * np.ones(m)
    if k.shape[0] < m:
        raise _error(ShapeError, "polyint: k must be a scalar or a rank-1 array of length 1 or >m")
    p = _coefficients(p, "polyint")
    for order in range(m):
        integral = p / np.arange(p.shape[0], 0, -1)
        p = shapes.concatenate([integral, shapes.reshape(k[order], (1,))])
    return p


def polydiv(u, v, *, size=None):
    """Quotient and remainder, by NumPy's long division. ``size=`` (numbax's) is the
    remainder's length: its last ``size`` coefficients, leading zeros kept."""
    u, v = shapes.atleast_1d(asarray(u)) + 0.0, shapes.atleast_1d(asarray(v)) + 0.0
    dtype = result_type(u, v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    quotient, r = [], convert(u, dtype)
    for k in range(m - n + 1):
        d = scale * r[k]
        quotient.append(d)
        r = update(r, slice(k, k + n + 1), r[k : k + n + 1] - d * v, "set")
    q = shapes.stack(quotient) if quotient else creation.zeros((1,), dtype)
    size = _remainder_size(r) if size is None else operator.index(size)
    if size > r.shape[0]:
        return q, lax.pad(r, np.zeros((), dtype), [(size - r.shape[0], 0)])
    return q, slice_axis(r, 0, r.shape[0] - size, r.shape[0])


def _remainder_size(r) -> int:
    """NumPy's remainder length: leading entries close to 0 dropped, one kept at least."""
    known = known_value(r)
    if known is None:
        raise _error(
            ConcretizationError,
            "numpy.polydiv: the remainder's length (NumPy drops its leading coefficients "
            "that are close to 0) depends on the values, which jit does not know while "
            "tracing; call numbax.numpy.polydiv(u, v, size=n) with a static size= (n = "
            "len(v) - 1 is a remainder of full degree): its last n coefficients",
        )
    start = 0
    while start < known.shape[0] - 1 and np.allclose(known[start], 0, rtol=1e-14):
        start += 1
    return known.shape[0] - start


def poly(seq_of_zeros):
    roots = shapes.atleast_1d(asarray(seq_of_zeros))
    if roots.ndim == 2 and roots.shape[0] == roots.shape[1] != 0:
        raise _error(UnsupportedFunctionError, f"numpy.poly of a matrix: {LIMITATIONS['eig']}")
    if roots.ndim != 1:
        raise _error(ShapeError, "poly: input must be 1d or non-empty square 2d array")
    # NumPy's mintypecode: float32 and the complex dtypes stay, the rest is float64.
    kept = (dtypes.float32, dtypes.complex64, dtypes.complex128)
    roots = convert(roots, roots.dtype if roots.dtype in kept else dtypes.float64)
    if roots.shape[0] == 0:
        return 1.0
    a = creation.ones((1,), roots.dtype)
    for k in range(roots.shape[0]):
        zero = np.zeros((1,), roots.dtype)
        a = shapes.concatenate([a, zero]) - roots[k] * shapes.concatenate([zero, a])
    return _real_if_conjugate(a, roots)


def _real_if_conjugate(a, roots):
    """NumPy returns the real part when the roots pair up with their conjugates: a dtype
    decided by the values, so they must be known while tracing."""
    if not dtypes.is_complex(roots.dtype):
        return a
    known = known_value(roots)
    if known is None:
        raise _error(
            ConcretizationError,
            "numpy.poly of complex roots: NumPy's result is real when the roots come in "
            "conjugate pairs, a dtype decided by the values, which jit does not know while "
            "tracing; pass real roots, or the roots as a static argument (static_argnums)",
        )
    paired = np.all(np.sort(known) == np.sort(known.conjugate()))
    return numpy_complex.real(a) if paired else a


def roots(p):
    raise _error(UnsupportedFunctionError, f"numpy.roots: {LIMITATIONS['eig']}")


def vander(x, N=None, increasing=False):
    x = asarray(x)
    if x.ndim != 1:
        raise _error(ShapeError, "vander: x must be a one-dimensional array or sequence")
    columns = x.shape[0] if N is None else operator.index(N)
    if columns < 0:
        raise _error(ShapeError, f"vander: N must be non-negative (got {columns})")
    x = convert(x, dtypes.result_type(x.dtype, dtypes.int64))
    ones = lax.full((x.shape[0], min(columns, 1)), 1, x.dtype)
    spread = lax.broadcast_in_dim(x, (x.shape[0], max(columns - 1, 0)), (0,))
    out = shapes.concatenate([ones, cumprod(spread, axis=1)], axis=1)
    return out if increasing else shapes.flip(out, axis=1)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    order = operator.index(deg) + 1
    x, y = asarray(x) + 0.0, asarray(y) + 0.0
    _check_fit_shapes(x, y, order)
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x.dtype).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = _fit_weights(w, y)
        lhs = convert(lhs * w[:, None], lhs.dtype)
        rhs = convert(rhs * (w[:, None] if rhs.ndim == 2 else w), rhs.dtype)
    scale = ufuncs.sqrt(reductions.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, residuals, rank, s = lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, residuals, rank, s, rcond
    if cov:
        return c, _fit_covariance(lhs, scale, residuals, x.shape[0] - order, cov, y.ndim)
    return c


def _check_fit_shapes(x, y, order):
    if order < 1:
        raise _error(ShapeError, "polyfit: expected deg >= 0")
    if x.ndim != 1 or x.shape[0] == 0:
        raise _error(NumbaxTypeError, "polyfit: expected a non-empty 1-d vector for x")
    if y.ndim not in (1, 2):
        raise _error(NumbaxTypeError, "polyfit: expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise _error(NumbaxTypeError, "polyfit: expected x and y to have same length")


def _fit_weights(w, y):
    w = asarray(w) + 0.0
    if w.ndim != 1 or w.shape[0] != y.shape[0]:
        raise _error(NumbaxTypeError, "polyfit: expected a 1-d array of weights, one per point")
    return w


def _fit_covariance(lhs, scale, residuals, freedom, cov, y_ndim):
    base = inv(linalg.matmul(lhs.T, lhs)) / linalg.outer(scale, scale)
    if isinstance(cov, str) and cov == "unscaled":
        factor = 1
    elif freedom <= 0:
        raise _error(
            ShapeError,
            "polyfit: the number of data points must exceed order to scale the covariance matrix",
        )
    else:
        factor = residuals / freedom
    return base * factor if y_ndim == 1 else base[:, :, None] * factor


# --------------------------------------------------------------------------------------
# Integration, differences, phases, Bessel's i0


def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = asarray(y)
    axis = normalize_axis(axis, y.ndim, "trapezoid")
    if x is None:
        d = dx
    elif asarray(x).ndim == 1:
        d = diff(x)
        d = shapes.reshape(d, [d.shape[0] if k == axis else 1 for k in range(y.ndim)])
    else:
        d = diff(x, axis=axis)
    size = y.shape[axis]
    later = slice_axis(y, axis, min(1, size), size)
    earlier = slice_axis(y, axis, 0, max(size - 1, 0))
    return reductions.sum(d * (later + earlier) / 2.0, axis=axis)


def ediff1d(ary, to_end=None, to_begin=None):
    x = shapes.ravel(asarray(ary))
    size = x.shape[0]
    parts = [slice_axis(x, 0, min(1, size), size) - slice_axis(x, 0, 0, max(size - 1, 0))]
    for end, at_start in ((to_begin, True), (to_end, False)):
        if end is not None:
            end = shapes.ravel(asarray(end))
            if not np.can_cast(end.dtype, x.dtype, casting="same_kind"):
                raise _error(
                    NumbaxTypeError,
                    f"ediff1d: dtype of `to_{'begin' if at_start else 'end'}` ({end.dtype}) "
                    f"must be compatible with input `ary` ({x.dtype}) under the `same_kind` rule",
                )
            parts.insert(0 if at_start else len(parts), end)
    return shapes.concatenate([convert(part, x.dtype) for part in parts])


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    p = asarray(p)
    axis = normalize_axis(axis, p.ndim, "unwrap")
    dd = diff(p, axis=axis)
    discont = period / 2 if discont is None else discont
    dtype = result_type(dd, period)
    if dtypes.is_integer(dtype):
        high, ambiguous = period // 2, period % 2 == 0
    else:
        high, ambiguous = period / 2, True
    ddmod = ufuncs.mod(dd + high, period) - high
    # NumPy maps a jump of exactly half a period to the half period of the jump's sign.
    boundary = ufuncs.logical_and(ufuncs.logical_and(ddmod == -high, dd > 0), ambiguous)
    ddmod = ufuncs.where(boundary, convert(asarray(high), ddmod.dtype), ddmod)
    correction = ufuncs.where(ufuncs.absolute(dd) < discont, 0, ddmod - dd)
    size = p.shape[axis]
    later = slice_axis(p, axis, min(1, size), size) + reductions.cumsum(correction, axis=axis)
    parts = [slice_axis(p, axis, 0, min(1, size)), later]
    return shapes.concatenate([convert(part, dtype) for part in parts], axis=axis)


def _chebyshev(x, coefficients):
    """NumPy's ``_chbevl``: Clenshaw's recurrence over Chebyshev coefficients."""
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


_I0_SMALL = [float(c) for c in numpy_function_base._i0A]
_I0_LARGE = [float(c) for c in numpy_function_base._i0B]


def i0(x):
    x = asarray(x)
    if dtypes.is_complex(x.dtype):
        raise _error(NumbaxTypeError, "i0 not supported for complex values (NumPy refuses too)")
    x = ufuncs.absolute(x if dtypes.is_float(x.dtype) else convert(x, dtypes.float64))
    small = x <= 8.0
    near = ufuncs.where(small, x, 0.0)
    far = ufuncs.where(small, 9.0, x)
    inside = ufuncs.exp(near) * _chebyshev(near / 2.0 - 2, _I0_SMALL)
    outside = ufuncs.exp(far) * _chebyshev(32.0 / far - 2.0, _I0_LARGE) / ufuncs.sqrt(far)
    return ufuncs.where(small, inside, outside)


FUNCTIONS: dict = {
    "convolve": convolve, "correlate": correlate, "ediff1d": ediff1d, "i0": i0,
    "poly": poly, "polyadd": polyadd, "polyder": polyder, "polydiv": polydiv,
    "polyfit": polyfit, "polyint": polyint, "polymul": polymul, "polysub": polysub,
    "polyval": polyval, "roots": roots, "trapezoid": trapezoid, "unwrap": unwrap,
    "vander": vander,
}  # fmt: skip
UFUNCS: dict = {}
