"""The interpreted first call and the compiled program compute the same math.

A tiered signature's first call runs the primitives' reference implementations
(ir/elementwise.py), later calls the compiled code (backends/cpu/fastmath.py). Both are
held to the exact result: the compiled math within its documented ``ULP_BOUNDS``, the
reference within an ulp (float64 NumPy; narrower floats computed in float64 and rounded
once), so the two tiers agree within the documented bound plus one ulp, extremes
included, and ``logistic`` (sigmoid) uses the compiled formula, exact where
``1 / (1 + exp(-x))`` rounds to 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import numbax
from numbax.ir.primitive import PRIMITIVES

fastmath = pytest.importorskip("numbax.backends.cpu.fastmath")

FUNCTIONS = ("exp", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos")


def _inputs(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1e-20, -1e-20]
    special += [710.0, -710.0, 709.78, -709.78, 745.0, -745.0, 746.0, -746.0]
    special += [88.7, -88.7, 89.0, -89.0, 103.9, -103.9, 105.0, -105.0, 20.0, -20.0, 40.0]
    special += [1e6, -1e6, 1e30, -1e30, float(info.max), -float(info.max), float(info.tiny)]
    special += [float(info.smallest_subnormal), -float(info.smallest_subnormal)]
    special += [float(info.tiny) / 3, -float(info.tiny) / 3]  # subnormals
    rng = np.random.default_rng(20261204)
    magnitudes = np.exp(rng.uniform(np.log(float(info.tiny)), np.log(float(info.max)), 4000))
    near_zero = rng.uniform(-50.0, 50.0, 4000)
    signs = rng.choice([-1.0, 1.0], magnitudes.size)
    with np.errstate(over="ignore"):
        return np.concatenate([special, magnitudes * signs, near_zero]).astype(dtype)


def _ulps(actual: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|actual - reference| in ulps of the reference; 0 where both are the same special
    value, inf where only one is inf or nan."""
    dtype = reference.dtype
    ulp = np.maximum(np.spacing(np.abs(reference)), np.finfo(dtype).smallest_subnormal)
    actual, reference = actual.astype(np.float64), reference.astype(np.float64)
    same = (actual == reference) | (np.isnan(actual) & np.isnan(reference))
    ulp = ulp.astype(np.float64)
    with np.errstate(invalid="ignore"):
        distance = np.abs(actual - reference) / ulp
    return np.where(same, 0.0, np.where(np.isfinite(distance), distance, np.inf))


def all_functions(x):
    return tuple(getattr(numbax.lax, name)(x) for name in FUNCTIONS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_the_first_call_and_the_compiled_program_agree_within_the_documented_bounds(dtype):
    x = _inputs(dtype)
    f = numbax.jit(all_functions, backend="cpu", tiered=True)
    interpreted = f(x)
    assert f.interpreted_calls == 1
    f.wait_compiled()
    compiled = f(x)
    assert f.interpreted_calls == 1  # the compiled program answered
    for name, first, later in zip(FUNCTIONS, interpreted, compiled, strict=True):
        assert first.dtype == later.dtype == dtype
        bound = fastmath.ULP_BOUNDS[(name, np.dtype(dtype))] + 1
        errors = _ulps(later, first)
        worst = int(errors.argmax())
        assert errors[worst] <= bound, (
            f"{name}({x[worst]!r}): first call {first[worst]!r}, compiled {later[worst]!r}"
        )


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_sigmoid_of_large_negative_numbers_is_the_same_in_both_tiers(dtype):
    x = np.array([-710.0, -740.0, -100.0, -90.0, -30.0], dtype)
    f = numbax.jit(numbax.nn.sigmoid, backend="cpu", tiered=True)
    first = f(x)
    f.wait_compiled()
    later = f(x)
    assert f.interpreted_calls == 1
    assert first[0] == later[0]  # -710: 4.48e-309 in float64 (the first call once gave 0.0)
    assert _ulps(later, first).max() <= fastmath.ULP_BOUNDS[("logistic", np.dtype(dtype))] + 1
    wide = x.astype(np.longdouble)  # exact enough: a 64-bit significand, 15 exponent bits
    exact = (np.exp(wide) / (1 + np.exp(wide))).astype(dtype)
    assert _ulps(first, exact).max() <= 1
    if dtype == np.float64:
        assert first[0] > 0  # 4.48e-309, where 1 / (1 + exp(710)) is 0


@pytest.mark.parametrize("name", [n for n in FUNCTIONS if n != "logistic"])
def test_the_float32_reference_is_the_exact_result_rounded(name):
    """The oracle stays honest: against libm's float64 result (math module, not NumPy)
    rounded to float32, at most the one ulp a second rounding can cost."""
    x = _inputs(np.float32)
    exact = []
    with np.errstate(all="ignore"):
        for value in x.astype(np.float64):
            try:
                exact.append(getattr(math, name)(value))
            except (ValueError, OverflowError):  # log of a negative: nan; exp: inf
                exact.append(getattr(np, name)(value))
        exact = np.array(exact).astype(np.float32)
        (reference,) = PRIMITIVES[name].impl(x)
    assert _ulps(reference, exact).max() <= 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_the_logistic_reference_is_within_its_bound_of_the_exact_result(dtype):
    """Against the formula in long double (64-bit significand): the reference keeps the
    compiled code's bound, at the extremes too."""
    x = _inputs(dtype)
    wide = x.astype(np.longdouble)
    with np.errstate(all="ignore"):
        exact = (1 / (1 + np.exp(-wide))).astype(dtype)
        (reference,) = PRIMITIVES["logistic"].impl(x)
    assert _ulps(reference, exact).max() <= fastmath.ULP_BOUNDS[("logistic", np.dtype(dtype))]
