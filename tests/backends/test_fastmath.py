"""Accuracy and vectorisation of the CPU backend's own math functions.

Each function runs inside an njit loop, the way the CPU code generator calls it, and is
compared with NumPy in higher precision: float64 for the float32 functions, long double
for the float64 ones. Errors are in ulps of the exact result. Run with ``-s`` to see the
table of measured maximum errors.
"""

import re

import numpy as np
import pytest
from fastmath_references import REFERENCES, njit_loop
from numba import njit

import numbax
from numbax.backends.cpu import fastmath

NAMES = ["exp", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos"]
DTYPES = [np.dtype("float32"), np.dtype("float64")]
CASES = [(name, dtype) for name in NAMES for dtype in DTYPES]
SAMPLES = 200_000  # per input distribution
# The float64 closest to a multiple of pi/2: cos of it is 4.7e-19, so its reduction
# needs 61 bits beyond the 53 of x.
CLOSEST_TO_HALF_PI_MULTIPLE = 6381956970095103 * 2.0**797

MEASURED_MAX_ULP: dict = {}  # (name, dtype) -> max error over every input tried


def evaluate(name, dtype, x):
    x = np.ascontiguousarray(x, dtype=dtype)
    out = np.empty_like(x)
    njit_loop(name, dtype)(x, out)
    return out


def reference(name, dtype, x):
    wide = np.float64 if dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return REFERENCES[name](np.asarray(x, dtype=dtype).astype(wide))


def ulp_errors(result, exact, dtype):
    """|result - exact| in ulps of exact at the result's precision.

    0 where result is exact after rounding (NaN matches NaN); inf where exact is a special
    value (NaN, +-inf, or an exact +-0) and result is not the same, sign included."""
    info = np.finfo(dtype)
    with np.errstate(all="ignore"):
        rounded = exact.astype(dtype)
        same = (result == rounded) & (np.signbit(result) == np.signbit(rounded))
        same |= np.isnan(result) & np.isnan(rounded)
        special = ~np.isfinite(rounded) | (exact == 0)
        _, exponent = np.frexp(exact)
        ulp = np.ldexp(exact.dtype.type(1), np.maximum(exponent - 1, info.minexp) - info.nmant)
        error = np.abs(result.astype(exact.dtype) - exact) / ulp
    error = np.where(np.isfinite(error) & ~special, error, np.inf)
    return np.where(same, 0.0, error).astype(np.float64)


def record(name, dtype, errors):
    worst = float(errors.max(initial=0.0))
    key = (name, dtype)
    MEASURED_MAX_ULP[key] = max(MEASURED_MAX_ULP.get(key, 0.0), worst)
    return worst


def edge_values(name, dtype):
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    magnitudes = [0.0, tiny, 2 * tiny, info.smallest_normal - tiny, info.smallest_normal]
    magnitudes += [info.eps, 0.5, 1.0, 2.0, 10.0, 100.0, 1e4, info.max, np.inf]
    # where expm1, log1p, sin and tanh switch to returning x
    magnitudes += [2.0**-k for k in (10, 12, 13, 25, 26, 27, 28, 53, 54, 55)]
    # overflow and underflow thresholds of exp and expm1
    log_tiny = np.log(tiny)
    magnitudes += [np.log(info.max), -log_tiny, np.log(2) - log_tiny, -np.log(info.eps)]
    magnitudes += [np.pi / 4, np.pi / 2, np.pi, 1e5, 1e6]
    # sin and cos: where a cheaper reduction runs out of bits, and the hardest inputs
    magnitudes += [2.0**30 * np.pi / 2, 1e12, 1e22, 2.0**63, 1e300, CLOSEST_TO_HALF_PI_MULTIPLE]
    with np.errstate(over="ignore"):
        centre = np.array(magnitudes, dtype=dtype)
    with np.errstate(all="ignore"):
        around = [np.nextafter(centre, -np.inf), centre, np.nextafter(centre, np.inf)]
    values = np.concatenate(around)
    return np.concatenate([values, -values, [np.nan, -1.0 - info.eps]]).astype(dtype)


def random_inputs(name, dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    int_type = np.int32 if dtype == np.float32 else np.int64
    bits = rng.integers(np.iinfo(int_type).min, np.iinfo(int_type).max, SAMPLES, dtype=int_type)
    every_float = bits.view(dtype)  # every exponent equally likely: the whole range
    log_max = np.log2(info.max)
    log_uniform = 2.0 ** rng.uniform(-log_max, log_max, SAMPLES) * rng.choice([-1, 1], SAMPLES)
    typical = {
        "exp": (-110.0, 90.0) if dtype == np.float32 else (-750.0, 712.0),
        "expm1": (-3.0, 3.0),
        "log": (0.0, 4.0),
        "log1p": (-1.0, 4.0),
        "tanh": (-10.0, 10.0),
        "logistic": (-110.0, 110.0) if dtype == np.float32 else (-750.0, 750.0),
        "sin": (-20.0, 20.0),
        "cos": (-20.0, 20.0),
    }[name]
    uniform = rng.uniform(*typical, SAMPLES)
    inputs = [every_float, log_uniform, uniform]
    if name in ("sin", "cos"):
        inputs.append(rng.uniform(-1e5, 1e5, SAMPLES))
    with np.errstate(all="ignore"):
        return np.concatenate(inputs).astype(dtype)


@pytest.fixture(scope="module", autouse=True)
def report_table():
    yield
    print("\nfastmath max ulp error (bound):")
    for name, dtype in CASES:
        if (name, dtype) in MEASURED_MAX_ULP:
            measured = MEASURED_MAX_ULP[(name, dtype)]
            bound = fastmath.ULP_BOUNDS[(name, dtype)]
            print(f"  {name:>9} {dtype.name}: {measured:6.3f}  ({bound})")


SPECIAL_VALUES = {
    "exp": [(-np.inf, 0.0), (np.inf, np.inf), (-0.0, 1.0), (1e4, np.inf), (-1e4, 0.0)],
    "expm1": [(-0.0, -0.0), (0.0, 0.0), (-np.inf, -1.0), (np.inf, np.inf), (1e4, np.inf)],
    "log": [(0.0, -np.inf), (-0.0, -np.inf), (-1.0, np.nan), (-np.inf, np.nan), (np.inf, np.inf)],
    "log1p": [(-0.0, -0.0), (-1.0, -np.inf), (-2.0, np.nan), (np.inf, np.inf)],
    "tanh": [(-0.0, -0.0), (0.0, 0.0), (np.inf, 1.0), (-np.inf, -1.0), (1e4, 1.0)],
    "logistic": [(np.inf, 1.0), (-np.inf, 0.0), (-0.0, 0.5), (1e4, 1.0), (-1e4, 0.0)],
    "sin": [(-0.0, -0.0), (0.0, 0.0), (np.inf, np.nan), (-np.inf, np.nan)],
    "cos": [(-0.0, 1.0), (np.inf, np.nan), (-np.inf, np.nan)],
}


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_special_values_match_numpy_exactly(name, dtype):
    x, expected = np.array(SPECIAL_VALUES[name] + [(np.nan, np.nan)], dtype=dtype).T
    with np.errstate(all="ignore"):
        from_numpy = REFERENCES[name](x)
    result = evaluate(name, dtype, x)
    for table in (expected, from_numpy):
        np.testing.assert_array_equal(result, table)
        signed = ~np.isnan(table)  # a NaN's sign bit means nothing
        np.testing.assert_array_equal(np.signbit(result[signed]), np.signbit(table[signed]))


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_special_and_edge_values(name, dtype):
    x = edge_values(name, dtype)
    errors = ulp_errors(evaluate(name, dtype, x), reference(name, dtype, x), dtype)
    worst = record(name, dtype, errors)
    bad = x[errors > fastmath.ULP_BOUNDS[(name, dtype)]]
    assert worst <= fastmath.ULP_BOUNDS[(name, dtype)], f"wrong at {bad[:10]}"


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_random_inputs_within_bound(name, dtype):
    x = random_inputs(name, dtype, seed=NAMES.index(name))
    errors = ulp_errors(evaluate(name, dtype, x), reference(name, dtype, x), dtype)
    worst = record(name, dtype, errors)
    assert worst <= fastmath.ULP_BOUNDS[(name, dtype)], f"worst at x = {x[errors.argmax()]!r}"


@pytest.mark.parametrize("name", ["sin", "cos"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_sin_cos_exact_at_huge_arguments(name, dtype):
    """The reduction is exact at every size: log-uniform |x| from 1e9 (where a Cody-Waite
    reduction with 23-bit pieces of pi/2 runs out of bits: 1e-4 off at 1e12) to the
    largest float, and the float64 closest to a multiple of pi/2."""
    rng = np.random.default_rng(7)
    log_max = np.log2(np.finfo(dtype).max)
    x = 2.0 ** rng.uniform(np.log2(1e9), log_max, SAMPLES) * rng.choice([-1, 1], SAMPLES)
    with np.errstate(over="ignore"):
        x = np.append(x, CLOSEST_TO_HALF_PI_MULTIPLE).astype(dtype)  # inf in float32
    errors = ulp_errors(evaluate(name, dtype, x), reference(name, dtype, x), dtype)
    worst = record(name, dtype, errors)
    assert worst <= fastmath.ULP_BOUNDS[(name, dtype)], f"worst at x = {x[errors.argmax()]!r}"


LIBM_NAME = re.compile(r"^(llvm\.)?(tanh|exp|expm1|log|log1p|sin|cos)(f|l|\.|$)")


def assert_vectorised_without_libm(loop, element):
    llvm = "".join(loop.inspect_llvm().values())
    assert re.search(rf"<(4|8|16) x {element}>", llvm), "the loop was not vectorised"
    declared = re.findall(r"^declare [^@]*@\"?([\w.$]+)", llvm, re.MULTILINE)
    assert not [name for name in declared if LIBM_NAME.match(name)], declared
    # Inlined: no definition or call of the fastmath function is left.
    fastmath_name = r"(exp|expm1|log|log1p|tanh|logistic|sin|cos)_f(32|64)"
    assert not re.search(rf"^(define|declare) .*{fastmath_name}", llvm, re.MULTILINE)
    assert not re.search(rf"call .*{fastmath_name}", llvm)


def loop_around(function, dtype):
    """A loop as the code generator writes it: arithmetic around the call."""
    scale, shift, half = dtype.type(1.5), dtype.type(0.5), dtype.type(0.5)

    @njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = function(x[i] * scale + shift) * half + x[i] * x[i]

    return loop


@pytest.mark.parametrize("name", ["tanh", "exp", "log", "sin"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_loop_vectorises(name, dtype):
    loop = loop_around(fastmath.FUNCTIONS[(name, dtype)], dtype)
    x = np.linspace(0.1, 2, 64, dtype=dtype)
    out = np.empty_like(x)
    loop(x, out)
    assert_vectorised_without_libm(loop, "float" if dtype == np.float32 else "double")
    expected = evaluate(name, dtype, x * dtype.type(1.5) + dtype.type(0.5)) * dtype.type(0.5)
    np.testing.assert_allclose(out, expected + x * x, rtol=1e-6)


def test_loop_with_python_float_literals_still_vectorises():
    # In Numba float32 * 1.5 is float64; tanh_f32 casts its argument back to float32.
    tanh_f32 = fastmath.tanh_f32

    @njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = tanh_f32(x[i] * 1.5 + 0.5) * 0.5 + x[i] * x[i]

    x = np.linspace(-2, 2, 64, dtype=np.float32)
    out = np.empty_like(x)
    loop(x, out)
    assert_vectorised_without_libm(loop, "float")
    expected = evaluate("tanh", x.dtype, (x * 1.5 + 0.5).astype(np.float32)) * 0.5 + x * x
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("name", ["expm1", "log1p", "tanh", "sin"])
def test_fastmath_caller_gets_the_same_results(name):
    # The functions keep their own strict flags when inlined into a fastmath=True loop;
    # otherwise LLVM may drop their error-free transformations and NaN handling.
    dtype = np.dtype("float64")
    function = fastmath.FUNCTIONS[(name, dtype)]

    @njit(fastmath=True)
    def apply_fast(x, out):
        for i in range(x.size):
            out[i] = function(x[i])

    x = np.concatenate([np.linspace(-3, 3, 1001), [np.nan, np.inf, -np.inf, -0.0, -1.0]])
    out = np.empty_like(x)
    apply_fast(x, out)
    np.testing.assert_array_equal(out, evaluate(name, dtype, x))


# --- no fast-math flag may assume finite values (every backend) -------------------------

SPECIAL_INPUTS = [
    np.array([np.nan, 1.0, np.inf]),
    np.array([np.inf, -np.inf, 2.0]),
    np.array([-0.0, -0.0, -0.0]),
    np.array([-1.0, -0.0, 3.0]),
]


def _reduction_programs():
    return {
        "sum(x - x)": lambda x: (x - x).sum(),
        "mean(x - x)": lambda x: (x - x).mean(),
        "sum(x * 0)": lambda x: (x * 0).sum(),
        "prod(x - x)": lambda x: (x - x).prod(),
        "sum": lambda x: x.sum(),
        "mean": lambda x: x.mean(),
        "prod": lambda x: x.prod(),
        "max": lambda x: x.max(),
        "min": lambda x: x.min(),
        "sum(log x - log x)": lambda x: (np.log(x) - np.log(x)).sum(),
    }


def _elementwise_programs():
    return {"x - x": lambda x: x - x, "x * 0": lambda x: x * 0}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(_reduction_programs()))
def test_reductions_keep_nan_inf_and_signed_zero(backend, name, dtype):
    """reassoc on the accumulator once came with nsz, which let LLVM fold the operand
    tree too: sum(x - x) over [nan, 1, inf] was 0.0."""
    program = _reduction_programs()[name]
    f = numbax.jit(program, backend=backend)
    for x in SPECIAL_INPUTS:
        x = x.astype(dtype)
        with np.errstate(all="ignore"):
            expected = program(x)
        result = np.asarray(backend.to_host(f(x)))
        np.testing.assert_array_equal(result, expected, err_msg=f"{name} of {x}")
        assert result.dtype == expected.dtype
        if name not in ("max", "min") and expected == 0:  # NumPy's max of zeros picks either
            assert np.signbit(result) == np.signbit(expected), f"sign of {name} of {x}"


@pytest.mark.parametrize("name", list(_elementwise_programs()))
def test_elementwise_keeps_nan_inf_and_signed_zero(backend, name):
    program = _elementwise_programs()[name]
    f = numbax.jit(program, backend=backend)
    x = np.concatenate(SPECIAL_INPUTS)
    with np.errstate(all="ignore"):
        expected = program(x)
    result = np.asarray(backend.to_host(f(x)))
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))


def test_generated_cpu_code_carries_no_finite_math_flag():
    x = np.array([np.nan, 1.0, np.inf])
    executable = numbax.jit(lambda x: (x - x).sum() + (x * x).prod()).lower(x).compile()
    llvm = executable.llvm_ir()
    flags = set(re.findall(r"\bf(?:add|sub|mul|div)\s+((?:[a-z]+ )*)(?:double|float|<)", llvm))
    assert "reassoc " in flags  # the accumulation still vectorises
    forbidden = {"nnan", "ninf", "nsz", "fast", "afn", "arcp", "contract"}
    assert not {flag for group in flags for flag in group.split()} & forbidden, flags


def test_jitted_sin_and_cos_are_exact_at_large_arguments_and_vectorise():
    """End to end on the cpu backend: at |x| ~ 1e12 a reduction that runs out of bits is
    2e-5 off NumPy; the compiled program is within an ulp, and its loop is SIMD code."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-1e12, 1e12, 4096), [1e12, 1e22, CLOSEST_TO_HALF_PI_MULTIPLE]])
    compiled = numbax.jit(lambda x: (np.sin(x), np.cos(x))).lower(x).compile()
    for name, result in zip(("sin", "cos"), compiled(x), strict=True):
        errors = ulp_errors(result, reference(name, x.dtype, x), x.dtype)
        assert errors.max() <= fastmath.ULP_BOUNDS[(name, x.dtype)], name
    assert re.search(r"<(4|8|16) x double>", compiled.llvm_ir()), "the loop was not vectorised"
