"""How a time is taken: the method every row of the suite shares.

- The first call is excluded: it compiles (numbax, JAX, Numba) and warms caches. A second,
  calibration call is excluded too.
- A sample is `calls_per_sample` back-to-back calls, each followed by the implementation's
  `sync` (JAX `block_until_ready`, CUDA synchronize) so the clock reads finished work; the
  count is chosen so a sample lasts at least `min_sample_s`, which makes a microsecond call
  measurable. The figure is the sample's time divided by its calls.
- Samples repeat until the row's time budget is spent (at least `min_samples`, at most
  `max_samples`), or exactly `--repeat` times when that is given.
- The rows of one workload take turns: the samples are taken in `ROUNDS` rounds, and in each
  round every row takes its share in a block, the order rotating from round to round. The
  machine's speed drifts over seconds (other tenants, frequency, memory placement), and rows
  timed one after the other would carry that drift into their ratio; taking turns spreads it
  over all of them.
- Reported: the median, and the spread as min-max (the quartiles are in the JSON). With the
  few samples a budget allows, min-max hides less than an interquartile range.
- Before each of its blocks the row waits `settle_s`: thread pools spin for up to ~0.1 s
  after their last job (OpenBLAS does; NumPy and SciPy, which Numba's np.dot calls, each
  load their own OpenBLAS), and on a machine with few cores the previous row's spinning
  pool slows this row's BLAS calls several times over, measured here.
- After the settle, the row warms up again, untimed, for `warmup_s` (single-call rows, each
  a new compile or process, do not). Measured on this machine (a KVM guest, 2 vCPUs): after
  0.1 s or more of idle, the scheduler wakes a library's worker thread on the CPU the
  calling thread is on and leaves it there for 40-100 ms, so two threads share one CPU:
  the MLP step's calls took 3.7-4.5 ms (its one-thread time) for 10-30 calls, then 2.2 ms
  back to back. A block of one 20 ms sample after the settle timed only that window, for
  every library (JAX's step 2.0-2.4 ms against 1.7 ms); a training loop, whose steps run
  back to back, never sees it.
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
    warmup_s: float = 0.0
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


ROUNDS = 3


@dataclass(frozen=True)
class Contender:
    """One row ready to be timed: `call` has already run (compiled, warmed up and checked).

    `sync` waits for a result; `between` runs, untimed, before each sample of a single-call
    row (numbax waits there for the background compiles its earlier first calls left running,
    which would otherwise compete with this sample's interpreted call for the GIL); `finish`
    runs after each of the row's blocks, so that nothing it left running slows the next row.
    """

    call: Callable[[], Any]
    sync: Callable[[Any], None]
    between: Callable[[], None] | None = None
    finish: Callable[[], None] | None = None


def _calls_per_sample(contender: Contender, settings: TimingSettings) -> int:
    once = _timed_calls(contender.call, contender.sync, 1)
    if once >= settings.min_sample_s:
        return 1
    wanted = math.ceil(settings.min_sample_s / max(once, 1e-9))
    return min(wanted, settings.max_calls_per_sample)


def _warm_up(contender: Contender, seconds: float) -> None:
    """Untimed calls for ``seconds`` (see the module doc); none where ``seconds`` is 0."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        contender.sync(contender.call())


def _share(wanted: int, taken: int, rounds_left: int) -> int:
    """This round's part of the samples still wanted, rounded up."""
    return max(0, math.ceil((wanted - taken) / rounds_left))


def _block(
    contender: Contender, calls: int, at_least: int, at_most: int, budget_s: float
) -> list[float]:
    """One row's samples in one round: ``at_least`` of them, more while the budget lasts."""
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < at_least or (
        len(samples) < at_most and time.perf_counter() - start < budget_s
    ):
        if contender.between is not None:
            contender.between()
        samples.append(_timed_calls(contender.call, contender.sync, calls) / calls)
    return samples


def measure_in_turns(
    contenders: list[Contender],
    settings: TimingSettings,
    single_call_samples: bool = False,
    rounds: int = ROUNDS,
) -> list[Timing | Exception]:
    """Time the rows of one workload taking turns (see the module's docstring).

    `single_call_samples` is for calls that are each a new compilation or a new process:
    every call is its own sample and none is spent on calibration. Each row gets its own
    result: its `Timing`, or the exception it raised while being timed (the other rows go on).
    """
    outcomes: list[list[float] | Exception] = [[] for _ in contenders]
    calls = [1] * len(contenders)
    spent_s = [0.0] * len(contenders)
    for round_index in range(rounds):
        rounds_left = rounds - round_index
        # The budget is the row's over all rounds: a row whose samples overran it in
        # earlier rounds takes only the minimum in this one.
        budget_s = settings.budget_s * (round_index + 1) / rounds
        for offset in range(len(contenders)):
            index = (round_index + offset) % len(contenders)
            samples, contender = outcomes[index], contenders[index]
            if isinstance(samples, Exception):
                continue
            time.sleep(settings.settle_s)
            try:
                if round_index == 0 and not single_call_samples:
                    calls[index] = _calls_per_sample(contender, settings)
                if not single_call_samples:
                    _warm_up(contender, settings.warmup_s)
                start = time.perf_counter()
                samples += _block(
                    contender,
                    calls[index],
                    _share(settings.min_samples, len(samples), rounds_left),
                    _share(settings.max_samples, len(samples), rounds_left),
                    budget_s - spent_s[index],
                )
                spent_s[index] += time.perf_counter() - start
            except Exception as error:
                outcomes[index] = error
            finally:
                if contender.finish is not None:
                    contender.finish()
    return [
        outcome if isinstance(outcome, Exception) else Timing(tuple(outcome), calls[index])
        for index, outcome in enumerate(outcomes)
    ]


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
