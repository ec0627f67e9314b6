"""Kernels compiled on the machine's other cores while this process compiles the launcher.

Numba compiles under one process-wide lock, so threads cannot compile two functions at
once; processes can. A program's new kernels (``units``) are independent of each other
and of their launcher, whose machine code holds no kernel address, so the backend hands
them to worker processes, compiles the launcher meanwhile, and then loads each kernel
from the disk cache the workers wrote (``units.addresses``). A kernel no worker has
started by then is taken back and compiled here, so a slow or busy worker never makes a
compile slower than compiling everything in this process.

The workers are plain subprocesses (``python -m numbax.backends.cpu.compile_workers``),
not ``multiprocessing``'s: a spawned ``multiprocessing`` child imports the user's main
script again, which a script without an ``if __name__ == "__main__"`` guard cannot bear.
A worker reads one kernel per line on stdin (its module name, function name and the
cache folder, as JSON), compiles it exactly as ``units`` does with the disk cache on (by
llvmlite where the parent would, ``llvm_kernels``; else Numba), and answers one line.
Workers start at the first compile with at least ``MIN_NEW_KERNELS`` new kernels and
live as long as the process; they end with it (their stdin closes; a worker busy
compiling is killed, so a finished script never waits for one, and a kernel file Numba
had not finished writing is never indexed).

With kernels compiled by llvmlite (``llvm_kernels``: 10-40 ms each) a worker that is
still starting pays off only for many new kernels: an MLP step's 19 kernels compiled in
0.9 s alone against 1.5 s with a worker starting beside it, a transformer step's 52 in
3.0 s alone against 2.3 s with one; hence ``MIN_NEW_LLVMLITE_KERNELS``. A warm worker
(``prestart``, which ``initialise`` calls, waits until it has done what a first compile
does: ``CpuBackend.start_runtime``) takes ``MIN_NEW_KERNELS`` or more: measured cold after
``initialise``, quiet, the MLP step's time to compiled code went from 0.50 to 0.28 s, a
CNN's from 1.29 to 0.74 s, an LSTM's from 0.52 to 0.30 s.

How many: ``NUMBAX_COMPILE_WORKERS`` (0 compiles everything here), else one fewer than
the CPUs the process may run on (``os.sched_getaffinity``), at most ``MAX_WORKERS``;
none without a disk cache, which is how kernels come back. A worker starts when a compile
first has new kernels for it: starting one takes a second or more (it imports Numba),
which the launcher's compile hides; a process whose kernels are all cached starts none.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

from ...config import config

MIN_NEW_KERNELS = 2  # compiled by Numba
MIN_NEW_LLVMLITE_KERNELS = 32  # llvmlite compiles fewer faster alone (module doc)
MAX_WORKERS = 8

_LOCK = threading.Lock()
_QUEUE: queue.SimpleQueue = queue.SimpleQueue()  # (unit, cache folder, future)
_THREADS: list[threading.Thread] = []  # one daemon thread per worker process
_WORKERS: list[subprocess.Popen] = []


def worker_count() -> int:
    """The number of worker processes a compile may use (module doc)."""
    if config.compile_workers is not None:
        return max(0, min(config.compile_workers, MAX_WORKERS))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, min((cpus or 1) - 1, MAX_WORKERS))


def warm() -> bool:
    """Whether every worker a compile may use has started and is warm (``prestart``), so
    that kernels may go to them one by one as a program's writer finds them."""
    count = worker_count()
    return count > 0 and _ready(count)


def submit(units: list, cache_dir: str | None, *, least: int | None = None) -> dict[str, Future]:
    """Start compiling ``units`` (new kernels, their modules written under ``cache_dir``)
    in worker processes; their futures by key, or none where this process compiles them
    itself (no disk cache, no worker allowed, fewer kernels than ``least``, by default
    what pays: module doc). A future not yet running can be cancelled: this process then
    compiles that kernel itself."""
    count = worker_count()
    if least is None:
        # llvmlite's kernels go to workers in small numbers only where they are warm.
        cold = config.llvm_kernels and not _ready(count)
        least = MIN_NEW_LLVMLITE_KERNELS if cold else MIN_NEW_KERNELS
    if cache_dir is None or count == 0 or len(units) < least:
        return {}
    _start_threads(count)
    futures = {}
    for unit in units:
        futures[unit.key] = Future()
        _QUEUE.put((unit, cache_dir, futures[unit.key]))
    return futures


