"""Tiered execution: a first call answered by the interpreter (``ir/interpret.py``, the
oracle) while the compiled program is built in a background thread, which then replaces
the interpreter.

Compiling a program through Numba costs seconds (LLVM's optimisation of one large
function), running its traced jaxpr with NumPy costs milliseconds for most programs. So a
``jit`` signature's first calls can run interpreted (``eval_jaxpr``, the oracle every
backend is tested against: results agree with the compiled ones within floating-point
reassociation, and its math with the compiled math within the compiled math's documented
error bounds) while a thread compiles it:

    executable = TieredExecutable(closed, compile_program, name)
    executable(*arrays)  # interpreted; then compile_program() runs in a thread
    executable(*arrays)  # interpreted until the compiled program is ready, then compiled

Which tier answers is decided per call, and each call is answered by one tier only:

- The compile starts when the first call has returned, not during it: Numba's compiler is
  mostly Python, and while it holds the GIL the interpreter waits (measured on jacobi-2d,
  heat-3d and deriche: an interpreted call takes 2.2-3x as long while a compile runs; on
  adi, whose compile takes longer than its interpretation, the first call took 7.4x JAX's
  with the compile started at once). A first call that turns out long (more than
  ``COMPILE_AFTER_STEPS`` steps, a loop of many iterations) starts the compile itself,
  and is then handed over like the calls below.
- A call that starts while the compile runs is interpreted. The interpreter asks
  (``should_stop``) between equations and in every loop iteration; once the compiled
  program is ready it stops and the call is answered by the compiled program instead, so
  a long interpreted run (a loop of many small steps) never takes much longer than the
  compile.
  A program with side effects (``debug.print``, callbacks) is interpreted to the end:
  stopping half-way and running it again would repeat its effects.
- A compile that failed raises its error on every later call (``compiled``): the error is
  the one the compile raised (a copy per call with the compile's traceback), never lost,
  never replaced by interpreting forever. A call being interpreted when it fails is not
  stopped: its answer is right.
- ``worth_interpreting`` declines programs the interpreter would run for longer than a
  compile takes (``interpreted_steps``: equations executed, counting every iteration of
  a loop of known length): those compile before their first call, as without tiering.
- A program is interpreted twice only if that can win: once a call has been interpreted
  to the end, a later call waits for the compiled program instead when the interpreted
  call took longer than the compile has left (``remaining_compile_s``: extrapolated from
  the compile's progress, ``backends/compile_progress.py``, or before it has any, from
  ``COMPILE_S_PER_EQN``). Such a call could not end before the compile does, and while it
  ran it would slow the compile down (both need the GIL). Measured on the models group's
  training steps (full size, float32, 2 loaded cores; interpreted step / compiled step):
  MLP 2x, transformer (2 layers) 3x, CNN 1x, where the time is in BLAS and large NumPy
  loops either way, so the interpreter answers until the compile ends and tiering stays
  the default; the LSTM through ``scan`` (small steps in a loop) 168x: its first call is
  interpreted (1.8-6.5 s) and its second waits for the compiled program, as a program of
  many small operations does (NPBench's ``adi``: 2.26 s interpreted, milliseconds
  compiled). ``waited_calls`` counts the calls that waited.

The compiling thread is a daemon: a script that has finished exits at once, without
waiting for a compile still running (a heat-equation script once waited 197 s at exit).
What the compile finished before is in the disk cache; the rest is dropped, and leaves no
half-written entry, since every cache file is written whole under a temporary name and
renamed into place (``cpu/cache.py``, and Numba's own index and object files): the next
process compiles what is missing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..config import config
from ..ir.core import ClosedJaxpr, Jaxpr
from ..ir.interpret import Stopped, eval_jaxpr
from . import compile_progress
from .results import InterpreterResults

# The backends whose executables take and return NumPy arrays, as the interpreter does.
# A cuda executable returns device arrays: interpreting its first calls would change the
# type of what a call returns.
TIERED_BACKENDS = ("cpu",)

_logger = logging.getLogger("numbax")

# Equations the interpreter may execute for one call before a program is compiled first
# instead. One executed equation costs the interpreter 3-15 us on small arrays (measured on
# the kernels benchmark group), so this is ~3-15 s of interpreting: about what compiling a
# program of a few hundred equations costs. Beyond it interpreting would not win.
INTERPRET_MAX_STEPS = 1_000_000

# Steps after which a running interpreted call starts the compile instead of leaving it to
# when the call returns: ~0.3-1.5 s of interpreting (3-15 us a step), past the whole
# first call of most programs, so only a call that turns out long competes with the
# compile for the GIL, and it is handed to the compiled program once that is ready.
COMPILE_AFTER_STEPS = 100_000

# A compile's seconds per equation of the program, for its time left before its progress
# tells (the passes and code generation, before any kernel is compiled): a cold compile of
# the models group's training steps took 30-60 ms of CPU time per equation (transformer,
# 2 layers, 453 equations: 14.6 s; MLP, 66 equations: 3.7 s) on 2 loaded cores.
COMPILE_S_PER_EQN = 0.03

# How many iterations a while loop (whose trip count is not known before it runs) is
# assumed to run when estimating the interpreter's work.
ASSUMED_WHILE_TRIPS = 100


def interpreted_steps(jaxpr: Jaxpr) -> int:
    """How many equations interpreting ``jaxpr`` executes, loop iterations included."""
    return sum(1 + _body_steps(eqn) for eqn in jaxpr.eqns)


def _body_steps(eqn) -> int:
    params, name = eqn.params, eqn.prim.name
    if name == "scan":
        return params["length"] * interpreted_steps(params["jaxpr"])
    if name == "while":
        per_trip = interpreted_steps(params["cond_jaxpr"]) + interpreted_steps(params["body_jaxpr"])
        return ASSUMED_WHILE_TRIPS * per_trip
    if name == "cond":
        return max(interpreted_steps(branch) for branch in params["branches"])
    if isinstance(params.get("jaxpr"), Jaxpr):  # jit_call, checkpoint, custom_vjp_call
        return interpreted_steps(params["jaxpr"])
    return 0


def equation_count(jaxpr: Jaxpr) -> int:
    """The equations of ``jaxpr`` and of the jaxprs inside it, each counted once."""
    return sum(1 + sum(map(equation_count, _sub_jaxprs(e.params))) for e in jaxpr.eqns)


def has_side_effects(jaxpr: Jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.prim.side_effects:
            return True
        if any(has_side_effects(sub) for sub in _sub_jaxprs(eqn.params)):
            return True
    return False


def _sub_jaxprs(params: dict):
    for value in params.values():
        if isinstance(value, Jaxpr):
            yield value
        elif isinstance(value, tuple | list):
            yield from (v for v in value if isinstance(v, Jaxpr))


def worth_interpreting(closed: ClosedJaxpr, backend_name: str) -> tuple[bool, str]:
    """Whether to interpret this program's first calls while it compiles, and why (not)."""
    if backend_name not in TIERED_BACKENDS:
        return False, f"the {backend_name} backend is not tiered"
    steps = interpreted_steps(closed.jaxpr)
    if steps > INTERPRET_MAX_STEPS:
        return False, f"{steps} interpreted steps would outlast the compile"
    return True, f"{steps} interpreted steps"


