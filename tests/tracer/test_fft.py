"""``numpy.fft`` traced: values against ``numpy.fft`` (dtype included) in every ``norm``
mode, odd and even lengths, ``n`` cutting and padding, ``axis``/``axes``; round trips;
derivatives (``grad`` of ``sum(abs(fft(x))**2)``) against finite differences; batching
against a loop; and the errors a user meets."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import numpy as xnp

NORMS = [None, "backward", "ortho", "forward"]
RNG = np.random.default_rng(5)


def _complex(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _real(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _check(fn, x, backend, rtol=1e-10):
    expected = fn(x)
    got = numbax.jit(fn, backend=backend, tiered=False)(x)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tolerance = rtol if expected.dtype in (np.float64, np.complex128) else 1e-4
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


# (function of x and norm, operand): odd and even lengths, 1-d and stacks.
TRANSFORMS = {
    "fft_even": (lambda x, norm: np.fft.fft(x, norm=norm), _complex(2, 8)),
    "fft_odd_cut": (lambda x, norm: np.fft.fft(x, n=5, norm=norm), _complex(7)),
    "fft_pad_axis0": (lambda x, norm: np.fft.fft(x, n=6, axis=0, norm=norm), _real(3, 4)),
    "ifft_odd": (lambda x, norm: np.fft.ifft(x, norm=norm), _complex(3, 9)),
    "fft2": (lambda x, norm: np.fft.fft2(x, norm=norm), _complex(2, 3, 5)),
    "ifft2_s": (lambda x, norm: np.fft.ifft2(x, s=(4, 4), norm=norm), _complex(3, 5)),
    "fftn_axes": (lambda x, norm: np.fft.fftn(x, axes=(0, 2), norm=norm), _complex(3, 2, 4)),
    "fftn_four_axes": (lambda x, norm: np.fft.fftn(x, norm=norm), _complex(2, 3, 2, 3)),
    "ifftn": (lambda x, norm: np.fft.ifftn(x, norm=norm), _complex(4, 3)),
    "rfft_even": (lambda x, norm: np.fft.rfft(x, norm=norm), _real(3, 8)),
    "rfft_odd": (lambda x, norm: np.fft.rfft(x, norm=norm), _real(9)),
    "rfft_n_axis": (lambda x, norm: np.fft.rfft(x, n=5, axis=0, norm=norm), _real(4, 3)),
    "irfft_even": (lambda x, norm: np.fft.irfft(x, norm=norm), _complex(2, 5)),
    "irfft_odd_n": (lambda x, norm: np.fft.irfft(x, n=7, norm=norm), _complex(4)),
    "rfft2": (lambda x, norm: np.fft.rfft2(x, norm=norm), _real(2, 4, 6)),
    "irfft2": (lambda x, norm: np.fft.irfft2(x, norm=norm), _complex(4, 3)),
    "rfftn": (lambda x, norm: np.fft.rfftn(x, norm=norm), _real(2, 3, 2, 5)),
    "irfftn_s": (
        lambda x, norm: np.fft.irfftn(x, s=(3, 7), axes=(0, 1), norm=norm),
        _complex(3, 4),
    ),
    "irfftn_four_axes": (lambda x, norm: np.fft.irfftn(x, norm=norm), _complex(2, 2, 3, 3)),
    "float32": (lambda x, norm: np.fft.rfft(x, norm=norm), _real(2, 6, dtype=np.float32)),
    "complex64": (lambda x, norm: np.fft.ifft(x, norm=norm), _complex(5, dtype=np.complex64)),
    "int": (lambda x, norm: np.fft.fft(x, norm=norm), np.arange(6)),
    "hfft_even": (lambda x, norm: np.fft.hfft(x, norm=norm), _complex(2, 5)),
    "hfft_odd_n_axis0": (lambda x, norm: np.fft.hfft(x, n=7, axis=0, norm=norm), _complex(4, 3)),
    "hfft_complex64": (lambda x, norm: np.fft.hfft(x, norm=norm), _complex(6, dtype=np.complex64)),
    "ihfft_odd": (lambda x, norm: np.fft.ihfft(x, norm=norm), _real(3, 9)),
    "ihfft_n_axis0": (lambda x, norm: np.fft.ihfft(x, n=4, axis=0, norm=norm), _real(6, 2)),
    "ihfft_float32": (lambda x, norm: np.fft.ihfft(x, norm=norm), _real(8, dtype=np.float32)),
}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_numpy_on_the_interpreter(name, norm):
    fn, x = TRANSFORMS[name]
    _check(lambda x: fn(x, norm), x, "interpret")


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_numpy_compiled(name):
    # Every norm in one program: one compile per transform (Rocket-FFT inside the njit).
    fn, x = TRANSFORMS[name]
    every_norm = lambda x: tuple(fn(x, norm) for norm in NORMS)  # noqa: E731
    expected = every_norm(x)
    got = numbax.jit(every_norm, backend="cpu", tiered=False)(x)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        tolerance = 1e-10 if e.dtype in (np.float64, np.complex128) else 1e-4
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("n", [7, 8])
@pytest.mark.parametrize("norm", NORMS)
def test_round_trips(n, norm):
    x, z = _real(3, n), _complex(3, n)

    def trips(x, z):
        return (
            np.fft.irfft(np.fft.rfft(x, norm=norm), n, norm=norm),
            np.fft.ifft(np.fft.fft(z, norm=norm), norm=norm),
            np.fft.irfftn(np.fft.rfftn(x, norm=norm), x.shape, (0, 1), norm=norm),
        )

    for got in numbax.jit(trips, backend="cpu", tiered=False)(x, z):
        np.testing.assert_allclose(got, z if np.iscomplexobj(got) else x, atol=1e-12)


def test_frequencies_and_shifts():
    def f(x, d):
        return (
            xnp.fft.fftfreq(7, d), xnp.fft.rfftfreq(8, d), np.fft.fftshift(x),
            np.fft.ifftshift(x, axes=1), np.fft.fftshift(np.fft.ifftshift(x)),
        )  # fmt: skip

    x = _real(3, 5)
    got = numbax.jit(f, backend="cpu", tiered=False)(x, 0.25)
    expected = (np.fft.fftfreq(7, 0.25), np.fft.rfftfreq(8, 0.25), np.fft.fftshift(x),
                np.fft.ifftshift(x, axes=1), x)  # fmt: skip
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e)


def _finite_difference_grad(f, x, step=1e-6):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        for direction, weight in ((1.0, 1.0), (1j, -1j)) if np.iscomplexobj(x) else ((1.0, 1.0),):
            up, down = x.copy(), x.copy()
            up[index] += step * direction
            down[index] -= step * direction
            grad[index] += weight * (f(up) - f(down)) / (2 * step)
    return grad


# Derivatives: grad of sum(abs(fft(x))**2) and of weighted sums (Parseval makes the first
# one 2 n conj(x)-like; the weights break that symmetry so every rule shows).
F, W = np.fft, np.arange  # short names: one energy per line
ENERGIES = {
    "fft": lambda x, norm: np.sum(np.abs(F.fft(x, norm=norm)) ** 2),
    "fft_weighted": lambda x, norm: np.sum(np.abs(F.fft(x, norm=norm)) ** 2 * W(x.size)),
    "ifft": lambda x, norm: np.sum(np.real(F.ifft(x, n=6, norm=norm)) * W(6)),
    "rfft": lambda x, norm: np.sum(np.abs(F.rfft(x.real, norm=norm)) ** 2 * W(x.size // 2 + 1)),
    "irfft": lambda x, norm: np.sum(F.irfft(x, norm=norm) ** 2 * W(2 * x.size - 2)),
    "irfft_odd": lambda x, norm: np.sum(
        F.irfft(x, n=2 * x.size - 1, norm=norm) * W(2 * x.size - 1)
    ),
    "fft2": lambda x, norm: np.sum(np.abs(F.fft2(x[:4].reshape(2, 2), norm=norm)) ** 3),
    "hfft": lambda x, norm: np.sum(F.hfft(x, norm=norm) ** 2 * W(2 * x.size - 2)),
    "ihfft": lambda x, norm: np.sum(np.abs(F.ihfft(x.real, norm=norm)) ** 2 * W(x.size // 2 + 1)),
}


@pytest.mark.parametrize("n", [5, 6])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", sorted(ENERGIES))
def test_grad_against_finite_differences(name, norm, n):
    f = lambda x: ENERGIES[name](x, norm)  # noqa: E731
    x = _complex(n)
    expected = _finite_difference_grad(f, x)
    np.testing.assert_allclose(numbax.grad(f)(x), expected, atol=1e-5)


def test_grad_compiled_and_of_a_real_signal():
    def energy(x):
        return np.sum(np.abs(np.fft.rfft(x)) ** 2 * np.arange(5))

    x = _real(8)
    expected = _finite_difference_grad(energy, x)
    np.testing.assert_allclose(numbax.grad(energy)(x), expected, atol=1e-5)
    compiled = numbax.jit(numbax.grad(energy), backend="cpu", tiered=False)(x)
    np.testing.assert_allclose(compiled, expected, atol=1e-5)


def test_vmap_matches_a_loop():
    stack = _real(4, 3, 8)

    def f(x):
        return np.fft.rfft(x, axis=0), np.fft.ifft(np.fft.fft(x, axis=-1) * 2.0, axis=0)

    for in_axes in (0, 1, 2):
        batched = numbax.vmap(f, in_axes=in_axes)(stack)
        for index in range(stack.shape[in_axes]):
            expected = f(np.take(stack, index, axis=in_axes))
            for got, want in zip(batched, expected, strict=True):
                np.testing.assert_allclose(got[index], want, atol=1e-12)


def test_errors_name_the_problem():
    with pytest.raises(numbax.NumbaxTypeError, match="needs a real input"):
        numbax.jit(lambda z: np.fft.rfft(z))(_complex(4))
    with pytest.raises(ValueError, match="norm='half'"):
        numbax.jit(lambda x: np.fft.fft(x, norm="half"))(_real(4))
    with pytest.raises(numbax.ShapeError, match="invalid number of data points"):
        numbax.jit(lambda x: np.fft.fft(x, n=0))(_real(4))


def test_out_is_written():
    def f(x):
        spectrum = np.empty(4, complex)
        result = xnp.fft.fft(x, out=spectrum)
        np.fft.rfft(x, out=spectrum[:3])
        return result, spectrum

    x = _real(4)
    result, spectrum = numbax.jit(f, backend="cpu", tiered=False)(x)
    np.testing.assert_allclose(result, np.fft.fft(x))
    np.testing.assert_allclose(spectrum, np.concatenate([np.fft.rfft(x), np.fft.fft(x)[3:]]))


def test_the_program_is_one_fft_primitive():
    text = str(numbax.make_jaxpr(lambda x: np.fft.rfft2(x))(_real(3, 4)))
    assert text.count("fft[") == 1 and "fft_type='rfft' fft_lengths=(3, 4)" in text
    source = numbax.jit(lambda x: np.fft.fft(x)).lower(_complex(8)).source()
    assert "nbx_fft.fft(" in source  # Rocket-FFT inside the compiled program
