"""The CUDA backend's kernels as units of compilation (``backends/cuda/loader.py``): each
kernel is keyed by what it computes and compiled once per process, whatever program
holds it; the compile log counts a program's distinct kernels as new, from memory and
from disk.

The keys are checked on the GPU variant of the code, which needs no GPU to generate; the
compiles run under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which has no disk
cache, so there every kernel a process has not compiled is new.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import switches

import numbax
from numbax.config import config, cuda_simulator

SIMULATED = cuda_simulator()
needs_a_device = pytest.mark.skipif(
    not (SIMULATED or switches.flag("NUMBAX_TEST_GPU")),
    reason="needs NUMBA_ENABLE_CUDASIM=1 (or NUMBAX_TEST_GPU=1 on a GPU machine)",
)


def _layers(x, w1, w2, w3):
    """Three identical layers: a product with a tanh epilogue, one kernel each."""
    for w in (w1, w2, w3):
        x = np.tanh(x @ w)
    return x.sum(axis=1)


def _layers_moved(x, w1, w2, w3):
    for w in (w1, w2, w3):
        x = np.tanh(x @ w)
    return x.sum(axis=1)


def _last_layer_edited(x, w1, w2, w3):
    """``_layers`` with the last layer's activation changed."""
    for w in (w1, w2):
        x = np.tanh(x @ w)
    x = np.maximum(x @ w3, 0.0)
    return x.sum(axis=1)


def _layers_then_more(x, w1, w2, w3):
    """``_layers``' first two layers, then what ``_layers`` does not compute."""
    for w in (w1, w2):
        x = np.tanh(x @ w)
    return np.exp(x * 0.5).max(axis=0)


def _arguments(dtype=np.float32):
    rng = np.random.default_rng(34)
    x = rng.standard_normal((5, 6)).astype(dtype)
    return [x, *(rng.standard_normal((6, 6)).astype(dtype) * 0.5 for _ in range(3))]


def _lowered(fn, name: str = "program", dtype=np.float32):
    from numbax.backends.cuda import CudaBackend, CudaOptions

    closed = numbax.make_jaxpr(fn)(*_arguments(dtype))
    return CudaBackend(CudaOptions.for_gpu()).lower(closed, name)


# --- keys: what a kernel computes, not where it sits --------------------------------------


def test_identical_kernels_in_a_program_are_one_unit():
    program = _lowered(_layers)
    products = [s for s in program.kernels if "dot_general" in s.kernel.source]
    assert len(products) == 3
    units = program.units
    assert len(units) == len(program.kernels) - 2  # the three layers are one unit
    keys = {unit.key for unit in units}
    assert len(keys) == len(units)
    # The unit's module names its function after its key, not after the program.
    (layer,) = [unit for unit in units if "dot_general" in unit.source]
    assert f"def {layer.name}(" in layer.source and "program" not in layer.name
    assert not any(s.kernel.name in layer.source for s in products)


def test_a_units_key_ignores_the_program_around_it_and_source_positions():
    first, moved = _lowered(_layers, "first"), _lowered(_layers_moved, "another_name")
    assert first.source != moved.source  # names and the user's lines differ
    assert [u.key for u in first.units] == [u.key for u in moved.units]
    assert [u.source for u in first.units] != [u.source for u in moved.units]  # comments


def test_a_units_key_follows_what_it_computes():
    layers, edited = _lowered(_layers), _lowered(_last_layer_edited)
    kept = {u.key for u in layers.units} & {u.key for u in edited.units}
    assert len(kept) == 2  # the tanh layer and the sum; the relu layer is new
    (new,) = [u for u in edited.units if u.key not in kept]
    assert "max" in new.source and "tanh" not in new.source
    float64 = _lowered(_layers, dtype=np.float64)
    assert not {u.key for u in float64.units} & {u.key for u in layers.units}


def test_a_units_key_follows_the_device_functions_it_calls(monkeypatch):
    from numbax.backends.cuda import loader

    before = [unit.key for unit in _lowered(_layers).units]
    monkeypatch.setattr(loader, "_helpers_text", lambda: "another device library")
    assert [unit.key for unit in _lowered(_layers).units] != before
    monkeypatch.setattr(loader, "_versions", lambda: "another Numba")
    assert not set(unit.key for unit in _lowered(_layers).units) & set(before)


# --- compiles, under the simulator --------------------------------------------------------


@pytest.fixture
def fresh_process(tmp_path, monkeypatch):
    """A process that has compiled no CUDA kernel, with an empty disk cache."""
    from numbax.backends.cuda import loader

    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(loader, "_COMPILED", {})
    for name in [name for name in sys.modules if name.startswith("numbax_cuda_kernel_")]:
        monkeypatch.delitem(sys.modules, name)
    return tmp_path


