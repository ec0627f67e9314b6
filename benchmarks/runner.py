"""Runs the suite: for every workload, every implementation is built and checked, then the
ones that passed are timed taking turns (see timing.py).

An implementation is checked against NumPy's answer before it is timed: a wrong answer, or
any exception that its peer does not declare as "not supported yet", is a FAILED row and is
never timed. After all rows are in, each gets its derived figures: throughput, the ratio to
the best peer of its workload, and the fraction of the memory-bandwidth ceiling.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from .implementation import Implementation, NotSupportedYet, tree_map
from .timing import Contender, Timing, TimingSettings, format_seconds, measure_in_turns
from .workloads import SINGLE_CALL_STYLES, Workload

OK, FAILED, NOT_SUPPORTED, SKIPPED = "ok", "FAILED", "not supported yet", "skipped"


@dataclass
class Row:
    implementation: str
    status: str
    reason: str = ""
    is_numbax: bool = False
    timing: Timing | None = None
    # Derived once the whole suite has run (see `annotate`).
    gb_per_s: float | None = None
    gflop_per_s: float | None = None
    fraction_of_ceiling: float | None = None
    ratio_to_best_peer: float | None = None


@dataclass
class WorkloadResult:
    workload: Workload
    rows: list[Row]
    wall_s: float

    @property
    def best_peer(self) -> Row | None:
        """The fastest correct row that is not numbax: what numbax is measured against."""
        peers = [row for row in self.rows if row.status == OK and not row.is_numbax]
        return min(peers, key=lambda row: row.timing.median_s, default=None)


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def mismatch_summary(error: AssertionError) -> str:
    """assert_allclose's verdict in one line: how many elements, by how much."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    keys = ("Mismatched elements", "Max absolute difference", "Max relative difference")
    verdict = [line for line in lines if line.startswith(keys)]
    where = [line for line in lines if line.startswith(("output", "param", "gradient"))]
    return "wrong answer: " + "; ".join((where[:1] + verdict) or lines[:2])


def prepare(
    workload: Workload, implementation: Implementation, expected
) -> tuple[Row, Contender | None]:
    """Build, run once and check one implementation: its row, and what to time if it passed."""
    row = Row(implementation.label, OK, is_numbax=implementation.is_numbax)
    if implementation.skip_reason is not None:
        row.status, row.reason = SKIPPED, implementation.skip_reason
        return row, None
    try:
        function = implementation.build()
        inputs = tree_map(implementation.to_device, workload.inputs)
        result = function(*inputs)
        implementation.sync(result)
    except NotSupportedYet as error:
        row.status, row.reason = NOT_SUPPORTED, str(error)
        return row, None
    except Exception as error:
        reason = implementation.unsupported_reason(error)
        row.status = FAILED if reason is None else NOT_SUPPORTED
        row.reason = reason or f"error: {first_line(error)}"
        return row, None
    finally:
        implementation.finish()
    try:
        workload.check(tree_map(implementation.to_numpy, result), expected)
    except AssertionError as error:
        row.status, row.reason = FAILED, mismatch_summary(error)
        return row, None
    except Exception as error:
        # An answer the check cannot even read (wrong structure, not an array) is wrong too.
        row.status, row.reason = FAILED, f"wrong answer: {first_line(error)}"
        return row, None
    single = workload.style in SINGLE_CALL_STYLES
    contender = Contender(
        lambda: function(*inputs),
        implementation.sync,
        between=implementation.finish if single else None,
        finish=implementation.finish,
    )
    return row, contender


def run_workload(
    workload: Workload, implementations: list[Implementation], expected, settings: TimingSettings
) -> list[Row]:
    """Every implementation's row: built and checked one by one, then timed taking turns."""
    prepared = [prepare(workload, implementation, expected) for implementation in implementations]
    timed = [(row, contender) for row, contender in prepared if contender is not None]
    outcomes = measure_in_turns(
        [contender for _, contender in timed],
        settings,
        single_call_samples=workload.style in SINGLE_CALL_STYLES,
    )
    for (row, _), outcome in zip(timed, outcomes, strict=True):
        if isinstance(outcome, Exception):
            # It ran once correctly and then broke: still a failure, not "not supported".
            row.status, row.reason = FAILED, f"error while timing: {first_line(outcome)}"
        else:
            row.timing = outcome
    return [row for row, _ in prepared]


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_suite(
    workloads: list[Workload], peers: list, settings_for, progress=_progress
) -> list[WorkloadResult]:
    """Run every workload with every peer. `settings_for(workload, n_rows)` sizes each row."""
    results = []
    for index, workload in enumerate(workloads, start=1):
        start = time.perf_counter()
        progress(f"[{index}/{len(workloads)}] {workload.name} ({workload.size}): {workload.title}")
        implementations = [impl for peer in peers for impl in peer.implement(workload)]
        expected = workload.reference()
        settings = settings_for(workload, len(implementations))
        rows = run_workload(workload, implementations, expected, settings)
        result = WorkloadResult(workload, rows, time.perf_counter() - start)
        progress(f"    {_summary(result)}  [{result.wall_s:.1f} s]")
        results.append(result)
    annotate(results)
    return results


def _summary(result: WorkloadResult) -> str:
    parts = []
    for row in result.rows:
        figure = format_seconds(row.timing.median_s) if row.status == OK else row.status
        parts.append(f"{row.implementation} {figure}")
    return " | ".join(parts)


def bandwidth_ceiling(results: list[WorkloadResult]) -> tuple[float, str] | None:
    """The best copy bandwidth measured (GB/s) and by what, if the ceiling was run."""
    for result in results:
        if result.workload.style == "copy" and result.best_peer is not None:
            best = result.best_peer
            return result.workload.bytes_moved / best.timing.median_s / 1e9, best.implementation
    return None


def annotate(results: list[WorkloadResult]) -> None:
    ceiling = bandwidth_ceiling(results)
    for result in results:
        workload, best = result.workload, result.best_peer
        for row in result.rows:
            if row.status != OK:
                continue
            seconds = row.timing.median_s
            if workload.bytes_moved is not None:
                row.gb_per_s = workload.bytes_moved / seconds / 1e9
                if ceiling is not None:
                    row.fraction_of_ceiling = row.gb_per_s / ceiling[0]
            if workload.flops is not None:
                row.gflop_per_s = workload.flops / seconds / 1e9
            if best is not None:
                row.ratio_to_best_peer = seconds / best.timing.median_s


def any_failed(results: list[WorkloadResult]) -> bool:
    return any(row.status == FAILED for result in results for row in result.rows)
