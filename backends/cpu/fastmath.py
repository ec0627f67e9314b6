"""Vectorisable exp, expm1, log, log1p, tanh, logistic, sin, cos and erf for Numba loops.

Numba from PyPI has no SVML, so ``math.tanh`` and friends in a loop are scalar libm
calls and LLVM cannot vectorise the loop. The functions here are plain arithmetic
instead: range reduction, a polynomial, a rescale. They are compiled ``forceinline``, so
LLVM inlines them into the caller's loop, with their own strict floating-point flags
whatever the caller's, and they are branch-free (every ``a if cond else b`` selects
between values already computed), so LLVM's loop vectoriser turns the loop into SIMD
code. There are no ``math``/``np`` calls and no Python-semantics division (its
divide-by-zero check would be a branch that blocks vectorisation): division, bit casts
and polynomial evaluation are small LLVM intrinsics defined below. The algorithms'
building blocks (``fastmath_blocks``) are ``forceinline`` functions too, each compiled once per
argument types and shared by every function that uses it.

Each algorithm is written once, generic over the float type, and reads its numbers from
a constants table (``_FLOAT32`` or ``_FLOAT64``); ``exp_f32`` is ``_exp`` with its
argument cast to float32 and the float32 table. Float32 functions compute in float32,
except the sin/cos range reduction, which runs in float64
(see ``fastmath_blocks.reduce_half_pi_f32``).

Method per function (x = k*ln2 + r means Cody-Waite reduction, where ln2 is split into
a short head, so k*head is exact, and a tail):

- exp: x = k*ln2 + r, |r| <= ln2/2; exp(r) = 1 + r + r^2 P(r); times 2^k built from the
  exponent bits, in two factors so that subnormal results are rounded once.
- expm1: as exp, then 2^k (1 + expm1(r)) - 1 = 2^k expm1(r) + (2^k - 1), where 2^k - 1
  is exact for the k where it matters. The rounding error of r is carried along.
- log: x = 2^k m, m in [sqrt(1/2), sqrt(2)); with f = m - 1 and s = f / (2 + f),
  log(m) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + z Q(z)), z = s^2 (the form keeps the big
  terms exact). Subnormal x are scaled up first.
- log1p: the log kernel on u = fl(1 + x), plus the rounding error of 1 + x divided by u.
- tanh, float64: tanh|x| = -e / (e + 2) with e = expm1(-2|x|) in (-1, 0]: nothing
  overflows and e + 2 never cancels; the sign is copied from x. (Switching to
  (1 - E) / (1 + E), E = exp(-2|x|), for large |x| cuts the error from 2.5 to 2.1 ulp
  but costs 30%.)
- tanh, float32: XLA's method (Eigen's ``ptanh_float``), with our own coefficients:
  x clamped to [-9.02, 9.02] (tanh rounds to +-1 there), then x P(x^2) / Q(x^2), P and
  Q of degree 4 by FMA Horner steps, exactly +-1 at the clamp. A third of the expm1 form's
  instructions (the float32 loop ``tanh(1.5x + 0.5) * 0.5 + x * x`` reaches the memory
  bandwidth: 0.6x XLA's time at 2^22 elements, 2x faster than the expm1 form), for 5.5
  ulps where the expm1 form had 2.5 (see ``_tanh_rational``).
- logistic: e = exp(-|x|) in (0, 1]; 1 / (1 + e) for x >= 0, e / (1 + e) below.
- erf, float32: XLA's method again (a rational on a clamped range), our own coefficients:
  x clamped to [-4, 4] (erf rounds to +-1 from 3.92), then x P(x^2) / Q(x^2), P of degree
  6 and Q of degree 5 (``_erf_rational``). No exponential: about 15 instructions.
- erf, float64: x + x S(x^2) for |x| < 1 (S of degree 12); above, 1 - exp(-a^2 + T(a))
  with the sign of x, a = |x| clamped to 6 (erf rounds to +-1 from 5.93), T of degree 22
  in a - 3.5 and -a^2 + T rounded once by an FMA. Both branches are computed, then one
  is selected (``_erf``). Fitted by ``tools/fit_erf.py``.
- sin, cos: x = q*pi/2 + r (mod 2 pi) with r kept as a double-word r + lo, then the
  sin or cos polynomial on [-pi/4, pi/4] chosen by q mod 4. The reduction is exact for
  every x (Payne-Hanek's idea, without its loop): x times the bits of 2/pi that matter
  for x's exponent, read from a table with a row per exponent (``fastmath_blocks``),
  as FMA-split products summed in double-words. Branch-free, it costs every element
  four table reads (gathers, in vector code): float64 sin and cos take about twice the
  time of a Cody-Waite reduction exact only to 1.7e9, float32 ones 1.2 times (two
  reads), still several times faster than NumPy's libm loop.

Polynomial coefficients are our own Remez (minimax) fits, computed with mpmath at 50
digits on the stated interval and rounded to the table's type; the error quoted beside
each is the fit's, relative to the function value, after rounding the coefficients.
Splitting constants (ln2's head and tail, pi/2's) are ln2 and pi/2 rounded to the
stated number of bits, each tail being the rounded remainder; the bits of 2/pi come
from Machin's formula in Python integers, at import.

Accuracy: errors stay below ``ULP_BOUNDS`` (ulps of the exact result, against NumPy in
higher precision), which tests/backends/test_fastmath.py and
tests/backends/test_fastmath_float32.py assert. Measured maxima: float32 over all 2^32
inputs against float64 libm (the rational tanh over every float32 of |x| <= 10: above,
the result is exactly 1), float64 over 3e7 random inputs
(every exponent equally likely, plus typical ranges) against long double; sin and cos
measured again with the exact reduction over 2^20 random bit patterns per type, 2^18
log-uniform inputs from 1e9 to the largest float, and the float64 closest to a
multiple of pi/2:

    ========  =======  =======  ===================
    function  float32  float64  bound
    ========  =======  =======  ===================
    exp        0.95     0.94     1
    expm1      1.08     1.11     1.5
    log        0.84     0.81     1
    log1p      0.87     0.83     1
    tanh       5.54     2.50     6 (float32), 3
    logistic   2.40     2.12     2.5
    sin        0.77     0.84     1
    cos        0.76     0.83     1
    erf        5.68     1.75     6 (float32), 2
    ========  =======  =======  ===================

(erf, added with FMA Horner steps: float32 over every float32 of [0, 4], the function
being odd and exactly +-1 beyond; float64 over 3e6 uniform inputs of [-7, 7] and
[-1.2, 1.2] against a long-double reference (Taylor series below 1,
1 - exp(-x^2) erfcx(x) above), tests/backends/test_fastmath_erf.py.)

Those maxima were measured with a multiply and an add per Horner step. Since the steps
are FMAs (``polynomial``) the test suites' maxima are (float32: every 1021st float32 of
[-20, 20] and 2048 inputs per exponent; float64: test_fastmath's 6e5-7e5 inputs per
function): exp 0.90/0.92, expm1 0.90/1.08, log 0.77/0.77, log1p 0.80/0.82, tanh
5.15/2.49, logistic 2.22/1.88, sin 0.76/0.86, cos 0.76/0.84; and every float32 of
[-20, 20] is within the bounds for exp, expm1, log, log1p, tanh and logistic (the slow
sweep of test_fastmath_float32, run on 2026-12-05).

Special values match NumPy exactly, signs of zero included: +-0, +-inf, NaN, subnormal
inputs and results, overflow to inf and underflow to 0 at the same thresholds. The
reduction needs FMA (``llvm.fma``): one instruction on x86-64-v3 and later; a CPU
without it gets libm's exact ``fma``, correct but not vectorised.

Example::

    from numba import njit
    from numbax.backends.cpu.fastmath import tanh_f32

    @njit
    def kernel(x, out):
        for i in range(x.size):
            out[i] = tanh_f32(x[i])
"""

