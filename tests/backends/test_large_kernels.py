"""NPBench's kernels at the sizes they run at, compiled by the cpu backend, against NumPy.

The differential fuzzers draw arrays of a few elements per side, so they never take the
paths that large arrays take: loops split over threads (``prange``), matrix products
split into blocks of rows with their epilogue in the same parallel region, outputs of
32 MiB or more written into arrays the executable keeps. At 200x210 and above, 2mm and
gemm did not compile (a scalar argument read inside the product's parallel region: Numba
hands a rank-0 array to its threads as a scalar, which ``b[()]`` cannot index). Each
program here is compiled (``tiered=False``, so a compile error shows at once), its source
checked for the path it is meant to take, and its results and written arguments compared
with NumPy's.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax import numpy as xnp


def two_mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def gemm_jax(alpha, beta, C, A, B):
    return alpha * A @ B + beta * C


def _scalars(kind):
    """alpha and beta as NPBench passes them (Python floats) or as 0-d arrays."""
    if kind == "python":
        return 1.5, 1.2
    return np.array(1.5), np.array(1.2)


def _compiled(f, *args):
    """``f`` compiled for ``args``, and the source the cpu backend generated for it."""
    jitted = numbax.jit(f, backend="cpu", tiered=False)
    return jitted, jitted.lower(*args).source()


def _check_in_place(kernel, args, written: int, source_has: str):
    """``kernel(*args)`` compiled writes argument ``written`` as NumPy's does, twice."""
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel(*expected)
    jitted, source = _compiled(kernel, *args)
    assert source_has in source, source
    for _ in range(2):  # the second call runs on what the first left (pools, buffers)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert jitted(*got) is None
        np.testing.assert_allclose(got[written], expected[written], rtol=1e-12)
        for k, (g, a) in enumerate(zip(got, args, strict=True)):
            if k != written and isinstance(a, np.ndarray):
                np.testing.assert_array_equal(g, a)


def _random(rng, *shapes):
    return [rng.random(shape) for shape in shapes]


@pytest.mark.parametrize("scalars", ["python", "arrays"])
def test_2mm_at_200x210_compiles_and_is_numpy(scalars):
    ni, nj, nk, nl = 200, 210, 220, 230
    rng = np.random.default_rng(0)
    A, B, C, D = _random(rng, (ni, nk), (nk, nj), (nj, nl), (ni, nl))
    _check_in_place(two_mm, (*_scalars(scalars), A, B, C, D), 5, "prange")


@pytest.mark.parametrize("scalars", ["python", "arrays"])
def test_gemm_at_200x210_compiles_and_is_numpy(scalars):
    ni, nj, nk = 200, 210, 220
    rng = np.random.default_rng(1)
    C, A, B = _random(rng, (ni, nj), (ni, nk), (nk, nj))
    _check_in_place(gemm, (*_scalars(scalars), C, A, B), 2, "prange")


@pytest.mark.parametrize("scalars", ["python", "arrays"])
def test_jax_style_gemm_at_200x210_compiles_and_is_numpy(scalars):
    ni, nj, nk = 200, 210, 220
    rng = np.random.default_rng(2)
    C, A, B = _random(rng, (ni, nj), (ni, nk), (nk, nj))
    args = (*_scalars(scalars), C, A, B)
    jitted, source = _compiled(gemm_jax, *args)
    assert "prange" in source, source
    np.testing.assert_allclose(jitted(*args), gemm_jax(*args), rtol=1e-12)


def test_gemm_with_an_output_of_32_mib_is_numpy_in_both_forms():
    # 2048x2050 float64 is just over 32 MiB; a short contraction keeps the product cheap.
    ni, nj, nk = 2048, 2050, 16
    rng = np.random.default_rng(3)
    C, A, B = _random(rng, (ni, nj), (ni, nk), (nk, nj))
    args = (1.5, np.array(1.2), C, A, B)
    jitted, source = _compiled(gemm_jax, *args)
    assert "prange" in source, source
    want = gemm_jax(*args)
    for _ in range(2):
        np.testing.assert_allclose(jitted(*args), want, rtol=1e-12)
    _check_in_place(gemm, args, 2, "prange")


