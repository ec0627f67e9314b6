"""Kernels compiled by llvmlite from their text (``backends/cpu/llvm_kernels.py``) compute
exactly what Numba compiles from the same text: bit for bit, on handwritten kernels that
use each construct of the language and on the kernels of real programs."""

from __future__ import annotations

import ast
import ctypes
import functools
import re
import textwrap

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import cache, llvm_helpers, llvm_kernels, units
from numbax.backends.cpu.cache import load_module
from numbax.backends.cpu.llvm_expressions import Unsupported
from numbax.config import config

pytest.importorskip("numba")

_HEADER = """
import numpy as np
from numba import carray, prange
from numba import types as nt
from numbax.backends.cpu import intrinsics as nbx
from numbax.backends.cpu.mathlib import functions as fm

_k0 = np.float64(0.0)
_k1 = np.float32(-np.inf)
_k2 = np.float32(2.5)
SIGNATURE = nt.void(nt.CPointer(nt.voidptr))
PARALLEL = False


"""


def _inputs(source: str, seed: int = 0) -> list[np.ndarray]:
    """Arrays for each ``carray(args[k], shape, dtype)`` of the kernel, from a seed."""
    rng = np.random.default_rng(seed)
    arrays = []
    for k, shape, dtype in re.findall(r"carray\(args\[(\d+)\], (\([^)]*\)), np\.(\w+)\)", source):
        assert int(k) == len(arrays)
        shape, dtype = ast.literal_eval(shape), np.dtype("bool" if dtype == "bool_" else dtype)
        if dtype.kind == "f":
            array = (rng.standard_normal(shape) * 3).astype(dtype)
            specials = np.array([np.nan, -0.0, 1e30, -np.inf], dtype)[: array.size]
            array.flat[: len(specials)] = specials
        elif dtype.kind == "b":
            array = rng.random(shape) > 0.5
        else:
            array = rng.integers(-7, 8, shape).astype(dtype)
        arrays.append(array)
    return arrays


def _run(address: int, arrays: list[np.ndarray]) -> None:
    table = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)(ctypes.addressof(table))


@functools.cache
def _machine_tuned_as_numba_s():
    """``llvm_kernels._machine()`` with Numba's tuning (the host's features as they are):
    numbax's kernels prefer 512-bit vectors where the host has AVX-512
    (``llvm_helpers.target_features``), which orders a reassociable sum's terms otherwise
    than Numba's 256-bit loops; the translation is compared at Numba's width."""
    llvm, _, engine = llvm_kernels._machine()
    machine = llvm_kernels.target_machine(llvm.get_host_cpu_features().flatten())
    return llvm, machine, engine


def _both(body: str, name: str = "kernel"):
    """The kernel ``body`` compiled by llvmlite and by Numba, run on the same inputs: the
    two sets of arrays after the calls."""
    source = _HEADER + f"def {name}(args):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    tuned = _machine_tuned_as_numba_s()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(llvm_kernels, "_machine", lambda: tuned)
        code = tuned[1].emit_object(llvm_kernels.optimised(source, name))
    ours = llvm_kernels._load(code, name)
    module = load_module(source, f"test_llvm_{name}_{abs(hash(source))}", None)
    numba_kernel = units._cfunc(module, name, False)
    first, second = _inputs(source), _inputs(source)
    _run(ours, first)
    _run(numba_kernel.address, second)
    return first, second


def _assert_same(body: str, name: str) -> None:
    first, second = _both(body, name)
    for ours, numbas in zip(first, second, strict=True):
        np.testing.assert_array_equal(ours, numbas)  # NaN where Numba's is NaN
        numbers = ~np.isnan(ours) if ours.dtype.kind == "f" else np.ones(ours.shape, bool)
        np.testing.assert_array_equal(
            ours[numbers].view(np.uint8), numbas[numbers].view(np.uint8)
        )  # and bit for bit elsewhere (-0.0 included)


