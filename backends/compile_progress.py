"""A compile that runs for more than ``SHOW_AFTER_S`` seconds says on stderr how far it
has come: the program's kernels compiled out of its distinct kernels, whether the
launcher is compiled, and the time so far::

    numbax: compiling step: 12/31 kernels, launcher compiling, 4.2 s

On a terminal the line is rewritten in place (``\\r``) every ``REFRESH_S`` seconds and
ends with the compile; elsewhere (a log file, a notebook's captured stderr) a plain line
is written every ``PLAIN_EVERY_S`` seconds. It shows when stderr is a terminal or
``NUMBAX_LOG_COMPILES`` is set, unless ``NUMBAX_PROGRESS=0``; a short compile writes
nothing.

A backend's ``compile`` method is wrapped by ``reported``, which starts a
``CompileProgress`` for the compiling thread and ends it however the compile ends; the
compile tells it what it learns (``current().expect(...)``, ``launcher_done``,
``kernel_done``). A kernel counts once, whichever of its sources reports it first (a
compile worker's future, or the loop that collects the addresses). Tiered execution reads
the same object for its estimate of the compile time left (``remaining_s``).
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Iterable

from ..config import config
from ..ir import collector

SHOW_AFTER_S = 2.0
REFRESH_S = 0.5  # a terminal's line
PLAIN_EVERY_S = 10.0  # a line of a log

_RUNNING: dict[int, CompileProgress] = {}  # the compiling thread's ident -> its progress
_LOCK = threading.Lock()


class CompileProgress:
    """What one compile has done so far. ``clock`` and ``stream`` are injectable, so a
    test reads the lines without waiting."""

    def __init__(self, name: str, clock: Callable[[], float] = time.perf_counter, stream=None):
        self.name = name
        self.clock = clock
        self.stream = stream
        self.started_s = clock()
        self.kernels_total: int | None = None  # None: the kernels are not written yet
        self.launcher_compiled = False
        self._done: set = set()
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._shown = False

    @property
    def kernels_done(self) -> int:
        return len(self._done)

    def expect(self, units: Iterable, futures: dict | None = None) -> None:
        """The program's distinct kernels (``units``, each with a ``key``), and the
        futures of those compiling in workers, which report as each one ends."""
        units = list(units)
        self.kernels_total = len(units)
        for key, future in (futures or {}).items():
            future.add_done_callback(lambda future, key=key: self._worker_done(key, future))

    def _worker_done(self, key, future) -> None:
        if not future.cancelled() and future.exception() is None:
            self.kernel_done(key)

    def kernel_done(self, key) -> None:
        with self._lock:
            self._done.add(key)

    def launcher_done(self) -> None:
        self.launcher_compiled = True

    def elapsed_s(self) -> float:
        return self.clock() - self.started_s

    def remaining_s(self) -> float | None:
        """The compile time left, extrapolated from the share of the work done (each
        kernel and the launcher one share); None before anything is done."""
        if not self.kernels_total and not self.launcher_compiled:
            return None
        shares = (self.kernels_total or 0) + 1
        done = self.kernels_done + self.launcher_compiled
        if done == 0:
            return None
        return self.elapsed_s() * (shares - done) / done

    def line(self) -> str:
        """``numbax: compiling step: 12/31 kernels, launcher compiling, 4.2 s``."""
        if self.kernels_total is None:
            stage = "optimising and writing code"
        else:
            launcher = "launcher compiled" if self.launcher_compiled else "launcher compiling"
            stage = f"{self.kernels_done}/{self.kernels_total} kernels, {launcher}"
        return f"numbax: compiling {self.name}: {stage}, {self.elapsed_s():.1f} s"

    def show(self, terminal: bool) -> None:
        """Write the line: in place on a terminal, as a line of its own elsewhere."""
        stream = self.stream or sys.stderr
        text = f"\r{self.line()}\x1b[K" if terminal else self.line() + "\n"
        stream.write(text)
        stream.flush()
        self._shown = True

    def finish(self, terminal: bool) -> None:
        """End the compile's reporting; a compile that showed a line says it has ended."""
        self._finished.set()
        if self._shown:
            stream = self.stream or sys.stderr
            ending = "\r" if terminal else ""
            stream.write(f"{ending}numbax: compiled {self.name} in {self.elapsed_s():.1f} s")
            stream.write("\x1b[K\n" if terminal else "\n")
            stream.flush()

    def report(self, terminal: bool) -> None:
        """A reporting thread's loop: nothing for ``SHOW_AFTER_S``, then a line every
        ``REFRESH_S`` (terminal) or ``PLAIN_EVERY_S`` seconds until the compile ends."""
        every = REFRESH_S if terminal else PLAIN_EVERY_S
        wait = SHOW_AFTER_S
        while not self._finished.wait(wait):
            with _LOCK:  # one line at a time from compiles in several threads
                if not self._finished.is_set():
                    self.show(terminal)
            wait = every


def showing() -> bool:
    """Whether a long compile shows its progress (module doc)."""
    if not config.progress:
        return False
    return config.log_compiles or _is_terminal(sys.stderr)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def current() -> CompileProgress | None:
    """The progress of the compile running in this thread, None outside one."""
    return _RUNNING.get(threading.get_ident())


def of_thread(ident: int | None) -> CompileProgress | None:
    """The progress of the compile running in the thread ``ident``, None when none is."""
    return _RUNNING.get(ident)


def reported(compile_method):
    """Wrap a backend's ``compile(self, closed, name, ...)``: its progress is reported
    while it runs (module doc), and ends however it ends; the cyclic collector is paused
    meanwhile (``ir.collector``)."""

    @functools.wraps(compile_method)
    def compile_reporting(self, closed, name: str = "fn", *args, **kwargs):
        progress = CompileProgress(name)
        ident = threading.get_ident()
        outer = _RUNNING.get(ident)  # a compile within a compile (a callback's program)
        _RUNNING[ident] = progress
        terminal = _is_terminal(sys.stderr)
        if showing():
            reporter = threading.Thread(
                target=progress.report, args=(terminal,), name="numbax-progress", daemon=True
            )
            reporter.start()
        try:
            with collector.paused():
                return compile_method(self, closed, name, *args, **kwargs)
        finally:
            if outer is None:
                _RUNNING.pop(ident, None)
            else:
                _RUNNING[ident] = outer
            with _LOCK:
                progress.finish(terminal)

    return compile_reporting