import numpy as np
from numba import njit

from .fastmath_blocks import (
    bits,
    divide,
    float_from_bits,
    fma,
    helper,
    polynomial,
    reduce_half_pi_f32,
    reduce_half_pi_f64,
    round_double_word,
    small_int_to_float,
    table,
)

_FLOAT32 = table(
    np.float32,
    mantissa_bits=23,
    exponent_bias=127,
    ln2_head="0x1.62e4p-1",  # 16 bits: |k| <= 150 has 8
    ln2_tail="0x1.7f7d1cp-20",
    exp_low="-0x1.ap+6",  # -104
    exp_high="0x1.64p+6",  # 89
    expm1_low="-0x1.2p+4",  # -18
    identity_below="0x1p-25",
    sin_identity_below="0x1p-12",
    # tanh(x) rounds to 1 from 9.01 on (1 - tanh(x) < 2^-25)
    tanh_one_from="0x1.20a3d8p+3",  # 9.02
    # a in [0, 9.02]: a P/Q has error 2^-25.3 relative to tanh(a) before rounding the
    # coefficients; rounded, then nudged by ulps to the smallest error of the float32
    # evaluation (measured over every float32 input).
    tanh_numerator=("0x1.11f8a4p-3", "0x1.c99c76p-9", "0x1.58819ap-16", "0x1.c7067ap-27"),
    tanh_denominator=("0x1.de51ap-2", "0x1.a7b49cp-6", "0x1.57c4aep-12", "0x1.9f22dap-21"),
    # erf(x) rounds to 1 from 3.92 on; x in [0, 4]: x P/Q has error 2^-28.9 relative to
    # erf(x) (tools/fit_erf.py); rounded, then nudged by ulps to the smallest error of
    # the float32 evaluation (every float32 of [2, 4] and every 53rd of [0.25, 2]: 6.1 to
    # 5.7 ulps)
    erf_one_from="0x1p+2",
    erf_numerator=(
        "0x1.20dd76p+0",
        "0x1.7b4bc2p-3",
        "0x1.bcf6bap-5",
        "0x1.f89328p-9",
        "0x1.8e0c32p-12",
        "0x1.3a637ap-18",
        "-0x1.c59ee2p-27",
    ),
    erf_denominator=(
        "0x1.fd678ep-2",
        "0x1.d2c5f6p-4",
        "0x1.faa936p-7",
        "0x1.56c54ap-10",
        "0x1.08b43ap-14",
    ),
    # r in [-0.35, 0.35], error 2^-29.3 relative to expm1(r)
    expm1_poly=(
        "0x1p-1",
        "0x1.555556p-3",
        "0x1.5554e4p-5",
        "0x1.1110a8p-7",
        "0x1.6d4930p-10",
        "0x1.a18532p-13",
    ),
    # z in [0, 0.0295], error 2^-28.4
    log_poly=("0x1.55555cp-1", "0x1.997bf8p-2", "0x1.2eee4ap-2"),
    # r in [-0.786, 0.786] (pi/4 plus rounding slack), error 2^-28.3
    sin_poly=("-0x1.555556p-3", "0x1.11110ep-7", "-0x1.a013a4p-13", "0x1.6dbcaep-19"),
    # same interval, error 2^-29.5
    cos_poly=("0x1.555554p-5", "-0x1.6c12dp-10", "0x1.9bd76p-16"),
)