def _compiled(fn, name: str = "program"):
    from numbax.backends.cuda import CudaBackend

    args = _arguments()
    executable = CudaBackend().compile(numbax.make_jaxpr(fn)(*args), name)
    (got,) = executable(*args)
    expected = fn(*(a.astype(np.float64) for a in args))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)
    return executable


@needs_a_device
def test_a_program_with_identical_kernels_compiles_each_once(fresh_process):
    executable = _compiled(_layers)
    units = executable.program.units
    assert len(executable.program.kernels) == len(units) + 2
    assert executable.compile_stats.kernels == {"compiled": len(units)}
    assert f"kernels: {len(units)} new, 0 from memory, 0 from disk" in str(executable.compile_stats)
    # The three layers launch one compiled kernel.
    layers = [k for k, s in zip(executable.kernels, executable.program.kernels, strict=True)
              if "dot_general" in s.kernel.source]  # fmt: skip
    assert len(layers) == 3 and layers[0] is layers[1] is layers[2]
    # Each unit's module is on disk under its key, the program's module is not.
    written = sorted(path.name for path in (fresh_process / "cuda").glob("*.py"))
    assert written == sorted(f"{unit.module_name}.py" for unit in units)


@needs_a_device
def test_a_second_program_compiles_only_the_kernels_it_has_not_seen(fresh_process):
    first = _compiled(_layers, "first")
    second = _compiled(_layers_then_more, "second")
    shared = {u.key for u in first.program.units} & {u.key for u in second.program.units}
    assert len(shared) == 1  # the tanh layer
    new = len(second.program.units) - 1
    assert new >= 1
    assert second.compile_stats.kernels == {"memory": 1, "compiled": new}
    again = _compiled(_layers_moved, "third")  # the first program, from other lines
    assert again.compile_stats.kernels == {"memory": len(first.program.units)}
    assert again.compile_stats.cache == "memory"
    assert f"0 new, {len(first.program.units)} from memory" in str(again.compile_stats)


@needs_a_device
def test_editing_one_layer_compiles_only_the_kernels_that_changed(fresh_process):
    before = _compiled(_layers)
    after = _compiled(_last_layer_edited)
    kept = {u.key for u in before.program.units} & {u.key for u in after.program.units}
    changed = [u for u in after.program.units if u.key not in kept]
    assert len(kept) == 2 and len(changed) == 1  # the last layer; the sum reads as before
    assert after.compile_stats.kernels == {"compiled": 1, "memory": 2}
    assert "kernels: 1 new, 2 from memory, 0 from disk" in str(after.compile_stats)


def test_each_unit_compiles_to_ptx_for_sm_90_from_its_own_module(tmp_path, monkeypatch):
    from numbax.backends.cuda import ptx
    from numbax.backends.cuda.loader import unit_ptx

    problem = ptx.ptx_toolchain_problem()
    if problem is not None:
        if switches.flag("NUMBAX_TEST_PTX"):
            pytest.fail(f"NUMBAX_TEST_PTX=1 but {problem}")
        pytest.skip(problem)
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    for unit in _lowered(_last_layer_edited).units:
        code = unit_ptx(unit)
        assert code.count(".entry") == 1 and unit.name in code
        if ptx.ptxas() is not None:
            report = ptx.assembled(code)
            assert report.registers > 0 and report.spill_stores == 0


def test_kernels_numba_loads_from_its_disk_cache_are_counted_from_disk(tmp_path, monkeypatch):
    # Numba's disk cache of CUDA kernels needs a GPU to fill; its hits are counted from the
    # compiled kernel's ``stats.cache_hits``, stood in for here.
    from types import SimpleNamespace

    from numbax.backends.cuda import loader

    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(loader, "_COMPILED", {})
    monkeypatch.setattr(loader, "simulating", lambda: False)
    loaded = SimpleNamespace(stats=SimpleNamespace(cache_hits={"signature": 1}))
    compiled: list = []
    monkeypatch.setattr(
        loader, "_compiled", lambda function, *_: compiled.append(function) or loaded
    )
    program = _lowered(_layers)
    counts = loader.program_kernels(program).counts
    assert counts == {"disk": len(program.units)} and len(compiled) == len(program.units)
    stats = loader.compile_stats(0.001, 0.001, 0.002, counts)
    assert stats.cache == "disk hit" and "0 new, 0 from memory, 2 from disk" in str(stats)
    assert loader.program_kernels(program).counts == {"memory": 2}
    loaded.stats.cache_hits.clear()  # Numba compiled it: a miss
    monkeypatch.setattr(loader, "_COMPILED", {})
    counts = loader.program_kernels(program).counts
    assert counts == {"compiled": 2}
    assert loader.compile_stats(0.001, 0.001, 0.002, counts).cache == "disk miss"
