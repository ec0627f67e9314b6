"""When a tiered call waits for the compiled program rather than interpret a program a
second time (backends/tiered.py): an interpreted call that took longer than the compile
has left. The clock is injected and which tier answered is read from counters; nothing
here is timed."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
from numbax.backends import compile_progress
from numbax.backends import tiered as tiering
from numbax.config import config

X = np.linspace(-1.0, 1.0, 5)


def program(x):
    return np.sin(x) * 2.0 + 1.0


class SteppingClock:
    """Every read is ``step`` seconds after the one before."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class CompiledStub:
    """A compiled program that answers with NumPy and counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return [program(x)]


def held_compile(release: threading.Event, compiled: CompiledStub):
    def compile_program():
        release.wait()
        return compiled

    return compile_program


def tiered(compile_program, clock) -> tiering.TieredExecutable:
    closed = numbax.make_jaxpr(program)(X)
    return tiering.TieredExecutable(closed, compile_program, "program", clock=clock)


def second_call_beside_the_compile(executable, release) -> list:
    """The second call in a thread; the compile is released once that call has either
    begun waiting or been interpreted to the end, so neither outcome depends on time."""
    answer = []
    caller = threading.Thread(target=lambda: answer.append(executable(X)))
    caller.start()
    while caller.is_alive() and executable.waited_calls == 0:
        caller.join(0.01)
    release.set()
    caller.join()
    return answer


def test_a_call_slower_than_the_compile_left_waits_for_the_compiled_program(monkeypatch):
    monkeypatch.setattr(tiering, "COMPILE_S_PER_EQN", 1.0)  # 3 s for this program
    release, compiled = threading.Event(), CompiledStub()
    # Each clock read is 10 s on while the first call runs, which takes 20 s; then the
    # clock stands still, 10 s after the compile started.
    clock = SteppingClock(10.0)
    executable = tiered(held_compile(release, compiled), clock)
    (first,) = executable(X)
    clock.step = 0.0
    np.testing.assert_allclose(first, program(X), rtol=1e-12)
    assert executable.first_call_s == pytest.approx(20.0)  # two reads: start, then end
    # The size's estimate (3 s) is spent: the compile is given as long again as it has
    # run, 10 s, less than the call took.
    assert executable.remaining_compile_s() == pytest.approx(10.0)
    (answer,) = second_call_beside_the_compile(executable, release)
    np.testing.assert_allclose(answer[0], program(X), rtol=1e-12)
    assert (executable.interpreted_calls, executable.waited_calls, compiled.calls) == (1, 1, 1)


def test_a_compile_past_its_estimate_does_not_make_a_quick_call_wait(monkeypatch):
    """A compile that outran the estimate may never end (a hung compile, or one held
    back as here): a call quicker than the compile has run so far is interpreted."""
    monkeypatch.setattr(tiering, "COMPILE_S_PER_EQN", 0.001)
    release, compiled = threading.Event(), CompiledStub()
    executable = tiered(held_compile(release, compiled), SteppingClock(1.0))
    executable(X)
    (answer,) = second_call_beside_the_compile(executable, release)
    np.testing.assert_allclose(answer[0], program(X), rtol=1e-12)
    assert (executable.interpreted_calls, executable.waited_calls) == (2, 0)


def test_a_call_faster_than_the_compile_left_is_interpreted(monkeypatch):
    monkeypatch.setattr(tiering, "COMPILE_S_PER_EQN", 1e6)
    release, compiled = threading.Event(), CompiledStub()
    executable = tiered(held_compile(release, compiled), SteppingClock(0.001))
    executable(X)
    (answer,) = second_call_beside_the_compile(executable, release)
    np.testing.assert_allclose(answer[0], program(X), rtol=1e-12)
    assert (executable.interpreted_calls, executable.waited_calls, compiled.calls) == (2, 0, 0)
    assert executable.wait() is compiled


def test_the_time_left_comes_from_the_compiles_progress_once_it_has_some(monkeypatch):
    monkeypatch.setattr(tiering, "COMPILE_S_PER_EQN", 1e6)
    registered, release, compiled = threading.Event(), threading.Event(), CompiledStub()
    progress_clock = SteppingClock(0.0)

    def compile_with_progress():
        progress = compile_progress.CompileProgress("program", clock=progress_clock)
        progress.expect([SimpleNamespace(key=k) for k in "abc"])
        progress_clock.now += 6.0
        progress.launcher_done()  # 1 share of 4 done in 6 s: 18 s left
        compile_progress._RUNNING[threading.get_ident()] = progress
        registered.set()
        release.wait()
        del compile_progress._RUNNING[threading.get_ident()]
        return compiled

    executable = tiered(compile_with_progress, SteppingClock(0.001))
    assert executable.remaining_compile_s() > 1e6  # no progress yet: the program's size
    executable(X)  # starts the compile when it returns
    registered.wait()
    assert executable.remaining_compile_s() == pytest.approx(18.0)
    release.set()
    assert executable.wait() is compiled


def test_the_log_says_a_call_waited_for_the_compiled_program(monkeypatch, caplog):
    monkeypatch.setattr(tiering, "COMPILE_S_PER_EQN", 0.0)
    monkeypatch.setattr(config, "log_compiles", True)
    release, compiled = threading.Event(), CompiledStub()
    clock = SteppingClock(1.0)  # the first call takes 2 s, then the clock stands still
    executable = tiered(held_compile(release, compiled), clock)
    with caplog.at_level(logging.WARNING, logger="numbax"):
        executable(X)
        clock.step = 0.0
        second_call_beside_the_compile(executable, release)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("numbax: program: waiting for the compiled program: an interpreted")


def test_equations_inside_loops_and_branches_count_once():
    def looped(x):
        return numbax.fori_loop(0, 100, lambda i, c: np.sin(c) + 1.0, x)

    closed = numbax.make_jaxpr(looped)(X)
    body = next(e for e in closed.jaxpr.eqns if e.params)
    inner = sum(tiering.equation_count(j) for j in tiering._sub_jaxprs(body.params))
    assert tiering.equation_count(closed.jaxpr) == len(closed.jaxpr.eqns) + inner
    assert tiering.equation_count(closed.jaxpr) < tiering.interpreted_steps(closed.jaxpr)


def test_the_summary_for_repr_says_which_tier_answered(monkeypatch):
    monkeypatch.setattr(tiering, "COMPILE_S_PER_EQN", 1.0)
    release, compiled = threading.Event(), CompiledStub()
    clock = SteppingClock(10.0)
    executable = tiered(held_compile(release, compiled), clock)
    assert tiering.tiers_summary([executable]) == "; 1 signature compiling"
    assert not executable.ready
    executable(X)
    clock.step = 0.0  # the call took 20 s, the compile has run 10 s (past its 3 s)
    assert tiering.tiers_summary([executable]) == "; calls: 1 interpreted; 1 signature compiling"
    second_call_beside_the_compile(executable, release)
    summary = tiering.tiers_summary([executable])
    assert summary == "; calls: 1 interpreted, 1 waited for compiled code"
    assert executable.ready
    assert tiering.tiers_summary([]) == ""


def test_repr_of_a_jitted_function_says_which_tier_answered():
    f = numbax.jit(program, backend="cpu", tiered=True)
    np.testing.assert_allclose(f(X), program(X), rtol=1e-12)  # interpreted
    f.wait_compiled()
    assert repr(f).endswith("(backend cpu, 1 signature compiled; calls: 1 interpreted)>")
    np.testing.assert_allclose(f(X), program(X), rtol=1e-12)  # compiled: not counted
    assert repr(f).endswith("(backend cpu, 1 signature compiled; calls: 1 interpreted)>")
    untiered = numbax.jit(program, backend="cpu", tiered=False)
    untiered(X)
    assert repr(untiered).endswith("(backend cpu, 1 signature compiled)>")
