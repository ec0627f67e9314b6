"""Compiling from many threads at once: one thread traces and compiles each program, the
others wait and reuse it, with the disk cache cold and warm (loaded by a new process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import numbax
from numbax import backends
from numbax.config import config

THREADS = 8
WAIT_S = 300  # only so that a deadlock fails the test instead of hanging the run


def _together(calls):
    """Run every ``call()`` in its own thread, all released at once; their results."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait(timeout=WAIT_S)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(run, call) for call in calls]
        return [future.result(timeout=WAIT_S) for future in futures]


@pytest.fixture(autouse=True)
def often_switching_threads():
    """Threads switch every few microseconds instead of every 5 ms: a thread that checks a
    cache and then fills it is interrupted in between, as on a busy machine."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(interval)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    return tmp_path


def _many_steps(x):
    """Long enough to trace that the threads' first calls overlap."""
    for _ in range(40):
        x = np.tanh(x) * 1.375 + 0.25
    return x + x.sum()


def test_a_first_call_from_many_threads_traces_and_compiles_once(backend, cache_dir):
    compiles = []
    compile_program = backends.get_backend(backend).compile

    def counted(*args, **kwargs):
        compiles.append(args)
        return compile_program(*args, **kwargs)

    f = numbax.jit(_many_steps, backend=backend)
    x = np.linspace(-1.0, 1.0, backend.size(16))
    expected = _many_steps(x)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backends.get_backend(backend), "compile", counted)
        results = _together([lambda: f(x)] * THREADS)
    for result in results:
        np.testing.assert_allclose(backend.to_host(result), expected, rtol=1e-12)
    assert len(compiles) == 1
    assert f.cache_info() == (1, THREADS - 1, 1, 1)


def test_threads_compiling_one_program_share_its_compiled_code(compiled_backend, cache_dir):
    x = np.linspace(0.0, 1.0, compiled_backend.size(12))
    closed = numbax.make_jaxpr(lambda x: np.exp(x) * 2.625 - x)(x)
    compile_program = backends.get_backend(compiled_backend).compile
    executables = _together([lambda: compile_program(closed, "threads")] * THREADS)
    compiled = {_compiled_code(executable) for executable in executables}
    assert len(compiled) == 1
    for executable in executables:
        (result,) = executable(x)
        np.testing.assert_allclose(compiled_backend.to_host(result), np.exp(x) * 2.625 - x)


def test_threads_compiling_different_programs_each_get_their_own(backend, cache_dir):
    x = np.linspace(0.0, 1.0, backend.size(10))
    scales = [1.0 + k / 8 for k in range(THREADS)]
    functions = [numbax.jit(lambda x, s=s: np.sin(x) * s, backend=backend) for s in scales]
    results = _together([lambda f=f: f(x) for f in functions])
    for result, scale in zip(results, scales, strict=True):
        np.testing.assert_allclose(backend.to_host(result), np.sin(x) * scale, rtol=1e-12)
    assert all(f.cache_info().traces == 1 for f in functions)


def _compiled_code(executable) -> tuple:
    """The identities of what the backend compiled: the Numba dispatcher (cpu), or each
    kernel (a cpu program of steps, which has no launcher to compile; cuda: a program's
    own list of kernels compiled once per process)."""
    if hasattr(getattr(executable, "function", None), "py_func"):
        return (id(executable.function),)
    if hasattr(executable, "function"):
        from numbax.backends.cpu import units

        return tuple(id(units._COMPILED[unit.key]) for unit in executable.program.units)
    return tuple(map(id, executable.kernels))


_NEW_PROCESS = """
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numbax

f = numbax.jit(lambda x: np.exp(x) * 2.5 + x, backend={backend!r})
x = np.linspace(0.0, 1.0, {size})
barrier = threading.Barrier({threads})


def first_call():
    barrier.wait(timeout=300)
    result = f(x)
    return result.copy_to_host() if hasattr(result, "copy_to_host") else result


with ThreadPoolExecutor({threads}) as pool:
    futures = [pool.submit(first_call) for _ in range({threads})]
    results = [future.result(timeout=300) for future in futures]
for result in results:
    np.testing.assert_allclose(result, np.exp(x) * 2.5 + x, rtol=1e-12)
assert f.cache_info() == (1, {threads} - 1, 1, 1), f.cache_info()
executable = f.lower(x).compile()
function = getattr(executable, "function", None)
if hasattr(function, "stats"):
    print("disk hits:", sum(function.stats.cache_hits.values()))
elif function is not None:  # a program of steps: its kernels are what is compiled
    from numbax.backends.cpu import units
    print("disk hits:", int(units.COUNTS["disk"] > 0))
else:
    print("disk hits: n/a")
"""


def test_new_processes_call_from_threads_with_a_cold_then_a_warm_disk_cache(backend, tmp_path):
    script = textwrap.dedent(
        _NEW_PROCESS.format(backend=str(backend), size=backend.size(16), threads=THREADS)
    )
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(tmp_path))
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    if backend == "cpu":  # the second process loaded the compiled program from the disk
        assert [run.stdout.split()[-1] for run in runs] == ["0", "1"]
