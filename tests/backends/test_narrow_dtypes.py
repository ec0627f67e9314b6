"""The narrow dtypes through the compiled backends: uint8 images bit for bit, float16 and
bfloat16 stored narrow and computed in float32 (bit for bit with NumPy where NumPy's
float16 loops are correctly rounded), their derivatives against float64 finite
differences at tolerances set by the dtype's epsilon, vmap against a loop, and float16
kernels compiled to PTX for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
import switches

import numbax
from numbax.config import cuda_simulator
from numbax.ir import dtypes

BFLOAT16 = dtypes.bfloat16
NARROW_FLOATS = [np.dtype(np.float16)] + ([BFLOAT16] if BFLOAT16 is not None else [])
SIMULATED = cuda_simulator()


def blur_image(image):
    """uint8 image -> normalised float32, 3x3 box blur (zero border), contrast, clip,
    back to uint8 (rounded half up)."""
    x = image.astype(np.float32) / 255.0
    p = np.pad(x, 1)
    h, w = image.shape
    total = sum(p[i : i + h, j : j + w] for i in range(3) for j in range(3))
    blurred = np.clip(total / 9.0 * 1.25 - 0.1, 0.0, 1.0)
    return (blurred * 255.0 + 0.5).astype(np.uint8)


def test_uint8_image_pipeline_equals_numpy_bit_for_bit(backend, rng):
    side = backend.size(48, simulated=6)
    image = rng.integers(0, 256, (side, side + 3), dtype=np.uint8)
    got = backend.to_host(numbax.jit(blur_image, backend=backend)(image))
    want = blur_image(image)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_uint8_arithmetic_wraps_as_numpy(backend, rng):
    n = backend.size(64)
    a, b = (rng.integers(0, 256, n, dtype=np.uint8) for _ in range(2))

    def program(a, b):
        return a + b, a * b, a - b, a // (b | 1), a % (b | 1), (a + b) > a, np.sum(a), a >> 3

    got = backend.to_host(numbax.jit(program, backend=backend)(a, b))
    for k, (g, w) in enumerate(zip(got, program(a, b), strict=True)):
        assert g.dtype == w.dtype, k
        np.testing.assert_array_equal(g, w, err_msg=str(k))


def _rounded_chain(x, y, z):
    # Correctly rounded float16 operations only: each one computed in float32 and rounded
    # to float16 is NumPy's float16 result exactly.
    return (x * y + z) / (np.abs(y) + 1), np.sqrt(np.abs(x)) - z, np.maximum(x, y) * 2


@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_narrow_float_chain_equals_numpy_bit_for_bit(dtype, backend, rng):
    n = backend.size(257)
    x, y, z = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    got = backend.to_host(numbax.jit(_rounded_chain, backend=backend)(x, y, z))
    # ml_dtypes' bfloat16 ufuncs also compute in float32 and round each result.
    want = _rounded_chain(x, y, z)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == dtype
        np.testing.assert_array_equal(g.astype(np.float32), w.astype(np.float32))


@pytest.mark.skipif(BFLOAT16 is None, reason="bfloat16 needs ml_dtypes (the test extra)")
def test_bfloat16_rounding_and_nans_equal_ml_dtypes_bit_for_bit(backend):
    """float32 and float64 -> bfloat16: every rounding midpoint (ties to even), the values
    beside them, overflow to infinity and NaNs with payloads of both signs, as the bits
    ml_dtypes gives (a NaN is the quiet NaN of its sign)."""
    midpoints = np.arange(0, 1 << 16, 97, dtype=np.uint32) << 16 | 0x8000
    payloads = np.array([0x7FA12345, 0xFFA12345, 0x7F800001, 0xFF812345, 0x7FC00001], np.uint32)
    bits = np.concatenate([midpoints, midpoints - 1, midpoints + 1, payloads, [0x7F7FFFFF]])
    x = bits.astype(np.uint32).view(np.float32)[: backend.size(len(bits), simulated=64)]
    x = np.concatenate([x, payloads.view(np.float32)])

    def program(x):
        return x.astype(BFLOAT16), x.astype(np.float64).astype(BFLOAT16)

    with np.errstate(invalid="ignore"):
        want = x.astype(BFLOAT16).view(np.uint16)
    for got in backend.to_host(numbax.jit(program, backend=backend)(x)):
        assert got.dtype == BFLOAT16
        np.testing.assert_array_equal(got.view(np.uint16), want)


def test_cpu_stores_float16_as_its_bits_and_sums_in_float32(rng):
    """The generated program holds float16 arrays as uint16 (2 bytes an element) and
    converts only to compute; a sum accumulates in float32, as NumPy's does."""
    x = np.full(4096, 0.1, np.float16)
    f = numbax.jit(lambda x: (np.sum(x), x * 2), backend="cpu")
    total, doubled = f(x)
    assert total.dtype == np.float16 and doubled.dtype == np.float16
    assert total == np.sum(x)  # a float16 accumulator would stall at 256
    source = f.lower(x).source()
    assert "np.uint16" in source and "float16_to_float32" in source


