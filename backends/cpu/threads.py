"""The threads a call of compiled code runs on, chosen when the call starts.

The parallel loops run on the calling thread's Numba thread count
(``numba.get_num_threads()``, which users set with ``numba.set_num_threads``; Numba's
default, ``NUMBA_NUM_THREADS``, is the CPUs the process could use when Numba was
imported), capped by the CPUs the process may use now: its affinity (``taskset``,
``os.sched_setaffinity``) and its cgroup's CPU quota (a container's ``--cpus``). BLAS
runs on one thread inside the call, since BLAS's own threads would compete with the
parallel loops for the same cores, and a large product runs in blocks on the loops'
threads (``contraction.py``). Both counts are set as the call starts and set back when
it returns or raises: outside a call, the user's Numba and BLAS thread counts are
theirs, and numbax sets no environment variable for them.

The counts are set around the compiled call (``on_chosen_threads``), not read by the
generated code: Numba's parallel loops already read the thread's count as they start,
the generated source stays the same whatever the machine (one disk cache entry), and a
``finally`` sets the counts back when a callback raises. What it costs per call: the
affinity, read by one system call; the quota, a file read once a second; and two calls
of small compiled functions that set the counts (Numba's is thread-local).

OpenBLAS's count is the process's, not the thread's: a SciPy BLAS call that another
thread makes during a numbax call runs on one thread too. Calls from several threads
nest correctly while each returns in the order it started, which holding the GIL for the
whole compiled call ensures unless a callback lets another call start and outlive it;
that one then sets OpenBLAS back to one thread, not to the user's count.

Where the BLAS Numba calls is not an OpenBLAS with thread controls (``blas.AVAILABLE``
is False: MKL, Accelerate, a BLAS without them), numbax leaves BLAS's threads as the
user set them: such a BLAS may add threads of its own inside each block of a large
product.
"""

from __future__ import annotations

import ctypes
import math
import os
import time

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types

# The cgroup quota is read again after this long (a container's limit changes rarely).
QUOTA_REFRESH_S = 1.0
CGROUP_ROOT = "/sys/fs/cgroup"
NO_CAP = 1 << 30
# The rounds an idle OpenMP worker spins before it sleeps (``launch_numba_threads``).
SPIN_COUNT = 10_000


def cgroup_cpus(root: str = CGROUP_ROOT) -> int | None:
    """The CPUs the process's cgroup quota allows, rounded up (1.5 CPUs allow 2 threads);
    None where there is no quota. Read as joblib's loky reads it: cgroup v2's
    ``cpu.max`` (``max 100000`` or ``<quota> <period>``), else v1's
    ``cpu/cpu.cfs_quota_us`` (-1: none) and ``cpu/cpu.cfs_period_us``."""
    try:
        with open(os.path.join(root, "cpu.max")) as file:
            quota, period = file.read().split()[:2]
    except (OSError, ValueError):
        try:
            with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as file:
                quota = file.read().strip()
            with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as file:
                period = file.read().strip()
        except OSError:
            return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:  # "max"
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return max(1, math.ceil(quota_us / period_us))


class _CachedQuota:
    """``cgroup_cpus()`` read at most once per ``QUOTA_REFRESH_S`` (a file read costs
    ~10 us); no quota is no cap."""

    def __init__(self):
        self.cpus = 1
        self.read_at = -math.inf

    def __call__(self) -> int:
        now = time.monotonic()
        if now - self.read_at >= QUOTA_REFRESH_S:
            self.cpus = cgroup_cpus() or NO_CAP
            self.read_at = now
        return self.cpus


cpu_quota = _CachedQuota()  # the CPUs the cgroup quota allows, read at most every QUOTA_REFRESH_S


# Numba's threading layer's controls of the calling thread's count, under the symbols it
# links them as once started (``launch_numba_threads``; its parallel loops call them so):
# unlike ``numba.get_num_threads``, code calling them can be cached.
_get_numba_threads = types.ExternalFunction("get_num_threads", types.intc())
_set_numba_threads = types.ExternalFunction("set_num_threads", types.void(types.intc))
_JIT = {"no_cfunc_wrapper": True, "cache": True}
_MASK_WORDS = 16  # glibc's cpu_set_t: 1024 CPUs


def _libc_function(name: str) -> int | None:
    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value
    except (OSError, AttributeError):  # not Linux
        return None


