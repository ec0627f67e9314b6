"""frexp, ldexp, spacing, nextafter (``numpy_lib/numpy_exponents.py``) and gcd, lcm
(``numpy_lib/numpy_ufuncs.py``): bit for bit NumPy's on every backend, over the whole float
range (subnormals, the largest floats, signed zeros, infinities, NaN), and refused by
name where NumPy has no loop. The corpus (``corpus_ufuncs.py``) runs them at its shapes,
batched and differentiated."""

from __future__ import annotations

import numpy as np
import pytest

import numbax


def _floats(dtype, rng) -> np.ndarray:
    info = np.finfo(dtype)
    scattered = rng.standard_normal(300) * 10.0 ** rng.integers(-45, 39, 300)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 2, 0.5, 0.75, 3.0]
    edges += [info.max, -info.max, info.tiny, -info.tiny, info.tiny * 0.5]
    edges += [info.smallest_subnormal, -info.smallest_subnormal, 3 * info.smallest_subnormal]
    edges += [np.nextafter(dtype(1), dtype(0)), np.nextafter(info.tiny, dtype(0))]
    with np.errstate(over="ignore"):
        return np.concatenate([scattered, edges]).astype(dtype)


def _run(backend, fn, *args):
    return backend.to_host(numbax.jit(fn, backend=backend)(*args))


def _assert_bits_equal(got, want):
    """Equal values of equal dtype, zeros of equal sign, NaNs in the same places."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frexp_ldexp_spacing_are_numpys_bit_for_bit(backend, dtype, rng):
    x = _floats(dtype, rng)
    mantissa, exponent = _run(backend, np.frexp, x)
    want_mantissa, want_exponent = np.frexp(x)
    _assert_bits_equal(mantissa, want_mantissa)
    _assert_bits_equal(exponent, want_exponent)
    with np.errstate(over="ignore"):
        _assert_bits_equal(_run(backend, np.spacing, x), np.spacing(x))
    n = rng.integers(-320, 320, x.size).astype(np.int32)
    n[:6] = [5000, -5000, 0, 2100, -2100, np.iinfo(np.int32).min]
    with np.errstate(over="ignore"):
        _assert_bits_equal(_run(backend, np.ldexp, x, n), np.ldexp(x, n))
        _assert_bits_equal(_run(backend, np.ldexp, x, n.astype(np.int64)), np.ldexp(x, n))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_is_numpys_bit_for_bit(backend, dtype, rng):
    x = _floats(dtype, rng)
    towards = [x[::-1], x, np.roll(x, 7), np.zeros_like(x), -np.zeros_like(x)]
    towards += [np.full_like(x, np.inf), np.full_like(x, -np.inf), np.full_like(x, np.nan)]
    nextafter = numbax.jit(np.nextafter, backend=backend)
    for y in towards:
        with np.errstate(over="ignore"):
            _assert_bits_equal(backend.to_host(nextafter(x, y)), np.nextafter(x, y))


def test_nextafter_accumulates_as_numpys(rng):
    x = rng.standard_normal(9)
    accumulate = numbax.jit(lambda x: np.nextafter.accumulate(x), backend="interpret")
    _assert_bits_equal(accumulate(x), np.nextafter.accumulate(x))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_gcd_and_lcm_are_numpys(backend, dtype, rng):
    info = np.iinfo(dtype)
    low, high = max(info.min, -(10**4)), min(info.max, 10**4)
    n = backend.size(200, simulated=12)  # the simulator runs each thread's steps in Python
    a = rng.integers(low, high, n, dtype=dtype)
    b = rng.integers(low, high, n, dtype=dtype)
    a[:4], b[2:6] = 0, 0
    a[7:9], b[7:9] = info.max, [info.max, 1]
    if dtype == np.int64:  # Fibonacci neighbours: Euclid's longest run of steps
        a[9], b[9] = 7540113804746346429, 4660046610375530309

    def program(a, b):  # one compile for the three
        return np.gcd(a, b), np.lcm(a, b), np.gcd(a[:, None], b[:5])

    with np.errstate(over="ignore"):
        expected = program(a, b)
    for name, got, want in zip(
        ("gcd", "lcm", "broadcast gcd"), _run(backend, program, a, b), expected, strict=True
    ):
        try:
            _assert_bits_equal(got, want)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


def test_gcd_under_vmap_stops_each_example_at_its_own_step(rng):
    a = rng.integers(-500, 500, (4, 6))
    b = rng.integers(-500, 500, (4, 6))
    b[0] = 0  # an example with nothing to do
    np.testing.assert_array_equal(numbax.vmap(np.gcd)(a, b), np.gcd(a, b))


def test_the_mantissas_derivative_is_two_to_the_minus_exponent(rng):
    x = rng.standard_normal(5) * 10.0 ** rng.integers(-5, 5, 5)
    _, exponent = np.frexp(x)
    slope = numbax.grad(lambda x: np.sum(np.frexp(x)[0]))(x)
    np.testing.assert_array_equal(slope, np.ldexp(1.0, -exponent))
    n = np.array([3, -2, 0, 40, -40], np.int32)
    slope = numbax.grad(lambda x: np.sum(np.ldexp(x, n)))(x)
    np.testing.assert_array_equal(slope, np.ldexp(1.0, n))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: np.ldexp(x, x), "numpy.ldexp: the exponent must be a signed integer"),
        (lambda x: np.ldexp(x, x.astype(np.uint64)), "not uint64"),
        (lambda x: np.gcd(x, x), "numpy.gcd takes integers, not float64"),
        (lambda x: np.lcm(x.astype(np.int32), x), "numpy.lcm takes integers"),
        (lambda x: np.frexp(x * 1j), "numpy.frexp of a complex value"),
    ],
    ids=["ldexp-float", "ldexp-uint64", "gcd-float", "lcm-float", "frexp-complex"],
)
def test_arguments_numpy_has_no_loop_for_are_refused_by_name(call, message):
    with pytest.raises(numbax.NumbaxError, match=message):
        numbax.jit(call, backend="interpret")(np.ones(3))
