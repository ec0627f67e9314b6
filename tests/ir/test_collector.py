"""The cyclic collector is paused while numbax traces and compiles, and given back as the
user left it (``ir.collector``)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import numbax
from numbax.backends.compile_progress import reported
from numbax.ir import collector


@pytest.fixture
def collector_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_trace_and_a_compile_run_with_the_collector_paused(collector_enabled):
    seen = []

    @numbax.jit(tiered=False)
    def f(x):
        seen.append(gc.isenabled())  # the body runs as it is traced
        return np.tanh(x) * 2.0

    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(f(x), np.tanh(x) * 2.0)
    assert seen == [False]
    assert gc.isenabled()

    class Backend:
        @reported
        def compile(self, closed, name="fn"):
            return gc.isenabled()

    assert Backend().compile(None) is False
    assert gc.isenabled()


def test_a_collector_the_user_disabled_stays_disabled(collector_enabled):
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_compile_that_raises_gives_the_collector_back(collector_enabled):
    with pytest.raises(ValueError), collector.paused():
        raise ValueError("a compile's error")
    assert gc.isenabled()


def test_overlapping_spans_in_threads_enable_it_once_the_last_ends(collector_enabled):
    first_in, second_done, states = threading.Event(), threading.Event(), []

    def first():
        with collector.paused():
            first_in.set()
            second_done.wait(10)
            states.append(("first, after the second ended", gc.isenabled()))

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    with collector.paused():
        states.append(("second", gc.isenabled()))
    second_done.set()
    thread.join(10)
    assert states == [("second", False), ("first, after the second ended", False)]
    assert gc.isenabled()
