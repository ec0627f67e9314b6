"""Tiered execution (backends/tiered.py): a first call answered by the interpreter while
the program compiles in a background thread, then the compiled program.

The suite runs with tiering off (conftest); these tests turn it on per function. Which
tier answered is read from counters (``interpreted_calls``), never from time."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest
from corpus import CASES

import numbax
from numbax import api
from numbax.backends import tiered as tiering
from numbax.config import config
from numbax.dispatch import compiling
from numbax.ir.errors import UnsupportedOnBackendError
from numbax.ir.interpret import Stopped, eval_jaxpr
from numbax.ir.primitive import PRIMITIVES

pytest.importorskip("numba")

RTOL = 1e-12  # reassociation in the compiled program, float64


def stencil_steps(u):
    def step(t, u):
        interior = 0.25 * (u[:-2] + u[2:]) + 0.5 * u[1:-1]
        return u.at[1:-1].set(interior + 0.01 * t)

    return numbax.fori_loop(0, 5, step, u)


def damped_until_small(x):
    def cond(carry):
        return np.max(np.abs(carry[0])) > 0.1

    def body(carry):
        value, count = carry
        return value * 0.5, count + 1

    return numbax.while_loop(cond, body, (x, 0))


def cumulative(x):
    def step(carry, row):
        carry = carry + np.tanh(row)
        return carry, carry.sum()

    return numbax.lax.scan(step, np.zeros(x.shape[1]), x)


def branch_on_sign(x):
    return numbax.cond(x.sum() > 0, lambda v: np.exp(-v), lambda v: v * v, x)


inner = numbax.jit(lambda v: np.sin(v) * 2.0)


def calls_a_jitted_function(x):
    return inner(x) + inner(x[::-1])


def scales_in_place(x):
    x *= 3.0
    return x.sum()


def numpy_stencil_steps(u):
    u = u.copy()
    for t in range(5):
        u[1:-1] = 0.25 * (u[:-2] + u[2:]) + 0.5 * u[1:-1] + 0.01 * t
    return u


def numpy_damped(x):
    count = 0
    while np.max(np.abs(x)) > 0.1:
        x, count = x * 0.5, count + 1
    return x, count


def numpy_cumulative(x):
    carry, sums = np.zeros(x.shape[1]), []
    for row in x:
        carry = carry + np.tanh(row)
        sums.append(carry.sum())
    return carry, np.array(sums)


def numpy_branch(x):
    return np.exp(-x) if x.sum() > 0 else x * x


X = np.linspace(-1.0, 2.0, 12)
PROGRAMS = {
    "fori_loop": (stencil_steps, numpy_stencil_steps, X),
    "while_loop": (damped_until_small, numpy_damped, X * 4.0),
    "scan": (cumulative, numpy_cumulative, X.reshape(3, 4)),
    "cond": (branch_on_sign, numpy_branch, X),
    "nested_jit": (calls_a_jitted_function, lambda x: 2 * np.sin(x) + 2 * np.sin(x[::-1]), X),
}


def assert_tree_close(actual, expected):
    actual, expected = numbax.tree_leaves(actual), numbax.tree_leaves(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=RTOL, atol=1e-14)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tiered_calls_equal_numpy_then_the_compiled_program(name):
    program, numpy_program, x = PROGRAMS[name]
    expected = numpy_program(x.copy())
    f = numbax.jit(program, backend="cpu", tiered=True)
    first = f(x)
    assert f.interpreted_calls == 1  # the compile runs in the background
    assert_tree_close(first, expected)
    f.wait_compiled()
    compiled = f(x)
    assert f.interpreted_calls == 1  # the compiled program answered
    assert_tree_close(compiled, expected)
    assert_tree_close(compiled, numbax.jit(program, backend="cpu", tiered=False)(x))
    for a, c in zip(numbax.tree_leaves(first), numbax.tree_leaves(compiled), strict=True):
        assert (type(a), a.dtype, a.shape) == (type(c), c.dtype, c.shape)
    assert f.cache_info().traces == 1
    assert "1 signature compiled" in repr(f)


def test_a_written_argument_is_written_back_by_the_interpreted_call():
    f = numbax.jit(scales_in_place, backend="cpu", tiered=True)
    x = X.copy()
    total = f(x)
    assert f.interpreted_calls == 1
    np.testing.assert_allclose(x, X * 3.0, rtol=RTOL)
    np.testing.assert_allclose(total, (X * 3.0).sum(), rtol=RTOL)
    f.wait_compiled()
    total = f(x)
    assert f.interpreted_calls == 1
    np.testing.assert_allclose(x, X * 9.0, rtol=RTOL)
    np.testing.assert_allclose(total, (X * 9.0).sum(), rtol=RTOL)


def test_the_compiled_program_replaces_the_interpreter_on_the_fast_path():
    f = numbax.jit(lambda x: np.cos(x) + x, backend="cpu", tiered=True)
    f(X)
    f(X)  # still compiling, or compiled: either way the answer is right
    f.wait_compiled()
    before = f.interpreted_calls
    for _ in range(3):
        np.testing.assert_allclose(f(X), np.cos(X) + X, rtol=RTOL)
    assert f.interpreted_calls == before
    assert f._fast, "the compiled executable is entered in the dispatch fast path"
    ((executable, _),) = f._fast.values()
    assert not isinstance(executable, tiering.TieredExecutable)


def test_tiered_false_and_the_config_default_compile_before_the_first_call(monkeypatch):
    f = numbax.jit(lambda x: x * 2.0, backend="cpu", tiered=False)
    f(X)
    assert f.interpreted_calls == 0 and "1 signature compiled" in repr(f)
    monkeypatch.setattr(config, "tiered", False)
    g = numbax.jit(lambda x: x * 2.0, backend="cpu")
    g(X)
    assert g.interpreted_calls == 0 and "1 signature compiled" in repr(g)


def test_a_failed_background_compile_raises_on_every_later_call(monkeypatch):
    first_call_returned = threading.Event()

    def failing_compile(closed, backend_name, name, why="(lowered)", writes=()):
        first_call_returned.wait()
        raise UnsupportedOnBackendError(f"cannot compile {name}")

    monkeypatch.setattr(compiling, "compile_closed", failing_compile)
    f = numbax.jit(lambda x: x + 1.0, backend="cpu", tiered=True)
    np.testing.assert_allclose(f(X), X + 1.0)  # answered while the compile ran
    first_call_returned.set()
    with pytest.raises(UnsupportedOnBackendError, match="cannot compile"):
        f.wait_compiled()
    for _ in range(2):
        with pytest.raises(UnsupportedOnBackendError, match="cannot compile"):
            f(X)
    assert f.interpreted_calls == 1


def test_threads_calling_a_new_signature_share_one_trace_and_one_compile(monkeypatch):
    compiles = []
    compile_closed = compiling.compile_closed

    def counted(*args, **kwargs):
        compiles.append(args[2])
        return compile_closed(*args, **kwargs)

    monkeypatch.setattr(compiling, "compile_closed", counted)
    f = numbax.jit(lambda x: np.sqrt(x * x + 1.0), backend="cpu", tiered=True)
    start, results, errors = threading.Barrier(6), [None] * 6, []

    def call(i):
        try:
            start.wait()
            for _ in range(3):
                results[i] = f(X)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    f.wait_compiled()
    for result in [*results, f(X)]:
        np.testing.assert_allclose(result, np.sqrt(X * X + 1.0), rtol=RTOL)
    assert f.cache_info().traces == 1
    assert len(compiles) == 1


def _blocking_compile(started: threading.Event, done: list):
    """A compile that returns once ``started`` is set; its "program" answers a marker."""

    def compile_program():
        started.wait()
        done.append(True)
        return lambda *args: ["compiled"]

    return compile_program


def test_the_compiled_program_takes_over_a_running_interpreted_call(monkeypatch):
    closed = numbax.make_jaxpr(lambda x: numbax.fori_loop(0, 50, lambda i, v: np.sin(v), x))(X)
    started, done = threading.Event(), []
    sin, calls = PRIMITIVES["sin"].impl_rule, []

    def sin_that_lets_the_compile_finish(x, **params):
        calls.append(1)
        if len(calls) == 10:
            started.set()  # let the compile finish, and wait until it has
            executable._ready.wait()
        return sin(x, **params)

    monkeypatch.setattr(PRIMITIVES["sin"], "impl_rule", sin_that_lets_the_compile_finish)
    executable = tiering.TieredExecutable(
        closed, _blocking_compile(started, done), "loop", compile_at_once=True
    )
    assert executable(X) == ["compiled"]
    assert (executable.interpreted_calls, executable.interrupted_calls) == (0, 1)


def test_a_compile_failing_during_an_interpreted_call_lets_it_finish(monkeypatch):
    closed = numbax.make_jaxpr(lambda x: numbax.fori_loop(0, 50, lambda i, v: np.sin(v), x))(X)
    started = threading.Event()
    sin, calls = PRIMITIVES["sin"].impl_rule, []

    def failing_compile():
        started.wait()
        raise UnsupportedOnBackendError("no machine code today")

    def sin_that_lets_the_compile_fail(x, **params):
        calls.append(1)
        if len(calls) == 10:
            started.set()
            executable._ready.wait()
        return sin(x, **params)

    monkeypatch.setattr(PRIMITIVES["sin"], "impl_rule", sin_that_lets_the_compile_fail)
    executable = tiering.TieredExecutable(closed, failing_compile, "loop", compile_at_once=True)
    (value,) = executable(X)
    expected = X
    for _ in range(50):
        expected = np.sin(expected)
    np.testing.assert_allclose(value, expected, rtol=RTOL)
    assert (executable.interpreted_calls, executable.interrupted_calls) == (1, 0)
    with pytest.raises(UnsupportedOnBackendError, match="no machine code today"):
        executable(X)


def test_an_interpreted_call_stops_at_the_next_equation_once_compiled():
    closed = numbax.make_jaxpr(lambda x: numbax.fori_loop(0, 50, lambda i, v: np.sin(v), x))(X)
    asked = []

    def stop_at_the_tenth_question():
        asked.append(1)
        return len(asked) == 10

    with pytest.raises(Stopped):
        eval_jaxpr(closed.jaxpr, closed.consts, X, should_stop=stop_at_the_tenth_question)
    assert len(asked) == 10
    (value,) = eval_jaxpr(closed.jaxpr, closed.consts, X, should_stop=lambda: False)
    expected = X
    for _ in range(50):
        expected = np.sin(expected)
    np.testing.assert_allclose(value, expected, rtol=RTOL)


def test_a_program_with_effects_is_interpreted_to_the_end():
    """Stopping it half-way would run its effect a second time in the compiled program."""
    seen, started, done, held = [], threading.Event(), [], {}

    def effect(total):
        seen.append(float(total))
        started.set()  # the compile finishes while the call is in the interpreter
        held["executable"]._ready.wait()

    def noisy(x):
        numbax.debug.callback(effect, x.sum())
        return x * 2.0

    closed = numbax.make_jaxpr(noisy)(X)
    assert tiering.has_side_effects(closed.jaxpr)
    held["executable"] = executable = tiering.TieredExecutable(
        closed, _blocking_compile(started, done), "noisy", compile_at_once=True
    )
    (value,) = executable(X)
    np.testing.assert_allclose(value, X * 2.0)
    assert seen == [pytest.approx(X.sum())]
    assert (executable.interpreted_calls, executable.interrupted_calls) == (1, 0)


def test_the_compile_starts_once_the_first_call_returned():
    """The compile would slow the first call down, competing for the GIL."""
    closed = numbax.make_jaxpr(lambda x: np.sin(x) + 1.0)(X)
    started, done = threading.Event(), []
    started.set()
    executable = tiering.TieredExecutable(closed, _blocking_compile(started, done), "short")
    assert not executable._started
    (value,) = executable(X)
    np.testing.assert_allclose(value, np.sin(X) + 1.0, rtol=RTOL)
    assert executable._started
    assert executable.wait() is not None and executable(X) == ["compiled"]


def test_long_interpreted_runs_and_untiered_backends_compile_first():
    def long_loop(x):
        return numbax.fori_loop(0, 400_000, lambda i, v: v * 0.5 + 1.0, x)

    closed = numbax.make_jaxpr(long_loop)(X)
    assert tiering.interpreted_steps(closed.jaxpr) > tiering.INTERPRET_MAX_STEPS
    worth, reason = tiering.worth_interpreting(closed, "cpu")
    assert not worth and "outlast the compile" in reason
    small = numbax.make_jaxpr(stencil_steps)(X)
    assert tiering.worth_interpreting(small, "cpu")[0]
    assert not tiering.worth_interpreting(small, "cuda")[0]


def test_the_compile_log_says_which_tier_answered(monkeypatch, caplog):
    monkeypatch.setattr(config, "log_compiles", True)

    def logged(x):
        return np.tanh(x) * 3.0

    f = numbax.jit(logged, backend="cpu", tiered=True)
    with caplog.at_level(logging.WARNING, logger="numbax"):
        f(X)
        f.wait_compiled()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("numbax:")]
    first, compiled = lines
    assert first.startswith("numbax: logged (first call): tracing ")
    assert "interpreting" in first and "while it compiles in the background" in first
    assert "compiled in the background" in compiled
    for stage in ("tracing", "optimise", "codegen", "backend"):
        assert f"{stage} " in compiled


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_interpreter_of_the_first_calls_is_the_reference_interpreter(case, rng):
    """Every corpus program: the tiered first call's answer is eval_jaxpr's, bit for bit."""
    for signature in case.signatures:
        args = case.arguments(signature, rng)
        closed, _, _, _ = api.trace_to_jaxpr(case.fn, args)
        flat = [np.asarray(a) for a in numbax.tree_leaves(args)]
        expected = eval_jaxpr(closed.jaxpr, closed.consts, *flat)
        executable = tiering.TieredExecutable(closed, lambda: None, case.name)
        actual = executable(*flat)
        assert executable.interpreted_calls == 1
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_array_equal(a, e)


def test_the_interpreter_returns_inf_and_nan_quietly():
    """Its elementwise implementations run without their own errstate (``_step``), inside
    ``eval_jaxpr``'s: 0/0, x/0 and log(0) give NumPy's nan, inf and -inf with no warning,
    and the errstate outside is the caller's again afterwards."""
    x = np.array([0.0, 1.0, -2.0])
    closed = numbax.make_jaxpr(lambda x: (x / 0.0, np.log(x * 0.0), x * 2.0))(x)
    with np.errstate(all="raise"):
        got = eval_jaxpr(closed.jaxpr, closed.consts, x)
        with pytest.raises(FloatingPointError):
            np.log(x * 0.0)
    with np.errstate(all="ignore"):
        want = (x / 0.0, np.log(x * 0.0), x * 2.0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def rows_in_order(a):
    """Each row from the one before: a counter-indexed loop, whose index checks the
    cleaned program has decided (passes/ranges.py)."""
    return numbax.fori_loop(1, a.shape[0], lambda i, a: a.at[i].set(a[i - 1] * 0.5 + a[i]), a)


def test_the_first_calls_interpret_the_cleaned_program():
    a = np.arange(20.0).reshape(5, 4)
    expected = a.copy()
    for i in range(1, 5):
        expected[i] = expected[i - 1] * 0.5 + expected[i]
    f = numbax.jit(rows_in_order, backend="cpu", tiered=True)
    np.testing.assert_allclose(f(a), expected, rtol=RTOL)
    assert f.interpreted_calls == 1
    (entry,) = f._cache.values()
    traced = tiering.interpreted_steps(entry.closed.jaxpr)
    assert tiering.interpreted_steps(entry.tiered.closed.jaxpr) < traced
    f.wait_compiled()
    np.testing.assert_allclose(f(a), expected, rtol=RTOL)


def sines(x):
    return numbax.fori_loop(0, 50, lambda i, v: np.sin(v), x)


def test_a_call_interrupted_as_the_compile_finishes_gets_the_compiled_program(monkeypatch):
    """The moment the compiling thread signals that the compile finished is held open
    until the interpreted call it interrupts has been answered: that call must find the
    compiled program already there (it once found None and raised TypeError)."""
    started, compile_returned = threading.Event(), threading.Event()
    signalled, call_answered = threading.Event(), threading.Event()

    class HeldOpen(threading.Event):
        """An event whose ``set`` by the compiling thread, once the compile has returned,
        waits until the interrupted call is answered."""

        def set(self):
            super().set()
            if compile_returned.is_set() and threading.current_thread() is executable._thread:
                signalled.set()
                call_answered.wait(60)

    def compile_program():
        started.wait()
        compile_returned.set()
        return lambda *args: ["compiled"]

    sin, calls = PRIMITIVES["sin"].impl_rule, []

    def sin_that_lets_the_compile_finish(x, **params):
        calls.append(1)
        if len(calls) == 10:
            started.set()
            assert signalled.wait(60)  # the compiling thread is inside the held set()
        return sin(x, **params)

    with monkeypatch.context() as patched:
        patched.setattr(tiering.threading, "Event", HeldOpen)
        executable = tiering.TieredExecutable(
            numbax.make_jaxpr(sines)(X), compile_program, "sines", compile_at_once=True
        )
    monkeypatch.setattr(PRIMITIVES["sin"], "impl_rule", sin_that_lets_the_compile_finish)
    try:
        result = executable(X)
    finally:
        call_answered.set()
    assert result == ["compiled"]
    assert (executable.interpreted_calls, executable.interrupted_calls) == (0, 1)


def test_a_failed_compile_raises_a_fresh_error_whose_traceback_does_not_grow():
    """Each call raises a copy of the compile's error carrying the compile's traceback;
    raising the one stored object added every call's frames to its traceback."""

    def compile_that_fails():
        raise UnsupportedOnBackendError("no machine code today")

    executable = tiering.TieredExecutable(
        numbax.make_jaxpr(sines)(X), compile_that_fails, "sines", compile_at_once=True
    )
    with pytest.raises(UnsupportedOnBackendError):
        executable.wait()
    raised = []
    for _ in range(4):
        with pytest.raises(UnsupportedOnBackendError, match="no machine code today") as info:
            executable(X)
        raised.append(info.value)
    lengths = [len(traceback.extract_tb(error.__traceback__)) for error in raised]
    assert lengths == [lengths[0]] * 4, lengths
    assert len({id(error) for error in raised}) == 4
    assert traceback.extract_tb(raised[-1].__traceback__)[-1].name == "compile_that_fails"


def test_a_long_first_call_starts_the_compile_and_is_handed_over(monkeypatch):
    """A first call that runs past ``COMPILE_AFTER_STEPS`` starts the compile itself (it
    once waited for the call to return), and the compiled program answers it."""
    monkeypatch.setattr(tiering, "COMPILE_AFTER_STEPS", 20)
    sin, calls = PRIMITIVES["sin"].impl_rule, []

    def sin_that_waits_for_the_compile(x, **params):
        calls.append(1)
        if len(calls) == 30:  # past step 20: the compile has started
            assert executable._ready.wait(60), "the compile did not start during the call"
        return sin(x, **params)

    started, done = threading.Event(), []
    started.set()
    executable = tiering.TieredExecutable(
        numbax.make_jaxpr(sines)(X), _blocking_compile(started, done), "sines"
    )
    monkeypatch.setattr(PRIMITIVES["sin"], "impl_rule", sin_that_waits_for_the_compile)
    assert executable(X) == ["compiled"]
    assert (executable.interpreted_calls, executable.interrupted_calls) == (0, 1)


def count_up(x, n):
    return numbax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + 0.5), (0, x))


