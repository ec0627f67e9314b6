"""The report's kernel-group line: issue #15's figures, computed from the rows that ran."""

from __future__ import annotations

import pytest

from benchmarks.report import group_summary
from benchmarks.runner import FAILED, OK, Row, WorkloadResult
from benchmarks.timing import Timing
from benchmarks.workloads import Workload


def _result(name: str, style: str, **medians) -> WorkloadResult:
    rows = [
        Row(label, FAILED, is_numbax=label == "numbax")
        if seconds is None
        else Row(label, OK, is_numbax=label == "numbax", timing=Timing((seconds,), 1))
        for label, seconds in medians.items()
    ]
    return WorkloadResult(Workload(name, name, "small", style, None, ()), rows, 0.0)


def test_the_group_line_has_the_geometric_means_and_the_slowest_kernel():
    results = [
        _result("a", "kernel", numbax=1.0, numba=2.0, jax=4.0),  # 0.25 jax, 0.5 numba
        _result("b", "kernel", numbax=4.0, numba=1.0, jax=2.0),  # 2 jax, 4 numba; 4x faster
        _result("c", "kernel", numbax=1.0, numba=None, jax=1.0),  # Numba failed: JAX only
        _result("a_first_call", "first_call", numbax=1.0, jax=4.0, **{"numbax compiled": 2.0}),
        _result("b_first_call", "first_call", numbax=9.0, jax=1.0, **{"numbax compiled": 4.5}),
        _result("chain", "forward", numbax=100.0, jax=1.0),  # not a kernel
    ]
    steady, first, compiled = group_summary(results)
    # jax: (0.25 * 2 * 1) ** (1/3); numba: (0.5 * 4) ** (1/2).
    assert f"geometric mean {(0.5) ** (1 / 3):.2f}x jax (3 kernels)" in steady
    assert f"{2**0.5:.2f}x numba (2 kernels)" in steady
    assert steady.endswith("slowest against the faster peer: b 4.00x")
    assert first.startswith("kernel group, first calls: ")
    assert first.endswith(
        "geometric mean 1.50x jax's first call (2 kernels); slowest: b_first_call 9.00x"
    )
    # Time to compiled code (issue #34): 0.5 and 4.5 against JAX's first calls.
    assert compiled.startswith("kernel group, time to compiled code: ")
    assert compiled.endswith(
        "geometric mean 1.50x jax's first call (2 kernels); slowest: b_first_call 4.50x"
    )


@pytest.mark.parametrize("style", ["forward", "grad"])
def test_a_run_without_kernels_has_no_group_line(style):
    assert group_summary([_result("chain", style, numbax=1.0, jax=2.0)]) == []