def _loss(fn, dtype):
    def loss(*args):
        outs = [o for o in numbax.tree_leaves(fn(*args)) if dtypes.is_float(np.dtype(o.dtype))]
        return sum(np.sum(o * o) for o in outs)

    return loss


GRAD_PROGRAMS = {
    "tanh_chain": (lambda x, y: np.tanh(x * y) + np.exp(-x * x) * y, ((3, 4), (4,))),
    "softmax": (lambda x: np.exp(x) / np.sum(np.exp(x), axis=-1, keepdims=True), ((2, 5),)),
    "matmul": (lambda a, b: np.sin(a @ b), ((3, 4), (4, 2))),
    "mean_var": (lambda x: (np.mean(x, axis=0), np.var(x)), ((4, 3),)),
}


@pytest.mark.parametrize("name", sorted(GRAD_PROGRAMS))
@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_narrow_float_gradients_match_float64_finite_differences(name, dtype, rng):
    fn, shapes = GRAD_PROGRAMS[name]
    args = [(rng.standard_normal(s) * 0.7).astype(dtype) for s in shapes]
    wide = [a.astype(np.float64) for a in args]
    argnums = tuple(range(len(args)))
    for backend in ("interpret", "cpu"):
        grads = numbax.jit(numbax.grad(_loss(fn, dtype), argnums), backend=backend)(*args)
        loss64 = _loss(fn, np.float64)
        for k, (g, a) in enumerate(zip(grads, wide, strict=True)):
            assert g.dtype == dtype, (backend, k)
            step = 1e-6
            fd = np.zeros_like(a)
            for index in np.ndindex(a.shape):
                up, down = [w.copy() for w in wide], [w.copy() for w in wide]
                up[k][index] += step
                down[k][index] -= step
                fd[index] = (loss64(*up) - loss64(*down)) / (2 * step)
            eps = float(dtypes.finfo(dtype).eps)
            scale = max(float(np.max(np.abs(fd))), 1.0)
            error = float(np.max(np.abs(g.astype(np.float64) - fd))) / scale
            assert error < 40 * eps, (backend, name, k, error, eps)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "uint16", "float16", "bfloat16"])
def test_vmap_of_narrow_dtypes_equals_a_loop(dtype, rng):
    if dtype == "bfloat16" and BFLOAT16 is None:
        pytest.skip("ml_dtypes is not installed")
    dtype = dtypes.canonicalize(dtype)

    def program(x, y):
        return np.cumsum(x * y + 1, axis=0), np.max(x, axis=-1), (x[::-1] - y).T

    if dtypes.is_float(dtype):
        xs, ys = (rng.standard_normal((5, 3, 4)).astype(dtype) for _ in range(2))
    else:
        xs, ys = (rng.integers(0, 50, (5, 3, 4)).astype(dtype) for _ in range(2))
    for backend in ("interpret", "cpu"):
        batched = numbax.jit(numbax.vmap(program), backend=backend)(xs, ys)
        single = numbax.jit(program, backend=backend)
        looped = [single(x, y) for x, y in zip(xs, ys, strict=True)]
        for k, out in enumerate(batched):
            stacked = np.stack([item[k] for item in looped])
            assert out.dtype == stacked.dtype == program(xs[0], ys[0])[k].dtype
            np.testing.assert_array_equal(out.astype(np.float64), stacked.astype(np.float64))


@pytest.mark.skipif(SIMULATED, reason="PTX needs the real numba.cuda")
def test_float16_kernels_compile_to_ptx_with_native_loads(rng):
    from numbax.backends.cuda.ptx import program_ptx, ptx_toolchain_problem

    problem = ptx_toolchain_problem()
    if problem is not None:
        if switches.flag("NUMBAX_TEST_PTX"):
            pytest.fail(f"NUMBAX_TEST_PTX=1 but {problem}")
        pytest.skip(problem)
    x = np.ones((64, 33), np.float16)
    closed = numbax.make_jaxpr(lambda x: (np.tanh(x * 1.5) + 1, np.sum(x, axis=0)))(x)
    kernels = program_ptx(closed, "half_chain")
    text = "\n".join(ptx for _, ptx in kernels)
    assert ".target sm_90" in text
    assert "cvt.f32.f16" in text and "cvt.rn.f16.f32" in text  # native conversions
    assert "ld.global.u16" in text or "ld.global.nc.u16" in text  # 2-byte loads
