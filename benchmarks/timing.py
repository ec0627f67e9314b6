"""How a time is taken: the method every row of the suite shares.

- The first call is excluded: it compiles (numbax, JAX, Numba) and warms caches. A second,
  calibration call is excluded too.
- A sample is `calls_per_sample` back-to-back calls, each followed by the implementation's
  `sync` (JAX `block_until_ready`, CUDA synchronize) so the clock reads finished work; the
  count is chosen so a sample lasts at least `min_sample_s`, which makes a microsecond call
  measurable. The figure is the sample's time divided by its calls.
- Samples repeat until the row's time budget is spent (at least `min_samples`, at most
  `max_samples`), or exactly `--repeat` times when that is given.
- Reported: the median, and the spread as min-max (the quartiles are in the JSON). With the
  few samples a budget allows, min-max hides less than an interquartile range.
- Before the first timed call the row waits `settle_s`: thread pools spin for up to ~0.1 s
  after their last job (OpenBLAS does; NumPy and SciPy, which Numba's np.dot calls, each
  load their own OpenBLAS), and on a machine with few cores the previous row's spinning
  pool slows this row's BLAS calls several times over, measured here.
- The garbage collector is off during a sample, as in `timeit`, so a collection triggered by
  one library's garbage is not billed to the next.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TimingSettings:
    budget_s: float  # per row
    min_samples: int
    max_samples: int
    min_sample_s: float
    settle_s: float
    max_calls_per_sample: int = 100_000


@dataclass(frozen=True)
class Timing:
    samples_s: tuple[float, ...]  # seconds per call, one entry per sample
    calls_per_sample: int

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples_s))

    @property
    def min_s(self) -> float:
        return min(self.samples_s)

    @property
    def max_s(self) -> float:
        return max(self.samples_s)

    @property
    def quartiles_s(self) -> tuple[float, float]:
        q1, q3 = np.percentile(self.samples_s, [25, 75])
        return float(q1), float(q3)


def _timed_calls(call: Callable[[], Any], sync: Callable[[Any], None], calls: int) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            sync(call())
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()


def measure(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    settings: TimingSettings,
    single_call_samples: bool = False,
    between: Callable[[], None] | None = None,
) -> Timing:
    """Time `call` (already warmed up by the caller).

    `single_call_samples` is for calls that are each a new compilation or a new process:
    every call is its own sample and none is spent on calibration. `between` runs, untimed,
    before each sample: it waits for what the samples before left running (numbax's
    background compiles of earlier first calls, which would otherwise compete with this
    sample's interpreted call for the GIL).
    """
    time.sleep(settings.settle_s)
    calls = 1
    if not single_call_samples:
        once = _timed_calls(call, sync, 1)
        if once < settings.min_sample_s:
            wanted = math.ceil(settings.min_sample_s / max(once, 1e-9))
            calls = min(wanted, settings.max_calls_per_sample)
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < settings.min_samples or (
        len(samples) < settings.max_samples and time.perf_counter() - start < settings.budget_s
    ):
        if between is not None:
            between()
        samples.append(_timed_calls(call, sync, calls) / calls)
    return Timing(tuple(samples), calls)


def _unit(seconds: float) -> tuple[str, float]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return unit, scale
    return "ns", 1e-9


def format_seconds(seconds: float) -> str:
    """A time in the unit that reads best: 1.23 s, 45.6 ms, 7.89 µs, 120 ns."""
    unit, scale = _unit(seconds)
    return f"{seconds / scale:.3g} {unit}"


def format_spread(timing: Timing) -> str:
    """min-max in the unit of the maximum: 0.95–1.23 ms."""
    unit, scale = _unit(timing.max_s)
    return f"{timing.min_s / scale:.3g}–{timing.max_s / scale:.3g} {unit}"
