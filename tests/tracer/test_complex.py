"""Complex numbers through the front end and the compiled backends: entry and NEP 50
promotion (weak types of Python scalar arguments too), construction (``np.complex128(x)``,
``x + 1j * y``), the parts, NumPy's special values (division by zero; order, sign, NaN
tests, rounding, logarithms and exponentials on every pair of special parts), conversion
to real numbers, compiled derivatives of the inverse trigonometric functions, the text and
JSON forms, and the errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numbax
from numbax import ir

RNG = np.random.default_rng(3)
Z = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)


def _jit(fn):
    return numbax.jit(fn, backend="cpu", tiered=False)


def test_complex_arrays_enter_with_their_dtype():
    for dtype in (np.complex64, np.complex128):
        z = Z.astype(dtype)
        out = _jit(lambda z: z * 2)(z)
        assert out.dtype == dtype
        np.testing.assert_allclose(out, z * 2, rtol=1e-6)


def test_promotion_is_nep_50():
    x32 = RNG.standard_normal(4).astype(np.float32)
    results = _jit(lambda x: (x * 1j, x + 1j * x, x * np.complex64(2j), x * np.complex128(1j)))(x32)
    assert [r.dtype for r in results] == [np.complex64, np.complex64, np.complex64, np.complex128]
    np.testing.assert_allclose(results[1], x32 + 1j * x32)


def test_construction_from_real_parts():
    def build(x, y):
        return np.complex128(x) + 1j * y, np.complex64(x), x.astype(np.complex128)

    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    got = _jit(build)(x, y)
    expected = build(x, y)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_parts_methods_and_predicates():
    def parts(z, x):
        return (z.real, z.imag, z.conj(), np.iscomplex(z), np.isreal(x), np.real(x),
                np.imag(x), np.angle(x), np.iscomplexobj(z), np.isrealobj(x))  # fmt: skip

    z = Z.copy()
    z[0] = 2.0
    x = RNG.standard_normal(6)
    for g, e in zip(_jit(parts)(z, x), parts(z, x), strict=True):
        np.testing.assert_array_equal(g, e)


def test_division_and_special_values_are_numpys():
    z = np.array([1 + 1j, 0j, np.inf + 0j, 1e300 + 1e300j, np.nan + 1j])
    w = np.array([0j, 0j, 1 + 1j, 1e300 - 1e300j, 1 + 0j])
    with np.errstate(all="ignore"):
        expected = z / w
    np.testing.assert_array_equal(_jit(lambda z, w: z / w)(z, w), expected)
    with np.errstate(all="ignore"):
        by_zero = z[:2] / 0  # inf + inf j and nan + nan j
    np.testing.assert_array_equal(_jit(lambda z: z / 0)(z[:2]), by_zero)


def test_text_and_json_forms_hold_complex_literals():
    closed = numbax.make_jaxpr(lambda z: z * (1 - 2j) + np.inf * 1j)(Z.astype(np.complex64))
    text = str(closed)
    assert "c64[6]" in text and "(1-2j):c64[]" in text
    assert str(ir.loads(ir.dumps(closed))) == text


def test_conversion_to_real_is_refused_by_the_ir():
    with pytest.raises(numbax.TypecheckError, match="take real first"):
        ir.PRIMITIVES["convert_element_type"].abstract_eval(
            ir.ShapedArray((3,), np.dtype(np.complex64)), new_dtype=np.dtype(np.float32)
        )


# Every (real, imaginary) pair of these: signed zeros, infinities and NaN in each part.
SPECIAL = (0.0, -0.0, 1.0, -2.0, np.inf, -np.inf, np.nan)
GRID = np.array([complex(a, b) for a in SPECIAL for b in SPECIAL])


def _special_pairs(backend):
    """Every pair of special values; under the simulator the grid against its reverse."""
    if backend.simulated:
        return GRID, GRID[::-1].copy()
    return np.tile(GRID, GRID.size), np.repeat(GRID, GRID.size)


def _assert_same_values(got, want):
    """Equal dtypes and values, signed zeros included; a NaN matches any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    parts = (np.real, np.imag) if want.dtype.kind == "c" else (np.asarray,)
    for part in parts:
        g, w = part(got), part(want)
        np.testing.assert_array_equal(g, w)
        if w.dtype.kind == "f":
            ordinary = ~np.isnan(w)
            np.testing.assert_array_equal(np.signbit(g[ordinary]), np.signbit(w[ordinary]))


