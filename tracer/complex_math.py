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
- ``arcsin``, ``arccos``, ``arctan``, ``arcsinh``, ``arccosh``, ``arctanh``: FreeBSD's
  catrig method, which NumPy follows (below), so values, special values and the sides
  of the cuts are NumPy's; their derivatives are the holomorphic ones.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from . import indexing, lax
from . import numpy_complex as cx


def _scalar(value, dtype):
    return np.asarray(value, dtype)


def _filled(like, value):
    return lax.full(like.shape, value, like.dtype)


def _parts(z):
    return cx.real_part(z), cx.imag_part(z)


def _either(a, b):
    return lax.bitwise_or(a, b)


def _both(a, b):
    return lax.bitwise_and(a, b)


# --- NaN and infinity ------------------------------------------------------------------------


def _nan(x):
    return lax.ne(x, x)


def isnan(z):
    x, y = _parts(z)
    return _either(_nan(x), _nan(y))


def isinf(z):
    x, y = _parts(z)
    inf = _scalar(np.inf, x.dtype)
    return _either(lax.eq(lax.abs(x), inf), lax.eq(lax.abs(y), inf))


def isfinite(z):
    x, y = _parts(z)
    inf = _scalar(np.inf, x.dtype)
    return _both(lax.lt(lax.abs(x), inf), lax.lt(lax.abs(y), inf))


# --- the lexicographic order -----------------------------------------------------------------


def _lexicographic(real_compare, imaginary_compare):
    def compare(z, w):
        (x1, y1), (x2, y2) = _parts(z), _parts(w)
        no_nan = lax.logical_not(_either(_nan(y1), _nan(y2)))
        by_real = _both(real_compare(x1, x2), no_nan)
        return _either(by_real, _both(lax.eq(x1, x2), imaginary_compare(y1, y2)))

    return compare


less = _lexicographic(lax.lt, lax.lt)
less_equal = _lexicographic(lax.lt, lax.le)
greater = _lexicographic(lax.gt, lax.gt)
greater_equal = _lexicographic(lax.gt, lax.ge)


# Each keeps its first operand when the condition holds, else takes the second.
def maximum(z, w):
    return lax.select(_either(isnan(z), greater_equal(z, w)), z, w)


def minimum(z, w):
    return lax.select(_either(isnan(z), less_equal(z, w)), z, w)


def fmax(z, w):
    return lax.select(_either(isnan(w), greater_equal(z, w)), z, w)


def fmin(z, w):
    return lax.select(_either(isnan(w), less_equal(z, w)), z, w)


# --- arg-extrema and extrema -----------------------------------------------------------------


def _arg_extremum(z, axis: int, largest: bool, index_dtype):
    """The first NaN along ``axis``, else the first entry whose real part is extreme and,
    among those, whose imaginary part is."""
    x, y = _parts(z)
    nan = isnan(z)
    reduce = lax.reduce_max if largest else lax.reduce_min
    worst = _scalar(-np.inf if largest else np.inf, x.dtype)

    def extreme_entries(values, candidates):
        values = lax.select(candidates, values, worst)
        extreme = lax.broadcast_in_dim(
            reduce(values, (axis,)), values.shape, [d for d in range(values.ndim) if d != axis]
        )
        return _both(candidates, lax.eq(values, extreme))

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
    x, y = _parts(z)
    dtype = x.dtype
    zero, one, nan = _scalar(0, dtype), _scalar(1, dtype), _scalar(np.nan, dtype)
    magnitude = lax.abs(z)
    regular = _both(lax.gt(magnitude, zero), lax.lt(magnitude, _scalar(np.inf, dtype)))
    # Divided by 1 where it is not used, so its zero cotangent never meets 0/0.
    safe = lax.select(regular, magnitude, one)
    unit = cx.make_complex(lax.div(x, safe), lax.div(y, safe))
    x_infinite = lax.eq(lax.abs(x), _scalar(np.inf, dtype))
    y_infinite = lax.eq(lax.abs(y), _scalar(np.inf, dtype))
    along_x = cx.make_complex(lax.sign(lax.select(x_infinite, x, zero)), zero)
    along_y = cx.make_complex(zero, lax.sign(lax.select(y_infinite, y, zero)))
    infinite = lax.select(
        _both(x_infinite, y_infinite),
        cx.make_complex(nan, nan),
        lax.select(x_infinite, along_x, along_y),
    )
    irregular = lax.select(
        lax.eq(magnitude, zero),
        _filled(z, 0),
        lax.select(_either(x_infinite, y_infinite), infinite, cx.make_complex(nan, nan)),
    )
    return lax.select(regular, unit, irregular)


def round_parts(z, round_real):
    """``round_real`` (a real rounding function) applied to each part."""
    x, y = _parts(z)
    return cx.make_complex(round_real(x), round_real(y))


