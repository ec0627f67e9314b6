"""fastmath's erf (backends/cpu/fastmath.py) and the ``erf`` primitive end to end.

float32: every float32 of [0, 4] when ``NUMBAX_TEST_SLOW=1`` (1.1e9 inputs; every 61st
otherwise), against SciPy's float64 erf, within ``ULP_BOUNDS``; the function is odd bit
for bit and exactly +-1 beyond 4, checked over every 4099th float32 above 4.
float64: a dense sample against a long-double reference (a Taylor series below 1,
``1 - exp(-x^2) erfcx(x)`` above: erfcx's float64 error moves erf by at most 0.15 ulp).
Special values are SciPy's exactly, signs of zero included.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import switches
from fastmath_references import njit_loop
from scipy.special import erf, erfcx

import numbax
from numbax.backends.cpu import fastmath
from numbax.config import cuda_simulator

FLOAT32, FLOAT64 = np.dtype("float32"), np.dtype("float64")
FOUR_BITS = int(np.float32(4).view(np.int32))
INF_BITS = int(np.float32(np.inf).view(np.int32))
CHUNK = 1 << 22


def evaluate(dtype, x):
    x = np.ascontiguousarray(x, dtype=dtype)
    out = np.empty_like(x)
    njit_loop("erf", dtype)(x, out)
    return out


def ulps(actual, exact, dtype):
    """|actual - exact| in ulps of ``exact`` rounded to ``dtype`` (exact in a wider type)."""
    rounded = np.abs(exact).astype(dtype)
    ulp = np.maximum(np.spacing(rounded), np.finfo(dtype).smallest_subnormal)
    return (np.abs(actual.astype(exact.dtype) - exact) / ulp.astype(exact.dtype)).astype(float)


def float32_sweep(stride: int):
    """Max ulp error over every ``stride``-th float32 of [0, 4]; asserts oddness on the way."""
    worst, at = 0.0, None
    for start in range(0, FOUR_BITS + 1, CHUNK * stride):
        stop = min(start + CHUNK * stride, FOUR_BITS + 1)
        x = np.arange(start, stop, stride, dtype=np.int32).view(np.float32)
        y = evaluate(FLOAT32, x)
        np.testing.assert_array_equal(evaluate(FLOAT32, -x).view(np.int32), (-y).view(np.int32))
        errors = ulps(y, erf(x.astype(np.float64)), FLOAT32)
        if errors.max() > worst:
            worst, at = float(errors.max()), x[errors.argmax()]
    return worst, at


def test_float32_within_its_bound_over_every_float32_of_the_clamped_range():
    stride = 1 if switches.flag("NUMBAX_TEST_SLOW") else 61
    worst, at = float32_sweep(stride)
    assert worst <= fastmath.ULP_BOUNDS[("erf", FLOAT32)], f"{worst} ulps at {at!r}"


def test_float32_is_exactly_one_beyond_the_clamp():
    x = np.arange(FOUR_BITS, INF_BITS + 1, 4099, dtype=np.int32).view(np.float32)
    x = np.concatenate([x, [np.inf]]).astype(np.float32)
    np.testing.assert_array_equal(evaluate(FLOAT32, x), 1.0)
    np.testing.assert_array_equal(evaluate(FLOAT32, -x), -1.0)


def long_double_erf(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.longdouble)
    z = wide * wide
    term, total = wide.copy(), wide.copy()
    for n in range(1, 40):  # |x| < 1: terms fall below 1e-50
        term = term * -z / n
        total = total + term / (2 * n + 1)
    small = total * (2 / np.sqrt(np.longdouble(np.pi)))
    with np.errstate(over="ignore", invalid="ignore"):
        tail = np.exp(-z) * erfcx(np.abs(x)).astype(np.longdouble)
    large = np.sign(wide) * (1 - tail)
    return np.where(np.abs(x) < 1, small, large)


def test_float64_within_its_bound_on_a_dense_sample():
    rng = np.random.default_rng(36)
    x = np.concatenate(
        [
            rng.uniform(-7, 7, 400_000),
            rng.uniform(-1.25, 1.25, 400_000),  # both branches around the switch at 1
            np.nextafter(1.0, [0.0, 2.0] * 1000),
            np.exp(rng.uniform(np.log(1e-300), 0, 100_000)) * rng.choice([-1, 1], 100_000),
        ]
    )
    errors = ulps(evaluate(FLOAT64, x), long_double_erf(x), FLOAT64)
    worst = int(errors.argmax())
    assert errors[worst] <= fastmath.ULP_BOUNDS[("erf", FLOAT64)], f"x = {x[worst]!r}"


@pytest.mark.parametrize("dtype", [FLOAT32, FLOAT64], ids=["f32", "f64"])
def test_special_values_are_scipys(dtype):
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, 30.0, -30.0], dtype)
    result, expected = evaluate(dtype, x), erf(x.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(result, expected)
    numbers = ~np.isnan(x)
    np.testing.assert_array_equal(np.signbit(result[numbers]), np.signbit(expected[numbers]))


@pytest.mark.parametrize("dtype", [FLOAT32, FLOAT64], ids=["f32", "f64"])
def test_jitted_erf_and_exact_gelu_are_one_simd_loop_within_the_bound(dtype):
    def program(x):
        return numbax.scipy.special.erf(x), numbax.nn.gelu(x, approximate=False)

    x = np.linspace(-6, 6, 4099).astype(dtype)
    compiled = numbax.jit(program).lower(x).compile()
    value, gelu = compiled(x)
    exact = erf(x.astype(np.float64))
    assert ulps(value, exact, dtype).max() <= fastmath.ULP_BOUNDS[("erf", dtype)]
    reference = 0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    np.testing.assert_allclose(gelu, reference, rtol=0, atol=8 * np.finfo(dtype).eps)
    element = "float" if dtype == FLOAT32 else "double"
    llvm = compiled.llvm_ir()
    assert re.search(rf"<(4|8|16) x {element}>", llvm), "the loop was not vectorised"
    assert not re.search(r"call [^\n]*@\"?erff?\b", llvm), "a libm erf call is left"


def test_erf_is_one_primitive_with_the_exact_derivative():
    x = np.linspace(-3, 3, 60)
    text = str(numbax.make_jaxpr(numbax.scipy.special.erf)(x))
    assert re.search(r"= erf a\b", text) and "exp" not in text, text
    gradient = numbax.grad(lambda v: numbax.scipy.special.erf(v).sum())(x)
    step = 1e-6
    central = (erf(x + step) - erf(x - step)) / (2 * step)
    np.testing.assert_allclose(gradient, central, rtol=1e-8, atol=1e-10)
    batched = numbax.vmap(numbax.scipy.special.erf)(x.reshape(3, -1))
    np.testing.assert_allclose(batched, erf(x).reshape(3, -1), rtol=4e-16, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cuda_kernel_calls_libdevice_erf_and_compiles_to_ptx(dtype):
    from numbax.backends.cuda.ptx import program_ptx, ptx_toolchain_problem

    if ptx_toolchain_problem() is not None:
        pytest.skip(ptx_toolchain_problem())
    closed = numbax.make_jaxpr(lambda x: numbax.scipy.special.erf(x) * x)(np.ones(64, dtype))
    (kernel_name, ptx), *_ = program_ptx(closed, "erf_kernel")
    assert ".target sm_90" in ptx
    # libdevice's erf is inlined, not called; a float32 kernel does no float64 arithmetic.
    assert not re.search(r"\bcall(\.uni)?\b[^;]*erf", ptx), kernel_name
    if dtype == "float32":
        assert not re.search(r"\b(add|mul|fma\.rn)\.f64\b", ptx), kernel_name


SIMULATED_PROGRAM = """
import numpy as np, numbax
from scipy.special import erf
x = np.concatenate([np.linspace(-5, 5, 999), [0.0, -0.0, np.inf, -np.inf, np.nan]])
for dtype in ("float32", "float64"):
    v = x.astype(dtype)
    out = numbax.jit(numbax.scipy.special.erf, backend="cuda")(v)
    np.testing.assert_allclose(np.asarray(out), erf(v.astype(np.float64)).astype(dtype),
                               rtol=2 * np.finfo(dtype).eps, atol=0)