_SCHED_GETAFFINITY = _libc_function("sched_getaffinity")
if _SCHED_GETAFFINITY is not None:
    llvm.add_symbol("numbax_sched_getaffinity", _SCHED_GETAFFINITY)
    _sched_getaffinity = types.ExternalFunction(
        "numbax_sched_getaffinity", types.intc(types.intc, types.uintp, types.uintp)
    )

    @njit(**_JIT)
    def affinity_cpus():
        """The CPUs this process may run on now (one system call); ``NO_CAP`` where the
        kernel's CPU set does not fit in glibc's."""
        mask = np.zeros(_MASK_WORDS, np.uint64)
        if _sched_getaffinity(0, mask.size * 8, mask.ctypes.data) != 0:
            return NO_CAP
        cpus = 0
        for word in mask:
            while word:
                word &= word - np.uint64(1)
                cpus += 1
        return cpus

else:

    @njit(**_JIT)
    def affinity_cpus():
        return NO_CAP


@njit(**_JIT)
def numba_threads():
    """The calling thread's Numba thread count, as ``numba.get_num_threads()`` (whose
    callers Numba cannot cache): what the call's loops and large products run on."""
    return _get_numba_threads()


@njit(**_JIT)
def cap_numba_threads(allowed):
    """Cap the calling thread's Numba thread count at ``allowed`` and at the CPUs of the
    process's affinity; the count it had."""
    threads = _get_numba_threads()
    _set_numba_threads(np.intc(max(1, min(threads, allowed, affinity_cpus()))))
    return threads


@njit(**_JIT)
def set_numba_threads(threads):
    _set_numba_threads(np.intc(threads))


def on_chosen_threads(call, calls_blas: bool):
    """``call`` (a compiled program) run on the threads chosen as each call starts (see
    the module doc); ``calls_blas``: the program calls BLAS or LAPACK."""
    launch_numba_threads()
    enter, leave = cap_numba_threads, set_numba_threads
    if calls_blas:
        from . import blas  # loads SciPy's BLAS, which the program links anyway

        if blas.AVAILABLE:
            enter, leave = blas.enter_single_threaded, blas.leave_single_threaded
    from .cache import load_lean

    load_lean(enter, leave)

    def on_chosen_threads_call(*args):
        saved = enter(cpu_quota())
        try:
            return call(*args)
        finally:
            leave(saved)

    return on_chosen_threads_call


def launch_numba_threads() -> None:
    """Start Numba's threading layer (once), its OpenMP threads waiting passively after a
    bounded spin (``SPIN_COUNT``) where the user chose neither ``OMP_WAIT_POLICY`` nor
    ``GOMP_SPINCOUNT``.

    A worker that sleeps between parallel loops is woken through the kernel, and on a VM
    through the hypervisor: an empty parallel loop on 2 vCPUs (AMD EPYC, KVM) took 36 us
    back to back, 54 us after 1 ms idle and 114 us after 10 ms, against 3 us when the
    workers spin (``benchmarks/RESULTS.md``, 2026-12-06, seventh); a training step has
    tens of such loops. OpenMP's default policy spins for up to ~300,000 rounds (a few
    ms), which on a machine with as many threads as cores delays the thread that runs the
    code between loops, and beside busy processes a spinning join took up to 840 us a
    loop. ``SPIN_COUNT`` rounds (~0.1-0.2 ms: an empty loop 100 us after the last still
    took 3.7 us, one 1 ms after it 57 us) keep a step's loops on spinning workers and
    hand the cores back soon after: on that machine the models group's steady state went
    from 0.60-0.64x to 0.53-0.55x JAX's, its slowdown beside two busy processes from
    0.67-0.86x to 1.04-1.08x JAX's (its loaded times about the same). The variables are
    read once, when the OpenMP runtime loads, which Numba's ``omp`` layer does here: they
    are set only while the layer starts and removed after, so the environment, and any
    process started later, is as the user left it. They reach no other library's
    threads: NumPy's and SciPy's OpenBLAS use no OpenMP, and scikit-learn and PyTorch
    load OpenMP runtimes of their own. An OpenMP runtime already loaded, or the ``tbb``
    and ``workqueue`` layers, ignore them.
    """
    from numba.np.ufunc import parallel

    if parallel._is_initialized:
        return
    chosen = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & set(os.environ)
    ours = {} if chosen else {"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": str(SPIN_COUNT)}
    os.environ.update(ours)
    try:
        parallel._launch_threads()
    finally:
        for name in ours:
            os.environ.pop(name, None)