def test_a_first_call_looping_long_is_answered_by_the_compiled_program():
    """10 million iterations: minutes interpreted, a fraction of a second compiled. The
    call starts the compile and is handed to the compiled program at an iteration."""
    n, x = 10_000_000, np.arange(-4.0, 8.0) * 0.25  # quarters: every sum is exact
    f = numbax.jit(count_up, backend="cpu", tiered=True)
    count, value = f(x, n)
    assert count == n
    np.testing.assert_array_equal(value, x + 0.5 * n)
    (entry,) = f._cache.values()
    assert (f.interpreted_calls, entry.tiered.interrupted_calls) == (0, 1)


_EXITS_WHILE_COMPILING = """
import sys, threading
import numpy as np
import numbax
from numbax.dispatch import compiling

marker = sys.argv[1]
compile_closed = compiling.compile_closed

def compile_that_takes_ten_minutes(*args, **kwargs):
    threading.Event().wait(600)
    open(marker, "w").write("compiled")
    return compile_closed(*args, **kwargs)

compiling.compile_closed = compile_that_takes_ten_minutes
f = numbax.jit(lambda x: np.sin(x) + 1.0, backend="cpu", tiered=True)
print(f(np.zeros(3)).tolist(), f.interpreted_calls)
"""


def test_a_finished_script_does_not_wait_for_a_background_compile(tmp_path):
    """The compiling thread is a daemon: the script ends with its last line, the compile
    (ten minutes here) is dropped. The guard is subprocess's timeout, not a clock."""
    marker = tmp_path / "compiled"
    env = dict(os.environ, NUMBAX_TIERED="1", NUMBAX_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", _EXITS_WHILE_COMPILING, str(marker)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[1.0, 1.0, 1.0] 1"
    assert not marker.exists()
