"""NumPy's elementwise functions and extrema of complex numbers that no primitive
computes, written on the parts (``real``, ``imag``, ``complex``): the front end
(``ufuncs``, ``numpy_ufuncs``, ``reductions``) calls these once the operands are complex
and of one dtype, so every backend runs them and every transform differentiates and
batches them through their parts.

- Order: NumPy orders complex numbers lexicographically, the real part first, and a NaN
  in an imaginary part makes the real parts' strict comparison false
  (``z < w`` is ``(x1 < x2 and no imaginary NaN) or (x1 == x2 and y1 < y2)``);
  ``maximum``/``minimum`` keep the first operand when it holds a NaN or wins, so NaNs
  propagate, ``fmax``/``fmin`` when the second holds one; ``argmax``/``argmin`` take the
  first NaN, else the first extremum, and ``max``/``min`` the entry there. Bit for bit
  NumPy's (NumPy's loops, ``CGE``/``CLE`` in its ``loops.c.src``), except that ``clip``
  (``minimum(maximum(z, low), high)``) keeps ``z`` on a tie where NumPy's keeps the
  bound: the two differ only in the sign of a zero part.
- ``sign``: ``z / |z|``, 0 at 0 (NumPy 2); an infinite part gives its own sign, two give
  NaN. Its derivative is that of ``z / |z|`` (JAX's ``lax.sign`` has none; this one is
  checked against finite differences).
- ``isnan``/``isinf``: of either part; ``isfinite``: of both.
- ``round``/``rint``: each part, half to even.
- ``log1p``: ``log|1 + z| + i atan2(y, 1 + x)``, with ``log|1 + z|`` as
  ``log1p(x (2 + x) + y^2) / 2`` near 0, where NumPy's ``log(hypot(1 + x, y))`` loses
  the digits of small ``z``; ``expm1``: ``expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y``;
  ``log2``/``log10``: ``log(z)`` times ``log2(e)``/``log10(e)``; ``exp2``: ``exp`` of
  ``z log 2`` scaled part by part (NumPy's formulas, so special values agree).
- ``arcsin``, ``arccos``, ``arctan``, ``arcsinh``, ``arccosh``, ``arctanh``: in
  ``complex_arctrig``.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..tracer import indexing, lax
from ..tracer import lax_complex as cx
from .complex_parts import both, either, filled, parts, scalar

# --- NaN and infinity ------------------------------------------------------------------------


def _nan(x):
    return lax.ne(x, x)


def isnan(z):
    x, y = parts(z)
    return either(_nan(x), _nan(y))


def isinf(z):
    x, y = parts(z)
    inf = scalar(np.inf, x.dtype)
    return either(lax.eq(lax.abs(x), inf), lax.eq(lax.abs(y), inf))


def isfinite(z):
    x, y = parts(z)
    inf = scalar(np.inf, x.dtype)
    return both(lax.lt(lax.abs(x), inf), lax.lt(lax.abs(y), inf))


# --- the lexicographic order -----------------------------------------------------------------


def _lexicographic(real_compare, imaginary_compare):
    def compare(z, w):
        (x1, y1), (x2, y2) = parts(z), parts(w)
        no_nan = lax.logical_not(either(_nan(y1), _nan(y2)))
        by_real = both(real_compare(x1, x2), no_nan)
        return either(by_real, both(lax.eq(x1, x2), imaginary_compare(y1, y2)))

    return compare


less = _lexicographic(lax.lt, lax.lt)
less_equal = _lexicographic(lax.lt, lax.le)
greater = _lexicographic(lax.gt, lax.gt)
greater_equal = _lexicographic(lax.gt, lax.ge)


# Each keeps its first operand when the condition holds, else takes the second.
def maximum(z, w):
    return lax.select(either(isnan(z), greater_equal(z, w)), z, w)


def minimum(z, w):
    return lax.select(either(isnan(z), less_equal(z, w)), z, w)


def fmax(z, w):
    return lax.select(either(isnan(w), greater_equal(z, w)), z, w)


def fmin(z, w):
    return lax.select(either(isnan(w), less_equal(z, w)), z, w)


# --- arg-extrema and extrema -----------------------------------------------------------------


def _arg_extremum(z, axis: int, largest: bool, index_dtype):
    """The first NaN along ``axis``, else the first entry whose real part is extreme and,
    among those, whose imaginary part is."""
    x, y = parts(z)
    nan = isnan(z)
    reduce = lax.reduce_max if largest else lax.reduce_min
    worst = scalar(-np.inf if largest else np.inf, x.dtype)

    def extreme_entries(values, candidates):
        values = lax.select(candidates, values, worst)
        extreme = lax.broadcast_in_dim(
            reduce(values, (axis,)), values.shape, [d for d in range(values.ndim) if d != axis]
        )
        return both(candidates, lax.eq(values, extreme))

    ordered = lax.logical_not(nan)
    by_real = extreme_entries(x, ordered)
    winners = extreme_entries(y, by_real)
    first_winner = lax.argmax(winners, axis, index_dtype)
    first_nan = lax.argmax(nan, axis, index_dtype)
    any_nan = lax.reduce_max(nan, (axis,))
    return lax.select(any_nan, first_nan, first_winner)


def argmax(z, axis: int, index_dtype=dtypes.int64):
    return _arg_extremum(z, axis, True, index_dtype)


def argmin(z, axis: int, index_dtype=dtypes.int64):
    return _arg_extremum(z, axis, False, index_dtype)


def _extremum(z, axes, largest: bool):
    """The entry ``argmax``/``argmin`` picks over ``axes`` (in C order), as NumPy's
    ``maximum.reduce`` keeps it: the first NaN, else the first extremum."""
    axes = tuple(sorted(axes))
    if not axes:
        return z
    kept = [d for d in range(z.ndim) if d not in axes]
    moved = lax.transpose(z, kept + list(axes))
    kept_shape = [z.shape[d] for d in kept]
    flat = lax.reshape(moved, kept_shape + [math.prod(z.shape[d] for d in axes)])
    last = len(kept_shape)
    index = _arg_extremum(flat, last, largest, dtypes.int64)
    index = lax.reshape(index, kept_shape + [1])
    picked = indexing.take_along_axis(flat, index, last)
    return lax.reshape(picked, kept_shape)


def reduce_max(z, axes):
    return _extremum(z, axes, largest=True)


def reduce_min(z, axes):
    return _extremum(z, axes, largest=False)


# --- sign and rounding -----------------------------------------------------------------------


def sign(z):
    x, y = parts(z)
    dtype = x.dtype
    zero, one, nan = scalar(0, dtype), scalar(1, dtype), scalar(np.nan, dtype)
    magnitude = lax.abs(z)
    regular = both(lax.gt(magnitude, zero), lax.lt(magnitude, scalar(np.inf, dtype)))
    # Divided by 1 where it is not used, so its zero cotangent never meets 0/0.
    safe = lax.select(regular, magnitude, one)
    unit = cx.make_complex(lax.div(x, safe), lax.div(y, safe))
    x_infinite = lax.eq(lax.abs(x), scalar(np.inf, dtype))
    y_infinite = lax.eq(lax.abs(y), scalar(np.inf, dtype))
    along_x = cx.make_complex(lax.sign(lax.select(x_infinite, x, zero)), zero)
    along_y = cx.make_complex(zero, lax.sign(lax.select(y_infinite, y, zero)))
    infinite = lax.select(
        both(x_infinite, y_infinite),
        cx.make_complex(nan, nan),
        lax.select(x_infinite, along_x, along_y),
    )
    irregular = lax.select(
        lax.eq(magnitude, zero),
        filled(z, 0),
        lax.select(either(x_infinite, y_infinite), infinite, cx.make_complex(nan, nan)),
    )
    return lax.select(regular, unit, irregular)


def round_parts(z, round_real):
    """``round_real`` (a real rounding function) applied to each part."""
    x, y = parts(z)
    return cx.make_complex(round_real(x), round_real(y))


# --- logarithms and exponentials -------------------------------------------------------------


def log1p(z):
    x, y = parts(z)
    dtype = x.dtype
    one, two, half = scalar(1, dtype), scalar(2, dtype), scalar(0.5, dtype)
    near_zero = lax.lt(lax.abs(z), half)
    # Each branch sees only the operands it is right for (a discarded branch's zero
    # cotangent must not meet an infinite slope).
    x_near, y_near = (lax.select(near_zero, part, filled(part, 0)) for part in (x, y))
    far = lax.select(near_zero, filled(z, 0), z)
    near_modulus = lax.mul(
        half, lax.log1p(lax.add(lax.mul(x_near, lax.add(two, x_near)), lax.mul(y_near, y_near)))
    )
    far_modulus = lax.log(lax.abs(lax.add(far, scalar(1, z.dtype))))
    modulus = lax.select(near_zero, near_modulus, far_modulus)
    return cx.make_complex(modulus, lax.atan2(y, lax.add(one, x)))


def expm1(z):
    x, y = parts(z)
    dtype = x.dtype
    half_sine = lax.sin(lax.mul(y, scalar(0.5, dtype)))
    real = lax.sub(
        lax.mul(lax.expm1(x), lax.cos(y)),
        lax.mul(scalar(2, dtype), lax.mul(half_sine, half_sine)),
    )
    return cx.make_complex(real, lax.mul(lax.exp(x), lax.sin(y)))


def _scaled(z, factor):
    """``z`` times the real ``factor``, part by part (no ``inf * 0`` across parts)."""
    x, y = parts(z)
    factor = scalar(factor, x.dtype)
    return cx.make_complex(lax.mul(x, factor), lax.mul(y, factor))


def log_base(z, base: int):
    return _scaled(lax.log(z), 1 / math.log(base))


def exp2(z):
    return lax.exp(_scaled(z, math.log(2)))
