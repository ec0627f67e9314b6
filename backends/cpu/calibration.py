"""When a product runs on all threads: the flops from which splitting it pays, measured
once per machine and read by the compiled code at run time, not a constant.

A product split into blocks on two threads (``gemm.blocked_gemm``) takes about half its
single-threaded time plus the cost of waking the other thread and joining it; splitting
pays from about ``2 * wake * speed`` flops. Both differ by machine: on an AMD EPYC (Zen 5)
VM the packed product ran at ~180 GFLOP/s on one core and waking cost ~50 us, so 2^23
flops split made a 4-layer transformer step slower (5.66 against 4.37 ms at 2^25); on an
Intel Xeon (Sapphire Rapids class, 2.1 GHz) VM at ~115 GFLOP/s and ~30 us, 2^25 kept an
MLP step's 16-Mflop products on one thread, 1.25 ms against 1.02 ms at 2^23.

The threshold lives in one 64-bit cell of this process (``CELL``), linked under the
symbol ``numbax_parallel_flops``: ``blocked_gemm`` reads it at every call
(``parallel_flops``), so a product unit's source, and its cache key, is the same on every
machine (``contraction.SPLITTABLE_FLOPS`` says which units call ``blocked_gemm`` at all).
The cell holds ``DEFAULT`` until the machine's record is read (``load``, when ``gemm`` is
imported, before any kernel that calls it is loaded) or measured (``ensure_measured``,
by the first compile that writes such a product where there is no record).

The measurement times one product (``SHAPE``) by ``blocked_gemm``, on one thread and split
on two (the cell set for each),
interleaved, the least of ``ROUNDS`` each (the least is the machine's, the rest is other
work), and takes the break-even rounded to a power of two, within [``LEAST``, ``MOST``]:
measured so on the Xeon, 16.8 Mflop on one thread 126-138 us, on two 84-128 us, so
2^22-2^24; the Zen 5 VM was not measured so. It is kept in the disk cache
(``machine-<identity>.json``: the processor's name, its CPU count and the numbax version)
only where the split beat one thread: a measurement taken while other work held the
other core (a tiered first call's interpreter runs beside its compile) serves this
process alone, and the next process measures again. Where fewer than two threads may run,
nothing is measured and the cell keeps ``DEFAULT``.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import os
import time
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .contraction import MIN_ROWS, ROWS, SPLITTABLE_FLOPS

DEFAULT = 1 << 25
LEAST, MOST = SPLITTABLE_FLOPS, 1 << 26  # below LEAST a unit calls ``gemm`` itself
SHAPE = (256, 256, 128)  # rows, columns, depth: 16.8 Mflop, ~0.1 ms on one core
ROUNDS = 15
SYMBOL = "numbax_parallel_flops"
NEVER = 1 << 62

CELL = ctypes.c_int64(DEFAULT)
_settled = False  # the cell holds the record read or the measurement made by this process
llvm.add_symbol(SYMBOL, ctypes.addressof(CELL))


@intrinsic
def parallel_flops(typingctx):
    """The flops from which a product runs on all threads, read from ``CELL`` at run time."""

    def codegen(context, builder, signature, values):
        cell = builder.module.globals.get(SYMBOL)
        if cell is None:
            cell = ir.GlobalVariable(builder.module, ir.IntType(64), SYMBOL)
            cell.linkage = "external"
        return builder.load(cell)

    return types.int64(), codegen


def load() -> None:
    """The machine's record, where the disk cache holds one, into ``CELL``."""
    from ...config import config

    global _settled
    stored = _read(_path(config.cache_dir))
    if stored is not None:
        CELL.value, _settled = stored, True


def ensure_measured() -> None:
    """Measure the machine's threshold into ``CELL`` once per process, unless its record
    was read (``load``); recorded where the measurement is clean (module doc)."""
    global _settled
    if not _settled:
        load()  # the record another process wrote since this one imported ``gemm``
    if _settled:
        return
    _settled = True
    from ...config import config

    path = _path(config.cache_dir)
    measured = measure()
    if measured is None:
        return
    CELL.value = threshold_of(*measured)
    serial_s, split_s = measured
    if path is not None and split_s < serial_s:
        _write(path, CELL.value, measured)


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
    from . import threads
    from .gemm import blocked_gemm

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
    best = {NEVER: math.inf, 0: math.inf}  # by the threshold: one thread, then split
    saved = CELL.value
    try:
        for _ in range(ROUNDS):
            for threshold in best:
                CELL.value = threshold
                start = time.perf_counter()
                blocked_gemm(a, b, c, offsets, transposed, sizes, leading, ROWS, two, MIN_ROWS)
                best[threshold] = min(best[threshold], time.perf_counter() - start)
    finally:
        CELL.value = saved
    return best[NEVER], best[0]


def _identity() -> str:
    """The machine as the record's name holds it: the host CPU as LLVM names it, with its
    features (as the llvmlite kernels' cache keys it), its CPU count, numbax's version."""
    from ..compile_cache import numbax_version
    from .llvm_helpers import host

    return "|".join([host(), str(os.cpu_count()), numbax_version()])


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