# --- logarithms and exponentials -------------------------------------------------------------


def log1p(z):
    x, y = _parts(z)
    dtype = x.dtype
    one, two, half = _scalar(1, dtype), _scalar(2, dtype), _scalar(0.5, dtype)
    near_zero = lax.lt(lax.abs(z), half)
    # Each branch sees only the operands it is right for (a discarded branch's zero
    # cotangent must not meet an infinite slope).
    x_near, y_near = (lax.select(near_zero, part, _filled(part, 0)) for part in (x, y))
    far = lax.select(near_zero, _filled(z, 0), z)
    near_modulus = lax.mul(
        half, lax.log1p(lax.add(lax.mul(x_near, lax.add(two, x_near)), lax.mul(y_near, y_near)))
    )
    far_modulus = lax.log(lax.abs(lax.add(far, _scalar(1, z.dtype))))
    modulus = lax.select(near_zero, near_modulus, far_modulus)
    return cx.make_complex(modulus, lax.atan2(y, lax.add(one, x)))


def expm1(z):
    x, y = _parts(z)
    dtype = x.dtype
    half_sine = lax.sin(lax.mul(y, _scalar(0.5, dtype)))
    real = lax.sub(
        lax.mul(lax.expm1(x), lax.cos(y)),
        lax.mul(_scalar(2, dtype), lax.mul(half_sine, half_sine)),
    )
    return cx.make_complex(real, lax.mul(lax.exp(x), lax.sin(y)))


def _scaled(z, factor):
    """``z`` times the real ``factor``, part by part (no ``inf * 0`` across parts)."""
    x, y = _parts(z)
    factor = _scalar(factor, x.dtype)
    return cx.make_complex(lax.mul(x, factor), lax.mul(y, factor))


def log_base(z, base: int):
    return _scaled(lax.log(z), 1 / math.log(base))


def exp2(z):
    return lax.exp(_scaled(z, math.log(2)))


# --- inverse trigonometric and hyperbolic functions ------------------------------------------
#
# Hull, Fairgrieve and Tang's method, as FreeBSD's catrig (which NumPy follows): every
# function is reduced to the first quadrant by the symmetries of C99 (odd, conjugate),
# computed there with the differences that cancel written out exactly, and given back its
# signs; past ``_large(dtype)`` the asymptotic forms take over before any square overflows;
# a NaN part gets C99's special values (catrig's ``isnan`` branches).


def _negative(x):
    """Whether the sign of ``x`` is negative, ``-0.0`` included (``atan2(-0.0, -1)`` is
    ``-pi``); a NaN reads as positive."""
    return lax.lt(lax.atan2(x, _scalar(-1, x.dtype)), _scalar(0, x.dtype))


def _flip(x, negative):
    """``-x`` where ``negative``: takes a part to the first quadrant and back, with a
    derivative everywhere (``abs`` has none at 0)."""
    return lax.select(negative, lax.neg(x), x)


def _large(dtype) -> float:
    """The power of two beyond which ``1 + x*x`` is ``x*x`` to the dtype's precision, so
    the leading asymptotic term is exact to rounding."""
    return 2.0 ** math.ceil(-math.log2(dtypes.finfo(dtype).eps) / 2)


def _log_modulus(x, y):
    """``log(hypot(x, y))`` of ``x, y >= 0`` without overflow, ``inf`` if either is."""
    big, small = lax.max(x, y), lax.min(x, y)
    regular = _both(lax.gt(big, _scalar(0, x.dtype)), lax.lt(big, _scalar(np.inf, x.dtype)))
    ratio = lax.div(small, lax.select(regular, big, _filled(big, 1)))
    ratio = lax.select(regular, ratio, _filled(big, 0))
    return lax.add(lax.log(big), lax.mul(_scalar(0.5, x.dtype), lax.log1p(lax.mul(ratio, ratio))))


def _hypot(x, y):
    """``sqrt(x*x + y*y)`` of ``x, y >= 0`` without underflow or overflow of the
    squares."""
    big, small = lax.max(x, y), lax.min(x, y)
    positive = lax.gt(big, _scalar(0, x.dtype))
    ratio = lax.div(small, lax.select(positive, big, _filled(big, 1)))
    return lax.mul(big, lax.sqrt(lax.add(_scalar(1, x.dtype), lax.mul(ratio, ratio))))