_FLOAT64 = table(
    np.float64,
    mantissa_bits=52,
    exponent_bias=1023,
    ln2_head="0x1.62e42fefa38p-1",  # 42 bits: |k| <= 1076 has 11
    ln2_tail="0x1.ef35793c7673p-45",
    exp_low="-0x1.750p+9",  # -746
    exp_high="0x1.630p+9",  # 710
    expm1_low="-0x1.4p+5",  # -40
    identity_below="0x1p-54",
    sin_identity_below="0x1p-26",
    # erf(x) rounds to 1 from 5.93 on. S: z in [0, 1], error 2^-56.3 relative to erf;
    # T: a in [1, 6], error 2^-53.7 relative to erf (tools/fit_erf.py)
    erf_one_from="0x1.8p+2",
    erf_small=(
        "0x1.06eba8214db69p-3",
        "-0x1.812746b0379e6p-2",
        "0x1.ce2f21a042b20p-4",
        "-0x1.b82ce3128499dp-6",
        "0x1.565bcd0db02e6p-8",
        "-0x1.c02db3d8ed289p-11",
        "0x1.f9a321a11e3ecp-14",
        "-0x1.f4d1df3952b1ep-17",
        "0x1.b9def19e4838bp-20",
        "-0x1.5f1d36c4d1f7cp-23",
        "0x1.f7a412473a387p-27",
        "-0x1.386ac10b19fa5p-30",
        "0x1.0579ab62fd187p-34",
    ),
    erf_tail=(
        "-0x1.dcc8b29512d88p+0",
        "-0x1.107c691607bddp-2",
        "0x1.105be5d261cd4p-5",
        "-0x1.5677ff29c6131p-8",
        "0x1.ca1053d527cc4p-11",
        "-0x1.34e7e40f26a17p-13",
        "0x1.9922af441fbc5p-16",
        "-0x1.050612d8f5783p-18",
        "0x1.3a65e00e2206ap-21",
        "-0x1.5a93c27bd424dp-24",
        "0x1.479362e91559ep-27",
        "-0x1.a9ac0d23b45e2p-31",
        "-0x1.c6803a4ea0d4ap-36",
        "0x1.0b011988f2c50p-35",
        "-0x1.37115e89507eap-37",
        "0x1.2e7588737cec7p-39",
        "-0x1.06ae3f3b78637p-41",
        "0x1.b1673868f1d8ep-45",
        "0x1.38430b3ff3d0ep-50",
        "0x1.a3e65480f16f7p-49",
        "-0x1.ee9c979ff593ap-51",
        "-0x1.54676c24e8380p-53",
        "0x1.a0233bce5196ap-55",
    ),
    erf_tail_centre="0x1.cp+1",
    # r in [-0.35, 0.35], error 2^-60.2 relative to expm1(r)
    expm1_poly=(
        "0x1p-1",
        "0x1.5555555555557p-3",
        "0x1.5555555555558p-5",
        "0x1.111111110ff84p-7",
        "0x1.6c16c16c14fd4p-10",
        "0x1.a01a01aca1b23p-13",
        "0x1.a01a01adc550dp-16",
        "0x1.71ddffeaa3c54p-19",
        "0x1.27e4cae9784a9p-22",
        "0x1.af529a72cca20p-26",
        "0x1.1f8e776c5dcbep-29",
    ),
    # z in [0, 0.0295], error 2^-57.6
    log_poly=(
        "0x1.5555555555558p-1",
        "0x1.99999999951bep-2",
        "0x1.2492492e0f0a6p-2",
        "0x1.c71c62c21245bp-3",
        "0x1.7462be2d9da85p-3",
        "0x1.39fd33e803559p-3",
        "0x1.2b662c10a484ap-3",
    ),
    # r in [-0.786, 0.786], error 2^-55.5
    sin_poly=(
        "-0x1.5555555555555p-3",
        "0x1.1111111110ba9p-7",
        "-0x1.a01a019e81652p-13",
        "0x1.71de37938f02cp-19",
        "-0x1.ae6007e0b35f9p-26",
        "0x1.5e09f722c2a56p-33",
    ),
    # same interval, error 2^-59.5
    cos_poly=(
        "0x1.5555555555555p-5",
        "-0x1.6c16c16c16962p-10",
        "0x1.a01a019f4d89cp-16",
        "-0x1.27e4fa1658964p-22",
        "0x1.1eeb67548c1a6p-29",
        "-0x1.907c7e27d736bp-37",
    ),
)