class TieredExecutable:
    """Interprets ``closed`` until ``compile_program()``, run in a thread, has returned.

    ``interpreted_calls`` counts the calls the interpreter answered (to the end);
    ``interrupted_calls`` those it began and handed to the compiled program when it
    became ready; ``waited_calls`` those that waited for the compiled program (module
    doc). ``clock`` is injectable, for tests that decide without timing anything.
    """

    def __init__(
        self,
        closed: ClosedJaxpr,
        compile_program: Callable[[], object],
        name: str,
        compile_at_once: bool = False,
        writes: tuple[int, ...] = (),
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.closed = closed
        self.name = name
        self._clock = clock
        # The interpreter's results are the caller's own, as the compiled program's are.
        self._results = InterpreterResults(closed, writes)
        self.interpreted_calls = 0
        self.interrupted_calls = 0
        self.waited_calls = 0
        self.first_call_s: float | None = None  # the first call interpreted to the end
        self._compile_started_s: float | None = None
        self._counting = threading.Lock()
        self._stoppable = not has_side_effects(closed.jaxpr)
        self._compile_program = compile_program
        # Written by the compiling thread before it sets ``_ready``, never after: a call
        # that sees ``_ready`` set sees the compiled program or the error with it.
        self._compiled = None
        self._error: BaseException | None = None
        self._error_traceback = None  # the compile's own, however often the error is raised
        self._ready = threading.Event()  # the compile has finished
        # A daemon: a script that has finished does not wait for the compile (module doc).
        self._thread = threading.Thread(
            target=self._build, name=f"numbax-compile-{name}", daemon=True
        )
        self._started = False
        if compile_at_once:
            self._start()

    def _start(self) -> None:
        with self._counting:
            if self._started:
                return
            self._started = True
            self._compile_started_s = self._clock()
        self._thread.start()

    def _build(self) -> None:
        try:
            self._compiled = self._compile_program()
        except BaseException as error:  # noqa: BLE001 - kept, raised by the next call
            self._error, self._error_traceback = error, error.__traceback__
        finally:
            self._ready.set()

    @property
    def compiled(self):
        """The compiled executable, None while it compiles; the compile's error if it failed."""
        if not self._ready.is_set():
            return None
        if self._error is not None:
            raise _fresh(self._error, self._error_traceback)
        return self._compiled

    @property
    def ready(self) -> bool:
        """Whether the compiled program is ready: compiled, without an error."""
        return self._replaced()

    def _replaced(self) -> bool:
        """Whether a running interpreted call should stop: the compile has succeeded."""
        return self._ready.is_set() and self._error is None

    def wait(self, timeout: float | None = None):
        """Block until the compile has finished; the compiled executable (or its error)."""
        self._start()
        self._ready.wait(timeout)
        return self.compiled

    def remaining_compile_s(self) -> float:
        """The compile time left: from the compile's progress where it has done some of
        its work, else from the program's size (``COMPILE_S_PER_EQN``). A compile that has
        outrun the size's estimate is given as long again as it has run: its end is not
        known, and a call that waited for it on an estimate of nothing left could wait
        for as long as the compile takes (forever for one that never ends)."""
        progress = compile_progress.of_thread(self._thread.ident)
        remaining = progress.remaining_s() if progress is not None else None
        if remaining is not None:
            return remaining
        started = self._compile_started_s
        elapsed = 0.0 if started is None else self._clock() - started
        return max(COMPILE_S_PER_EQN * equation_count(self.closed.jaxpr) - elapsed, elapsed)

    def _waits_for_compile(self) -> bool:
        """Whether this call waits for the compiled program rather than interpret: an
        interpreted call took longer than the compile has left (module doc)."""
        return self.first_call_s is not None and self.first_call_s > self.remaining_compile_s()

    def __call__(self, *args):
        compiled = self.compiled
        if compiled is not None:
            return compiled(*args)
        if self._waits_for_compile():
            with self._counting:
                self.waited_calls += 1
                first_wait = self.waited_calls == 1
            if config.log_compiles and first_wait:
                _logger.warning(
                    "numbax: %s: waiting for the compiled program: an interpreted call took "
                    "%.2f s, the compile has about %.2f s left",
                    self.name,
                    self.first_call_s,
                    self.remaining_compile_s(),
                )
            return self.wait()(*args)
        start = self._clock()
        try:
            outs = eval_jaxpr(
                self.closed.jaxpr, self.closed.consts, *args, should_stop=self._should_stop()
            )
        except Stopped:
            with self._counting:
                self.interrupted_calls += 1
            return self.compiled(*args)
        finally:
            self._start()  # an interpreter that raised still leaves the program to compile
        took = self._clock() - start
        with self._counting:
            self.interpreted_calls += 1
            if self.first_call_s is None:
                self.first_call_s = took
        return self._results.apply(outs, args)

    def _should_stop(self) -> Callable[[], bool]:
        """What the interpreter asks before each step of one call: the call starts the
        compile once it has run ``COMPILE_AFTER_STEPS`` steps, and stops once the compiled
        program is ready (a program with effects never stops)."""
        steps = 0

        def should_stop() -> bool:
            nonlocal steps
            steps += 1
            if steps == COMPILE_AFTER_STEPS:
                self._start()
            return self._stoppable and self._replaced()

        return should_stop


def tiers_summary(executables: list[TieredExecutable]) -> str:
    """Which tier answered a jitted function's calls, for its ``repr``: ``; calls: 2
    interpreted, 1 waited for compiled code; 1 signature compiling``; empty where no
    signature was tiered."""
    counts = (
        (sum(e.interpreted_calls for e in executables), "interpreted"),
        (sum(e.interrupted_calls for e in executables), "handed over to compiled code"),
        (sum(e.waited_calls for e in executables), "waited for compiled code"),
    )
    calls = ", ".join(f"{count} {what}" for count, what in counts if count)
    text = f"; calls: {calls}" if calls else ""
    compiling = sum(not e._ready.is_set() for e in executables)
    if compiling:
        text += f"; {compiling} signature{'s' * (compiling != 1)} compiling"
    return text


def _fresh(error: BaseException, traceback) -> BaseException:
    """A copy of the compile's ``error`` with the compile's ``traceback``, for one call to
    raise: raising the stored object itself would add each call's frames to its
    traceback, and threads raising it together would write into one traceback."""
    cls = type(error)
    try:  # its __init__ is not run again: it may have made the args from others
        fresh = cls.__new__(cls, *error.args)
        fresh.__dict__.update(getattr(error, "__dict__", {}))
    except Exception:  # noqa: BLE001 - an error that cannot be copied: the stored one
        fresh = error
    fresh.__cause__, fresh.__context__ = error.__cause__, error.__context__
    fresh.__suppress_context__ = error.__suppress_context__
    return fresh.with_traceback(traceback)