def test_arithmetic_and_numba_s_promotions():
    _assert_same(
        """
        a = carray(args[0], (7, 5), np.float32)
        b = carray(args[1], (7, 5), np.int32)
        c = carray(args[2], (7, 5), np.float64)
        d = carray(args[3], (7, 5), np.float32)
        e = carray(args[4], (7, 5), np.int64)
        for i0 in range(7):
            for i1 in range(5):
                x = a[i0, i1]
                k = b[i0, i1]
                c[i0, i1] = x * k + 1 - x / 3  # float32 with ints: float64, as Numba
                d[i0, i1] = np.float32(x * _k2 - (x if x > _k2 else -x))
                e[i0, i1] = k // 3 + k % 4 - abs(k) + min(max(k, -2), 5) + (i0 - 2 * i1)
        """,
        "arithmetic",
    )


def test_numpy_ufuncs_of_scalars_are_numba_s():
    """``np.power``, ``np.arctan2`` and ``np.rint``, which the writers emit on scalars,
    are lowered by Numba's own implementation, so the bits are Numba's."""
    _assert_same(
        """
        a = carray(args[0], (9, 8), np.float32)
        b = carray(args[1], (9, 8), np.float64)
        k = carray(args[2], (9, 8), np.int64)
        c = carray(args[3], (9, 8), np.float32)
        d = carray(args[4], (9, 8), np.float64)
        e = carray(args[5], (9, 8), np.float64)
        for i0 in range(9):
            for i1 in range(8):
                x = a[i0, i1]
                y = b[i0, i1]
                c[i0, i1] = np.power(abs(x), _k2) + np.power(x, np.float32(-1.5))
                d[i0, i1] = np.power(y, np.float64(k[i0, i1])) + np.arctan2(y, np.float64(x))
                e[i0, i1] = np.rint(y) + np.power(np.float64(k[i0, i1]), y)
        """,
        "scalar_ufuncs",
    )


def test_an_integer_power_is_left_to_numba():
    source = _HEADER + textwrap.dedent(
        """
        def kernel(args):
            k = carray(args[0], (4,), np.int64)
            for i in range(4):
                k[i] = np.power(k[i], 3)
        """
    )
    with pytest.raises(Unsupported, match="power"):
        llvm_kernels.translate(source, "kernel")


def test_comparisons_conditions_and_booleans():
    _assert_same(
        """
        a = carray(args[0], (40,), np.float64)
        b = carray(args[1], (40,), np.int32)
        m = carray(args[2], (40,), np.bool_)
        o = carray(args[3], (40,), np.float64)
        for i in range(40):
            x = a[i]
            k = b[i]
            m[i] = (0 <= k < 4) or (x != x and not m[i])
            if -3 < k <= 2 and x >= 0.0:
                o[i] = nbx.select(x == x, x, _k0)
            elif k == 7:
                o[i] = -x
            else:
                o[i] = np.float64(k) if k != 0 else np.sqrt(abs(x))
        """,
        "conditions",
    )


def test_reductions_scratch_tuples_and_math_functions():
    _assert_same(
        """
        a = carray(args[0], (6, 33), np.float32)
        s = carray(args[1], (6,), np.float32)
        t = carray(args[2], (6,), np.float32)
        scratch = np.empty((6,), np.float64)
        for i0 in range(6):
            acc = _k0
            compensation = _k0
            block = np.float32(0.0)
            high = _k1
            for i1 in range(nbx.opaque_int(33)):
                x = a[i0, i1]
                block = nbx.add_reassoc(block, fm.tanh_f32(x) * fm.exp_f32(x / _k2))
                high = nbx.maximum(high, x)
            acc, compensation = nbx.compensated_add(acc, compensation, np.float64(block))
            scratch[i0] = nbx.compensated_total(acc, compensation)
            t[i0] = high
        for i0 in range(5, -1, -1):
            s[i0] = np.float32(scratch[i0]) + fm.log_f32(abs(t[i0]))
        """,
        "reductions",
    )


def test_negative_indices_wrap_as_numba_s_do_and_scalars_pass_by_the_table():
    _assert_same(
        """
        a = carray(args[0], (4, 9), np.float64)
        n = carray(args[1], (1,), np.int64)[0]
        o = carray(args[2], (4, 9), np.float64)
        for i in range(4):
            for j in range(9):
                o[i, j] = a[i - 4, -1 - j] + n
        """,
        "wrapping",
    )


