"""float16 and bfloat16 on the CUDA backend: bfloat16 held as its bits, converted exactly
as ml_dtypes converts, and narrow-float matmuls reading their operands as stored (the
tiled kernel) or handing them to cuBLAS's tensor-core GEMM.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/backends/test_cuda_narrow.py

The conversions themselves are checked everywhere (they are NumPy code for the
simulator and LLVM IR for the GPU, which the CPU target compiles too); the kernels run
under the simulator, against NumPy and ml_dtypes, dtypes included. The cuBLAS path runs
here with NumPy standing in for CuPy, and on a GPU with CuPy for real.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest
import switches

import numbax
from numbax.config import cuda_simulator
from numbax.ir import dtypes
from numbax.ir.interpret import eval_jaxpr
from numbax.passes import narrow_floats

BFLOAT16 = dtypes.bfloat16
SIMULATED = cuda_simulator()
ON_GPU = switches.flag("NUMBAX_TEST_GPU")
needs_bfloat16 = pytest.mark.skipif(BFLOAT16 is None, reason="bfloat16 needs ml_dtypes")
needs_kernels = pytest.mark.skipif(
    not (SIMULATED or ON_GPU),
    reason="needs NUMBA_ENABLE_CUDASIM=1 (or NUMBAX_TEST_GPU=1 on a GPU machine)",
)
NARROW = [np.dtype(np.float16)] + ([BFLOAT16] if BFLOAT16 is not None else [])


def float32_patterns(rng) -> np.ndarray:
    """float32 bit patterns that reach every bfloat16 and every rounding case: each
    bfloat16 exactly, just below, at and just above the midpoint to the next one
    (ties to even both ways), the NaNs (quiet, signalling, both signs), and random ones."""
    upper = np.arange(1 << 16, dtype=np.uint32) << 16
    offsets = [0, 0x7FFF, 0x8000, 0x8001, 0xFFFF]
    patterns = [upper | offset for offset in offsets]
    patterns.append(rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint32))
    return np.concatenate(patterns).view(np.float32)


def ml_dtypes_bits(values) -> np.ndarray:
    with np.errstate(all="ignore"):
        return values.astype(BFLOAT16).view(np.uint16)


@needs_bfloat16
def test_bfloat16_conversions_round_as_ml_dtypes(rng):
    """Both implementations of the conversions: the GPU's LLVM IR (compiled here for the
    CPU, the same IR) and the simulator's NumPy code, bit for bit against ml_dtypes."""
    from numba import extending, njit

    from numbax.backends import float_rounding
    from numbax.backends.cuda import narrow_floats as nf

    to_float32 = extending.intrinsic(float_rounding.bfloat16_to_float32)
    from_float = extending.intrinsic(float_rounding.bfloat16_from_float)

    @njit
    def convert(x32, x64):
        bits, bits64 = np.empty(x32.size, np.uint16), np.empty(x64.size, np.uint16)
        back = np.empty(x32.size, np.float32)
        for i in range(x32.size):
            bits[i] = from_float(x32[i])
            back[i] = to_float32(bits[i])
            bits64[i] = from_float(x64[i])
        return bits, back, bits64

    x32 = float32_patterns(rng)
    # float64s a hair above float32 ties: through float32 (as ml_dtypes casts) they tie.
    with np.errstate(all="ignore"):
        x64 = x32.astype(np.float64) * (1 + 2.0**-40)
    want = ml_dtypes_bits(x32)
    bits, back, bits64 = convert(x32, x64)
    np.testing.assert_array_equal(bits, want)
    np.testing.assert_array_equal(bits64, ml_dtypes_bits(x64))
    np.testing.assert_array_equal(back.view(np.uint32), want.astype(np.uint32) << 16)
    assert {int(b) for b in want[np.isnan(x32)]} == {0x7FC0, 0xFFC0}  # quiet, signed

    sample = np.arange(0, x32.size, 29)
    simulated = [nf.simulated_from_float(x32[i]) for i in sample]
    np.testing.assert_array_equal(np.array(simulated, np.uint16), want[sample])
    widened = [nf.simulated_to_float32(b) for b in want[sample]]
    np.testing.assert_array_equal(np.array(widened).view(np.uint32), back[sample].view(np.uint32))


