"""The CPU backend's float32 math over dense sweeps of float32 inputs.

Each ``fastmath`` float32 function runs in an njit loop (as the generated code calls it)
over every k-th float32 of [-20, 20], a sample of every exponent (subnormals included)
and the special values, against NumPy in float64, which is exact enough for a float32
result (its error is 2^-29 of a float32 ulp). The errors must stay within the
documented ``fastmath.ULP_BOUNDS``, and special values must be NumPy's exactly. With
``NUMBAX_TEST_SLOW=1`` the sweep takes every float32 of [-20, 20] (2.2e9 inputs).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from fastmath_references import REFERENCES, njit_loop

import numbax
from numbax.backends.cpu import fastmath

NAMES = ["exp", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos"]
FLOAT32 = np.dtype("float32")
CHUNK = 1 << 22  # inputs per call: bounds the memory of the float64 reference


def _max_ulp_error(name, x: np.ndarray) -> tuple[float, float]:
    """The largest error of the float32 function over x, in float32 ulps of the exact
    (float64) result, and an input where it occurs. A special value (NaN, inf, exact
    zero) must be matched exactly, sign included, or the error is inf."""
    result = np.empty_like(x)
    njit_loop(name, FLOAT32)(x, result)
    with np.errstate(all="ignore"):
        exact = REFERENCES[name](x.astype(np.float64))
        rounded = exact.astype(np.float32)
        same = (result == rounded) & (np.signbit(result) == np.signbit(rounded))
        same |= np.isnan(result) & np.isnan(rounded)
        _, exponent = np.frexp(exact)
        ulp = np.ldexp(1.0, np.maximum(exponent - 1, -126) - 23)
        error = np.abs(result.astype(np.float64) - exact) / ulp
    special = ~np.isfinite(rounded) | (exact == 0)
    error = np.where(same, 0.0, np.where(special | ~np.isfinite(error), np.inf, error))
    worst = int(error.argmax())
    return float(error[worst]), float(x[worst])


def _sweep(name, bit_chunks) -> tuple[float, float]:
    """``_max_ulp_error`` over the float32s with these bit patterns, and their negatives."""
    worst = (0.0, 0.0)
    for bits in bit_chunks:
        positive = bits.view(np.float32)
        for x in (positive, -positive):
            worst = max(worst, _max_ulp_error(name, x))
    return worst


def _bits_up_to(limit: float, step: int):
    """Every ``step``-th bit pattern of the float32s in [0, limit], in chunks."""
    top = int(np.float32(limit).view(np.int32)) + 1
    for start in range(0, top, CHUNK * step):
        yield np.arange(start, min(start + CHUNK * step, top), step, dtype=np.int32)


def _every_exponent(samples: int) -> np.ndarray:
    """``samples`` random significands for each of the 255 finite exponents (0:
    subnormals), the smallest and largest significand of each included."""
    rng = np.random.default_rng(36)
    exponents = np.repeat(np.arange(255, dtype=np.int32), samples)
    significands = rng.integers(0, 1 << 23, exponents.size, dtype=np.int32)
    significands[::samples] = 0
    significands[samples - 1 :: samples] = (1 << 23) - 1
    return (exponents << 23) | significands


def _special_values() -> np.ndarray:
    info = np.finfo(np.float32)
    tiny = info.smallest_subnormal
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, tiny, -tiny, 3 * tiny]
    values += [info.smallest_normal - tiny, -(info.smallest_normal - tiny)]
    values += [info.smallest_normal, info.max, -info.max, 1.0, -1.0]
    return np.array(values, dtype=np.float32)


@pytest.mark.parametrize("name", NAMES)
def test_dense_float32_sweep_within_the_documented_bound(name):
    bound = fastmath.ULP_BOUNDS[(name, FLOAT32)]
    # A prime stride, so that every significand pattern is visited at some exponent.
    worst, at = _sweep(name, [*_bits_up_to(20.0, 1021), _every_exponent(2048)])
    assert worst <= bound, f"{name}({at!r}) is {worst:.2f} ulps off (bound {bound})"


@pytest.mark.parametrize("name", NAMES)
def test_special_float32_values_are_numpys_exactly(name):
    x = _special_values()
    worst, at = _max_ulp_error(name, x)
    assert worst <= fastmath.ULP_BOUNDS[(name, FLOAT32)], f"{name}({at!r})"
    result = np.empty_like(x)
    njit_loop(name, FLOAT32)(x, result)
    with np.errstate(all="ignore"):
        expected = REFERENCES[name](x.astype(np.float64)).astype(np.float32)
    special = ~np.isfinite(expected) | (expected == 0) | ~np.isfinite(x) | (x == 0)
    np.testing.assert_array_equal(result[special], expected[special])
    signed = special & ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(result[signed]), np.signbit(expected[signed]))


def test_tanh_float32_is_exactly_one_where_tanh_rounds_to_one():
    x = np.array([9.02, 9.1, 20.0, 1e10, np.finfo(np.float32).max, np.inf], np.float32)
    result = np.empty_like(x)
    njit_loop("tanh", FLOAT32)(x, result)
    np.testing.assert_array_equal(result, np.ones_like(x))
    njit_loop("tanh", FLOAT32)(-x, result)
    np.testing.assert_array_equal(result, -np.ones_like(x))


def test_jitted_float32_tanh_chain_is_one_simd_loop_of_fmas_within_the_bound():
    """End to end on the cpu backend, the issue's chain: the fused loop is SIMD code
    whose tanh is the rational (FMAs and one division, no libm call), and its results
    are NumPy's float64 ones within a few float32 ulps (the tanh's own bound is checked
    by the sweeps above)."""
    x = np.linspace(-12, 12, 4099, dtype=np.float32)
    compiled = numbax.jit(lambda x: np.tanh(1.5 * x + 0.5) * 0.5 + x * x).lower(x).compile()
    llvm = compiled.llvm_ir()
    assert re.search(r"<(4|8|16) x float>", llvm), "the loop was not vectorised"
    assert re.search(r"llvm\.fma\.v(4|8|16)f32", llvm), "the Horner steps are not vector FMAs"
    declared = re.findall(r"^declare [^@]*@\"?([\w.$]+)", llvm, re.MULTILINE)
    assert not [name for name in declared if re.match(r"(tanh|exp|expm1)f?$", name)], declared
    inner = (np.float32(1.5) * x + np.float32(0.5)).astype(np.float64)
    expected = np.tanh(inner) * 0.5 + x.astype(np.float64) ** 2
    np.testing.assert_allclose(compiled(x), expected, rtol=2e-6, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_float32_in_minus_20_to_20_within_the_documented_bound(name):
    worst, at = _sweep(name, _bits_up_to(20.0, 1))
    bound = fastmath.ULP_BOUNDS[(name, FLOAT32)]
    assert worst <= bound, f"{name}({at!r}) is {worst:.2f} ulps off (bound {bound})"
