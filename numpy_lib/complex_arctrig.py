"""Complex ``arcsin``, ``arccos``, ``arctan``, ``arcsinh``, ``arccosh`` and ``arctanh``,
written on the parts as the rest of ``complex_math``: FreeBSD's catrig method, which NumPy
follows, so values, special values and the sides of the cuts are NumPy's; their
derivatives are the holomorphic ones.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..tracer import lax
from ..tracer import lax_complex as cx
from .complex_math import isnan
from .complex_parts import both, either, filled, parts, scalar

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
    return lax.lt(lax.atan2(x, scalar(-1, x.dtype)), scalar(0, x.dtype))


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
    regular = both(lax.gt(big, scalar(0, x.dtype)), lax.lt(big, scalar(np.inf, x.dtype)))
    ratio = lax.div(small, lax.select(regular, big, filled(big, 1)))
    ratio = lax.select(regular, ratio, filled(big, 0))
    return lax.add(lax.log(big), lax.mul(scalar(0.5, x.dtype), lax.log1p(lax.mul(ratio, ratio))))


def _hypot(x, y):
    """``sqrt(x*x + y*y)`` of ``x, y >= 0`` without underflow or overflow of the
    squares."""
    big, small = lax.max(x, y), lax.min(x, y)
    positive = lax.gt(big, scalar(0, x.dtype))
    ratio = lax.div(small, lax.select(positive, big, filled(big, 1)))
    return lax.mul(big, lax.sqrt(lax.add(scalar(1, x.dtype), lax.mul(ratio, ratio))))


def _arcsine_parts(a, b):
    """For ``a, b >= 0`` and ``A = (hypot(b, 1 + a) + hypot(b, 1 - a)) / 2`` (half the sum
    of the distances from ``a + ib`` to the branch points ``+-1``): ``acosh(A)`` and
    ``sqrt(A*A - a*a)``, the parts that arcsin, arccos, arcsinh and arccosh are made of.
    ``A - 1`` and ``A - a`` are written as ``b*b*t`` plus the exact ``|a - 1|`` term, so
    neither loses digits near the cut or the branch point; for ``|z|`` past ``_large``
    they are ``log(2|z|)`` and ``b``."""
    dtype = a.dtype
    one, half, two = scalar(1, dtype), scalar(0.5, dtype), scalar(2, dtype)
    is_large = lax.gt(lax.max(a, b), scalar(_large(dtype), dtype))
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
            lax.mul(b_near, lax.div(b_near, lax.select(lax.eq(s_gap, filled(s, 0)), one, s_gap))),
        ),
    )
    # Subnormal only at a = 1 (where s = b): clamped so that 1 / s_gap stays finite, and
    # there A - a = b*b*t is taken as it is (b / 2) rather than through t.
    subnormal = lax.lt(s_gap, scalar(dtypes.finfo(dtype).tiny, dtype))
    s_gap = lax.max(s_gap, scalar(dtypes.finfo(dtype).tiny, dtype))
    t = lax.mul(half, lax.add(lax.div(one, lax.add(r, one_plus)), lax.div(one, s_gap)))
    # a < 1: A - 1 = b*b*t and A - a = b*b*t + (1 - a); a >= 1: A - 1 = b*b*t + (a - 1)
    # and A - a = b*b*t.
    a_below, a_above = lax.select(below, a_near, filled(a, 0)), lax.select(below, two, a_near)
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
    log_far = lax.add(scalar(math.log(2), dtype), _log_modulus(a_far, b_far))
    return lax.select(is_large, log_far, log_near), lax.select(is_large, b, root_near)


def _swapped(z):
    """``y + ix`` for ``z = x + iy``: ``arcsin(z)`` is ``arcsinh`` of it, swapped back."""
    x, y = parts(z)
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
    return lax.eq(lax.abs(x), scalar(np.inf, x.dtype))


def arcsinh(z):
    x, y = parts(z)
    negative_x, negative_y = _negative(x), _negative(y)
    a, b = _flip(y, negative_y), _flip(x, negative_x)
    log_part, root = _arcsine_parts(a, b)
    regular = (_flip(log_part, negative_x), _flip(lax.atan2(a, root), negative_y))
    nan = filled(x, np.nan)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (_infinite(x), x, nan),
            (_infinite(y), filled(x, np.inf), nan),
            (lax.eq(y, scalar(0, y.dtype)), nan, y),
            (None, nan, nan),
        ],
    )


def arcsin(z):
    return _swapped(arcsinh(_swapped(z)))


def arccos(z):
    x, y = parts(z)
    negative_y = _negative(y)
    log_part, root = _arcsine_parts(_flip(x, _negative(x)), _flip(y, negative_y))
    regular = (lax.atan2(root, x), _flip(log_part, lax.logical_not(negative_y)))
    nan = filled(x, np.nan)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (_infinite(x), nan, filled(x, -np.inf)),
            (_infinite(y), nan, lax.neg(y)),
            (lax.eq(x, scalar(0, x.dtype)), filled(x, np.pi / 2), nan),
            (None, nan, nan),
        ],
    )


def arccosh(z):
    x, y = parts(z)
    log_part, root = _arcsine_parts(_flip(x, _negative(x)), _flip(y, _negative(y)))
    regular = (log_part, _flip(lax.atan2(root, x), _negative(y)))
    nan = filled(x, np.nan)
    return _with_nan_cases(
        x,
        y,
        regular,
        [
            (either(_infinite(x), _infinite(y)), filled(x, np.inf), nan),
            (lax.eq(x, scalar(0, x.dtype)), nan, filled(x, np.pi / 2)),
            (None, nan, nan),
        ],
    )


def arctanh(z):
    """``log((1 + z) / (1 - z)) / 2`` in the first quadrant: the real part as
    ``log1p(4a / ((1 - a)^2 + b^2)) / 4`` (``1 - a`` exact near the branch point), the
    imaginary part as ``atan2(2b, (1 - a)(1 + a) - b^2) / 2``; past ``_large``, ``1/z +
    i pi/2``."""
    x, y = parts(z)
    dtype = x.dtype
    negative_x, negative_y = _negative(x), _negative(y)
    a, b = _flip(x, negative_x), _flip(y, negative_y)
    one, half, quarter = scalar(1, dtype), scalar(0.5, dtype), scalar(0.25, dtype)
    half_pi = filled(x, np.pi / 2)
    is_large = lax.gt(lax.max(a, b), scalar(_large(dtype), dtype))
    a_near, b_near = lax.select(is_large, half, a), lax.select(is_large, half, b)
    gap = lax.sub(one, a_near)
    b_square = lax.mul(b_near, b_near)
    distance = lax.add(lax.mul(gap, gap), b_square)
    real_near = lax.mul(quarter, lax.log1p(lax.div(lax.mul(scalar(4, dtype), a_near), distance)))
    # At a = 1, 4 / b^2 overflows for tiny b; there the real part is (log 2 - log b) / 2.
    at_one = both(lax.eq(a_near, one), lax.lt(b_near, scalar(dtypes.finfo(dtype).eps, dtype)))
    b_at_one = lax.select(at_one, b_near, one)
    real_at_one = lax.mul(half, lax.sub(scalar(math.log(2), dtype), lax.log(b_at_one)))
    real_near = lax.select(at_one, real_at_one, real_near)
    imag_near = lax.mul(
        half,
        lax.atan2(lax.add(b_near, b_near), lax.sub(lax.mul(gap, lax.add(one, a_near)), b_square)),
    )
    a_far, b_far = lax.select(is_large, a, one), lax.select(is_large, b, one)
    scale = lax.max(a_far, b_far)
    infinite = lax.eq(scale, scalar(np.inf, dtype))
    scale = lax.select(infinite, one, scale)
    p, q = lax.div(a_far, scale), lax.div(b_far, scale)
    norm = lax.add(lax.mul(p, p), lax.mul(q, q))
    real_far = lax.select(infinite, filled(x, 0), lax.div(lax.div(p, norm), scale))
    imag_far = lax.select(infinite, half_pi, lax.sub(half_pi, lax.div(lax.div(q, norm), scale)))
    regular = (
        _flip(lax.select(is_large, real_far, real_near), negative_x),
        _flip(lax.select(is_large, imag_far, imag_near), negative_y),
    )
    nan, zero = filled(x, np.nan), filled(x, 0)
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
