"""When a product runs on all threads, and whose product runs it: the flops from which
splitting it pays and whether numbax's packed product beats BLAS's, measured once per
machine and read by the compiled code at run time, not constants.

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
by the first compile that writes a product of ``packed_gemm.LEAST_MULTIPLIES`` or more
where there is no record: ~40 ms).

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

Whose product runs a ``gemm`` call is measured the same way: numbax's packed product
(``packed_gemm``, on AVX-512) or BLAS's. On the Zen 5 VM, whose environment made OpenBLAS
run its Haswell (AVX2) kernels, the packed product took 0.39-0.88x OpenBLAS's time; on an
Intel Xeon (Emerald Rapids) VM, OpenBLAS picks its SkylakeX kernels, and on one thread the
packed product took 1.09-1.13x their time in float32 and 1.09-1.16x in float64 (256 x 512
@ 512 x 256), 0.96-1.04x and 1.45-1.61x at 64 or 128 x 784 @ 784 x 512. One
``PRODUCT_SHAPE`` product per float type, on one thread, each way (``PRODUCTS_CELL``'s bit
for the type set and cleared), the least of ``PRODUCT_ROUNDS``: the faster one's bit is
kept in ``PRODUCTS_CELL`` (symbol ``numbax_products``), which ``gemm`` reads at every
call, and in the record beside the threshold. The split is then timed with the faster
product, and every product with BLAS on one thread, as in a compiled call (OpenBLAS's own
pool made "one thread" two).

Whether a product of few rows above BLAS's small-matrix bound runs as BLAS calls of
column chunks within it (``gemm.SMALL_ROWS``) is measured so too, per float type, in the
same cell (``SMALL_BITS``) and record: ``SMALL_SHAPE`` in chunks and in one call. On the
Xeon, float32 25 against 46 us, float64 55 against 62 us; where BLAS has no such kernels
the chunks are as many calls of its usual path, and the bit is cleared.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
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

# How ``gemm`` runs a product, in one cell of bits: a bit per float type set where numbax's
# packed product runs it (on AVX-512 only), clear where BLAS's does ...
PRODUCTS_SYMBOL = "numbax_products"
PACKED_BITS = {"s": 1, "d": 2}  # float32, float64 (BLAS's letters)
PACKED_DEFAULT = PACKED_BITS["s"] | PACKED_BITS["d"]
PRODUCT_SHAPE = (256, 256, 512)  # 67 Mflop: ~0.5 ms float32, ~1.1 ms float64, one thread
PRODUCT_ROUNDS = 5
# ... and a bit per float type set where a product of few rows runs as BLAS calls
# of column chunks its small-matrix kernels take (``gemm.SMALL_ROWS``), measured on
# ``SMALL_SHAPE`` on one thread each way (an LSTM cell's product, ~40 us), the least of
# ``ROUNDS``.
SMALL_BITS = {"s": 4, "d": 8}
SMALL_DEFAULT = SMALL_BITS["s"] | SMALL_BITS["d"]
SMALL_SHAPE = (16, 512, 128)

CELL = ctypes.c_int64(DEFAULT)
PRODUCTS_CELL = ctypes.c_int64(PACKED_DEFAULT | SMALL_DEFAULT)
_settled = False  # the cells hold the record read or the measurement made by this process
llvm.add_symbol(SYMBOL, ctypes.addressof(CELL))
llvm.add_symbol(PRODUCTS_SYMBOL, ctypes.addressof(PRODUCTS_CELL))


@dataclass(frozen=True)
class Measurement:
    """One machine's measurement (seconds, least of the rounds): ``SHAPE`` float32 on one
    thread and split on two; ``PRODUCT_SHAPE`` on one thread by numbax's packed product
    and by BLAS, per BLAS letter (empty where the packed product does not run here);
    ``SMALL_SHAPE`` by BLAS in column chunks and in one call, per letter."""

    serial_s: float
    split_s: float
    products: dict = field(default_factory=dict)  # letter -> (packed_s, blas_s)
    small: dict = field(default_factory=dict)  # letter -> (chunked_s, one_call_s)


def product_bits(products: dict, small: dict) -> int:
    """``PRODUCTS_CELL``'s bits from ``Measurement.products`` and ``.small``: the types whose
    packed product beat BLAS's, and those whose small products ran faster in chunks."""
    faster = lambda times, bits: sum(  # noqa: E731
        bits[letter] for letter, (tried, usual) in times.items() if tried < usual
    )
    return faster(products, PACKED_BITS) | faster(small, SMALL_BITS)


def cell_value(builder, symbol: str):
    """The 64-bit run-time cell linked as ``symbol`` (``CELL``, ``PRODUCTS_CELL``), loaded
    where ``builder`` is."""
    cell = builder.module.globals.get(symbol)
    if cell is None:
        cell = ir.GlobalVariable(builder.module, ir.IntType(64), symbol)
        cell.linkage = "external"
    return builder.load(cell)


@intrinsic
def parallel_flops(typingctx):
    """The flops from which a product runs on all threads, read from ``CELL`` at run time."""

    def codegen(context, builder, signature, values):
        return cell_value(builder, SYMBOL)

    return types.int64(), codegen