print("ok")
"""


@pytest.mark.skipif(
    not (cuda_simulator() or switches.flag("NUMBAX_TEST_GPU")),
    reason="needs NUMBA_ENABLE_CUDASIM=1 (as the CUDA tests: numba-cuda, the cuda extra)",
)
@pytest.mark.skipif(sys.platform == "win32", reason="one subprocess, POSIX environment")
def test_cuda_simulator_erf_matches_scipy():
    environment = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run(
        [sys.executable, "-c", SIMULATED_PROGRAM],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("dtype", [FLOAT32, FLOAT64], ids=["f32", "f64"])
def test_the_interpreted_first_call_and_the_compiled_program_agree(dtype):
    """The tiered first call evaluates SciPy's erf (in float64, rounded once); the compiled
    program fastmath's: within fastmath's bound plus the reference's rounding."""
    x = np.concatenate([np.linspace(-7, 7, 20_001), [0.0, -0.0, np.inf, -np.inf]]).astype(dtype)
    f = numbax.jit(numbax.scipy.special.erf, backend="cpu", tiered=True)
    interpreted = f(x)
    assert f.interpreted_calls == 1
    f.wait_compiled()
    compiled = f(x)
    assert f.interpreted_calls == 1  # the compiled program answered
    errors = ulps(compiled, interpreted.astype(np.float64), dtype)
    assert errors.max() <= fastmath.ULP_BOUNDS[("erf", dtype)] + 1, x[errors.argmax()]


def test_erf_of_a_complex_array_is_refused_at_the_users_line():
    with pytest.raises(numbax.UnsupportedFunctionError) as info:
        numbax.jit(lambda z: numbax.scipy.special.erf(z))(np.ones(3, complex))  # the mistake
    message = str(info.value)
    assert "complex" in message and "x.real" in message
    assert f"{__file__}:" in message
