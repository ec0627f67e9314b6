"""The compile_scaling benchmark group: every stage measured, answers checked, the table
shows the growth from one size to the next."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import compile_scaling

pytest.importorskip("numba")


def test_each_shape_has_the_operations_it_is_named_for():
    import numbax

    for shape, make in compile_scaling.SHAPES.items():
        for ops in (100, 1000):
            function, args = make(np, ops)
            eqns = len(numbax.make_jaxpr(function)(*args).eqns)
            assert 0.5 * ops <= eqns <= 1.1 * ops, (shape, ops, eqns)


def test_a_small_run_measures_every_stage_and_formats_the_growth(monkeypatch):
    monkeypatch.setitem(compile_scaling.SIZES, "quick", (10, 20))
    shapes = {"straight_line": compile_scaling.straight_line}  # two compiles each: enough
    monkeypatch.setattr(compile_scaling, "SHAPES", shapes)
    rows = compile_scaling.run("quick")
    assert [(r.shape, r.ops) for r in rows] == [("straight_line", 10), ("straight_line", 20)]
    for row in rows:
        stages = row.numbax
        for value in (stages.trace_s, stages.optimize_s, stages.codegen_s, stages.compile_s):
            assert value is not None and value > 0
        assert stages.slowest_pass and not stages.note
    table = compile_scaling.format_table(rows, "test machine")
    assert table.count("\n| ") == len(rows) + 1  # the header and one line per row
    assert "(x" in table  # the factor over the previous size
