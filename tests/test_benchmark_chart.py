"""The benchmark chart renders from a small set of results, one bar per row that ran."""

from __future__ import annotations

import pytest

from benchmarks import chart
from benchmarks.runner import FAILED, NOT_SUPPORTED, OK, Row, WorkloadResult, annotate
from benchmarks.timing import Timing
from benchmarks.workloads import Workload

MACHINE = {
    "cpu": "test CPU",
    "cores_usable": 2,
    "virtual_machine": True,
    "memory_gib": 4.0,
    "gpu": None,
}


def _row(label: str, seconds: float | None, status: str = OK) -> Row:
    timing = None if seconds is None else Timing((seconds, seconds), 1)
    return Row(label, status, is_numbax=label.startswith("numbax"), timing=timing)


def _results() -> list[WorkloadResult]:
    chain = Workload("chain", "a chain", "2^16 float32", "forward", None, ())
    grad = Workload("grad", "a gradient", "1e4 float64", "grad", None, ())
    copy = Workload("bandwidth", "a copy", "2^22 float32", "copy", None, (), bytes_moved=2**25)
    results = [
        WorkloadResult(
            chain,
            [
                _row("numbax", 4e-5),
                _row("numpy", 6e-5),
                _row("numba", 1e-3),
                _row("jax", None, NOT_SUPPORTED),
            ],
            0.0,
        ),
        WorkloadResult(
            grad, [_row("numbax", None, FAILED), _row("numpy", 2e-4), _row("jax", 1e-4)], 0.0
        ),
        WorkloadResult(copy, [_row("numpy", 1e-3), _row("numba parallel", 9e-4)], 0.0),
    ]
    annotate(results)
    return results


def test_a_group_has_a_slot_only_for_the_rows_that_ran():
    results = _results()
    labels = chart._ordered_labels(results)
    placed, width = chart.layout(results, labels)
    shown = [[(bar.label, bar.ratio is None) for bar in bars] for bars in placed]
    # jax did not run the chain (no slot); numbax failed the gradient (a slot for its cross).
    assert shown == [
        [("numbax", False), ("numpy", False), ("numba", False)],
        [("numbax", True), ("numpy", False), ("jax", False)],
        [("numpy", False), ("numba parallel", False)],
    ]
    lefts = [bars[0].x for bars in placed]
    assert lefts == sorted(lefts) and width == pytest.approx(
        8 * chart.BAR_WIDTH + 2 * chart.GROUP_GAP
    )
    assert placed[1][2].ratio == pytest.approx(1.0) and placed[0][0].ratio == pytest.approx(
        4e-5 / 6e-5
    )


def test_the_chart_renders_to_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="the chart needs matplotlib (the bench extra)")
    path = tmp_path / "chart.png"
    assert chart.write_chart(_results(), MACHINE, {"backend": "cpu", "quick": True}, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