# ---------------------------------------------------------------------------------------
# The algorithms, generic over the float type of x, each a ``helper``: compiled once
# per argument types and inlined by LLVM (see fastmath_blocks).


@helper
def _power_of_two(k, like, consts):
    """2^k as a float of ``like``'s type, for k in the normal exponent range."""
    return float_from_bits((k + consts.exponent_bias) << consts.mantissa_bits, like)


@helper
def _expm1_kernel(r, consts):
    """expm1(r) for |r| <= ln2/2, as a double-word: high + low."""
    square_term = r * r * polynomial(r, consts.expm1_poly)
    high = r + square_term
    return high, (r - high) + square_term  # Fast2Sum: |r| > |square_term|


@helper
def _exp_reduced(x, consts):
    """(e, e_low, k) with exp(x) = 2^k (1 + e + e_low), k an integer, |x| <= exp_high.

    x = k ln2 + r, |r| <= ln2/2 (Cody-Waite), and e + e_low = expm1(r) as a double-word:
    expm1 needs it because 2^k e - (1 - 2^k) cancels when k != 0; exp ignores e_low,
    and LLVM then drops what computes it.
    """
    shifted = x * consts.inv_ln2 + consts.shifter
    k = shifted - consts.shifter
    head = x - k * consts.ln2_head
    tail = k * consts.ln2_tail
    r = head - tail
    lost = (head - r) - tail  # what rounding r lost (Fast2Sum)
    e, e_low = _expm1_kernel(r, consts)
    # expm1(r + lost) = expm1(r) + lost e^r
    return e, e_low + (lost + lost * e), bits(shifted) - consts.shifter_bits


