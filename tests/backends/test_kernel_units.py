"""Kernels as units of compilation (``backends/cpu/units.py``): a kernel is compiled once
per distinct text, whatever program or process needs it, and keeps its SIMD loops."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import cache, units
from numbax.config import config

pytest.importorskip("numba")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty disk cache, and a process that has compiled no program and no kernel and
    compiles every kernel itself (``test_compile_workers.py`` has the workers)."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(config, "compile_workers", 0)
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(units, "_COMPILED", {})
    return tmp_path


def _compile(fn, *args, name: str = "program"):
    return cpu.backend.compile(numbax.make_jaxpr(fn)(*args), name)


def _layers(x, w):
    """Three identical layers: a product, then its epilogue (a kernel of its own)."""
    for _ in range(3):
        x = np.tanh(x @ w + 0.5)
    return x


def _layers_then_a_sum(x, w):
    return np.exp(_layers(x, w)).sum(axis=1)


X, W = np.linspace(-1.0, 1.0, 32).reshape(4, 8), np.linspace(-0.3, 0.3, 64).reshape(8, 8)


def test_identical_kernels_in_a_program_compile_once(cache_dir):
    executable = _compile(_layers, X, W)
    program = executable.program
    # The three products are one kernel, the three epilogues another.
    product, epilogue = program.units
    assert product.name.startswith("product_") and epilogue.name.startswith("elementwise_")
    assert program.code.count("kernel_addresses[0]") == 3  # each called three times
    assert program.code.count("kernel_addresses[1]") == 3
    assert "np.dot" not in program.code  # the launcher calls no BLAS itself
    assert program.calls_blas  # but the program does: BLAS on the call's chosen threads
    assert executable.compile_stats.kernels == {"compiled": 2}
    assert "2 new, 0 from memory, 0 from disk" in str(executable.compile_stats)
    np.testing.assert_allclose(executable(X, W)[0], _layers(X, W), rtol=1e-12)


def test_a_second_program_compiles_only_the_kernels_it_has_not_seen(cache_dir):
    first = _compile(_layers, X, W, name="first")
    second = _compile(_layers_then_a_sum, X, W, name="second")
    shared = first.program.units  # the product's kernel and the epilogue's
    assert set(shared) <= set(second.program.units)  # the first two layers' kernels
    new = len(second.program.units) - 2  # the last layer's, fused with the sum, and more
    assert new >= 1
    assert second.compile_stats.kernels == {"memory": 2, "compiled": new}
    np.testing.assert_allclose(second(X, W)[0], _layers_then_a_sum(X, W), rtol=1e-12)


def test_another_process_loads_the_kernels_from_the_disk_cache(cache_dir):
    script = textwrap.dedent(
        """
        import numpy as np, numbax
        def layers(x, w):
            for _ in range(3):
                x = np.tanh(x @ w + 0.5)
            return np.exp(x).sum(axis=1)
        x = np.linspace(-1.0, 1.0, 32).reshape(4, 8)
        w = np.linspace(-0.3, 0.3, 64).reshape(8, 8)
        numbax.jit(layers, tiered=False)(x, w)
        """
    )
    env = dict(
        os.environ, NUMBAX_CACHE_DIR=str(cache_dir), NUMBAX_BACKEND="cpu", NUMBAX_LOG_COMPILES="1"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr
    first, second = (run.stderr for run in runs)
    new = r"kernels [\d.]+ ms: (\d+) new( \(\d+ in workers\))?, 0 from memory, 0 from disk"
    compiled = re.search(new, first)
    assert compiled and int(compiled[1]) >= 2, first
    assert f"0 new, 0 from memory, {compiled[1]} from disk" in second, second
    assert re.search(r"launcher( of steps)?: (disk cache hit|none to compile)", second), second


def _mlp_step(activations):
    def loss(params, x, y):
        h = x
        for (w, b), activation in zip(params, activations, strict=True):
            h = activation(h @ w + b)
        return np.mean((h - y) ** 2)

    return numbax.value_and_grad(loss)


def _relu(x):
    return np.maximum(x, 0.0)


def test_editing_one_layers_activation_recompiles_only_the_kernels_that_changed(cache_dir):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((16, 16)) * 0.3, np.zeros(16)) for _ in range(3)]
    x, y = rng.standard_normal((8, 16)), rng.standard_normal((8, 16))
    before = _compile(_mlp_step([np.tanh, np.tanh, np.tanh]), params, x, y, name="step")
    after = _compile(_mlp_step([np.tanh, _relu, np.tanh]), params, x, y, name="step")
    old = {unit.key for unit in before.program.units}
    new = {unit.key for unit in after.program.units}
    changed, kept = new - old, new & old
    assert changed and kept
    # Only the kernels whose text the edit changed compile; the rest come from memory.
    assert after.compile_stats.kernels == {"compiled": len(changed), "memory": len(kept)}
    assert f"{len(changed)} new, {len(kept)} from memory" in str(after.compile_stats)
    assert len(changed) < len(new)
    want = numbax.jit(_mlp_step([np.tanh, _relu, np.tanh]), backend="interpret")(params, x, y)
    got = after(*numbax.tree_util.tree_leaves((params, x, y)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)


def _tanh_twice(x):
    return np.tanh(x * 2.0)


def test_a_kernels_key_depends_on_what_it_computes_only(cache_dir):
    x, w = np.ones((16, 16), np.float32), np.ones((16, 16), np.float32)

    def elsewhere(x, w):
        # The same kernel, written on another line, among other kernels.
        y = np.tanh(x * 2.0)
        return np.exp(y @ w).sum()

    alone = cpu.backend.lower(numbax.make_jaxpr(_tanh_twice)(x), "alone")
    among = cpu.backend.lower(numbax.make_jaxpr(elsewhere)(x, w), "among")
    (unit,) = alone.units
    assert unit in among.units and len(among.units) > 1
    assert "test_kernel_units" not in unit.source  # no source position in its text
    assert "test_kernel_units" in alone.code  # its call says where it came from
    float64 = cpu.backend.lower(numbax.make_jaxpr(_tanh_twice)(x.astype(np.float64)), "f64")
    assert float64.units[0].key != unit.key  # a dtype is part of what it computes


def test_an_elementwise_kernel_keeps_its_simd_loop(cache_dir, monkeypatch):
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 1 << 40)  # one serial loop
    x = np.linspace(-1.0, 1.0, 4096, dtype=np.float32)
    executable = _compile(lambda v: v * 3.0 + np.float32(1.0), x)
    (unit,) = executable.program.units
    ir = units.llvm_ir(unit)
    # The kernel's own function (not its C wrapper) holds a vector loop of floats.
    own = re.search(rf"^define [^\n]*{unit.name}[^\n]*\{{\n(.*?)^\}}", ir, flags=re.M | re.S)
    assert own and "@cfunc." not in own.group(0).splitlines()[0]
    assert re.search(r"<\d+ x float>", own.group(1)), own.group(1)
    assert re.search(r"^vector\.body\d*:", own.group(1), flags=re.M)
    np.testing.assert_allclose(executable(x)[0], x * 3.0 + 1.0, rtol=1e-6)


# --- products as units ------------------------------------------------------------------


def _product_units(program) -> list:
    return [unit for unit in program.units if unit.name.startswith("product_")]


def test_a_product_with_its_epilogue_is_a_unit(cache_dir):
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((6, 5)), rng.standard_normal((5, 7)), rng.standard_normal(7)

    def layer(x, w, b):
        return np.tanh(x @ w + b)

    executable = _compile(layer, x, w, b)
    program = executable.program
    (product,) = _product_units(program)
    assert "nbx_gemm.gemm(" in product.source and "test_kernel_units" not in product.source
    assert len(program.units) == 2  # the product, then its epilogue
    assert "np.dot" not in program.code and program.calls_blas
    np.testing.assert_allclose(executable(x, w, b)[0], layer(x, w, b), rtol=1e-12)


def test_two_identical_products_compile_once(cache_dir):
    rng = np.random.default_rng(2)
    x, y, w = (rng.standard_normal((8, 8)) for _ in range(3))

    def twice(x, y, w):
        return (x @ w) * 2.0, np.exp(y @ w)

    executable = _compile(twice, x, y, w)
    (product,) = _product_units(executable.program)
    assert executable.program.code.count(f"# {product.name}") == 2
    assert executable.compile_stats.kernels == {"compiled": len(executable.program.units)}
    again = _compile(lambda a, c: a @ c, x, w, name="again")
    (same,) = _product_units(again.program)
    assert same.key == product.key and again.compile_stats.kernels == {"memory": 1}
    got = executable(x, y, w)
    for value, want in zip(got, twice(x, y, w), strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-12)


def _swap(a):
    return np.swapaxes(a, -1, -2)


RNG = np.random.default_rng(3)
A, B, C = RNG.standard_normal((6, 5)), RNG.standard_normal((6, 4)), RNG.standard_normal((4, 5))
BATCHED, OTHER = RNG.standard_normal((3, 6, 5)), RNG.standard_normal((3, 5, 4))
PRODUCTS = {
    "x.T @ y": (lambda x, y: x.T @ y, (A, B)),
    "x @ y.T": (lambda x, y: x @ y.T, (A, C)),
    "x.T @ y.T": (lambda x, y: x.T @ y.T, (A, RNG.standard_normal((4, 6)))),
    "batched": (lambda x, y: x @ y, (BATCHED, OTHER)),
    "batched, transposed": (
        lambda x, y: _swap(x) @ _swap(y),
        (BATCHED, RNG.standard_normal((3, 4, 6))),
    ),
    "slices": (lambda x, y: x[1:4, ::2] @ y[:3, 1:4].T, (A, C)),
    "rows of a view": (lambda x, y: x[2:5] @ y, (A, RNG.standard_normal((5, 3)))),
    "vector": (lambda x, y: x @ y, (A, RNG.standard_normal(5))),
    "float32 with epilogue": (
        lambda x, y: np.maximum(x.T @ y, 0.0),
        (A.astype(np.float32), B.astype(np.float32)),
    ),
    # Attention's products: heads split from the features, read where they lie.
    "heads, queries by keys": (
        lambda q, k: np.einsum("bthd,bshd->bhts", q, k),
        (RNG.standard_normal((2, 5, 3, 4)), RNG.standard_normal((2, 6, 3, 4))),
    ),
    "heads, weights by values": (
        lambda w, v: np.einsum("bhts,bshd->bthd", w, v),
        (RNG.standard_normal((2, 3, 5, 6)), RNG.standard_normal((2, 6, 3, 4))),
    ),
    "heads, keys' gradient": (
        lambda g, q: np.einsum("bhts,bthd->bshd", g, q),
        (RNG.standard_normal((2, 3, 5, 6)), RNG.standard_normal((2, 5, 3, 4))),
    ),
    "batch in the middle": (
        lambda x, y: np.einsum("ibk,bkj->bij", x, y),
        (RNG.standard_normal((4, 3, 5)), RNG.standard_normal((3, 5, 2))),
    ),
    "contracting two dimensions": (
        lambda x, y: np.einsum("ikl,klj->ij", x, y),
        (RNG.standard_normal((4, 3, 5)), RNG.standard_normal((3, 5, 2))),
    ),
    "weight gradient over a sequence": (
        lambda x, g: np.einsum("btk,bto->ko", x, g),
        (RNG.standard_normal((3, 7, 5)), RNG.standard_normal((3, 7, 4))),
    ),
    "large, on OpenBLAS's threads": (
        lambda x, y: np.tanh(x @ y.T),
        (RNG.standard_normal((160, 130)), RNG.standard_normal((210, 130))),
    ),
    "large and batched": (
        lambda x, y: x @ y,
        (RNG.standard_normal((2, 130, 120)), RNG.standard_normal((2, 120, 140))),
    ),
}


@pytest.mark.parametrize("case", list(PRODUCTS))
def test_products_of_transposes_batches_and_views_give_numpys_answers(cache_dir, case):
    fn, args = PRODUCTS[case]
    executable = _compile(fn, *args)
    launcher = executable.program.code
    assert _product_units(executable.program), launcher
    assert "np.dot" not in launcher and "ascontiguousarray" not in launcher, launcher
    want = fn(*args)
    rtol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(executable(*args)[0], want, rtol=rtol, atol=rtol)


def test_clear_caches_forgets_programs_and_kernels_but_not_the_disk_cache(cache_dir):
    """``numbax.clear_caches`` as ``jax.clear_caches``: a jitted function traces again, a
    kernel compiled in this process is loaded again from disk, or compiled again where
    there is no disk cache; the results do not change."""
    first = _compile(_layers, X, W)
    assert _compile(_layers, X, W).compile_stats.kernels == {"memory": len(first.program.units)}
    f = numbax.jit(_layers, tiered=False)
    want = f(X, W)
    numbax.clear_caches()
    assert not cache._LOADED and not units._COMPILED
    np.testing.assert_array_equal(f(X, W), want)
    assert f.cache_info().traces == 2
    distinct = len({unit.key for unit in first.program.units})
    assert _compile(_layers, X, W).compile_stats.kernels == {"memory": len(first.program.units)}
    numbax.clear_caches()
    again = _compile(_layers, X, W).compile_stats.kernels
    assert again["disk"] == distinct and sum(again.values()) == len(first.program.units)
    numbax.clear_caches()
    config.cache_dir = None  # restored by the fixture's monkeypatch
    cold = _compile(_layers, X, W).compile_stats.kernels
    assert cold["compiled"] == distinct and "disk" not in cold


def test_linear_algebra_is_a_unit_and_its_program_runs_as_steps(cache_dir):
    """A factorisation or a solve is a unit like a gather (``units.OPAQUE``): the launcher
    allocates its outputs, so a Gaussian process's program is a program of steps, with no
    launcher for Numba and LLVM to compile (1.9 s)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 5))
    s = a.T @ a + np.eye(5)

    def program(a, s):
        chol = np.linalg.cholesky(s)
        q, r = np.linalg.qr(a)
        singular = np.linalg.svd(a, compute_uv=False)
        return chol, np.linalg.solve(s, a.T), q @ r, np.linalg.eigh(s)[0], singular

    executable = _compile(program, a, s)
    sources = [unit.source for unit in executable.program.units]
    for helper in ("nbx_lapack.cholesky", "nbx_lapack.lu", "nbx_lapack.triangular_solve"):
        assert any(helper in source for source in sources), helper
    for helper in ("nbx_linalg.qr", "nbx_linalg.eigh", "nbx_linalg.singular_values"):
        assert any(helper in source for source in sources), helper
    assert executable.compile_stats.cache == "none"  # a program of steps
    chol, solved, qr, eigenvalues, singular = executable(a, s)
    np.testing.assert_allclose(chol, np.linalg.cholesky(s), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(solved, np.linalg.solve(s, a.T), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(qr, a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eigenvalues, np.linalg.eigvalsh(s), rtol=1e-10)
    np.testing.assert_allclose(singular, np.linalg.svd(a)[1], rtol=1e-10)
    np.testing.assert_array_equal(s, a.T @ a + np.eye(5))  # the arguments unchanged
