"""Vectorisable exp, expm1, log, log1p, tanh, logistic, sin and cos for Numba loops.

Numba from PyPI has no SVML, so ``math.tanh`` and friends in a loop are scalar libm
calls and LLVM cannot vectorise the loop. The functions here are plain arithmetic
instead: range reduction, a polynomial, a rescale. They are compiled ``forceinline``, so
LLVM inlines them into the caller's loop, with their own strict floating-point flags
whatever the caller's, and they are branch-free (every ``a if cond else b`` selects
between values already computed), so LLVM's loop vectoriser turns the loop into SIMD
code. There are no ``math``/``np`` calls and no Python-semantics division (its
divide-by-zero check would be a branch that blocks vectorisation): division, bit casts
and polynomial evaluation are small LLVM intrinsics defined below. The algorithms'
building blocks (``_helper``) are ``forceinline`` functions too, each compiled once per
argument types and shared by every function that uses it.

Each algorithm is written once, generic over the float type, and reads its numbers from
a constants table (``_FLOAT32`` or ``_FLOAT64``); ``exp_f32`` is ``_exp`` with its
argument cast to float32 and the float32 table. Float32 functions compute in float32,
except the sin/cos range reduction, which runs in float64 (see ``_reduce_half_pi_f32``).

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
- sin, cos: x = q*pi/2 + r (mod 2 pi) with r kept as a double-word r + lo, then the
  sin or cos polynomial on [-pi/4, pi/4] chosen by q mod 4. The reduction is exact for
  every x (Payne-Hanek's idea, without its loop): x times the bits of 2/pi that matter
  for x's exponent, read from a table with a row per exponent (``_reduction_table``),
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
    ========  =======  =======  ===================

Those maxima were measured with a multiply and an add per Horner step. Since the steps
are FMAs (``_polynomial``) the test suites' maxima are (float32: every 1021st float32 of
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

import math
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

# ---------------------------------------------------------------------------------------
# LLVM-level helpers: each emits a few instructions straight into the caller.


@intrinsic
def _bits(typingctx, x):
    """The IEEE bit pattern of a float, as a signed integer of the same width."""
    if not isinstance(x, types.Float):
        return None
    int_type = types.int32 if x.bitwidth == 32 else types.int64

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(x.bitwidth))

    return int_type(x), codegen


@intrinsic
def _float_from_bits(typingctx, bits, like):
    """The float of ``like``'s type whose bit pattern is the low bits of ``bits``."""
    if not isinstance(bits, types.Integer) or not isinstance(like, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(_to_width(builder, args[0], like.bitwidth), _llvm_float(like))

    return like(bits, like), codegen


@intrinsic
def _small_int_to_float(typingctx, value, like):
    """A float of ``like``'s type from an integer known to fit in 32 bits.

    Converting from int32 is one vector instruction on every x86 SIMD level, from int64
    only with AVX-512.
    """
    if not isinstance(value, types.Integer) or not isinstance(like, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.sitofp(_to_width(builder, args[0], 32), _llvm_float(like))

    return like(value, like), codegen


@intrinsic
def _divide(typingctx, numerator, denominator):
    """IEEE division, without the ZeroDivisionError check of Numba's ``/``."""
    if not isinstance(numerator, types.Float) or numerator != denominator:
        return None

    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])

    return numerator(numerator, denominator), codegen


@intrinsic
def _polynomial(typingctx, x, coefficients):
    """sum(coefficients[i] * x**i) by Horner's rule; the coefficients are constants.

    Each step is one fused multiply-add (``llvm.fma``), which LLVM may not form itself
    under strict flags: exp, logistic and float64 log run 17-32% faster than with a
    multiply and an add, and each step rounds once. ``llvm.fma`` is exact on every CPU, so
    results do not depend on the machine; one without FMA gets libm's ``fma``, correct
    but not vectorised (as the sin/cos reduction already needed FMA).
    """
    if not isinstance(coefficients, types.UniTuple) or coefficients.dtype != x:
        return None
    degree = coefficients.count - 1

    def codegen(context, builder, signature, args):
        x, coefficients = args
        total = builder.extract_value(coefficients, degree)
        for i in range(degree - 1, -1, -1):
            coefficient = builder.extract_value(coefficients, i)
            total = _call_intrinsic(builder, "llvm.fma", [total, x, coefficient])
        return total

    return x(x, coefficients), codegen