@helper
def _exp(x, consts):
    # The clamps keep k where 2^k splits into two normal factors; NaN passes them.
    x = consts.exp_low if x < consts.exp_low else x
    x = consts.exp_high if x > consts.exp_high else x
    e, _, k = _exp_reduced(x, consts)
    half = k >> 1
    # (1 + e) 2^half is exact, so a subnormal result is rounded once, by the last product.
    scaled = (consts.one + e) * _power_of_two(half, x, consts)
    return scaled * _power_of_two(k - half, x, consts)


@helper
def _expm1(x, consts):
    clamped = consts.expm1_low if x < consts.expm1_low else x
    clamped = consts.exp_high if clamped > consts.exp_high else clamped
    e, e_low, k = _exp_reduced(clamped, consts)
    half = k >> 1
    power_1 = _power_of_two(half, x, consts)
    power_2 = _power_of_two(k - half, x, consts)
    two_k = power_1 * power_2  # inf only where k is large and two_k is not used
    # 2^k - 1 is exact while k <= mantissa_bits + 1. Past that, 2^k ((e - 2^-k) + 1)
    # scales last, like exp, so it overflows only where the result does; 2^-k below
    # 2^-(2 mantissa_bits) changes nothing, so k is capped there to keep 2^-k normal.
    near_zero = (two_k * e + (two_k - consts.one)) + two_k * e_low
    capped_k = k if k < 2 * consts.mantissa_bits else 2 * consts.mantissa_bits
    minus_one = _power_of_two(-capped_k, x, consts)
    large = (((e - minus_one) + e_low) + consts.one) * power_1 * power_2
    y = large if k > consts.mantissa_bits + 1 else near_zero
    return x if abs(x) < consts.identity_below else y


@helper
def _log_of_normal(u, k_offset, correction, consts):
    """log(u) + k_offset ln2 + correction, for positive normal u and tiny correction."""
    # Subtracting the bits of sqrt(1/2) makes the exponent field floor(log2(u / sqrt(1/2)))
    # and the mantissa field that of m = u / 2^k, in [sqrt(1/2), sqrt(2)).
    shifted = bits(u) - consts.sqrt_half_bits
    k = small_int_to_float((shifted >> consts.mantissa_bits) + k_offset, u)
    f = float_from_bits((shifted & consts.mantissa_mask) + consts.sqrt_half_bits, u) - consts.one
    s = divide(f, consts.two + f)
    z = s * s
    half_f_squared = consts.half * f * f
    small = s * (half_f_squared + z * polynomial(z, consts.log_poly))
    small = small + (k * consts.ln2_tail + correction)
    return k * consts.ln2_head - ((half_f_squared - small) - f)


@helper
def _log(x, consts):
    subnormal = x < consts.min_normal
    u = x * consts.subnormal_scale if subnormal else x
    k_offset = -consts.subnormal_scale_log2 if subnormal else 0
    y = _log_of_normal(u, k_offset, consts.zero, consts)
    y = y if x < consts.inf else x  # +inf and NaN
    y = consts.nan if x < consts.zero else y
    return -consts.inf if x == consts.zero else y


@helper
def _log1p(x, consts):
    u = consts.one + x
    # The rounding error of 1 + x, exact by Fast2Sum, which subtracts the bigger operand.
    error = (x - (u - consts.one)) if x < consts.one else (consts.one - (u - x))
    y = _log_of_normal(u, 0, divide(error, u), consts)
    y = y if x < consts.inf else x  # +inf and NaN
    y = consts.nan if x < -consts.one else y
    y = -consts.inf if x == -consts.one else y
    return x if abs(x) < consts.identity_below else y