def prestart(cache_dir: str | None, timeout: float = 60.0) -> None:
    """Start the worker processes now, where a compile would use them, and wait until they
    are ready (a worker imports Numba and numbax: a second or more), so that they neither
    arrive late for the first program's kernels nor take a core from its compile while
    they start (a small program's compile, 0.9 s alone, took 1.5 s beside a starting
    worker)."""
    count = worker_count()
    if cache_dir is not None and count:
        _start_threads(count)
        deadline = time.monotonic() + timeout
        for thread in list(_THREADS):
            thread.ready.wait(max(0.0, deadline - time.monotonic()))


def _ready(count: int) -> bool:
    """Whether ``count`` workers have started and are warm (``prestart``)."""
    with _LOCK:
        threads = _THREADS[:count]
    return len(threads) == count and all(thread.ready.is_set() for thread in threads)


def _start_threads(count: int) -> None:
    # Daemon threads: the interpreter's exit joins none of them (module doc).
    with _LOCK:
        if not _THREADS:
            atexit.register(_end_workers)
        while len(_THREADS) < count:
            thread = threading.Thread(target=_serve_queue, name="numbax-compile-worker")
            thread.ready = threading.Event()  # set when its worker has started
            thread.daemon = True
            _THREADS.append(thread)
            thread.start()


def _serve_queue() -> None:
    """A pool thread: kernels from the queue, each compiled in this thread's worker."""
    worker = _start_worker()
    threading.current_thread().ready.set()
    while True:
        unit, cache_dir, future = _QUEUE.get()
        if not future.set_running_or_notify_cancel():
            continue  # taken back: the compiling process compiles it itself
        try:
            if worker is None or worker.poll() is not None:
                worker = _start_worker()
            _compile_in(worker, unit, cache_dir)
        except BaseException as error:  # noqa: BLE001 - the future carries it
            future.set_exception(error)
        else:
            future.set_result(None)


def _compile_in(worker: subprocess.Popen, unit, cache_dir: str) -> None:
    """Compile ``unit`` in ``worker``; raises what it reports."""
    request = {"module": unit.module_name, "name": unit.name, "cache_dir": cache_dir}
    request["llvm_kernels"] = config.llvm_kernels  # compiled as this process would
    worker.stdin.write(json.dumps(request) + "\n")
    worker.stdin.flush()
    answer = worker.stdout.readline()
    if not answer:
        raise RuntimeError(f"a numbax compile worker ended (exit status {worker.wait()})")
    error = json.loads(answer).get("error")
    if error:
        raise RuntimeError(f"a numbax compile worker could not compile {unit.name}: {error}")


def _start_worker() -> subprocess.Popen:
    environment = dict(os.environ, NUMBAX_COMPILE_WORKERS="0")
    worker = subprocess.Popen(
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=environment,
    )
    with _LOCK:
        _WORKERS.append(worker)
    worker.stdout.readline()  # its first line: ready (or nothing, where it ended)
    return worker


def _end_workers() -> None:
    """At exit: every worker ended at once, whatever it was compiling (module doc)."""
    with _LOCK:
        for worker in _WORKERS:
            worker.kill()


def _serve() -> None:
    """A worker's loop: one kernel per line of stdin, one answer per line of stdout."""
    from . import backend, units

    backend.start_runtime()  # as the parent's first compile: ready means warm
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        config.llvm_kernels = request["llvm_kernels"]
        try:
            units.compile_written(request["module"], request["name"], request["cache_dir"])
            answer = {}
        except Exception as error:  # noqa: BLE001 - reported; the parent compiles it again
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
