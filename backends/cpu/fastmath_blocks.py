"""The building blocks of ``fastmath``'s algorithms: LLVM-level operations, the
per-float-type constants table, and the exact reduction of x modulo pi/2.

- LLVM-level operations (``bits``, ``divide``, ``polynomial``, ``fma``, ...): each emits
  one or a few instructions straight into the caller, as Numba's operators cannot
  (division without its zero check, a bit cast, ``llvm.fma``), so that the algorithms
  stay branch-free and vectorise.
- ``Constants``: everything an algorithm needs to know about one float type, built by
  ``table`` from hex strings; ``fastmath`` holds the float32 and float64 tables.
- ``reduce_half_pi_f64``/``reduce_half_pi_f32``: x = q pi/2 + r (mod 2 pi), exact for
  every x, from a table of the bits of 2/pi per exponent (see ``fastmath``'s docstring).
- ``helper``: the decorator of a building block compiled once per argument types and
  inlined by LLVM into every caller.

Nothing here is called from Python: only compiled code (``fastmath``'s functions) does.
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
def bits(typingctx, x):
    """The IEEE bit pattern of a float, as a signed integer of the same width."""
    if not isinstance(x, types.Float):
        return None
    int_type = types.int32 if x.bitwidth == 32 else types.int64

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(x.bitwidth))

    return int_type(x), codegen


@intrinsic
def float_from_bits(typingctx, bits, like):
    """The float of ``like``'s type whose bit pattern is the low bits of ``bits``."""
    if not isinstance(bits, types.Integer) or not isinstance(like, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(_to_width(builder, args[0], like.bitwidth), _llvm_float(like))

    return like(bits, like), codegen


@intrinsic
def small_int_to_float(typingctx, value, like):
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
def divide(typingctx, numerator, denominator):
    """IEEE division, without the ZeroDivisionError check of Numba's ``/``."""
    if not isinstance(numerator, types.Float) or numerator != denominator:
        return None

    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])

    return numerator(numerator, denominator), codegen


@intrinsic
def polynomial(typingctx, x, coefficients):
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
def fma(typingctx, a, b, c):
    """a * b + c, rounded once."""
    if not isinstance(a, types.Float) or not a == b == c:
        return None

    def codegen(context, builder, signature, args):
        return _call_intrinsic(builder, "llvm.fma", args)

    return a(a, b, c), codegen


@intrinsic
def round_even(typingctx, x):
    """The integer nearest to x, ties to even, as a float."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return _call_intrinsic(builder, "llvm.roundeven", args)

    return x(x), codegen


@intrinsic
def small_float_to_int(typingctx, value):
    """An integral float known to fit in 32 bits, as an int32 (one SIMD instruction on
    every x86 level, where float64 to int64 needs AVX-512)."""
    if not isinstance(value, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.fptosi(args[0], ir.IntType(32))

    return types.int32(value), codegen


@intrinsic
def round_double_word(typingctx, high, low, like):
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


class Constants(NamedTuple):
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
    # erf, float32 (see fastmath's _erf_rational): erf(x) = x P(z) / Q(z), z = x^2, for |x|
    # up to erf_one_from, where it rounds to 1; Q(z) = 1 + z D(z).
    erf_one_from: np.floating | None = None
    erf_numerator: tuple = ()  # P
    erf_denominator: tuple = ()  # D
    # erf, float64 (see fastmath's _erf): x + x S(z) for |x| < 1, and from 1 to
    # erf_one_from 1 - exp(-a^2 + T(a - erf_tail_centre)), a = |x|.
    erf_small: tuple = ()  # S
    erf_tail: tuple = ()  # T
    erf_tail_centre: np.floating | None = None


def table(float_type, mantissa_bits: int, exponent_bias: int, **approximation) -> Constants:
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
    return Constants(
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


# --- sin and cos: the bits of 2/pi, per exponent of x (see reduce_half_pi_f64) ---------


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
# Compiled building blocks.
#
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
helper = njit(forceinline=True, fastmath=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)


@helper
def two_sum(a, b):
    """a + b as the rounded sum and its rounding error, exactly (Knuth's TwoSum)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


@helper
def _exponent_row(x):
    """x (scaled down if huge) and its row of a reduction table: the biased exponent."""
    exponent = (bits(x) >> 52) & 0x7FF
    scaled = x * (2.0**-_SCALE_LOG2) if exponent >= _SCALE_FROM else x
    return scaled, exponent


@helper
def _minus_nearest(v):
    """(v - n, n) for n the integer nearest to v: both exact."""
    n = round_even(v)
    return v - n, n


@helper
def reduce_half_pi_f64(x):
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
    e1 = fma(x, g1, -p1)
    p2 = x * g2
    e2 = fma(x, g2, -p2)
    p3 = x * g3
    e3 = fma(x, g3, -p3)
    top = p1 - 4.0 * round_even(0.25 * p1)  # p1 mod 4, in [-2, 2]
    s, t1 = two_sum(top, p2)
    s, n1 = _minus_nearest(s)
    s, t2 = two_sum(s, e1)
    s, n2 = _minus_nearest(s)
    # The terms 2^53 smaller, and then 2^106 smaller, as a double-word.
    m, m_low = two_sum(e2, p3)
    m, u = two_sum(m, t1)
    m_low = m_low + u
    m, u = two_sum(m, t2)
    m_low = m_low + (u + (e3 + x * g4))
    f, f_low = two_sum(s, m)
    f_low = f_low + m_low
    r = f * _HALF_PI_HIGH
    r_low = fma(f, _HALF_PI_HIGH, -r) + (f * _HALF_PI_LOW + f_low * _HALF_PI_HIGH)
    high = r + r_low
    return high, r_low - (high - r), small_float_to_int(n1 + n2)


@helper
def reduce_half_pi_f32(x):
    """``reduce_half_pi_f64`` for a float32 x (given as a float64): two pieces of 2/pi
    make f to 2^-80, and f pi/2 in one float64 is far more than float32 needs."""
    x, row = _exponent_row(x)
    g1, g2 = _TWO_OVER_PI_F32[row, 0], _TWO_OVER_PI_F32[row, 1]
    p1 = x * g1  # |p1| < 2^26
    e1 = fma(x, g1, -p1)
    top, n = _minus_nearest(p1)
    f = top + (e1 + x * g2)
    return f * _HALF_PI_HIGH, 0.0, small_float_to_int(n)