def _exact_functions(z, w):
    """The complex functions whose results are exact: NumPy's bit for bit."""
    rows = z.reshape(-1, 7)
    return (
        z < w, z <= w, z > w, z >= w, z == w, np.maximum(z, w), np.minimum(z, w),
        np.fmax(z, w), np.fmin(z, w), np.sign(z), np.isnan(z), np.isinf(z), np.isfinite(z),
        np.round(z * 3.3), np.round(z * 3.37, 1), np.rint(z * 2.5), np.argmax(z), np.argmin(w),
        np.max(z), np.min(w), np.max(rows, axis=1), np.argmin(rows, axis=0),
    )  # fmt: skip


def test_order_sign_tests_and_rounding_are_numpys_on_special_values(backend):
    z, w = _special_pairs(backend)

    def both_precisions(z, w):
        single = z.astype(np.complex64), w.astype(np.complex64)
        return _exact_functions(z, w), _exact_functions(*single)

    with np.errstate(all="ignore"):
        expected = both_precisions(z, w)
    got = backend.to_host(numbax.jit(both_precisions, backend=backend)(z, w))
    for got_group, expected_group in zip(got, expected, strict=True):
        for k, (g, e) in enumerate(zip(got_group, expected_group, strict=True)):
            try:
                _assert_same_values(g, e)
            except AssertionError as error:
                raise AssertionError(f"output {k}: {error}") from None


def _assert_close_parts(got, want, rtol):
    """The NaNs and infinities of each part where NumPy has them, and finite parts within
    ``rtol`` of the complex number's magnitude (complex64 powers: NumPy computes them in
    float32, numbax in float64 and rounds once, so a part NumPy gets as 1e-8 may be 1e-17)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(g[np.isinf(w)], w[np.isinf(w)])
        finite = np.isfinite(w)
        error = np.abs(g[finite] - w[finite])
        bound = rtol * np.maximum(np.abs(want[finite]), np.finfo(w.dtype).tiny)
        bad = np.flatnonzero(error > bound)
        assert bad.size == 0, (g[finite][bad[:5]], w[finite][bad[:5]])


def _powers(z, w):
    return z**w, z.astype(np.complex64) ** w.astype(np.complex64), z**3, z ** (-2.0)


def _check_powers(backend, z, w):
    with np.errstate(all="ignore"):
        expected = _powers(z, w)
    got = backend.to_host(numbax.jit(_powers, backend=backend)(z, w))
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        rtol = 1e-5 if e.dtype == np.complex64 else 1e-12
        try:
            _assert_close_parts(np.asarray(g), e, rtol)
        except AssertionError as error:
            raise AssertionError(f"output {k}: {error}") from None


def test_power_is_numpys_on_special_values(backend):
    """x ** y for ordinary values (integer bases and exponents among them, which NumPy
    multiplies out), then over every pair of special values: infinite exponents, zero
    and unit-circle bases."""
    n = backend.size(40)
    z = RNG.standard_normal(n) + 1j * RNG.standard_normal(n)
    w = RNG.standard_normal(n) * 3 + 1j * RNG.standard_normal(n)
    z[: n // 4] = np.round(z[: n // 4].real * 3) + 1j * np.round(z[: n // 4].imag)
    w[: n // 4] = np.round(w[: n // 4].real * 5) + 0j
    _check_powers(backend, z, w)
    _check_powers(backend, *_special_pairs(backend))


def test_logarithms_and_exponentials_of_complex_numbers(backend):
    ordinary = RNG.standard_normal(backend.size(12)) * 3 + 1j * RNG.standard_normal(
        backend.size(12)
    )
    z = np.concatenate([GRID if not backend.simulated else GRID[::5], ordinary])

    def f(z):
        return np.log1p(z), np.expm1(z), np.log2(z), np.log10(z), np.exp2(z)

    for dtype, rtol in ((np.complex128, 1e-12), (np.complex64, 1e-5)):
        with np.errstate(all="ignore"):
            expected = f(z.astype(dtype))
        got = backend.to_host(numbax.jit(f, backend=backend)(z.astype(dtype)))
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol)


INVERSE_TRIGONOMETRIC = ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")


def _inverse_trigonometric_points(backend):
    """The special grid; ordinary values of every magnitude from 1e-6 to 1e6 in all four
    quadrants; points around the branch points +-1 and +-i; both sides of the cuts (a zero
    imaginary or real part of either sign); and magnitudes where squares overflow or
    underflow. Under the simulator a slice of each."""
    n = backend.size(48, simulated=6)
    ordinary = 10 ** RNG.uniform(-6, 6, n) * np.exp(1j * RNG.uniform(-np.pi, np.pi, n))
    offsets = np.array([1e-12, 1e-7, 1e-3, 0.2])[:, None] * np.exp(1j * np.pi * np.arange(8) / 4)
    near = (np.array([1, -1, 1j, -1j])[:, None, None] + offsets).ravel()
    along = np.array([1.5, 3.0, 1e5, 1e200, 1 + 1e-9, 0.5, 1e-200])
    cuts = np.concatenate(
        [
            [complex(s * v, zero), complex(zero, s * v)]
            for v in along
            for s in (1, -1)
            for zero in (0.0, -0.0)
        ]  # fmt: skip
    )
    extreme = np.array([1e300 + 1e300j, -1e200 + 3j, 1e-300 - 1e300j, 1e160 - 1e155j,
                        1e-300 + 1e-300j, 0.5 - 1e-200j, 1 + 1e-30j])  # fmt: skip
    if backend.simulated:
        return np.concatenate([GRID[::5], ordinary, near[::9], cuts[::7], extreme[::3]])
    return np.concatenate([GRID, ordinary, near, cuts, extreme])


def test_inverse_trigonometric_functions_of_complex_numbers_are_numpys(backend):
    """All six in both precisions in one program: within 1e-12 (complex128) or 1e-5
    (complex64) of the magnitude, and NumPy's NaNs, infinities and signed zeros."""
    z = _inverse_trigonometric_points(backend)

    def f(z):
        single = z.astype(np.complex64)
        return tuple(getattr(np, name)(w) for w in (z, single) for name in INVERSE_TRIGONOMETRIC)

    with np.errstate(all="ignore"):
        expected = f(z)
    got = backend.to_host(numbax.jit(f, backend=backend)(z))
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        g = np.asarray(g)
        label = f"{INVERSE_TRIGONOMETRIC[k % 6]} of {e.dtype}"
        rtol = 1e-5 if e.dtype == np.complex64 else 1e-12
        try:
            _assert_close_parts(g, e, rtol)
            for part in (np.real, np.imag):
                exact = (part(e) == 0) | np.isinf(part(e))
                np.testing.assert_array_equal(
                    np.signbit(part(g)[exact]), np.signbit(part(e)[exact])
                )
        except AssertionError as error:
            raise AssertionError(f"{label}: {error}") from None


