"""When a product runs on all threads: the flops from which splitting it pays, measured
once per machine (``parallel_flops``), not a constant.

A product split into blocks on two threads (``gemm.blocked_gemm``) takes about half its
single-threaded time plus the cost of waking the other thread and joining it; splitting
pays from about ``2 * wake * speed`` flops. Both differ by machine: on an AMD EPYC (Zen 5)
VM the packed product ran at ~180 GFLOP/s on one core and waking cost ~50 us, so 2^23
flops split made a 4-layer transformer step slower (5.66 against 4.37 ms at 2^25); on an
Intel Xeon (Sapphire Rapids class, 2.1 GHz) VM at ~115 GFLOP/s and ~30 us, 2^25 kept an
MLP step's 16-Mflop products on one thread, 1.25 ms against 1.02 ms at 2^23.

So the first compile on a machine times one product (``SHAPE``) on one thread and split on
two, interleaved, the least of ``ROUNDS`` each (the least is the machine's, the rest is
other work), and derives the threshold: the break-even, rounded to a power of two (a
run-to-run wobble does not change the generated code), within [``LEAST``, ``MOST``] (a
measurement taken while other work held the cores cannot push every product onto one
thread or onto all). Measured so on the Xeon: 16.8 Mflop on one thread 131-138 us, on two
84-128 us, so 2^23-2^24; the Zen 5 VM was not measured so. It is written to the disk
cache (``machine-<identity>.json``: the processor's name, its CPU count and the numbax
version) and read by later processes; a process whose caches are off measures it once.
Where fewer than two threads may run, nothing can be measured: ``DEFAULT`` is used and
nothing written. The threshold is in the generated source, so the kernels' cache keys
follow it.

Imported when the first product is written (``contraction.runs_on_all_threads``), with
``gemm``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
from numba import njit

from . import threads
from .contraction import MIN_ROWS, ROWS
from .gemm import blocked_gemm, gemm

DEFAULT = 1 << 25
LEAST, MOST = 1 << 22, 1 << 26
SHAPE = (256, 256, 128)  # rows, columns, depth: 16.8 Mflop, ~0.1 ms on one core
ROUNDS = 15


def parallel_flops() -> int:
    """The flops from which a product runs on all threads, for this machine (module doc)."""
    return _threshold()


@functools.cache
def _threshold() -> int:
    from ...config import config

    path = _path(config.cache_dir)
    stored = _read(path)
    if stored is not None:
        return stored
    measured = measure()
    if measured is None:
        return DEFAULT
    threshold = threshold_of(*measured)
    if path is not None:
        _write(path, threshold, measured)
    return threshold


def threshold_of(serial_s: float, split_s: float) -> int:
    """The threshold from one ``SHAPE`` product's time on one thread and on two."""
    flops = 2 * math.prod(SHAPE)
    wake_s = max(split_s - serial_s / 2, 1e-7)
    speed = flops / serial_s
    wanted = 2 * wake_s * speed
    return int(min(max(1 << round(math.log2(wanted)), LEAST), MOST))


def measure() -> tuple[float, float] | None:
    """One ``SHAPE`` float32 product's least time on one thread and split on two (seconds);
    None where fewer than two threads may run."""
    threads.launch_numba_threads()
    if min(threads.numba_threads(), threads.affinity_cpus(), threads.cgroup_cpus() or 2) < 2:
        return None
    rows, columns, depth = SHAPE
    generator = np.random.default_rng(0)
    a = generator.standard_normal(rows * depth, dtype=np.float32)
    b = generator.standard_normal(depth * columns, dtype=np.float32)
    c = np.empty(rows * columns, np.float32)
    sizes, leading = (rows, columns, depth), (depth, columns)
    offsets, transposed = (0, 0, 0), (0, 0)

    two = np.intc(2)  # as the product units pass ``threads.numba_threads()``: one signature

    def serial():
        _one_gemm(a, b, c, sizes, leading)

    def split():
        blocked_gemm(a, b, c, offsets, transposed, sizes, leading, ROWS, two, MIN_ROWS)

    best = {serial: math.inf, split: math.inf}
    for _ in range(ROUNDS):
        for run in best:
            start = time.perf_counter()
            run()
            best[run] = min(best[run], time.perf_counter() - start)
    return best[serial], best[split]


@njit(cache=True, no_cfunc_wrapper=True)
def _one_gemm(a, b, c, sizes, leading):
    """A product unit's single-threaded ``gemm`` call."""
    gemm(a, b, c, (0, 0, 0), (0, 0), sizes, leading)


def _identity() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        numbax_version = version("numbax")
    except PackageNotFoundError:
        numbax_version = "unknown"
    name = platform.processor()
    try:
        with open("/proc/cpuinfo") as file:
            name = next((line for line in file if line.startswith("model name")), name)
    except OSError:
        pass
    return "|".join([name.strip(), platform.machine(), str(os.cpu_count()), numbax_version])


def _path(cache_dir: str | None) -> Path | None:
    if cache_dir is None:
        return None
    digest = hashlib.sha256(_identity().encode()).hexdigest()[:16]
    return Path(cache_dir) / f"machine-{digest}.json"


def _read(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        threshold = json.loads(path.read_text())["parallel_flops"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return threshold if isinstance(threshold, int) and LEAST <= threshold <= MOST else None


def _write(path: Path, threshold: int, measured: tuple[float, float]) -> None:
    """Written whole (a temporary file renamed), so a process reading it at the same time
    reads all of it or nothing."""
    record = {
        "identity": _identity(),
        "parallel_flops": threshold,
        "serial_us": round(measured[0] * 1e6, 1),
        "split_us": round(measured[1] * 1e6, 1),
        "shape": SHAPE,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record))
        os.replace(temporary, path)
    except OSError:
        pass  # a read-only cache: measured again by the next process