@helper
def _tanh(x, consts):
    # e = expm1(-2|x|) as in _expm1, simpler since k <= 0: 2^k is one normal factor.
    minus_2a = -consts.two * abs(x)
    clamped = consts.expm1_low if minus_2a < consts.expm1_low else minus_2a
    e, e_low, k = _exp_reduced(clamped, consts)
    two_k = _power_of_two(k, x, consts)
    e = (two_k * e + (two_k - consts.one)) + two_k * e_low
    magnitude = abs(divide(e, e + consts.two))  # = -e / (e + 2), and +0 for x = -0
    return float_from_bits(bits(magnitude) | (bits(x) & consts.sign_mask), x)


@helper
def _tanh_rational(x, consts):
    """float32 tanh as XLA computes it: a rational function of x on a clamped range.

    No exponential, so about a third of ``_tanh``'s instructions. Each of the ~10
    roundings of P and Q can be 2^-24 relative where the result, just below 1, has
    ulps of 2^-24: hence the 6-ulp bound (XLA's own float32 tanh: 4.9 ulps).
    """
    # Clamped with its sign (NaN passes): the rational is exactly +-1 at +-tanh_one_from,
    # and odd, so x P/Q needs neither |x|, a select of 1 nor a sign copy (-0 stays -0).
    x = consts.tanh_one_from if x > consts.tanh_one_from else x
    x = -consts.tanh_one_from if x < -consts.tanh_one_from else x
    z = x * x  # underflows to 0 for tiny x: then P = Q = 1 and tanh(x) = x, exactly
    numerator = fma(z, polynomial(z, consts.tanh_numerator), consts.one)
    denominator = fma(z, polynomial(z, consts.tanh_denominator), consts.one)
    return divide(x * numerator, denominator)


@helper
def _erf_rational(x, consts):
    """float32 erf as XLA computes it: a rational function of x on a clamped range, with
    our own coefficients. No exponential: a quarter of ``_erf``'s instructions."""
    # Clamped with its sign (NaN passes): x P/Q rounds to +-1 at +-erf_one_from, and is
    # odd; a tiny x gives z = 0 and x P(0) / 1, -0 stays -0.
    x = consts.erf_one_from if x > consts.erf_one_from else x
    x = -consts.erf_one_from if x < -consts.erf_one_from else x
    z = x * x
    numerator = polynomial(z, consts.erf_numerator)
    denominator = fma(z, polynomial(z, consts.erf_denominator), consts.one)
    return divide(x * numerator, denominator)


@helper
def _erf(x, consts):
    """erf(x) = x + x S(x^2) for |x| < 1; from there 1 - erfc(|x|) with the sign of x,
    erfc(a) = exp(-a^2 + T(a - centre)) with a clamped to erf_one_from (NaN passes):
    -a^2 + T rounds once (FMA), an error of erfc relative to itself and at most 0.16
    relative to erf."""
    z = x * x
    small = x + x * polynomial(z, consts.erf_small)
    a = abs(x)
    a = consts.one if a < consts.one else a
    a = consts.erf_one_from if a > consts.erf_one_from else a
    exponent = fma(-a, a, polynomial(a - consts.erf_tail_centre, consts.erf_tail))
    large = consts.one - _exp(exponent, consts)
    large = large if x >= consts.zero else -large
    return small if abs(x) < consts.one else large


@helper
def _logistic(x, consts):
    e = _exp(-abs(x), consts)
    numerator = consts.one if x >= consts.zero else e
    return divide(numerator, consts.one + e)


@helper
def _sin_shifted(x, quarter_turns, consts):
    """sin(x + quarter_turns * pi/2)."""
    if consts.mantissa_bits == 52:  # a constant: LLVM keeps one branch
        r, lo, q = reduce_half_pi_f64(np.float64(x))
    else:
        r, lo, q = reduce_half_pi_f32(np.float64(x))
    r, lo = round_double_word(r, lo, x)
    z = r * r
    # sin(r + lo) ~ sin(r) + lo (1 - r^2/2)
    sin_r = r + (lo * (consts.one - consts.half * z) + r * z * polynomial(z, consts.sin_poly))
    # cos(r + lo) ~ cos(r) - lo r, with the rounding error of 1 - z/2 added back
    half_z = consts.half * z
    w = consts.one - half_z
    cos_tail = z * z * polynomial(z, consts.cos_poly) - r * lo
    cos_r = w + (((consts.one - w) - half_z) + cos_tail)
    q = q + quarter_turns
    y = cos_r if q & 1 else sin_r
    return -y if q & 2 else y