def test_what_the_translation_does_not_know_is_refused():
    source = _HEADER + "def k(args):\n    while False:\n        pass\n"
    with pytest.raises(Unsupported, match="While"):
        llvm_kernels.translate(source, "k")
    sliced = _HEADER + (
        "def k(args):\n    a = carray(args[0], (4,), np.float32)\n    a[1:3] = a[0:2]\n"
    )
    with pytest.raises(Unsupported):
        llvm_kernels.translate(sliced, "k")


def _training_step(params, x):
    w1, w2 = params
    h = np.tanh(x @ w1)
    z = h @ w2
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return -np.log(p[:, 0] + 1e-6).mean() + 0.1 * (h * h).sum()


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(units, "_COMPILED", {})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_training_step_s_kernels_are_llvmlite_s_and_equal_numba_s(fresh, monkeypatch, dtype):
    rng = np.random.default_rng(1)
    params = (
        rng.standard_normal((12, 16)).astype(dtype),
        rng.standard_normal((16, 5)).astype(dtype),
    )
    x = rng.standard_normal((9, 12)).astype(dtype)
    closed = numbax.make_jaxpr(numbax.value_and_grad(_training_step))(params, x)
    ours = cpu.backend.compile(closed, "step")
    assert ours.compile_stats.llvmlite == len(ours.program.units) > 5
    monkeypatch.setattr(units, "_COMPILED", {})
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(config, "llvm_kernels", False)
    numbas = cpu.backend.compile(closed, "step_by_numba")
    assert numbas.compile_stats.llvmlite == 0
    flat = [*params, x]
    # The same to the last bits but for the order of reassociable sums (block sums, whose
    # vector order each compiler's loop vectoriser picks).
    close = {"rtol": 2e-6, "atol": 1e-7} if dtype == np.float32 else {"rtol": 1e-14}
    for a, b in zip(ours(*flat), numbas(*flat), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), **close)
    interpreted = numbax.jit(numbax.value_and_grad(_training_step), backend="interpret")
    value, grads = interpreted(params, x)
    expected = [value, *grads]
    for a, b in zip(ours(*flat), expected, strict=True):
        tolerance = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10}
        np.testing.assert_allclose(a, b, **tolerance)


@pytest.mark.parametrize("size", [4096, 1 << 21])  # a loop, and a parallel loop's chunks
def test_llvmlite_s_loops_are_vector_code(fresh, size):
    x = np.linspace(-3.0, 3.0, size, dtype=np.float32)
    closed = numbax.make_jaxpr(lambda x: np.tanh(1.5 * x + 0.5) * 0.5 + x * x)(x)
    executable = cpu.backend.compile(closed, "chain")
    (unit,) = executable.program.units
    assert unit.parallel == (size > 4096)
    assert executable.compile_stats.llvmlite == 1
    text = units.llvm_ir(unit)
    # 16 lanes where the host has AVX-512 (``llvm_helpers.target_features``), else 4 or 8.
    lanes = "16" if "+avx512f" in llvm_helpers.target_features().split(",") else "4|8"
    assert re.search(rf"<({lanes}) x float>", text), "the loop is not vectorised"
    np.testing.assert_allclose(
        executable(x)[0], np.tanh(1.5 * x + 0.5) * 0.5 + x * x, rtol=1e-6, atol=1e-6
    )


_SHORT_LOOPS = """
a = carray(args[0], (64, 3), np.float32)
b = carray(args[1], (64,), np.float32)
c = carray(args[2], (3,), np.float32)
d = carray(args[3], (64, 40), np.float32)
n64 = nbx.opaque_int(64)
for k in range(3):
    c[k] = np.float32(0.0)
for i in range(n64):
    for k in range(3):
        c[k] = c[k] + a[i, k] * b[i]
for i in range(4):
    for j in range(40):
        d[i, j] = b[j] * np.float32(2.0)
"""