# --- kernels ----------------------------------------------------------------------------


def compile_cuda(fun, *args, options=None):
    from numbax.backends.cuda import CudaBackend

    closed = numbax.make_jaxpr(fun)(*args)
    return closed, CudaBackend(options).compile(closed, fun.__name__)


def host(result):
    return result.copy_to_host()  # bfloat16 comes back as bfloat16 (np.asarray: see device)


def assert_same(got, want, what) -> None:
    """Equal dtype, shape and values bit for bit (-0.0 is not 0.0), any NaN for a NaN (a
    NaN's sign from arithmetic is the machine's)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    if dtypes.kind(want.dtype) != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan, err_msg=what)
    bits = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
    np.testing.assert_array_equal(bits[0][~nan], bits[1][~nan], err_msg=what)


def widened_oracle(closed, *args) -> list:
    """What the compiled backends compute: the program with narrow floats computed in
    float32 (``passes.narrow_floats``), run by the interpreter."""
    widened, _ = narrow_floats.run(closed)
    with np.errstate(all="ignore"):
        return eval_jaxpr(widened.jaxpr, widened.consts, *args)


def special(dtype, rng, shape) -> np.ndarray:
    values = rng.standard_normal(shape).astype(np.float32) * 3
    flat = values.reshape(-1)
    flat[:7] = [np.nan, np.inf, -np.inf, -0.0, 1e-40, 3e38, -np.nan]
    return values.astype(dtype)


def moves_and_conversions(x, h, y, i, index):
    """Every way a narrow float moves or converts, and one arithmetic chain."""
    moved = (x.T[::2], np.concatenate([x, x[:1]]), np.pad(x, 1), x[index], x.reshape(-1)[::-3])
    updated = x.copy()
    updated[1:3] = x[:2]
    moved += (updated, x, np.asarray(0.25, x.dtype))  # an update, x as it is, a literal
    chosen = np.where(x > 0, x, np.asarray(0.5, x.dtype))
    converted = (
        y.astype(x.dtype),  # float64: through float32, as ml_dtypes casts
        i.astype(x.dtype),
        h.astype(x.dtype),
        x.astype(np.float16),
        x.astype(np.float64),
        x.astype(bool),
        (x > 0).astype(x.dtype),
        (h.astype(x.dtype) * np.asarray(1000, x.dtype)).astype(np.int16),
    )
    return moved, chosen, converted, x * np.asarray(3, x.dtype) + h.astype(x.dtype)


@needs_kernels
@needs_bfloat16
def test_bfloat16_moves_and_converts_bit_for_bit(rng):
    """A bfloat16 program over its bits: the data movement, select, literals, conversions
    from and to every kind, and arithmetic, equal to NumPy with ml_dtypes bit for bit."""
    x = special(BFLOAT16, rng, (4, 5))
    h = rng.standard_normal((4, 5)).astype(np.float16)
    y = (rng.standard_normal((4, 5)) * 1e3).astype(np.float64)
    y.reshape(-1)[:3] = [1 + 2.0**-8 + 2.0**-40, 3e39, np.nan]  # a tie through float32
    i = rng.integers(-(2**31), 2**31, (4, 5)).astype(np.int32)
    index = np.array([3, 0, 3, 1])
    args = (x, h, y, i, index)
    _, executable = compile_cuda(moves_and_conversions, *args)
    got = [host(out) for out in executable(*args)]
    with np.errstate(all="ignore"):  # the special values overflow and compare as NaN
        want = numbax.tree_leaves(moves_and_conversions(*args))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, np.asarray(w), f"output {k}")
    assert "uint16(16128)" in executable.source  # the literal 0.5, as its bits


def reductions_and_matmuls(x, w, b, index, v):
    return (
        x.sum(axis=-1),
        x.max(axis=0),
        np.argmax(x, axis=-1),
        x.mean(),
        np.cumsum(x, axis=1),
        x @ w,
        np.maximum(x @ w + b, 0),
        x.T @ x,
        x.at[index].add(v),
    )


@needs_kernels
@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_narrow_reductions_matmuls_and_scatter(dtype, rng):
    """Sums accumulate in float32 (a narrow accumulator would stall), matmuls multiply in
    float32 and round once, scatters add in float32: the widened program's results, to
    the ulp the order of float32 additions may move."""
    x = (rng.standard_normal((6, 9)) + 0.5).astype(dtype)
    w = rng.standard_normal((9, 5)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)
    index, v = np.array([1, 4, 1]), rng.standard_normal((3, 9)).astype(dtype)
    args = (x, w, b, index, v)
    closed, executable = compile_cuda(reductions_and_matmuls, *args)
    got = [host(out) for out in executable(*args)]
    want = widened_oracle(closed, *args)
    eps = float(dtypes.finfo(dtype).eps)
    for k, (g, w_) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w_.dtype and g.shape == w_.shape, (k, g.dtype, w_.dtype)
        g64, w64 = g.astype(np.float64), w_.astype(np.float64)
        np.testing.assert_allclose(g64, w64, rtol=eps, atol=eps, err_msg=f"output {k}")
    assert got[0].dtype == dtype and got[5].dtype == dtype
    # NumPy's own answer for the sum of narrow floats: float32 accumulation, rounded.
    np.testing.assert_allclose(
        got[0].astype(np.float32), x.astype(np.float32).sum(-1).astype(dtype), rtol=eps
    )
    # The matmuls read the narrow operands as stored: no widened copy goes to memory.
    kernels = [step.kernel for step in executable.program.steps]
    matmuls = [k for k in kernels if "sm_lhs" in k.source]
    stored = np.dtype(np.uint16) if dtype == BFLOAT16 else dtype
    assert len(matmuls) == 2
    assert all({p.dtype for p in k.params if p.role == "in"} == {stored} for k in matmuls)


@needs_kernels
@needs_bfloat16
def test_bfloat16_crosses_host_device_and_control_flow(rng):
    """A host bfloat16 array goes in as its bits and a result comes back as bfloat16,
    into the next call as it came out; loops carry bfloat16, run by the host (a scan, a
    while loop) or as one kernel (a fori_loop)."""
    from numba import cuda

    x = rng.standard_normal((3, 4)).astype(BFLOAT16)
    half, one = np.asarray(0.5, BFLOAT16), np.asarray(1, BFLOAT16)

    def loops(x):
        h, ys = numbax.scan(lambda h, r: (h * half + r, h.sum()), x[0], x)
        n = numbax.while_loop(lambda c: c.sum() < 50, lambda c: c + one, h)
        return h, ys, n, numbax.fori_loop(0, 3, lambda i, c: c * half + one, x)

    # NumPy over bfloat16: ml_dtypes rounds each step, as numbax does; sums in float32.
    h_want, ys_want = x[0], []
    for row in x:
        ys_want.append(h_want.astype(np.float32).sum().astype(BFLOAT16))
        h_want = h_want * half + row
    n_want = h_want
    while n_want.astype(np.float32).sum().astype(BFLOAT16) < 50:
        n_want = n_want + one
    f_want = x
    for _ in range(3):
        f_want = f_want * half + one

    first = numbax.jit(loops, backend="cuda")(x)
    wanted = (h_want, np.array(ys_want), n_want, f_want)
    for got, want, what in zip(first, wanted, ("h", "ys", "n", "fori"), strict=True):
        assert_same(host(got), want, what)
    assert first[0].dtype == BFLOAT16 and not isinstance(first[0], np.ndarray)
    double = numbax.jit(lambda h: h * np.asarray(2, h.dtype), backend="cuda")
    assert_same(host(double(first[0])), h_want * np.asarray(2, BFLOAT16), "a result passed on")
    bits = cuda.to_device(h_want.view(np.uint16)).view(BFLOAT16)  # the user's device array
    assert_same(host(double(bits)), h_want * np.asarray(2, BFLOAT16), "a bfloat16 device view")


# --- cuBLAS ---------------------------------------------------------------------------


def dense(x, w, b):
    # The einsum's lhs is a broadcast of x widened, a kernel of its own: not an operand as
    # stored, so that matmul widens the narrow rhs to float32 and multiplies in float32.
    return np.maximum(x @ w + b, 0), x @ w.T, np.einsum("bki,kj->bij", x[None], x)


@needs_kernels
@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_cublas_takes_narrow_operands_as_stored(dtype, rng, monkeypatch):
    """The cuBLAS path's glue for narrow operands, with NumPy standing in for CuPy and for
    the tensor-core GEMM: it gets the 16-bit operands as stored (bfloat16 as its bits),
    in (batch, m, k) x (batch, k, n) order, and its float32 product goes through the
    epilogue to the widened program's answer; a narrow operand with a float32 one is
    widened for a float32 matmul."""
    if not SIMULATED:
        pytest.skip("uses simulated device arrays")
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    from numbax.backends.cuda import CudaOptions, cublas

    gemms, matmuls = [], []

    def gemm(lhs, rhs, stored):
        gemms.append((lhs.dtype, rhs.dtype, stored, lhs.shape, rhs.shape))
        wide = [a.view(BFLOAT16) if stored == BFLOAT16 else a for a in (lhs, rhs)]
        return np.matmul(*[a.astype(np.float32) for a in wide])

    def matmul(lhs, rhs):
        matmuls.append((lhs.dtype, rhs.dtype))
        return np.matmul(lhs, rhs)

    stand_in = types.SimpleNamespace(matmul=matmul, float32=np.float32, uint32=np.uint32)
    monkeypatch.setitem(sys.modules, "cupy", stand_in)
    monkeypatch.setattr(cublas, "available", lambda: True)
    monkeypatch.setattr(cublas, "to_cupy", lambda array: array._ary)
    monkeypatch.setattr(cublas, "from_cupy", FakeCUDAArray)
    monkeypatch.setattr(cublas, "tensor_core_gemm", gemm)
    monkeypatch.setattr(cublas, "tensor_cores_take", dtypes.is_narrow_float)
    options = CudaOptions.for_simulator(cublas=True, cublas_min_flops=0)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in [(6, 5), (5, 5), (5,)])
    closed, executable = compile_cuda(dense, x, w, b, options=options)
    got = [host(out) for out in executable(x, w, b)]
    want = widened_oracle(closed, x, w, b)
    eps = float(dtypes.finfo(dtype).eps)
    for k, (g, w_) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w_.dtype == dtype, k
        np.testing.assert_allclose(
            g.astype(np.float64), w_.astype(np.float64), rtol=eps, atol=eps, err_msg=str(k)
        )
    stored = np.dtype(np.uint16) if dtype == BFLOAT16 else dtype
    assert gemms == [(stored, stored, dtype, (1, 6, 5), (1, 5, 5))] * 2
    assert matmuls == [(np.dtype(np.float32), np.dtype(np.float32))]


@pytest.mark.skipif(
    not (ON_GPU and importlib.util.find_spec("cupy")),
    reason="needs a GPU (NUMBAX_TEST_GPU=1) and CuPy: cuBLAS's tensor-core GEMM for real",
)
@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_cublas_tensor_core_gemm_on_the_gpu(dtype, rng, monkeypatch):
    """On a GPU with CuPy: narrow matmuls through cuBLAS's 16-bit GEMM (two of the three;
    the einsum's is a float32 matmul), and through the tiled kernel, against the widened
    program within one ulp."""
    from numbax.backends.cuda import CudaOptions, cublas

    assert cublas.tensor_cores_take(dtype)
    calls, gemm = [], cublas.tensor_core_gemm
    monkeypatch.setattr(cublas, "tensor_core_gemm", lambda *a: calls.append(a[2]) or gemm(*a))
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in [(70, 130), (130, 130), (130,)])
    for options in (CudaOptions.for_gpu(cublas=True, cublas_min_flops=0), CudaOptions.for_gpu()):
        closed, executable = compile_cuda(dense, x, w, b, options=options)
        matmuls = [s.kernel for s in executable.program.steps if "sm_lhs" in s.kernel.source]
        assert len(matmuls) == 3
        assert all((kernel.cublas is not None) == options.cublas for kernel in matmuls)
        got = [host(out) for out in executable(x, w, b)]
        want = widened_oracle(closed, x, w, b)
        eps = float(dtypes.finfo(dtype).eps)
        for g, w_ in zip(got, want, strict=True):
            assert g.dtype == w_.dtype == dtype
            np.testing.assert_allclose(
                g.astype(np.float64), w_.astype(np.float64), rtol=eps, atol=eps
            )
    assert calls == [dtype, dtype]