def test_an_elementwise_kernel_with_scalar_arguments_into_a_pooled_output_is_numpy():
    # The result (just over 32 MiB) is an array the executable keeps and hands out
    # again once nothing holds it; the scalars are read once, before the parallel loop.
    rng = np.random.default_rng(5)
    A, B = _random(rng, (2048, 2050), (2048, 2050))

    def axpby(alpha, beta, A, B):
        return alpha * A + beta * B

    args = (1.5, np.array(1.2), A, B)
    jitted, source = _compiled(axpby, *args)
    assert "the executable's array" in source and "prange" in source, source
    want = axpby(*args)
    first = jitted(*args)
    np.testing.assert_allclose(first, want, rtol=1e-15)
    del first  # its memory goes back to the executable, and the next call reuses it
    np.testing.assert_allclose(jitted(*args), want, rtol=1e-15)


def crc16_numpy(data, poly=0x8408):
    """NPBench's crc16 (CRC-16-CCITT), byte by byte and bit by bit."""
    crc = 0xFFFF
    for b in data:
        cur_byte = 0xFF & int(b)
        for _ in range(8):
            if (crc & 0x0001) ^ (cur_byte & 0x0001):
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
            cur_byte >>= 1
    crc = ~crc & 0xFFFF
    crc = (crc << 8) | ((crc >> 8) & 0xFF)
    return crc & 0xFFFF


def crc16_jax(data, poly=0x8408):
    """NPBench's JAX form: the flag that picks the branch is a number, not a bool."""
    crc = 0xFFFF

    def byte(crc, b):
        cur_byte = 0xFF & b

        def bit(carry, _):
            crc, cur_byte = carry
            xor_flag = (crc & 0x0001) ^ (cur_byte & 0x0001)
            crc = lax.select(xor_flag, (crc >> 1) ^ poly, crc >> 1)
            cur_byte >>= 1
            return (crc, cur_byte), None

        (crc, cur_byte), _ = lax.scan(bit, (crc, cur_byte), xnp.arange(8))
        return crc, None

    crc, _ = lax.scan(byte, crc, data)
    crc = ~crc & 0xFFFF
    crc = (crc << 8) | ((crc >> 8) & 0xFF)
    return crc & 0xFFFF


def crc16_where(data, poly=0x8408):
    """The same with ``where`` and ``fori_loop``: where's condition a uint8."""

    def byte(i, crc):
        def bit(_, carry):
            crc, cur_byte = carry
            flag = (crc & 0x0001).astype(np.uint8) ^ (cur_byte & 0x0001)
            crc = xnp.where(flag, (crc >> 1) ^ poly, crc >> 1)
            return crc, cur_byte >> 1

        crc, _ = lax.fori_loop(0, 8, bit, (crc, 0xFF & data[i]))
        return crc

    crc = lax.fori_loop(0, data.shape[0], byte, np.int64(0xFFFF))
    crc = ~crc & 0xFFFF
    crc = (crc << 8) | ((crc >> 8) & 0xFF)
    return crc & 0xFFFF


@pytest.mark.parametrize("kernel", [crc16_jax, crc16_where])
def test_crc16_with_a_number_as_select_predicate_is_numpy(kernel):
    data = np.random.default_rng(4).integers(0, 256, 500, dtype=np.uint8)
    got = numbax.jit(kernel, backend="cpu", tiered=False)(data)
    assert int(got) == crc16_numpy(data)


def mandelbrot(X, Y, maxiter: int, horizon=2.0):
    """NPBench's mandelbrot (NumPy form) over a flat view set with ``shape =``, the
    boolean-indexed update written with ``where`` (a traced mask selects no fixed count)."""
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, dtype=np.complex128)
    shape = C.shape
    C.shape = N.shape = Z.shape = C.size
    for n in range(maxiter):
        inside = np.less(abs(Z), horizon)
        N[inside] = n
        Z[...] = np.where(inside, Z**2 + C, Z)
    N[N == maxiter - 1] = 0
    Z.shape = N.shape = shape
    return Z, N


def test_mandelbrot_with_in_place_shapes_is_numpy():
    X, Y = np.linspace(-2.25, 0.75, 300), np.linspace(-1.25, 1.25, 200)
    jitted = numbax.jit(mandelbrot, backend="cpu", tiered=False, static_argnums=(2,))
    Z, N = jitted(X, Y, 12)
    want_Z, want_N = mandelbrot(X, Y, 12)
    assert Z.shape == want_Z.shape == (200, 300)
    np.testing.assert_array_equal(N, want_N)
    # The iteration is chaotic: a last-bit difference in a complex square grows.
    np.testing.assert_allclose(Z, want_Z, rtol=1e-9)