def _call_intrinsic(builder, llvm_name: str, values):
    """A call of the LLVM intrinsic ``llvm_name`` on floats of one type: one instruction
    (``vfmadd``, ``vroundpd``) in scalar and in vector code."""
    float_type = values[0].type
    function_type = ir.FunctionType(float_type, [float_type] * len(values))
    function = builder.module.declare_intrinsic(llvm_name, [float_type], function_type)
    return builder.call(function, values)


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c, rounded once."""
    if not isinstance(a, types.Float) or not a == b == c:
        return None

    def codegen(context, builder, signature, args):
        return _call_intrinsic(builder, "llvm.fma", args)

    return a(a, b, c), codegen


@intrinsic
def _round_even(typingctx, x):
    """The integer nearest to x, ties to even, as a float."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return _call_intrinsic(builder, "llvm.roundeven", args)

    return x(x), codegen


@intrinsic
def _small_float_to_int(typingctx, value):
    """An integral float known to fit in 32 bits, as an int32 (one SIMD instruction on
    every x86 level, where float64 to int64 needs AVX-512)."""
    if not isinstance(value, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.fptosi(args[0], ir.IntType(32))

    return types.int32(value), codegen


@intrinsic
def _round_double_word(typingctx, high, low, like):
    """A float64 pair high + low rounded to ``like``'s type, as a pair again.

    In float32 the new low part keeps what rounding the high part lost.
    """
    if high != types.float64 or low != types.float64 or not isinstance(like, types.Float):
        return None
    pair = types.UniTuple(like, 2)

    def codegen(context, builder, signature, args):
        high, low = args[0], args[1]
        if like.bitwidth == 32:
            high_32 = builder.fptrunc(high, ir.FloatType())
            lost = builder.fsub(high, builder.fpext(high_32, ir.DoubleType()))
            low = builder.fptrunc(builder.fadd(lost, low), ir.FloatType())
            high = high_32
        return context.make_tuple(builder, pair, [high, low])

    return pair(high, low, like), codegen


def _to_width(builder, value, width):
    if value.type.width > width:
        return builder.trunc(value, ir.IntType(width))
    if value.type.width < width:
        return builder.sext(value, ir.IntType(width))
    return value


def _llvm_float(float_type):
    return ir.FloatType() if float_type.bitwidth == 32 else ir.DoubleType()


# ---------------------------------------------------------------------------------------
# Constants, one table per float type.


class _Constants(NamedTuple):
    """Everything the generic algorithms need to know about one float type."""

    zero: np.floating
    half: np.floating
    one: np.floating
    two: np.floating
    inf: np.floating
    nan: np.floating
    mantissa_bits: int
    exponent_bias: int
    sign_mask: int
    mantissa_mask: int
    # Adding 1.5 * 2^mantissa_bits rounds a float (|v| < 2^(mantissa_bits-1)) to an
    # integer and leaves that integer in the low bits of the sum: the rounded float and
    # the integer for one addition (SIMD float64-to-int64 conversion needs AVX-512).
    shifter: np.floating
    shifter_bits: int
    min_normal: np.floating
    subnormal_scale: np.floating  # 2^subnormal_scale_log2 makes subnormals normal
    subnormal_scale_log2: int
    sqrt_half_bits: int
    inv_ln2: np.floating
    ln2_head: np.floating  # k * ln2_head is exact for every k the reductions produce
    ln2_tail: np.floating
    exp_low: np.floating  # exp(exp_low) rounds to 0
    exp_high: np.floating  # exp(exp_high) rounds to inf, and 2^k splits into normal halves
    expm1_low: np.floating  # expm1(expm1_low) rounds to -1
    identity_below: np.floating  # |x| below it: expm1(x) and log1p(x) round to x
    sin_identity_below: np.floating  # |x| below it: sin(x) rounds to x
    expm1_poly: tuple  # P in expm1(r) = r + r^2 P(r)
    log_poly: tuple  # Q in log(m) = f - f^2/2 + s (f^2/2 + z Q(z))
    sin_poly: tuple  # S in sin(r) = r + r z S(z), z = r^2
    cos_poly: tuple  # C in cos(r) = 1 - z/2 + z^2 C(z)
    # float32 only (see _tanh_rational): tanh(x) = x P(z) / Q(z), z = x^2, for |x| up to
    # tanh_one_from, where it is exactly 1; P(z) = 1 + z N(z), Q(z) = 1 + z D(z).
    tanh_one_from: np.floating | None = None
    tanh_numerator: tuple = ()  # N
    tanh_denominator: tuple = ()  # D


def _table(float_type, mantissa_bits: int, exponent_bias: int, **approximation) -> _Constants:
    """The constants table of a float type; hex strings and tuples of them become floats."""
    int_type = np.int32 if float_type is np.float32 else np.int64
    width = 8 * np.dtype(float_type).itemsize

    def as_float(value):
        if isinstance(value, tuple):
            return tuple(as_float(v) for v in value)
        return float_type(float.fromhex(value)) if isinstance(value, str) else value

    def bits_of(value):
        return int(float_type(value).view(int_type))

    shifter = float_type(1.5 * 2.0**mantissa_bits)
    return _Constants(
        zero=float_type(0),
        half=float_type(0.5),
        one=float_type(1),
        two=float_type(2),
        inf=float_type(np.inf),
        nan=float_type(np.nan),
        mantissa_bits=mantissa_bits,
        exponent_bias=exponent_bias,
        sign_mask=-(1 << (width - 1)),
        mantissa_mask=(1 << mantissa_bits) - 1,
        shifter=shifter,
        shifter_bits=bits_of(shifter),
        min_normal=float_type(2.0 ** (1 - exponent_bias)),
        subnormal_scale=float_type(2.0 ** (mantissa_bits + 2)),
        subnormal_scale_log2=mantissa_bits + 2,
        sqrt_half_bits=bits_of(np.sqrt(0.5)),
        inv_ln2=float_type(1 / np.log(2)),
        **{name: as_float(value) for name, value in approximation.items()},
    )


_FLOAT32 = _table(
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

_FLOAT64 = _table(
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

# --- sin and cos: the bits of 2/pi, per exponent of x (see _reduce_half_pi_f64) ---------


def _arctan_inverse(n: int, scale: int) -> int:
    """arctan(1/n) * scale for an integer n > 1, by its Taylor series in integers."""
    total, power, k = 0, scale // n, 0
    while power:
        term = power // (2 * k + 1)
        total += -term if k % 2 else term
        power //= n * n
        k += 1
    return total


def _two_over_pi_bits(bits: int) -> int:
    """floor(2/pi * 2^bits), from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239)."""
    guard = 64
    scale = 1 << (bits + guard)
    pi_scaled = 16 * _arctan_inverse(5, scale) - 4 * _arctan_inverse(239, scale)
    return (1 << (2 * bits + 2 * guard + 1)) // pi_scaled >> guard


# Rows of exponents from _SCALE_FROM on are stored times 2^_SCALE_LOG2 and read with x
# times 2^-_SCALE_LOG2 (exact: such x are huge), so that their last pieces stay normal.
_SCALE_FROM = 1536
_SCALE_LOG2 = 256
_PIECE_BITS = 53


def _reduction_table(pieces: int, input_bits: int) -> np.ndarray:
    """Row E: 2/pi mod 2^(1024 + input_bits - E) in ``pieces`` float64s of 53 bits each.

    A float64 x of biased exponent E whose significand has ``input_bits`` bits (53, or
    24 for a float32 x) is M 2^(E - 1023 - (input_bits - 1)) for an integer M, so the bits
    of 2/pi of weight 2^(1024 + input_bits - E) and more only add multiples of 4 to
    x 2/pi: the quadrant mod 4 and the remainder do not change without them. Row E holds
    the next 53 * pieces bits, in fixed 53-bit windows, so each piece times x is exact as
    a double-word and x * row < 2^(input_bits + 2) whatever the size of x.
    """
    total_bits = 2048 + input_bits + pieces * _PIECE_BITS
    bits = _two_over_pi_bits(total_bits)
    mask = (1 << _PIECE_BITS) - 1
    rows = np.zeros((2048, pieces))
    for exponent in range(2048):
        top = min(1024 + input_bits - max(exponent, 1), 0)  # kept bits weigh < 2^top
        scale = _SCALE_LOG2 if exponent >= _SCALE_FROM else 0
        for piece in range(pieces):
            low = top - (piece + 1) * _PIECE_BITS  # this piece's bits: [2^low, 2^(low+53))
            window = (bits >> (total_bits + low)) & mask
            rows[exponent, piece] = math.ldexp(window, low + scale)
    return rows


# 212 bits for float64 x: x 2/pi mod 4 to 2^-150, below the 2^-61 of the float64 closest
# to a multiple of pi/2 (6381956970095103 2^797); 106 for float32 x.
_TWO_OVER_PI_F64 = _reduction_table(4, 53)
_TWO_OVER_PI_F32 = _reduction_table(2, 24)
_HALF_PI_HIGH = float.fromhex("0x1.921fb54442d18p+0")
_HALF_PI_LOW = float.fromhex("0x1.1a62633145c07p-54")


# ---------------------------------------------------------------------------------------
# The algorithms, generic over the float type of x.
#
# Each building block is its own compiled function, inlined by LLVM (``forceinline``), not
# by Numba (``inline="always"``): Numba's inliner deep-copies and retypes the callee's IR
# at every call site, so sin_f64 alone took seconds to compile, and each block was
# compiled again for every public function that uses it. Compiled once per argument
# types, a block is shared (sin's reduction by cos, expm1's kernel by exp, tanh and
# logistic), and the first use of a function in a process compiles about 0.6x as long.
# After inlining, the machine code is the same: results are bit for bit those of the
# Numba-inlined version, and the loops vectorise as before. No Python or C wrappers:
# only compiled code calls them.
_helper = njit(forceinline=True, fastmath=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)


@_helper
def _power_of_two(k, like, consts):
    """2^k as a float of ``like``'s type, for k in the normal exponent range."""
    return _float_from_bits((k + consts.exponent_bias) << consts.mantissa_bits, like)


@_helper
def _expm1_kernel(r, consts):
    """expm1(r) for |r| <= ln2/2, as a double-word: high + low."""
    square_term = r * r * _polynomial(r, consts.expm1_poly)
    high = r + square_term
    return high, (r - high) + square_term  # Fast2Sum: |r| > |square_term|


@_helper
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
    return e, e_low + (lost + lost * e), _bits(shifted) - consts.shifter_bits


@_helper
def _exp(x, consts):
    # The clamps keep k where 2^k splits into two normal factors; NaN passes them.
    x = consts.exp_low if x < consts.exp_low else x
    x = consts.exp_high if x > consts.exp_high else x
    e, _, k = _exp_reduced(x, consts)
    half = k >> 1
    # (1 + e) 2^half is exact, so a subnormal result is rounded once, by the last product.
    scaled = (consts.one + e) * _power_of_two(half, x, consts)
    return scaled * _power_of_two(k - half, x, consts)


@_helper
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


@_helper
def _log_of_normal(u, k_offset, correction, consts):
    """log(u) + k_offset ln2 + correction, for positive normal u and tiny correction."""
    # Subtracting the bits of sqrt(1/2) makes the exponent field floor(log2(u / sqrt(1/2)))
    # and the mantissa field that of m = u / 2^k, in [sqrt(1/2), sqrt(2)).
    bits = _bits(u) - consts.sqrt_half_bits
    k = _small_int_to_float((bits >> consts.mantissa_bits) + k_offset, u)
    f = _float_from_bits((bits & consts.mantissa_mask) + consts.sqrt_half_bits, u) - consts.one
    s = _divide(f, consts.two + f)
    z = s * s
    half_f_squared = consts.half * f * f
    small = s * (half_f_squared + z * _polynomial(z, consts.log_poly))
    small = small + (k * consts.ln2_tail + correction)
    return k * consts.ln2_head - ((half_f_squared - small) - f)


@_helper
def _log(x, consts):
    subnormal = x < consts.min_normal
    u = x * consts.subnormal_scale if subnormal else x
    k_offset = -consts.subnormal_scale_log2 if subnormal else 0
    y = _log_of_normal(u, k_offset, consts.zero, consts)
    y = y if x < consts.inf else x  # +inf and NaN
    y = consts.nan if x < consts.zero else y
    return -consts.inf if x == consts.zero else y


@_helper
def _log1p(x, consts):
    u = consts.one + x
    # The rounding error of 1 + x, exact by Fast2Sum, which subtracts the bigger operand.
    error = (x - (u - consts.one)) if x < consts.one else (consts.one - (u - x))
    y = _log_of_normal(u, 0, _divide(error, u), consts)
    y = y if x < consts.inf else x  # +inf and NaN
    y = consts.nan if x < -consts.one else y
    y = -consts.inf if x == -consts.one else y
    return x if abs(x) < consts.identity_below else y


@_helper
def _tanh(x, consts):
    # e = expm1(-2|x|) as in _expm1, simpler since k <= 0: 2^k is one normal factor.
    minus_2a = -consts.two * abs(x)
    clamped = consts.expm1_low if minus_2a < consts.expm1_low else minus_2a
    e, e_low, k = _exp_reduced(clamped, consts)
    two_k = _power_of_two(k, x, consts)
    e = (two_k * e + (two_k - consts.one)) + two_k * e_low
    magnitude = abs(_divide(e, e + consts.two))  # = -e / (e + 2), and +0 for x = -0
    return _float_from_bits(_bits(magnitude) | (_bits(x) & consts.sign_mask), x)


@_helper
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
    numerator = _fma(z, _polynomial(z, consts.tanh_numerator), consts.one)
    denominator = _fma(z, _polynomial(z, consts.tanh_denominator), consts.one)
    return _divide(x * numerator, denominator)


@_helper
def _logistic(x, consts):
    e = _exp(-abs(x), consts)
    numerator = consts.one if x >= consts.zero else e
    return _divide(numerator, consts.one + e)


@_helper
def _two_sum(a, b):
    """a + b as the rounded sum and its rounding error, exactly (Knuth's TwoSum)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


@_helper
def _exponent_row(x):
    """x (scaled down if huge) and its row of a reduction table: the biased exponent."""
    exponent = (_bits(x) >> 52) & 0x7FF
    scaled = x * (2.0**-_SCALE_LOG2) if exponent >= _SCALE_FROM else x
    return scaled, exponent


@_helper
def _minus_nearest(v):
    """(v - n, n) for n the integer nearest to v: both exact."""
    n = _round_even(v)
    return v - n, n


@_helper
def _reduce_half_pi_f64(x):
    """(r, lo, q) with x = q pi/2 + r + lo (mod 2 pi), |r| <= pi/4 (plus rounding), q an
    int32, for any float64 x.

    x times the pieces g1..g4 of its row of 2/pi (``_reduction_table``) is x 2/pi mod 4.
    Each product is split exactly (x g = p + e by FMA) and integers leave the sum as soon
    as they appear (each removal exact), counted in q; what is left is the fraction f of
    x 2/pi, |f| <= 1/2, summed as a double-word, and r + lo = f pi/2.
    """
    x, row = _exponent_row(x)
    g1, g2 = _TWO_OVER_PI_F64[row, 0], _TWO_OVER_PI_F64[row, 1]
    g3, g4 = _TWO_OVER_PI_F64[row, 2], _TWO_OVER_PI_F64[row, 3]
    p1 = x * g1  # |p1| < 2^55: its integer part mod 4 is what q needs of it
    e1 = _fma(x, g1, -p1)
    p2 = x * g2
    e2 = _fma(x, g2, -p2)
    p3 = x * g3
    e3 = _fma(x, g3, -p3)
    top = p1 - 4.0 * _round_even(0.25 * p1)  # p1 mod 4, in [-2, 2]
    s, t1 = _two_sum(top, p2)
    s, n1 = _minus_nearest(s)
    s, t2 = _two_sum(s, e1)
    s, n2 = _minus_nearest(s)
    # The terms 2^53 smaller, and then 2^106 smaller, as a double-word.
    m, m_low = _two_sum(e2, p3)
    m, u = _two_sum(m, t1)
    m_low = m_low + u
    m, u = _two_sum(m, t2)
    m_low = m_low + (u + (e3 + x * g4))
    f, f_low = _two_sum(s, m)
    f_low = f_low + m_low
    r = f * _HALF_PI_HIGH
    r_low = _fma(f, _HALF_PI_HIGH, -r) + (f * _HALF_PI_LOW + f_low * _HALF_PI_HIGH)
    high = r + r_low
    return high, r_low - (high - r), _small_float_to_int(n1 + n2)


@_helper
def _reduce_half_pi_f32(x):
    """``_reduce_half_pi_f64`` for a float32 x (given as a float64): two pieces of 2/pi
    make f to 2^-80, and f pi/2 in one float64 is far more than float32 needs."""
    x, row = _exponent_row(x)
    g1, g2 = _TWO_OVER_PI_F32[row, 0], _TWO_OVER_PI_F32[row, 1]
    p1 = x * g1  # |p1| < 2^26
    e1 = _fma(x, g1, -p1)
    top, n = _minus_nearest(p1)
    f = top + (e1 + x * g2)
    return f * _HALF_PI_HIGH, 0.0, _small_float_to_int(n)


@_helper
def _sin_shifted(x, quarter_turns, consts):
    """sin(x + quarter_turns * pi/2)."""
    if consts.mantissa_bits == 52:  # a constant: LLVM keeps one branch
        r, lo, q = _reduce_half_pi_f64(np.float64(x))
    else:
        r, lo, q = _reduce_half_pi_f32(np.float64(x))
    r, lo = _round_double_word(r, lo, x)
    z = r * r
    # sin(r + lo) ~ sin(r) + lo (1 - r^2/2)
    sin_r = r + (lo * (consts.one - consts.half * z) + r * z * _polynomial(z, consts.sin_poly))
    # cos(r + lo) ~ cos(r) - lo r, with the rounding error of 1 - z/2 added back
    half_z = consts.half * z
    w = consts.one - half_z
    cos_tail = z * z * _polynomial(z, consts.cos_poly) - r * lo
    cos_r = w + (((consts.one - w) - half_z) + cos_tail)
    q = q + quarter_turns
    y = cos_r if q & 1 else sin_r
    return -y if q & 2 else y


@_helper
def _sin(x, consts):
    y = _sin_shifted(x, 0, consts)
    return x if abs(x) < consts.sin_identity_below else y


@_helper
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
}
ULP_BOUNDS = {(name, dtype): _ULP_BOUND[name] for name, dtype in FUNCTIONS}
# XLA's formulation, for XLA's speed: see _tanh_rational.
ULP_BOUNDS[("tanh", _float32)] = 6
