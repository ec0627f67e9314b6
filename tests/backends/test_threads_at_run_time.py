"""The threads a compiled call runs on are chosen as it starts (``backends/cpu/threads.py``).

Each check runs in a new process, where what was imported first and which CPUs the
process may use are the test's to choose: numbax leaves ``OPENBLAS_NUM_THREADS`` and the
user's BLAS thread count as they were, whatever was imported before it; inside a call
BLAS runs on one thread; and in a process limited to one CPU (``taskset``) or one Numba
thread, one thread does the work of the parallel loops and of a large product. Threads
are counted by the CPU time each gained in ``/proc/self/task``: nothing here is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import blas, threads

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc and sched_getaffinity"
)
threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One disk cache for the module's processes: they compile the same programs."""
    return tmp_path_factory.mktemp("numbax-cache")


def _run(script: str, cache_dir, prefix=(), **env) -> dict:
    """Run ``script`` in a new Python process (after ``prefix``, e.g. ``taskset``); the
    JSON object it printed last."""
    environment = {**os.environ, "NUMBAX_CACHE_DIR": str(cache_dir), **env}
    for name, value in env.items():
        if value is None:
            del environment[name]
    run = subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(script)],
        env=environment,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


# An MLP step whose products take the BLAS path (a large one in blocks of rows), and
# a callback inside the compiled call that reports the BLAS thread counts it sees.
_MLP_STEP = """
import json, os, sys

import scipy.linalg
try:
    import sklearn
except ImportError:
    pass
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

environment_before = os.environ.get("OPENBLAS_NUM_THREADS")
if {user_count} is not None:
    threadpool_limits({user_count}, user_api="blas")


def blas_counts():
    return {{
        os.path.realpath(info["filepath"]): info["num_threads"]
        for info in threadpool_info()
        if info["user_api"] == "blas"
    }}


import numbax
from numbax.backends.cpu import blas

inside = []


def report(x):
    inside.append(blas_counts())
    return x


def step(w1, w2, x, y):
    hidden = np.tanh(x @ w1)
    error = numbax.pure_callback(report, hidden, hidden) @ w2 - y
    grad_hidden = (error @ w2.T) * (1.0 - hidden * hidden)
    return w1 - 0.01 * (x.T @ grad_hidden), w2 - 0.01 * (hidden.T @ error)


rng = np.random.default_rng(0)
x, y = rng.standard_normal((256, 512)), rng.standard_normal((256, 64))
w1, w2 = rng.standard_normal((512, 512)) * 0.05, rng.standard_normal((512, 64)) * 0.05
before = blas_counts()
got = numbax.jit(step)(w1, w2, x, y)
after = blas_counts()
(inside_the_call,) = inside  # NumPy's run of ``step`` below calls ``report`` too
for result, expected in zip(got, step(w1, w2, x, y), strict=True):
    np.testing.assert_allclose(result, expected, rtol=1e-10, atol=1e-12)
print(json.dumps({{
    "environment": [environment_before, os.environ.get("OPENBLAS_NUM_THREADS")],
    "before": before,
    "inside": inside_the_call,
    "after": after,
    "numbax_blas": os.path.realpath(blas.LIBRARY) if blas.AVAILABLE else None,
}}))
"""


@pytest.mark.parametrize(
    "openblas_num_threads, user_count",
    [(None, None), ("3", None), (None, 2)],
    ids=["unset", "user-environment", "user-threadpool-limits"],
)
def test_scipy_first_leaves_the_users_blas_threads_as_they_were(
    cache_dir, openblas_num_threads, user_count
):
    script = _MLP_STEP.format(user_count=user_count)
    report = _run(script, cache_dir, OPENBLAS_NUM_THREADS=openblas_num_threads)
    assert report["environment"] == [openblas_num_threads, openblas_num_threads]
    assert report["after"] == report["before"]
    library = report["numbax_blas"]
    if library is not None:  # the BLAS numbax calls runs on one thread inside the call
        assert report["inside"][library] == 1, report
        others = {path: n for path, n in report["inside"].items() if path != library}
        assert others == {p: n for p, n in report["before"].items() if p != library}


# Parallel loops (tanh over 2^21 elements: prange) and a large product (a BLAS call per
# block, on the call's threads), called until ~1 s of CPU time is spent; then the threads
# that gained at least a tenth of it. Numba's and OpenBLAS's threads exist from the warm-up
# call on; a thread that only waits gains nothing.
_WORKING_THREADS = """
import json, os

import numpy as np
import numba
import numbax
from threadpoolctl import threadpool_limits

{setup}


def cpu_ticks():
    ticks = {{}}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{{task}}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        ticks[task] = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks


def work(x, a, b):
    return np.tanh(x * 1.5 + 0.25).sum() + np.tanh(a @ b).sum()


rng = np.random.default_rng(1)
x = rng.standard_normal(1 << 21)
a, b = rng.standard_normal((384, 512)), rng.standard_normal((512, 384))
with threadpool_limits(1, user_api="blas"):  # NumPy's own BLAS workers, which spin
    expected = work(x, a, b)  # after a product, would be counted as working
f = numbax.jit(work)
threads_before = numba.get_num_threads()
np.testing.assert_allclose(f(x, a, b), expected, rtol=1e-9)
{after_first_call}
start = cpu_ticks()
total = 0
while total < os.sysconf("SC_CLK_TCK"):  # one second of CPU time, all threads together
    result = f(x, a, b)
    gained = {{t: n - start.get(t, 0) for t, n in cpu_ticks().items()}}
    total = sum(gained.values())
np.testing.assert_allclose(result, expected, rtol=1e-9)
working = [t for t, n in gained.items() if n >= total / 10]
source = f.lower(x, a, b).source()
print(json.dumps({{
    "working": len(working),
    "numba_threads": [threads_before, numba.get_num_threads()],
    "parallel": "prange(" in source and "nbx_gemm.blocked_gemm(" in source,
}}))
"""


