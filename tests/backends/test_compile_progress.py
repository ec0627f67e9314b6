"""A long compile's progress line (backends/compile_progress.py): what it counts, when it
shows, how it is written. Clocks and streams are injected: nothing here waits or times."""

from __future__ import annotations

import io
import threading
from concurrent.futures import Future
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
from numbax.backends import compile_progress
from numbax.config import config

pytest.importorskip("numba")


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def units(*keys):
    return [SimpleNamespace(key=key) for key in keys]


def test_the_line_counts_distinct_kernels_once_from_either_source():
    clock = Clock()
    progress = compile_progress.CompileProgress("step", clock=clock)
    clock.now += 1.25
    assert progress.line() == "numbax: compiling step: optimising and writing code, 1.2 s"
    worker = Future()
    progress.expect(units("a", "b", "c"), {"a": worker})
    assert progress.line().endswith(": 0/3 kernels, launcher compiling, 1.2 s")
    worker.set_running_or_notify_cancel()
    worker.set_result(None)  # a worker compiled "a"; the address loop then reports it too
    progress.launcher_done()
    for key in ("a", "b"):
        progress.kernel_done(key)
    assert progress.kernels_done == 2
    assert progress.line() == "numbax: compiling step: 2/3 kernels, launcher compiled, 1.2 s"


def test_a_failed_or_cancelled_worker_kernel_is_not_counted():
    progress = compile_progress.CompileProgress("step", clock=Clock())
    failed, cancelled = Future(), Future()
    progress.expect(units("a", "b"), {"a": failed, "b": cancelled})
    failed.set_running_or_notify_cancel()
    failed.set_exception(RuntimeError("worker ended"))
    cancelled.cancel()  # taken back: compiled in the compiling process instead
    assert progress.kernels_done == 0


def test_the_time_left_is_extrapolated_from_the_share_done():
    clock = Clock()
    progress = compile_progress.CompileProgress("step", clock=clock)
    assert progress.remaining_s() is None  # nothing known yet
    progress.expect(units("a", "b", "c"))
    assert progress.remaining_s() is None  # nothing done yet
    clock.now += 6.0
    progress.launcher_done()  # 1 of 4 shares in 6 s: 3 shares left, 18 s
    assert progress.remaining_s() == pytest.approx(18.0)
    for key in "abc":
        progress.kernel_done(key)
    assert progress.remaining_s() == 0.0


@pytest.mark.parametrize("terminal", [True, False])
def test_a_shown_compile_ends_with_a_line_saying_it_ended(terminal):
    clock, stream = Clock(), io.StringIO()
    progress = compile_progress.CompileProgress("step", clock=clock, stream=stream)
    progress.expect(units("a", "b"))
    clock.now += 2.5
    progress.show(terminal)
    progress.kernel_done("a")
    clock.now += 1.0
    progress.show(terminal)
    progress.finish(terminal)
    text = stream.getvalue()
    if terminal:  # one line, rewritten in place, ended by the last
        assert text.count("\n") == 1 and text.count("\r") == 3
        assert text.endswith("\rnumbax: compiled step in 3.5 s\x1b[K\n")
    else:
        assert text.splitlines() == [
            "numbax: compiling step: 0/2 kernels, launcher compiling, 2.5 s",
            "numbax: compiling step: 1/2 kernels, launcher compiling, 3.5 s",
            "numbax: compiled step in 3.5 s",
        ]


def test_a_compile_that_never_showed_writes_nothing():
    stream = io.StringIO()
    compile_progress.CompileProgress("step", clock=Clock(), stream=stream).finish(True)
    assert stream.getvalue() == ""


class ScriptedEvent:
    """An event whose ``wait`` answers from a script and records its timeouts."""

    def __init__(self, answers):
        self.answers, self.timeouts = list(answers), []

    def wait(self, timeout):
        self.timeouts.append(timeout)
        return self.answers.pop(0)

    def is_set(self):
        return False


@pytest.mark.parametrize("terminal", [True, False])
def test_the_reporter_waits_two_seconds_then_refreshes(terminal):
    stream = io.StringIO()
    progress = compile_progress.CompileProgress("step", clock=Clock(), stream=stream)
    progress._finished = ScriptedEvent([False, False, True])
    progress.report(terminal)
    every = compile_progress.REFRESH_S if terminal else compile_progress.PLAIN_EVERY_S
    assert progress._finished.timeouts == [compile_progress.SHOW_AFTER_S, every, every]
    assert stream.getvalue().count("numbax: compiling step") == 2


@pytest.mark.parametrize(
    ("progress", "log_compiles", "terminal", "shows"),
    [
        (True, False, True, True),
        (True, True, False, True),
        (True, False, False, False),
        (False, True, True, False),
    ],
)
def test_it_shows_on_a_terminal_or_with_the_compile_log_unless_off(
    monkeypatch, progress, log_compiles, terminal, shows
):
    monkeypatch.setattr(config, "progress", progress)
    monkeypatch.setattr(config, "log_compiles", log_compiles)
    monkeypatch.setattr("sys.stderr", SimpleNamespace(isatty=lambda: terminal))
    assert compile_progress.showing() is shows


def test_the_environment_variable_turns_it_off(monkeypatch):
    monkeypatch.setenv("NUMBAX_PROGRESS", "0")
    assert type(config)().progress is False
    monkeypatch.delenv("NUMBAX_PROGRESS")
    assert type(config)().progress is True


def test_a_cpu_compile_reports_every_distinct_kernel_and_its_launcher(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    seen = []

    class Recorded(compile_progress.CompileProgress):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self)

    monkeypatch.setattr(compile_progress, "CompileProgress", Recorded)

    def two_layers(x, w):
        h = np.tanh(x @ w + 1.0)
        return np.sum(np.exp(h @ w) * 0.5, axis=1)

    x, w = np.linspace(0.0, 1.0, 12).reshape(3, 4), np.eye(4) * 0.3
    f = numbax.jit(two_layers, backend="cpu", tiered=False)
    np.testing.assert_allclose(f(x, w), two_layers(x, w), rtol=1e-12)
    (progress,) = seen
    stats = f.lower(x, w).compile().compile_stats
    assert progress.kernels_total == sum(stats.kernels.values()) >= 2
    assert progress.kernels_done == progress.kernels_total
    assert progress.launcher_compiled and progress.name == "two_layers"
    assert compile_progress.current() is None  # ended with its compile


def test_a_compile_that_fails_ends_its_progress():
    class Failing:
        @compile_progress.reported
        def compile(self, closed, name="fn"):
            assert compile_progress.current().name == name
            raise ValueError("the compile failed")

    with pytest.raises(ValueError, match="the compile failed"):
        Failing().compile(None, "broken")
    assert compile_progress.current() is None
    assert compile_progress.of_thread(threading.get_ident()) is None
