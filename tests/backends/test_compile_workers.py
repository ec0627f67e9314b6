"""A program's new kernels compile in worker processes while its launcher compiles here
(``backends/cpu/compile_workers.py``); what a worker cannot compile is compiled here."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import cache, compile_workers, units
from numbax.config import config

pytest.importorskip("numba")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty disk cache, a process that has compiled no kernel, one worker, and every
    kernel compiled by Numba (workers compile those llvmlite cannot: ``llvm_kernels``)."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(config, "llvm_kernels", False)
    monkeypatch.setattr(compile_workers, "MIN_NEW_LLVMLITE_KERNELS", 2)  # few kernels here
    monkeypatch.setattr(config, "compile_workers", 1)
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(units, "_COMPILED", {})
    for name in [
        name for name in sys.modules if name.startswith(("numbax_kernel_", "numbax_cpu_layers_"))
    ]:
        monkeypatch.delitem(sys.modules, name)  # imported from another test's cache
    return tmp_path


def _layers(x, w):
    """Kernels that differ from each other: a product, then a different epilogue each."""
    x = np.tanh(x @ w)
    x = np.exp(-(x @ w.T)) * 0.5
    x = np.maximum(x @ w, 0.1)
    return x.sum(axis=0), np.sin(x).mean()


X = np.linspace(-1.0, 1.0, 48).reshape(6, 8)
W = np.linspace(-0.5, 0.5, 64).reshape(8, 8)


def _program():
    return cpu.backend.lower(numbax.make_jaxpr(_layers)(X, W), "layers")


@pytest.mark.parametrize("llvmlite", [False, True])
def test_kernels_compiled_by_a_worker_are_loaded_from_its_disk_cache(
    cache_dir, monkeypatch, llvmlite
):
    monkeypatch.setattr(config, "llvm_kernels", llvmlite)
    program = _program()
    assert len(program.units) >= 2
    started = units.start(program.units, str(cache_dir))
    assert set(started) == {unit.key for unit in program.units}
    concurrent.futures.wait(started.values(), timeout=600)
    assert all(future.exception() is None for future in started.values())
    found, counts = units.addresses(program.units, str(cache_dir), started)
    assert counts == {"worker": len(program.units)} and len(set(found)) == len(found)
    # The whole compile: every kernel is now in this process's memory.
    executable = cpu.backend.compile(numbax.make_jaxpr(_layers)(X, W), "layers")
    assert executable.compile_stats.kernels == {"memory": len(program.units)}
    assert executable.compile_stats.llvmlite == (len(program.units) if llvmlite else 0)
    for got, want in zip(executable(X, W), _layers(X, W), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_kernel_a_worker_fails_on_is_compiled_here(cache_dir, monkeypatch):
    program = _program()
    # The workers read each kernel's module from the disk cache: with none written, every
    # worker's compile fails, and each kernel is compiled here instead.
    with monkeypatch.context() as patched:
        patched.setattr(units, "write_module", lambda *args: None)
        started = units.start(program.units, str(cache_dir))
    concurrent.futures.wait(started.values(), timeout=600)
    assert all(
        "could not compile" in str(f.exception()) for f in started.values() if not f.cancelled()
    )
    _, counts = units.addresses(program.units, str(cache_dir), started)
    assert counts == {"compiled": len(program.units)}


def test_kernels_no_worker_has_begun_are_taken_back(cache_dir):
    program = _program()
    futures = {unit.key: concurrent.futures.Future() for unit in program.units}  # queued
    _, counts = units.addresses(program.units, str(cache_dir), futures)
    assert counts == {"compiled": len(program.units)}
    assert all(future.cancelled() for future in futures.values())


@pytest.mark.parametrize("setting", [0, None])
def test_no_worker_without_a_disk_cache_or_when_switched_off(cache_dir, monkeypatch, setting):
    program = _program()
    monkeypatch.setattr(config, "compile_workers", setting)
    cache_folder = None if setting is None else str(cache_dir)
    assert units.start(program.units, cache_folder) == {}


def test_the_worker_count_leaves_one_cpu_to_the_compiling_process(monkeypatch):
    monkeypatch.setattr(config, "compile_workers", None)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert compile_workers.worker_count() == 0
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert compile_workers.worker_count() == compile_workers.MAX_WORKERS
    monkeypatch.setattr(config, "compile_workers", 3)
    assert compile_workers.worker_count() == 3


def test_a_bad_worker_count_is_refused_by_name(monkeypatch):
    from numbax import config as config_module

    monkeypatch.setenv("NUMBAX_COMPILE_WORKERS", "two")
    with pytest.raises(ValueError, match="NUMBAX_COMPILE_WORKERS must be a whole number"):
        config_module.Config()


_EXITING_SCRIPT = textwrap.dedent(
    """
    import time
    import numpy as np
    import numbax
    from numbax.backends.cpu import compile_workers

    def layers(x, w):
        for k in range(12):  # distinct kernels, more than the worker compiles at once
            x = np.tanh(x @ w + k) * (k + 1.0)
        return x

    f = numbax.jit(layers, tiered=True)
    x, w = np.ones((4, 4)), np.eye(4) * 0.1
    np.testing.assert_allclose(f(x, w), layers(x, w), rtol=1e-12)  # interpreted
    while not compile_workers._WORKERS:  # the background compile starts them
        time.sleep(0.01)
    print(" ".join(str(worker.pid) for worker in compile_workers._WORKERS), flush=True)
    """
)


def test_a_finished_script_ends_its_workers_and_does_not_wait_for_them(tmp_path):
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(tmp_path / "cache"), NUMBAX_COMPILE_WORKERS="1")
    env["NUMBAX_LLVM_KERNELS"] = "0"  # kernels for the workers (Numba's)
    done = subprocess.run(
        [sys.executable, "-c", _EXITING_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    pids = [int(pid) for pid in done.stdout.split()]
    assert pids, done.stdout + done.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids), "a compile worker outlived its script"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_prestart_returns_with_its_workers_ready(cache_dir):
    """``initialise`` waits for the workers, so none is still starting (and taking a core)
    when the first compile begins."""
    compile_workers.prestart(str(cache_dir))
    assert compile_workers._THREADS
    assert all(thread.ready.is_set() for thread in compile_workers._THREADS)
    assert all(worker.poll() is None for worker in compile_workers._WORKERS)


def test_few_llvmlite_kernels_go_to_workers_only_once_they_are_warm(cache_dir, monkeypatch):
    """llvmlite compiles a kernel in 10-40 ms: a worker still starting (a second or more)
    would only take a core from the compile, a warm one (``initialise``) halves it."""
    monkeypatch.setattr(config, "llvm_kernels", True)
    monkeypatch.setattr(compile_workers, "MIN_NEW_LLVMLITE_KERNELS", 32)
    program = _program()
    assert 2 <= len(program.units) < 32
    with monkeypatch.context() as patched:
        patched.setattr(compile_workers, "_THREADS", [])  # none started yet
        assert units.start(program.units, str(cache_dir)) == {}
        assert compile_workers._THREADS == []  # and none started for so few
    compile_workers.prestart(str(cache_dir))
    started = units.start(program.units, str(cache_dir))
    assert set(started) == {unit.key for unit in program.units}
    _, counts = units.addresses(program.units, str(cache_dir), started)
    assert counts["compiled"] + counts["worker"] == len(program.units)
    executable = cpu.backend.compile(numbax.make_jaxpr(_layers)(X, W), "layers")
    for got, want in zip(executable(X, W), _layers(X, W), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_warm_workers_take_kernels_as_the_program_is_written(cache_dir, monkeypatch):
    """A program's new kernels go to warm workers as its writer finds them, before the
    rest of the program is written (``units.EarlyStart``); each is handed over once."""
    from numbax.backends.cpu import program as program_module

    compile_workers.prestart(str(cache_dir))
    events = []
    submit, write_program = compile_workers.submit, program_module.write_program

    def submitting(new, folder, **options):
        events.append(("submit", [unit.key for unit in new]))
        return submit(new, folder, **options)

    def writing(*args, **kwargs):
        generated = write_program(*args, **kwargs)
        events.append(("written", [unit.key for unit in generated.units]))
        return generated

    monkeypatch.setattr(compile_workers, "submit", submitting)
    monkeypatch.setattr(program_module, "write_program", writing)
    executable = cpu.backend.compile(numbax.make_jaxpr(_layers)(X, W), "layers")
    for got, want in zip(executable(X, W), _layers(X, W), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    written = events.index(next(e for e in events if e[0] == "written"))
    handed = [key for kind, keys in events[:written] if kind == "submit" for key in keys]
    keys = events[written][1]
    assert len(keys) > compile_workers.MIN_NEW_KERNELS
    assert sorted(handed) == sorted(keys)  # all before the writer was done, each once
    assert not [e for e in events[written + 1 :] if e[0] == "submit"]
    kernels = executable.compile_stats.kernels
    assert kernels["worker"] + kernels["compiled"] == len(keys) and kernels["worker"] >= 1