def _working_threads(cache_dir, setup: str = "", after_first_call: str = "", prefix=()) -> dict:
    script = _WORKING_THREADS.format(setup=setup, after_first_call=after_first_call)
    report = _run(script, cache_dir, prefix)
    assert report["parallel"]  # the paths meant to be counted
    return report


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset is not installed")
def test_a_process_on_one_cpu_works_on_one_thread(cache_dir):
    report = _working_threads(cache_dir, prefix=("taskset", "-c", "0"))
    assert report["working"] == 1, report
    # The cap holds for the call only: the user's Numba thread count is as it was.
    assert report["numba_threads"][0] == report["numba_threads"][1], report


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_process_narrowed_to_one_cpu_after_its_first_call_works_on_one_thread(cache_dir):
    """Numba sized its pool when it was imported, and the first call ran on two threads;
    the calling thread is then bound to one CPU (its workers keep theirs)."""
    narrow = "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})"
    report = _working_threads(cache_dir, prefix=("taskset", "-c", "0,1"), after_first_call=narrow)
    assert report["working"] == 1, report
    assert report["numba_threads"] == [2, 2], report


def test_one_numba_thread_is_one_working_thread(cache_dir):
    report = _working_threads(cache_dir, setup="numba.set_num_threads(1)")
    assert report["working"] == 1, report
    assert report["numba_threads"] == [1, 1]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_where_two_cpus_may_run_the_calling_thread_and_a_numba_worker_work(cache_dir):
    """The count above sees the threads that work: where two may run, the calling thread
    and a worker of Numba's (the loops and the product's blocks) do, and none of
    OpenBLAS's (the product's blocks call BLAS on one thread each)."""
    report = _working_threads(cache_dir, prefix=("taskset", "-c", "0,1"))
    assert report["working"] == 2, report


# --- in this process -------------------------------------------------------------------------


def _raising(x):
    raise RuntimeError("from the callback")


@pytest.mark.skipif(not blas.AVAILABLE, reason="SciPy's BLAS is not an OpenBLAS with threads")
def test_a_call_that_raises_sets_the_thread_counts_back():
    import numba

    def program(a, b):
        return numbax.pure_callback(_raising, a, np.tanh(a @ b) * 2.0)

    a = np.ones((64, 64))
    f = numbax.jit(program)
    numba_threads, blas_threads = numba.get_num_threads(), _blas_threads()
    with pytest.raises(RuntimeError, match="from the callback"):
        f(a, a)
    assert (numba.get_num_threads(), _blas_threads()) == (numba_threads, blas_threads)


def _blas_threads() -> int:
    library = os.path.realpath(blas.LIBRARY)
    infos = threadpoolctl.threadpool_info()
    return next(i["num_threads"] for i in infos if os.path.realpath(i["filepath"]) == library)


@pytest.mark.parametrize(
    "files, cpus",
    [
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu.max": "150000 100000\n"}, 2),
        ({"cpu.max": "50000 100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),
        ({}, None),
    ],
    ids=["v2-none", "v2-one-and-a-half", "v2-half", "v1-none", "v1-three", "no-cgroup"],
)
def test_the_cgroup_quota_in_cpus(tmp_path, files, cpus):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert threads.cgroup_cpus(str(tmp_path)) == cpus


_LAUNCH = """
import json, os
from numbax.backends.cpu import threads
threads.launch_numba_threads()
print(json.dumps({name: os.environ.get(name) for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}))
"""


@pytest.mark.parametrize(
    "users, policy, spin",
    [
        ({}, "PASSIVE", str(threads.SPIN_COUNT)),
        ({"OMP_WAIT_POLICY": "active"}, "ACTIVE", None),
        ({"GOMP_SPINCOUNT": "7"}, None, "7"),
    ],
    ids=["numbax-default", "users-policy", "users-spin-count"],
)
def test_numba_workers_spin_a_bounded_while_unless_the_user_chose(users, policy, spin):
    """The OpenMP runtime's own report of what it read (``OMP_DISPLAY_ENV=verbose``):
    numbax's bounded spin, or what the user chose, untouched; and the environment left
    as the user had it after Numba's threads start."""
    environment = {**os.environ, "OMP_DISPLAY_ENV": "verbose", **users}
    for name in {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} - set(users):
        environment.pop(name, None)
    run = subprocess.run(
        [sys.executable, "-c", _LAUNCH], env=environment, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    if "OPENMP DISPLAY ENVIRONMENT" not in run.stderr:
        pytest.skip("Numba's threading layer here is not GNU OpenMP (no report of its settings)")
    report = dict(line.strip().split(" = ", 1) for line in run.stderr.splitlines() if " = " in line)
    if policy is not None:
        assert report["OMP_WAIT_POLICY"] == f"'{policy}'"
    if spin is not None:
        assert report["GOMP_SPINCOUNT"] == f"'{spin}'"
    left = json.loads(run.stdout.splitlines()[-1])
    assert left == {name: users.get(name) for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