# Off every cut: near 0 (the small-z forms), in all four quadrants, close to the branch
# points 1 and i, and past 2**27 (the asymptotic forms).
OFF_THE_CUTS = np.array([3e-4 - 2e-4j, 0.3 + 0.7j, -1.1 + 0.4j, 2.0 - 0.5j, -0.8 - 1.9j,
                         1.001 + 1e-3j, -1e-3 + 0.999j, 3e8 - 4e8j])  # fmt: skip
WEIGHT = 0.6 - 0.8j  # grad of Re(WEIGHT * f): both parts of f matter


def _difference_quotient(f, z, direction):
    """``(f(z + h d) - f(z - h d)) / 2h`` of an elementwise ``f`` at every entry, in
    float64, with a step ``h`` relative to ``|z|``, and the quotient's rounding error (a
    few ulps of ``f(z)`` over the step)."""
    step = 1e-8 * np.maximum(1, np.abs(z))
    quotient = (f(z + step * direction) - f(z - step * direction)) / (2 * step)
    return quotient, 8 * np.finfo(np.float64).eps * np.abs(f(z)) / step


def test_compiled_inverse_trigonometric_derivatives_match_finite_differences(backend):
    """All six in one compiled program: ``grad`` of ``sum(Re(w f(z)))`` with JAX's
    convention (``dL/dx - i dL/dy``) against central differences in the real and the
    imaginary direction. (``grad`` transposes the functions' jvp rules, and their
    holomorphic derivatives are checked on the interpreter in
    tests/transforms/test_complex_grad.py; a compiled jvp too would double the compile.)"""
    z = OFF_THE_CUTS
    functions = [getattr(np, name) for name in INVERSE_TRIGONOMETRIC]

    def derivatives(z):
        return tuple(
            numbax.grad(lambda z, f=f: np.sum(np.real(WEIGHT * f(z))))(z) for f in functions
        )

    grads = backend.to_host(numbax.jit(derivatives, backend=backend)(z))
    for name, f, grad in zip(INVERSE_TRIGONOMETRIC, functions, grads, strict=True):
        along_x, rounding_x = _difference_quotient(f, z, 1)
        along_y, rounding_y = _difference_quotient(f, z, 1j)
        expected_grad = np.real(WEIGHT * along_x) - 1j * np.real(WEIGHT * along_y)
        rounding = np.abs(WEIGHT) * (rounding_x + rounding_y)
        error = np.abs(np.asarray(grad) - expected_grad)
        assert np.all(error <= 1e-6 * np.abs(expected_grad) + rounding), (name, "grad", error)