def _arcsine_parts(a, b):
    """For ``a, b >= 0`` and ``A = (hypot(b, 1 + a) + hypot(b, 1 - a)) / 2`` (half the sum
    of the distances from ``a + ib`` to the branch points ``+-1``): ``acosh(A)`` and
    ``sqrt(A*A - a*a)``, the parts that arcsin, arccos, arcsinh and arccosh are made of.
    ``A - 1`` and ``A - a`` are written as ``b*b*t`` plus the exact ``|a - 1|`` term, so
    neither loses digits near the cut or the branch point; for ``|z|`` past ``_large``
    they are ``log(2|z|)`` and ``b``."""
    dtype = a.dtype
    one, half, two = _scalar(1, dtype), _scalar(0.5, dtype), _scalar(2, dtype)
    is_large = lax.gt(lax.max(a, b), _scalar(_large(dtype), dtype))
    # Each branch sees only operands it is right for, so a discarded branch's zero
    # cotangent never meets an infinite slope.
    a_near, b_near = lax.select(is_large, half, a), lax.select(is_large, half, b)
    b_square = lax.mul(b_near, b_near)
    one_plus = lax.add(one, a_near)
    gap = lax.sub(one, a_near)
    r = lax.sqrt(lax.add(b_square, lax.mul(one_plus, one_plus)))
    below = lax.lt(a_near, one)
    distance = lax.select(below, gap, lax.neg(gap))  # |1 - a|
    s = _hypot(b_near, distance)
    big_a = lax.mul(half, lax.add(r, s))
    s_gap = lax.add(s, distance)  # >= b: 0 only at a = 1, b = 0
    # b*b*t, with b*b / s_gap as b * (b / s_gap): b*b underflows long before A - 1 does.
    b_square_t = lax.mul(
        half,
        lax.add(
            lax.div(b_square, lax.add(r, one_plus)),
            lax.mul(b_near, lax.div(b_near, lax.select(lax.eq(s_gap, _filled(s, 0)), one, s_gap))),
        ),
    )
    # Subnormal only at a = 1 (where s = b): clamped so that 1 / s_gap stays finite, and
    # there A - a = b*b*t is taken as it is (b / 2) rather than through t.
    subnormal = lax.lt(s_gap, _scalar(dtypes.finfo(dtype).tiny, dtype))
    s_gap = lax.max(s_gap, _scalar(dtypes.finfo(dtype).tiny, dtype))
    t = lax.mul(half, lax.add(lax.div(one, lax.add(r, one_plus)), lax.div(one, s_gap)))
    # a < 1: A - 1 = b*b*t and A - a = b*b*t + (1 - a); a >= 1: A - 1 = b*b*t + (a - 1)
    # and A - a = b*b*t.
    a_below, a_above = lax.select(below, a_near, _filled(a, 0)), lax.select(below, two, a_near)
    log_below = lax.log1p(
        lax.add(b_square_t, lax.mul(b_near, lax.sqrt(lax.mul(t, lax.add(big_a, one)))))
    )
    above_minus_one = lax.add(b_square_t, lax.sub(a_above, one))
    log_above = lax.log1p(
        lax.add(above_minus_one, lax.sqrt(lax.mul(above_minus_one, lax.add(big_a, one))))
    )
    root_below = lax.sqrt(
        lax.mul(lax.add(b_square_t, lax.sub(one, a_below)), lax.add(big_a, a_below))
    )
    root_above = lax.select(
        subnormal,
        lax.sqrt(lax.select(subnormal, lax.mul(b_square_t, lax.add(big_a, a_above)), one)),
        lax.mul(b_near, lax.sqrt(lax.mul(t, lax.add(big_a, a_above)))),
    )
    log_near = lax.select(below, log_below, log_above)
    root_near = lax.select(below, root_below, root_above)
    a_far, b_far = lax.select(is_large, a, one), lax.select(is_large, b, one)
    log_far = lax.add(_scalar(math.log(2), dtype), _log_modulus(a_far, b_far))
    return lax.select(is_large, log_far, log_near), lax.select(is_large, b, root_near)


def _swapped(z):
    """``y + ix`` for ``z = x + iy``: ``arcsin(z)`` is ``arcsinh`` of it, swapped back."""
    x, y = _parts(z)
    return cx.make_complex(y, x)


def _with_nan_cases(x, y, regular, cases):
    """``regular`` (a pair of parts) where neither part of ``z`` is NaN, else the first
    of ``cases`` (``(condition, real, imag)``, the last one's condition ``None``) that
    holds: C99's values for a NaN part."""
    real, imag = cases[-1][1], cases[-1][2]
    for condition, case_real, case_imag in reversed(cases[:-1]):
        real = lax.select(condition, case_real, real)
        imag = lax.select(condition, case_imag, imag)
    any_nan = isnan(cx.make_complex(x, y))
    return cx.make_complex(
        lax.select(any_nan, real, regular[0]), lax.select(any_nan, imag, regular[1])
    )


def _infinite(x):
    return lax.eq(lax.abs(x), _scalar(np.inf, x.dtype))