def test_only_short_innermost_loops_of_constant_bounds_are_unrolled():
    """A 3-wide accumulator's loop is unrolled in full (its sums stay in registers), a
    loop of opaque or long bounds and a loop around another are not (LLVM's own
    unrolling is off: ``llvm_kernels.optimised``); the results are Numba's."""
    source = _HEADER + "def kernel(args):\n" + textwrap.indent(_SHORT_LOOPS.strip(), "    ")
    text, _, _ = llvm_kernels.translate(source, "kernel")
    loops = re.findall(r"!llvm.loop (![0-9]+)", text)
    assert len(set(loops)) == len(loops) == 2  # the two range(3) loops, each its own ID
    for loop_id in loops:
        assert re.search(rf"{loop_id} = distinct !{{ {loop_id}, ![0-9]+ }}", text)
    assert '!"llvm.loop.unroll.full"' in text
    optimised = str(llvm_kernels.optimised(source, "kernel"))
    assert "<8 x float>" in optimised or "<4 x float>" in optimised  # range(40) vectorised
    _assert_same(_SHORT_LOOPS, "short_loops")


_LARGE_PRODUCT = """
import numpy as np
import numbax
from numbax.backends import cpu

rng = np.random.default_rng(0)
x = rng.standard_normal((8, 64, 256)).astype(np.float32)  # 2^26 flops: in blocks
w = rng.standard_normal((256, 128)).astype(np.float32)
closed = numbax.make_jaxpr(lambda x, w: np.tanh(x @ w))(x, w)
executable = cpu.backend.compile(closed, "large_product")
assert any("blocked_gemm" in unit.source for unit in executable.program.units)
np.testing.assert_allclose(executable(x, w)[0], np.tanh(x @ w), rtol=2e-5, atol=2e-5)
print(dict(executable.compile_stats.kernels), executable.compile_stats.llvmlite)
"""


def test_a_parallel_helper_is_called_by_symbol_also_from_a_new_process(tmp_path):
    """A large product's unit calls ``gemm.blocked_gemm`` (a parallel ``njit`` helper) by
    its symbol: compiled by llvmlite, and loaded from the disk cache in a new process,
    which resolves the symbol there."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBAX_CACHE_DIR=str(tmp_path), NUMBAX_COMPILE_WORKERS="0")
    runs = [
        subprocess.run(
            [sys.executable, "-c", _LARGE_PRODUCT], env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = (run.stdout.split("\n")[-2] for run in runs)
    count = int(first.split()[-1])
    assert count >= 2 and first.startswith("{'compiled'")  # the product and the tanh
    assert second == f"{{'disk': {count}}} {count}"


def test_a_parallel_kernel_runs_its_prange_on_numba_s_threads():
    """A parallel kernel's loops (``NAME_loops``, a ``prange``) compiled by llvmlite: the
    body a chunk function run by ``parallel_chunks.run_chunks``; rows of scratch taken in
    place, names assigned in the body private to each iteration."""
    source = _HEADER.replace("PARALLEL = False", "PARALLEL = True") + textwrap.dedent(
        """
            def parallel_loops(a, o, s):
                scratch = np.empty((16, 5), np.float64)
                for i in range(5):
                    s[i] = np.float32(0.0)
                for chunk in prange(16):
                    row = scratch[chunk]
                    for i in range(5):
                        row[i] = _k0
                    for r in range(chunk * 2, min((chunk + 1) * 2, 31)):
                        for i in range(5):
                            x = a[r, i] * _k2
                            o[r, i] = fm.tanh_f32(x)
                            row[i] = nbx.add_reassoc(row[i], np.float64(x))
                for chunk in range(16):
                    row = scratch[chunk]
                    for i in range(5):
                        s[i] = s[i] + np.float32(row[i])


            def parallel(args):
                a = carray(args[0], (31, 5), np.float32)
                o = carray(args[1], (31, 5), np.float32)
                s = carray(args[2], (5,), np.float32)
                parallel_loops(a, o, s)
            """
    )
    _, machine, _ = llvm_kernels._machine()
    text, _, externals = llvm_kernels.translate(source, "parallel")
    assert [name[1] for name in externals] == ["run_chunks"]
    ours = llvm_kernels._load(
        machine.emit_object(llvm_kernels.optimised(source, "parallel")), "parallel"
    )
    module = load_module(source, f"test_llvm_parallel_{abs(hash(source))}", None)
    numbas = units._cfunc(module, "parallel", False)
    first, second = _inputs(source), _inputs(source)
    _run(ours, first)
    _run(numbas.address, second)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    a = _inputs(source)[0]
    np.testing.assert_allclose(first[1][:31], np.tanh(a * np.float32(2.5)), rtol=1e-5)