def test_log1p_keeps_the_digits_of_small_complex_numbers():
    # NumPy's log(hypot(1 + x, y)) keeps ~6 of the 16 digits of the real part at 1e-10.
    z = np.array([1e-10 + 2e-10j, -3e-9 + 1e-12j, 1e-300j, 2e-8 - 1e-8j])
    for dtype, rtol in ((np.complex128, 1e-15), (np.complex64, 1e-6)):
        small = z.astype(dtype)
        exact = small.astype(np.complex128)
        series = exact - exact**2 / 2 + exact**3 / 3
        np.testing.assert_allclose(_jit(np.log1p)(small), series, rtol=rtol)


def test_complex_sorting_and_clipping():
    z = np.empty((4, 5), np.complex128)  # many ties, no negative zeros (their order is free)
    z.real, z.imag = RNG.integers(-2, 3, (2, 4, 5))
    z[1, 2] = complex(np.nan, 1.0)

    def f(z):
        bounds = complex(0, -1), 1 + 1j
        return np.sort(z, axis=-1), np.argsort(z, axis=0, kind="stable"), np.clip(z, *bounds)

    for g, e in zip(_jit(f)(z), f(z), strict=True):
        _assert_same_values(g, e)


def test_functions_numpy_does_not_define_on_complex_numbers_are_refused():
    for fn in (np.floor, np.ceil, np.trunc, np.cbrt, np.deg2rad, np.signbit):
        with pytest.raises(numbax.NumbaxTypeError, match=f"{fn.__name__} is not defined on"):
            _jit(fn)(Z)
    with pytest.raises(numbax.NumbaxTypeError, match="not defined on complex numbers"):
        _jit(np.hypot)(Z, Z)


def _conversions(z):
    buffer = np.zeros(z.shape)
    buffer[:] = z  # warns
    return (
        buffer,
        z.astype(np.float32),  # warns
        np.float64(z[0]),  # warns
        z.astype(np.int64),  # warns
        np.array(z, dtype=np.float64),  # warns
        z.astype(bool),
    )


def test_conversion_to_real_keeps_the_real_part_and_warns_as_numpy_does():
    z = Z * 3
    first = _conversions.__code__.co_firstlineno
    warned_lines = {first + 2, first + 5, first + 6, first + 7, first + 8}
    jitted = _jit(_conversions)
    with pytest.warns(np.exceptions.ComplexWarning) as record:
        got = jitted(z)
    assert {(w.filename, w.lineno) for w in record} == {(__file__, n) for n in warned_lines}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        expected = _conversions(z)
    for g, e in zip(got, expected, strict=True):
        _assert_same_values(g, e)
    with warnings.catch_warnings():  # compiled: no trace, so no second warning
        warnings.simplefilter("error")
        jitted(z)


def test_the_derivative_of_a_conversion_to_real_is_the_real_parts():
    weights = np.array([2.0, -1.0, 0.5, 3.0, 1.0, -2.0])

    def f(z):
        return np.sum(z.astype(np.float64) * weights) + np.float64(z[0]) ** 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        grad = numbax.grad(f)(Z)
        compiled = numbax.jit(numbax.grad(f), backend="cpu", tiered=False)(Z)
    # JAX's convention: df/dx - i df/dy, and f depends on the real parts only.
    expected = weights + np.eye(6)[0] * 2 * Z[0].real
    np.testing.assert_allclose(grad, expected)
    np.testing.assert_allclose(compiled, expected)


def _weak_expressions(x, s):
    # Each is NumPy's for a Python float s: a Python scalar stays weak through Python's
    # arithmetic, so 1j * s meets the float32 array as a Python complex (complex64).
    return x + 1j * s, x * (s * 2), x + s / 4 - (-s) ** 2, x * (1j * s + 1), x + np.float64(2) * s


def test_results_of_weak_arguments_are_weak_as_numpys_python_scalars():
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    expected = _weak_expressions(x, 2.5)
    for backend in ("interpret", "cpu"):
        got = numbax.jit(_weak_expressions, backend=backend)(x, 2.5)
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=1e-6)
    batched = numbax.vmap(_weak_expressions, in_axes=(0, None))(np.stack([x, x]), 2.5)
    assert [b.dtype for b in batched] == [e.dtype for e in expected]


def test_ufuncs_of_weak_arguments_are_typed_as_numpys():
    # NumPy's np.sin(2.5) is a float64 scalar (JAX's jnp.sin would keep it weak): NumPy is
    # numbax's oracle, so a traced Python scalar gives what the Python scalar gives.
    x = np.ones(3, np.float32)

    def f(x, s):
        return x + np.sin(s), x + np.exp(1j * s), x + np.maximum(s, 1.0), x + abs(-s)

    got = numbax.jit(f)(x, 2.5)
    expected = f(x, 2.5)
    assert [g.dtype for g in got] == [e.dtype for e in expected]
    assert [g.dtype for g in got] == [np.float64, np.complex128, np.float64, np.float32]