@helper
def _sin(x, consts):
    y = _sin_shifted(x, 0, consts)
    return x if abs(x) < consts.sin_identity_below else y


@helper
def _cos(x, consts):
    return _sin_shifted(x, 1, consts)


# ---------------------------------------------------------------------------------------
# The public functions: an algorithm, its argument cast to a float type, and that type's
# constants.
#
# forceinline marks the compiled function alwaysinline for LLVM: it is compiled once per
# argument type and then must be inlined into every caller. (Numba's inline="always"
# would instead copy the body into each caller and compile it there: twice the compile
# time per call site, and under the caller's flags, where fastmath=True lets LLVM
# simplify away the error-free transformations and the NaN and infinity handling.)
# fastmath=False is explicit because an unset flag is inherited from the caller.


def _specialise(algorithm, float_type, consts, function=None):
    def specialised(x):
        return algorithm(float_type(x), consts)

    function = function or algorithm.__name__.lstrip("_")
    name = f"{function}_f{np.dtype(float_type).itemsize * 8}"
    specialised.__name__ = specialised.__qualname__ = name
    specialised.__doc__ = f"{function} of x cast to {float_type.__name__}, inlined into the caller."
    return njit(forceinline=True, fastmath=False)(specialised)


exp_f32 = _specialise(_exp, np.float32, _FLOAT32)
exp_f64 = _specialise(_exp, np.float64, _FLOAT64)
expm1_f32 = _specialise(_expm1, np.float32, _FLOAT32)
expm1_f64 = _specialise(_expm1, np.float64, _FLOAT64)
log_f32 = _specialise(_log, np.float32, _FLOAT32)
log_f64 = _specialise(_log, np.float64, _FLOAT64)
log1p_f32 = _specialise(_log1p, np.float32, _FLOAT32)
log1p_f64 = _specialise(_log1p, np.float64, _FLOAT64)
tanh_f32 = _specialise(_tanh_rational, np.float32, _FLOAT32, "tanh")
tanh_f64 = _specialise(_tanh, np.float64, _FLOAT64)
logistic_f32 = _specialise(_logistic, np.float32, _FLOAT32)
logistic_f64 = _specialise(_logistic, np.float64, _FLOAT64)
sin_f32 = _specialise(_sin, np.float32, _FLOAT32)
sin_f64 = _specialise(_sin, np.float64, _FLOAT64)
cos_f32 = _specialise(_cos, np.float32, _FLOAT32)
cos_f64 = _specialise(_cos, np.float64, _FLOAT64)
erf_f32 = _specialise(_erf_rational, np.float32, _FLOAT32, "erf")
erf_f64 = _specialise(_erf, np.float64, _FLOAT64)

_float32 = np.dtype("float32")
_float64 = np.dtype("float64")
FUNCTIONS = {
    ("exp", _float32): exp_f32,
    ("exp", _float64): exp_f64,
    ("expm1", _float32): expm1_f32,
    ("expm1", _float64): expm1_f64,
    ("log", _float32): log_f32,
    ("log", _float64): log_f64,
    ("log1p", _float32): log1p_f32,
    ("log1p", _float64): log1p_f64,
    ("tanh", _float32): tanh_f32,
    ("tanh", _float64): tanh_f64,
    ("logistic", _float32): logistic_f32,
    ("logistic", _float64): logistic_f64,
    ("sin", _float32): sin_f32,
    ("sin", _float64): sin_f64,
    ("cos", _float32): cos_f32,
    ("cos", _float64): cos_f64,
    ("erf", _float32): erf_f32,
    ("erf", _float64): erf_f64,
}

# The most ulps any result may be off by, for either float type; measured maxima are in
# the module docstring.
_ULP_BOUND = {
    "exp": 1,
    "expm1": 1.5,
    "log": 1,
    "log1p": 1,
    "tanh": 3,
    "logistic": 2.5,
    "sin": 1,
    "cos": 1,
    "erf": 2,
}
ULP_BOUNDS = {(name, dtype): _ULP_BOUND[name] for name, dtype in FUNCTIONS}
# XLA's formulation, for XLA's speed: see _tanh_rational.
ULP_BOUNDS[("tanh", _float32)] = 6
ULP_BOUNDS[("erf", _float32)] = 6  # the same: see _erf_rational