def load() -> None:
    """The machine's record, where the disk cache holds one, into ``CELL``."""
    from ...config import config

    global _settled
    stored = _read(_path(config.cache_dir))
    if stored is not None:
        (CELL.value, PRODUCTS_CELL.value), _settled = stored, True


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
    CELL.value = threshold_of(measured.serial_s, measured.split_s)
    PRODUCTS_CELL.value = product_bits(measured.products, measured.small)
    if path is not None and measured.split_s < measured.serial_s:
        _write(path, measured)


def threshold_of(serial_s: float, split_s: float) -> int:
    """The threshold from one ``SHAPE`` product's time on one thread and on two."""
    flops = 2 * math.prod(SHAPE)
    wake_s = max(split_s - serial_s / 2, 1e-7)
    speed = flops / serial_s
    wanted = 2 * wake_s * speed
    return int(min(max(1 << round(math.log2(wanted)), LEAST), MOST))


def measure() -> Measurement | None:
    """This machine's ``Measurement``; None where fewer than two threads may run. The
    cells are left as they were."""
    from . import blas, packed_gemm, threads

    threads.launch_numba_threads()
    if min(threads.numba_threads(), threads.affinity_cpus(), threads.cgroup_cpus() or 2) < 2:
        return None
    saved = CELL.value, PRODUCTS_CELL.value
    # BLAS on one thread, as in a compiled call (``threads.on_chosen_threads``): its own
    # pool made "one thread" two and the split four.
    single = blas.enter_single_threaded(threads.cpu_quota()) if blas.AVAILABLE else None
    try:
        products = {}
        if packed_gemm.available():
            for letter, dtype in (("s", np.float32), ("d", np.float64)):
                ways = [(NEVER, PACKED_BITS[letter]), (NEVER, 0)]
                products[letter] = _least_times(PRODUCT_SHAPE, dtype, PRODUCT_ROUNDS, ways)
        small = {}
        for letter, dtype in (("s", np.float32), ("d", np.float64)):
            ways = [(NEVER, SMALL_BITS[letter]), (NEVER, 0)]  # BLAS's, chunked or not
            small[letter] = _least_times(SMALL_SHAPE, dtype, ROUNDS, ways)
        PRODUCTS_CELL.value = product_bits(products, small)  # the split timed with the faster
        serial_s, split_s = _least_times(SHAPE, np.float32, ROUNDS, [(NEVER, None), (0, None)])
    finally:
        CELL.value, PRODUCTS_CELL.value = saved
        if single is not None:
            blas.leave_single_threaded(single)
    return Measurement(serial_s, split_s, products, small)


def _least_times(shape, dtype, rounds: int, ways: list) -> tuple:
    """The least time of one ``shape`` product by ``blocked_gemm`` for each way of setting
    the cells ((threshold, packed bits), None: as it is), the ways taking turns."""
    from .gemm import blocked_gemm

    rows, columns, depth = shape
    generator = np.random.default_rng(0)
    a = generator.standard_normal(rows * depth).astype(dtype)
    b = generator.standard_normal(depth * columns).astype(dtype)
    c = np.empty(rows * columns, dtype)
    sizes, leading = (rows, columns, depth), (depth, columns)
    offsets, transposed = (0, 0, 0), (0, 0)
    two = np.intc(2)  # as the product units pass ``threads.numba_threads()``: one signature
    best = [math.inf] * len(ways)
    for _ in range(rounds):
        for k, (threshold, packed) in enumerate(ways):
            CELL.value = threshold
            if packed is not None:
                PRODUCTS_CELL.value = packed
            start = time.perf_counter()
            blocked_gemm(a, b, c, offsets, transposed, sizes, leading, ROWS, two, MIN_ROWS)
            best[k] = min(best[k], time.perf_counter() - start)
    return tuple(best)


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


def _read(path: Path | None) -> tuple[int, int] | None:
    """The record's threshold and ``PRODUCTS_CELL``'s bits; None where it is missing or
    damaged (or an earlier numbax's, without the bits of small products)."""
    if path is None:
        return None
    try:
        record = json.loads(path.read_text())
        threshold, packed = record["parallel_flops"], record["packed_products"]
        small = record["small_products"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(threshold, int) and LEAST <= threshold <= MOST):
        return None
    for bits, most in ((packed, PACKED_DEFAULT), (small, SMALL_DEFAULT)):
        if not (isinstance(bits, int) and bits >= 0 and bits & ~most == 0):
            return None
    return threshold, packed | small


def _write(path: Path, measured: Measurement) -> None:
    """The cells and what they were taken from, written whole (a temporary file renamed),
    so a process reading it at the same time reads all of it or nothing."""
    microseconds = lambda seconds: round(seconds * 1e6, 1)  # noqa: E731
    record = {
        "identity": _identity(),
        "parallel_flops": CELL.value,
        "packed_products": PRODUCTS_CELL.value & PACKED_DEFAULT,
        "small_products": PRODUCTS_CELL.value & SMALL_DEFAULT,
        "serial_us": microseconds(measured.serial_s),
        "split_us": microseconds(measured.split_s),
        "shape": SHAPE,
        "products_us": {
            letter: [microseconds(t) for t in times] for letter, times in measured.products.items()
        },
        "product_shape": PRODUCT_SHAPE,
        "small_us": {
            letter: [microseconds(t) for t in times] for letter, times in measured.small.items()
        },
        "small_shape": SMALL_SHAPE,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record))
        os.replace(temporary, path)
    except OSError:
        pass  # a read-only cache: measured again by the next process
