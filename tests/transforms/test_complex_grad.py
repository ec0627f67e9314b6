"""Derivatives of complex programs, with JAX's conventions: ``grad`` of a real function
of ``z = x + iy`` is ``df/dx - i df/dy``; with ``holomorphic=True`` it is ``f'(z)``;
``jvp``/``vjp`` carry complex tangents and cotangents (the cotangent pairing is
``Re(ct * t)``, no conjugation). Checked against central finite differences in the real
and the imaginary direction, and against JAX itself where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import numbax

STEP = 1e-6


def finite_difference_grad(f, z):
    """``df/dx - i df/dy`` at every entry of ``z``, by central differences."""
    z = np.asarray(z, np.complex128)
    grad = np.zeros_like(z)
    for index in np.ndindex(z.shape):
        for direction, weight in ((1.0, 1.0), (1j, -1j)):
            moved = [z.copy(), z.copy()]
            moved[0][index] += STEP * direction
            moved[1][index] -= STEP * direction
            grad[index] += weight * (f(moved[0]) - f(moved[1])) / (2 * STEP)
    return grad


# name: (function of numpy-like ``xp``): real-valued functions of a complex vector.
REAL_VALUED = {
    "abs_squared": lambda xp: lambda z: xp.sum(xp.abs(z) ** 2),
    "exp_sin": lambda xp: lambda z: xp.sum(xp.real(xp.exp(z) * xp.sin(z))),
    "conj_mix": lambda xp: lambda z: xp.sum(xp.imag(z * xp.conj(z) + z**3)),
    "log_ratio": lambda xp: lambda z: xp.sum(xp.abs(xp.log(z) / (1 + z))),
    "angle_sqrt": lambda xp: lambda z: xp.sum(xp.angle(z) * xp.sqrt(z).real),
    "tanh_cos": lambda xp: lambda z: xp.sum(xp.real(xp.tanh(z)) * xp.imag(xp.cos(z))),
    "dot": lambda xp: lambda z: xp.real(xp.dot(z, xp.conj(z[::-1])) * z[0]),
    "reductions": lambda xp: lambda z: xp.abs(xp.prod(z)) + xp.real(xp.mean(z * z)),
    "power": lambda xp: lambda z: xp.sum(xp.real(z ** (0.5 + 0.25j))),
    "fft": lambda xp: lambda z: xp.sum(xp.abs(xp.fft.fft(z)) ** 2 * xp.arange(z.shape[0])),
    "hfft": lambda xp: lambda z: xp.sum(xp.fft.hfft(z, norm="ortho") ** 2 * xp.arange(6)),
    "ihfft": lambda xp: lambda z: xp.sum(xp.abs(xp.fft.ihfft(z.real * z.imag)) ** 2),
    "sign": lambda xp: lambda z: xp.sum(xp.real(xp.sign(z) * z[::-1]) + xp.imag(xp.sign(z))),
    "log1p_expm1": lambda xp: lambda z: xp.sum(xp.abs(xp.log1p(z)) + xp.imag(xp.expm1(z) * z)),
    "logs_exp2": lambda xp: (
        lambda z: xp.sum(xp.real(xp.log2(z) * xp.exp2(z)) + xp.imag(xp.log10(z)))
    ),
    "order": lambda xp: (
        lambda z: xp.sum(
            xp.real(xp.maximum(z, 0.5j) * xp.fmin(z, z[::-1]) + xp.where(z < z[::-1], z, 2 * z))
        )
    ),
    "extrema": lambda xp: lambda z: xp.abs(xp.max(z)) + xp.imag(xp.min(z) * z[xp.argmax(z)]),
    "to_real": lambda xp: lambda z: xp.sum(z.astype(xp.float64) ** 2 * xp.arange(4)),
}
# Where JAX answers differently (the finite differences above are the oracle there).
DIFFERS_FROM_JAX = {
    "sign": "jnp.sign has no derivative on complex numbers; numbax's is that of z / |z|",
    "extrema": "jnp.argmax refuses complex numbers; NumPy orders them lexicographically",
}

Z = np.array([0.3 + 0.7j, -1.1 + 0.4j, 2.0 - 0.5j, 0.8 + 1.9j])


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_grad_of_a_real_function_against_finite_differences(name):
    f = REAL_VALUED[name](np)
    expected = finite_difference_grad(f, Z)
    np.testing.assert_allclose(numbax.grad(f)(Z), expected, atol=1e-6)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("group", range(4))
def test_compiled_grads_against_finite_differences(group):
    # The gradients in four compiled programs (Numba's compile time grows faster than the
    # program, so neither one program nor one per function).
    names = sorted(REAL_VALUED)[group::4]
    grads = lambda z: tuple(numbax.grad(REAL_VALUED[n](np))(z) for n in names)  # noqa: E731
    compiled = numbax.jit(grads, backend="cpu", tiered=False)(Z)
    for name, got in zip(names, compiled, strict=True):
        expected = finite_difference_grad(REAL_VALUED[name](np), Z)
        np.testing.assert_allclose(got, expected, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", sorted(set(REAL_VALUED) - set(DIFFERS_FROM_JAX)))
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_grad_of_a_real_function_equals_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    expected = np.asarray(jax.grad(REAL_VALUED[name](jnp))(jnp.asarray(Z)))
    np.testing.assert_allclose(numbax.grad(REAL_VALUED[name](np))(Z), expected, atol=1e-10)


def test_grad_convention_is_jax_documented_one():
    # JAX's FAQ: grad(lambda z: abs(z) ** 2)(3 + 4j) is 6 - 8j, the conjugate of 2z.
    grad = numbax.grad(lambda z: np.abs(z) ** 2)(3.0 + 4.0j)
    assert grad.dtype == np.complex128
    np.testing.assert_allclose(grad, 6 - 8j)


HOLOMORPHIC = {
    "sin_times_z": lambda xp: lambda z: xp.sum(xp.sin(z) * z),
    "exp_log": lambda xp: lambda z: xp.sum(xp.exp(z) / (1 + z) + xp.log(z) ** 2),
    "sqrt_tanh": lambda xp: lambda z: xp.sum(xp.sqrt(z) * xp.tanh(z)),
    "log1p_expm1": lambda xp: lambda z: xp.sum(xp.log1p(z) * xp.expm1(z)),
    "logs_exp2": lambda xp: lambda z: xp.sum(xp.log2(z) + xp.log10(z) * xp.exp2(z)),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_grad_is_the_complex_derivative(name):
    f = HOLOMORPHIC[name](np)
    # f'(z) is the same difference quotient in every direction.
    along_x = np.array([(f(Z + STEP * e) - f(Z - STEP * e)) / (2 * STEP) for e in np.eye(len(Z))])
    along_y = np.array(
        [(f(Z + 1j * STEP * e) - f(Z - 1j * STEP * e)) / (2j * STEP) for e in np.eye(len(Z))]
    )
    got = numbax.grad(f, holomorphic=True)(Z)
    np.testing.assert_allclose(got, along_x, atol=1e-6)
    np.testing.assert_allclose(got, along_y, atol=1e-6)


def test_holomorphic_grad_equals_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    for make in HOLOMORPHIC.values():
        expected = np.asarray(jax.grad(make(jnp), holomorphic=True)(jnp.asarray(Z)))
        np.testing.assert_allclose(numbax.grad(make(np), holomorphic=True)(Z), expected)


def test_jvp_and_vjp_of_complex_values():
    def f(z, x):
        return np.exp(z) * x + np.conj(z) * 1j, np.real(z * z) * x

    x = np.array([0.5, -1.5, 2.0, 1.0])
    tz, tx = Z[::-1] * 0.3, np.array([1.0, 0.5, -0.2, 0.1])
    out, tangents = numbax.jvp(f, (Z, x), (tz, tx))
    expected = [
        (a - b) / (2 * STEP)
        for a, b in zip(
            f(Z + STEP * tz, x + STEP * tx), f(Z - STEP * tz, x - STEP * tx), strict=True
        )
    ]
    for got, want in zip(tangents, expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert tangents[0].dtype == np.complex128 and tangents[1].dtype == np.float64

    # vjp: <ct, J t> = <vjp(ct), t> under Re(a * b), for every t.
    _, pullback = numbax.vjp(f, Z, x)
    ct = (np.array([1 - 1j, 0.5j, 2.0, -1.0 + 0.2j]), np.array([0.3, -0.7, 1.0, 0.5]))
    ct_z, ct_x = pullback(ct)
    assert ct_z.dtype == np.complex128 and ct_x.dtype == np.float64
    left = sum(np.real(np.sum(c * t)) for c, t in zip(ct, tangents, strict=True))
    right = np.real(np.sum(ct_z * tz)) + np.sum(ct_x * tx)
    np.testing.assert_allclose(left, right)


def test_complex64_gradients_stay_complex64():
    z = Z.astype(np.complex64)
    grad = numbax.grad(lambda z: np.sum(np.abs(np.exp(z))))(z)
    assert grad.dtype == np.complex64
    np.testing.assert_allclose(grad, np.exp(z.real), rtol=1e-5)  # |exp(z)| = exp(x)


def test_grad_of_a_complex_output_needs_holomorphic():
    with pytest.raises(numbax.GradientError, match="holomorphic=True"):
        numbax.grad(lambda z: np.sum(z * z))(Z)
    with pytest.raises(numbax.GradientError, match="needs complex arguments"):
        numbax.grad(lambda x: np.sum(x * 1j), holomorphic=True)(np.ones(3))
    with pytest.raises(numbax.GradientError, match="needs a complex output"):
        numbax.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(Z)


def test_abs_at_zero_has_a_zero_gradient():
    # |z| has no derivative at 0; JAX takes 0 there, and so does numbax.
    grad = numbax.grad(lambda z: np.sum(np.abs(z)))(np.array([0j, 3 + 4j]))
    np.testing.assert_allclose(grad, [0, 0.6 - 0.8j])


def test_jacobians_of_a_holomorphic_function():
    def f(z):
        return np.sin(z) * z

    z = Z[:3]
    expected = np.diag(np.cos(z) * z + np.sin(z))
    for jacobian in (numbax.jacfwd, numbax.jacrev):
        got = jacobian(f, holomorphic=True)(z)
        assert got.dtype == np.complex128
        np.testing.assert_allclose(got, expected)
    with pytest.raises(numbax.GradientError, match="holomorphic=True"):
        numbax.jacfwd(f)(z)
    with pytest.raises(numbax.GradientError, match="holomorphic=True"):
        numbax.jacrev(f)(z)
    # A real function of complex inputs by reverse mode: rows are JAX's conjugate gradients.
    rows = numbax.jacrev(lambda z: np.abs(z) ** 2)(z)
    np.testing.assert_allclose(rows, np.diag(2 * np.conj(z)))


# The inverse trigonometric and hyperbolic functions and their derivatives f'(z).
INVERSE_TRIGONOMETRIC = {
    "arcsin": lambda z: 1 / np.sqrt(1 - z * z),
    "arccos": lambda z: -1 / np.sqrt(1 - z * z),
    "arctan": lambda z: 1 / (1 + z * z),
    "arcsinh": lambda z: 1 / np.sqrt(1 + z * z),
    "arccosh": lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1)),
    "arctanh": lambda z: 1 / (1 - z * z),
}
# Off the cuts: near 0 (the small-z forms), in every quadrant, close to the branch points,
# and past 2**27 (the asymptotic forms).
Z_INVERSE = np.array([3e-4 - 2e-4j, 0.3 + 0.7j, -1.1 + 0.4j, 2.0 - 0.5j, -0.8 - 1.9j,
                      1.001 + 1e-3j, -1e-3 + 0.999j, 3e8 - 4e8j])  # fmt: skip


def test_inverse_trigonometric_derivatives_are_holomorphic():
    """``grad(holomorphic=True)`` of each function, in one compiled program, is its
    derivative and the difference quotient in the real and the imaginary direction."""

    def derivatives(z):
        return tuple(
            numbax.grad(lambda z, name=name: np.sum(getattr(np, name)(z)), holomorphic=True)(z)
            for name in INVERSE_TRIGONOMETRIC
        )

    got = numbax.jit(derivatives, backend="interpret")(Z_INVERSE)
    step = STEP * np.maximum(1, np.abs(Z_INVERSE)) * 1e-2
    for (name, derivative), g in zip(INVERSE_TRIGONOMETRIC.items(), got, strict=True):
        f = getattr(np, name)
        # The quotient's own rounding: a few ulps of f(z) divided by the step.
        rounding = 8 * np.finfo(float).eps * np.abs(f(Z_INVERSE)) / step
        for direction in (1, 1j):
            moved = step * direction
            quotient = (f(Z_INVERSE + moved) - f(Z_INVERSE - moved)) / (2 * moved)
            error = np.abs(g - quotient)
            assert np.all(error <= 1e-6 * np.abs(g) + rounding), (name, direction, error)
        np.testing.assert_allclose(g, derivative(Z_INVERSE), rtol=1e-12, err_msg=name)


def test_inverse_trigonometric_functions_batch():
    z = Z_INVERSE.reshape(2, 4)
    for name in INVERSE_TRIGONOMETRIC:
        f = getattr(np, name)
        batched = numbax.vmap(lambda row, f=f: f(row[::-1]) * row[0])(z)
        np.testing.assert_allclose(batched, [f(row[::-1]) * row[0] for row in z], rtol=1e-14)