def arcsinh(z):
    x, y = _parts(z)
    negative_x, negative_y = _negative(x), _negative(y)
    a, b = _flip(y, negative_y), _flip(x, negative_x)
    log_part, root = _arcsine_parts(a, b)
    regular = (_flip(log_part, negative_x), _flip(lax.atan2(a, root), negative_y))
    nan = _filled(x, np.nan)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (_infinite(x), x, nan),
            (_infinite(y), _filled(x, np.inf), nan),
            (lax.eq(y, _scalar(0, y.dtype)), nan, y),
            (None, nan, nan),
        ],
    )


def arcsin(z):
    return _swapped(arcsinh(_swapped(z)))


def arccos(z):
    x, y = _parts(z)
    negative_y = _negative(y)
    log_part, root = _arcsine_parts(_flip(x, _negative(x)), _flip(y, negative_y))
    regular = (lax.atan2(root, x), _flip(log_part, lax.logical_not(negative_y)))
    nan = _filled(x, np.nan)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (_infinite(x), nan, _filled(x, -np.inf)),
            (_infinite(y), nan, lax.neg(y)),
            (lax.eq(x, _scalar(0, x.dtype)), _filled(x, np.pi / 2), nan),
            (None, nan, nan),
        ],
    )


def arccosh(z):
    x, y = _parts(z)
    log_part, root = _arcsine_parts(_flip(x, _negative(x)), _flip(y, _negative(y)))
    regular = (log_part, _flip(lax.atan2(root, x), _negative(y)))
    nan = _filled(x, np.nan)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (_either(_infinite(x), _infinite(y)), _filled(x, np.inf), nan),
            (lax.eq(x, _scalar(0, x.dtype)), nan, _filled(x, np.pi / 2)),
            (None, nan, nan),
        ],
    )


def arctanh(z):
    """``log((1 + z) / (1 - z)) / 2`` in the first quadrant: the real part as
    ``log1p(4a / ((1 - a)^2 + b^2)) / 4`` (``1 - a`` exact near the branch point), the
    imaginary part as ``atan2(2b, (1 - a)(1 + a) - b^2) / 2``; past ``_large``, ``1/z +
    i pi/2``."""
    x, y = _parts(z)
    dtype = x.dtype
    negative_x, negative_y = _negative(x), _negative(y)
    a, b = _flip(x, negative_x), _flip(y, negative_y)
    one, half, quarter = _scalar(1, dtype), _scalar(0.5, dtype), _scalar(0.25, dtype)
    half_pi = _filled(x, np.pi / 2)
    is_large = lax.gt(lax.max(a, b), _scalar(_large(dtype), dtype))
    a_near, b_near = lax.select(is_large, half, a), lax.select(is_large, half, b)
    gap = lax.sub(one, a_near)
    b_square = lax.mul(b_near, b_near)
    distance = lax.add(lax.mul(gap, gap), b_square)
    real_near = lax.mul(quarter, lax.log1p(lax.div(lax.mul(_scalar(4, dtype), a_near), distance)))
    # At a = 1, 4 / b^2 overflows for tiny b; there the real part is (log 2 - log b) / 2.
    at_one = _both(lax.eq(a_near, one), lax.lt(b_near, _scalar(dtypes.finfo(dtype).eps, dtype)))
    b_at_one = lax.select(at_one, b_near, one)
    real_at_one = lax.mul(half, lax.sub(_scalar(math.log(2), dtype), lax.log(b_at_one)))
    real_near = lax.select(at_one, real_at_one, real_near)
    imag_near = lax.mul(
        half,
        lax.atan2(lax.add(b_near, b_near), lax.sub(lax.mul(gap, lax.add(one, a_near)), b_square)),
    )
    a_far, b_far = lax.select(is_large, a, one), lax.select(is_large, b, one)
    scale = lax.max(a_far, b_far)
    infinite = lax.eq(scale, _scalar(np.inf, dtype))
    scale = lax.select(infinite, one, scale)
    p, q = lax.div(a_far, scale), lax.div(b_far, scale)
    norm = lax.add(lax.mul(p, p), lax.mul(q, q))
    real_far = lax.select(infinite, _filled(x, 0), lax.div(lax.div(p, norm), scale))
    imag_far = lax.select(infinite, half_pi, lax.sub(half_pi, lax.div(lax.div(q, norm), scale)))
    regular = (
        _flip(lax.select(is_large, real_far, real_near), negative_x),
        _flip(lax.select(is_large, imag_far, imag_near), negative_y),
    )
    nan, zero = _filled(x, np.nan), _filled(x, 0)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (_infinite(x), _flip(zero, negative_x), nan),
            (_infinite(y), _flip(zero, negative_x), _flip(half_pi, negative_y)),
            (lax.eq(x, zero), x, nan),
            (None, nan, nan),
        ],
    )


def arctan(z):
    return _swapped(arctanh(_swapped(z)))
