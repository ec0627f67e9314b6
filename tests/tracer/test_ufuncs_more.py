"""The float ufuncs written as compositions (``numpy_lib/numpy_ufuncs.py``, and ``exp2``,
``log2``, ``log10`` of ``numpy_lib/ufuncs.py``) against NumPy: an accuracy sweep in ulps over
the whole float range, the special values bit for bit (NaN, inf, -0.0, the edges of each
domain), derivatives where the slope is infinite or a discarded branch overflows, dtype
rules, and the refusals.

The corpus (``corpus_ufuncs.py``) covers shapes, dtypes, gradients at ordinary points,
vmap and the passes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import numbax
from numbax import numpy as xnp

FLOATS = (np.float32, np.float64)
ULPS = 4  # the compositions measure at most 3 against NumPy's libm
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-300, -1e-300]


def _quiet(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def _magnitudes(dtype, low=None, high=None, n=4001):
    limits = np.finfo(dtype)
    low = limits.smallest_subnormal if low is None else low
    with np.errstate(over="ignore"):  # geomspace's last step rounds past the largest float
        magnitudes = np.geomspace(low, limits.max if high is None else high, n).astype(dtype)
    return np.minimum(magnitudes, limits.max)


def _both_signs(magnitudes):
    return np.concatenate([-magnitudes[::-1], np.array([-0.0, 0.0], magnitudes.dtype), magnitudes])


def _near_one(dtype):
    """1 - d and d - 1 for d from half an ulp to 1, both signs: where cancellation bites."""
    gaps = _magnitudes(dtype, np.finfo(dtype).epsneg / 2, 1.0, 2001)
    return np.concatenate([1 - gaps, gaps - 1])


def _domain(name, dtype):
    wide = _both_signs(_magnitudes(dtype))
    if name in ("arcsin", "arccos", "arctanh"):
        return np.concatenate([wide[np.abs(wide) <= 1], _near_one(dtype)])
    if name == "arccosh":
        return np.concatenate([wide[wide >= 1], 2 - _near_one(dtype)[:2001]])
    if name == "exp2":
        return _both_signs(_magnitudes(dtype, 1e-30, 1100.0))
    return wide


UNARY = [
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "cbrt", "trunc",
    "deg2rad", "rad2deg", "exp2", "log2", "log10",
]  # fmt: skip
BINARY = ["hypot", "fmax", "fmin", "copysign", "heaviside", "logaddexp2", "fmod"]


def ulp_error(got, want, scale=None):
    """|got - want| in ulps of ``scale`` (default ``want``); equal values (infinities,
    NaNs with NaNs) are 0."""
    got, want = np.asarray(got), np.asarray(want)
    scale = np.abs(want if scale is None else scale)
    with np.errstate(all="ignore"):  # inf - inf and spacing(inf): the NaNs masked below
        error = np.abs(got.astype(np.float64) - want) / np.spacing(scale).astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0.0, error)


def _assert_same_signs(got, want):
    """Signs agree, signed zeros included; a NaN's sign is libm's choice, so not NaNs."""
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def _sample(x, backend):
    """The CUDA simulator runs Python per thread: a small, evenly spread sample there."""
    return x[:: max(1, x.size // backend.size(x.size, simulated=48))]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", UNARY)
def test_unary_ufunc_is_within_a_few_ulps_of_numpy_over_the_whole_range(name, dtype, backend):
    x = _sample(np.concatenate([_domain(name, dtype), np.array(SPECIALS, dtype)]), backend)
    ufunc = getattr(np, name)
    got = backend.to_host(numbax.jit(ufunc, backend=backend)(x))
    want = _quiet(ufunc, x)
    assert got.dtype == want.dtype
    error = ulp_error(got, want)
    worst = int(np.argmax(error))
    assert error[worst] <= ULPS, f"{name}({x[worst]!r}) = {got[worst]!r}, NumPy {want[worst]!r}"
    _assert_same_signs(got, want)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", BINARY)
def test_binary_ufunc_is_within_a_few_ulps_of_numpy_over_the_whole_range(name, dtype, backend):
    side = _sample(np.concatenate([_both_signs(_magnitudes(dtype, n=151)), SPECIALS]), backend)
    x, y = (a.astype(dtype) for a in np.meshgrid(side, side))
    ufunc = getattr(np, name)
    got = backend.to_host(numbax.jit(ufunc, backend=backend)(x, y))
    want = _quiet(ufunc, x, y)
    assert got.dtype == want.dtype
    # log2(2**x + 2**y) = max + log2(1 + 2**-d): NumPy's own sum cancels when the result
    # is far smaller than the larger operand, so its ulps are counted at that scale.
    scale = (
        np.maximum(np.abs(want), np.maximum(np.abs(x), np.abs(y))) if name == "logaddexp2" else None
    )
    error = ulp_error(got, want, scale)
    worst = np.unravel_index(np.argmax(error), error.shape)
    assert error[worst] <= ULPS, (
        f"{name}({x[worst]!r}, {y[worst]!r}) = {got[worst]!r}, NumPy {want[worst]!r}"
    )
    # fmax/fmin of -0.0 and 0.0 may return either zero (C leaves it open).
    tie = (x == 0) & (y == 0) if name in ("fmax", "fmin") else np.zeros(x.shape, bool)
    _assert_same_signs(got[~tie], want[~tie])


def test_logarithms_are_exact_at_exact_powers():
    """log(x) / log(b) misses these (log10(1000) was 2.9999999999999996), so int() of the
    answer counted one digit short."""
    twos = np.array([2.0**k for k in range(-1074, 1024, 7)] + [2.0**1023, 2.0**-1074])
    tens = 10.0 ** np.arange(23)
    np.testing.assert_array_equal(numbax.jit(np.log2)(twos), np.log2(twos))
    np.testing.assert_array_equal(numbax.jit(np.log10)(tens), np.arange(23.0))
    small = np.float32(2.0) ** np.arange(-149, 128, dtype=np.float32)
    np.testing.assert_array_equal(
        numbax.jit(np.log2)(small), np.arange(-149.0, 128.0, dtype=np.float32)
    )


def test_exp2_of_large_arguments_is_not_hundreds_of_ulps_off():
    x = np.linspace(-1070, 1020, 2001)
    assert ulp_error(numbax.jit(np.exp2)(x), np.exp2(x)).max() <= 1


FUNCTIONS_OF_SPECIALS = [
    ("sinc", np.sinc), ("fix", np.fix), ("angle", np.angle), ("nan_to_num", np.nan_to_num),
    ("signbit", np.signbit), ("isposinf", np.isposinf), ("isneginf", np.isneginf),
    ("modf", np.modf), ("real", np.real), ("imag", np.imag), ("conj", np.conj),
]  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    ("name", "fn"), FUNCTIONS_OF_SPECIALS, ids=[n for n, _ in FUNCTIONS_OF_SPECIALS]
)
def test_special_values_bit_for_bit(name, fn, dtype):
    # sin(pi * 1e30) is rounding noise, and NumPy's own vector and scalar loops disagree on it.
    huge = [] if name == "sinc" else [1e30, -1e30]
    x = np.array(SPECIALS + huge + [7.25, -7.25], dtype)
    got, want = numbax.jit(fn)(x), _quiet(fn, x)
    for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=4 * np.finfo(dtype).eps, atol=0)
        _assert_same_signs(g, w)


def _slope(fn, x):
    """(reverse mode, forward mode) derivative of ``fn`` at the float64 point ``x``."""
    x = np.float64(x)
    reverse = numbax.grad(fn)(x)
    forward = numbax.jvp(fn, (x,), (np.float64(1.0),))[1]
    return float(reverse), float(forward)


@pytest.mark.parametrize(
    ("fn", "x", "slope"),
    [
        # An infinite slope at the edge of the domain, from both modes (the factor that
        # is 0 there must not meet the infinite one: inf * 0 is NaN).
        (np.arcsin, 1.0, np.inf), (np.arcsin, -1.0, np.inf), (np.arccos, 1.0, -np.inf),
        (np.arccos, -1.0, -np.inf), (np.arccosh, 1.0, np.inf), (np.arctanh, 1.0, np.inf),
        (np.arctanh, -1.0, np.inf), (np.cbrt, 0.0, np.inf), (np.cbrt, -0.0, np.inf),
        # Odd functions keep their slope at 0 (sign(x) * f(|x|) would give 0 there).
        (np.arcsinh, 0.0, 1.0), (np.arcsinh, -0.0, 1.0), (np.arctanh, 0.0, 1.0),
        (np.arcsin, 0.0, 1.0), (np.arctan, 0.0, 1.0),
        # The branch a select discards would overflow (x * x = inf) or divide by 0: the
        # double where keeps its zero cotangent from becoming NaN.
        (np.arcsinh, 1e200, 1e-200), (np.arcsinh, -1e300, 1e-300), (np.arccosh, 1e200, 1e-200),
        (np.cbrt, 1e300, 1 / (3 * 1e200)), (np.sinc, 0.0, 0.0), (np.log2, 0.0, np.inf),
        (lambda x: np.hypot(x, 1e-300), 1e300, 1.0), (lambda x: np.hypot(x, 0.0), 0.0, 0.0),
        (lambda x: np.hypot(x, 3.0), np.inf, 1.0), (lambda x: np.logaddexp2(x, x), 5.0, 1.0),
    ],
)  # fmt: skip
def test_derivatives_at_the_edges(fn, x, slope):
    reverse, forward = _slope(fn, x)
    assert reverse == pytest.approx(slope, rel=1e-12)
    assert forward == pytest.approx(slope, rel=1e-12)


def test_second_derivatives_are_smooth_through_the_series_and_the_branches():
    second = numbax.grad(numbax.grad(np.sinc))
    assert second(0.0) == pytest.approx(-(math.pi**2) / 3, rel=1e-12)
    assert numbax.grad(numbax.grad(np.arcsinh))(0.3) == pytest.approx(-0.3 / 1.09**1.5, rel=1e-12)
    assert numbax.grad(numbax.grad(lambda x: np.logaddexp2(x, 1.0)))(1.0) == pytest.approx(
        math.log(2) / 4, rel=1e-12
    )


@pytest.mark.parametrize("name", [n for n in UNARY if n != "trunc"] + ["signbit", "modf"])
def test_integer_and_bool_inputs_compute_in_float_as_numpy(name):
    ufunc = getattr(np, name)
    for x, dtype in [
        (np.array([-3, 0, 1, 8], np.int32), np.float64),
        (np.array([-3, 0, 1, 8], np.int64), np.float64),
        (np.array([True, False]), np.float16),  # NumPy's loops take bools to float16
        (np.array([-3, 0, 1, 8], np.int8), np.float16),
        (np.array([3, 0, 1, 8], np.uint16), np.float32),
    ]:
        got, want = numbax.jit(ufunc)(x), _quiet(ufunc, x)
        for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
            assert g.dtype == (np.bool_ if w.dtype == np.bool_ else dtype)
            rtol = {np.float16: 1e-3, np.float32: 1e-6}.get(w.dtype.type, 1e-15)
            np.testing.assert_allclose(g, w, rtol=rtol)


def test_python_scalars_are_weak_and_trunc_keeps_integers():
    x32 = np.array([1.5, -2.0], np.float32)
    assert numbax.jit(lambda x: np.hypot(x, 2.0))(x32).dtype == np.float32
    assert numbax.jit(lambda x: np.copysign(3, x))(x32).dtype == np.float32
    assert numbax.jit(lambda x: np.fmax(x, 1))(np.array([1, 5], np.int32)).dtype == np.int32
    ints = np.array([-3, 4], np.int32)
    assert numbax.jit(np.trunc)(ints).dtype == np.int32
    assert numbax.jit(np.fix)(np.array([True])).dtype == np.bool_
    assert numbax.jit(np.sinc)(np.array([True, False])).dtype == np.float64  # as NumPy


def test_nan_to_num_keywords_and_in_place_write():
    x = np.array([np.nan, np.inf, -np.inf, 2.0], np.float32)

    def fn(x):
        written = x.copy()
        np.nan_to_num(written, copy=False, nan=5.0, posinf=6.0, neginf=-7.0)
        return written, np.nan_to_num(x, posinf=np.float32(1e30))

    got = numbax.jit(fn)(x)
    want = fn(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


def test_complex_parts_are_numpys():
    # Complex dtypes are supported (tests/tracer/test_complex.py): the parts are NumPy's.
    z = np.array([1 + 2j, -3 - 0.5j])
    for fn, reference in [
        (xnp.real, np.real),
        (xnp.imag, np.imag),
        (xnp.angle, np.angle),
        (xnp.conj, np.conj),
    ]:
        got = numbax.jit(fn)(z)
        assert got.dtype == reference(z).dtype
        np.testing.assert_array_equal(got, reference(z))
    assert xnp.iscomplexobj(np.array([1j])) and not numbax.jit(xnp.iscomplexobj)(np.ones(2))


def test_names_join_numbax_numpy_and_the_array_api_aliases_trace():
    names = ["arcsin", "asin", "acosh", "atanh", "hypot", "cbrt", "fix", "sinc", "nan_to_num",
             "heaviside", "signbit", "copysign", "logaddexp2", "fmax", "fmin", "deg2rad",
             "radians", "rad2deg", "degrees", "real", "imag", "conj", "angle", "trunc"]  # fmt: skip
    for name in names:
        assert callable(getattr(xnp, name)), name
    x = np.array([0.25, -0.5])
    np.testing.assert_allclose(numbax.jit(np.asin)(x), np.arcsin(x), rtol=1e-15)


_DIVMOD_VALUES = [1.0, -1.0, 0.1, -0.1, 0.0, -0.0, 7.5, -7.5, 3.0, -3.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "divmod"])
def test_float_floor_division_is_numpys_divmod(backend, name, dtype):
    """``1 // 0.1`` is 9 in NumPy (the quotient agrees with ``fmod``), not
    ``floor(1 / 0.1)`` = 10; the remainder's zero takes the divisor's sign."""
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(_DIVMOD_VALUES, _DIVMOD_VALUES))
    ufunc = getattr(np, name)
    with np.errstate(all="ignore"):
        want = ufunc(a, b)
        got = backend.to_host(numbax.jit(lambda x, y: ufunc(x, y), backend=backend)(a, b))
    for w, g in zip(*(v if isinstance(v, tuple) else (v,) for v in (want, got)), strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
