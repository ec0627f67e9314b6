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
    monkeypatch.setitem(compile_scaling.LAYERS, "quick", ())  # test_the_transformer_rows
    rows = compile_scaling.run("quick")
    assert [(r.shape, r.ops) for r in rows] == [("straight_line", 10), ("straight_line", 20)]
    for row in rows:
        stages = row.numbax
        for value in (stages.trace_s, stages.optimize_s, stages.codegen_s, stages.compile_s):
            assert value is not None and value > 0
        assert stages.slowest_pass and not stages.note
        assert stages.to_compiled_s > stages.trace_s + stages.codegen_s
        assert 1 <= stages.kernels <= stages.kernel_calls
        assert 0 <= stages.kernel_hits <= stages.kernels
    table = compile_scaling.format_table(rows, "test machine")
    assert table.count("\n| ") == len(rows) + 1  # the header and one line per row
    assert "(x" in table  # the factor over the previous size


def test_the_table_shows_kernels_cache_hits_and_layer_rows():
    numbax = compile_scaling.Stages(eqns=326, trace_s=0.1, compile_s=30.0, to_compiled_s=31.0)
    numbax.kernels, numbax.kernel_calls, numbax.kernel_hits, numbax.parts = 43, 53, 0, 0
    jax = compile_scaling.Stages(eqns=323, trace_s=0.2, compile_s=3.5, to_compiled_s=3.8)
    rows = [compile_scaling.Row("transformer", 1, numbax, jax)]
    doubled = compile_scaling.Stages(**{**vars(numbax), "to_compiled_s": 40.0, "eqns": 600})
    rows.append(compile_scaling.Row("transformer", 2, doubled, compile_scaling.Stages()))
    table = compile_scaling.format_table(rows, "test machine")
    first, second = table.splitlines()[-2:]
    assert "| transformer | 1 layer (326 eqns) |" in first
    assert "| 43 of 53 calls | 0 | 31.00 s |" in first
    assert "| 3.80 s |" in first  # JAX's time to compiled code
    assert "| 2 layers (600 eqns) |" in second and "40.00 s (x1.29)" in second


@pytest.mark.slow
def test_the_transformer_rows_are_cold_compiles_sharing_their_layers_kernels():
    """Each row compiles in a fresh process with an empty disk cache (no hits), checked
    against the float64 reference; the second layer adds kernel calls, not kernels."""
    one, two = (compile_scaling.transformer_row(layers, "quick") for layers in (1, 2))
    for stages in (one, two):
        assert not stages.note, stages.note
        assert stages.kernel_hits == 0
        assert stages.to_compiled_s >= stages.compile_s > 0
    assert two.kernel_calls > one.kernel_calls
    assert two.kernels - one.kernels < two.kernel_calls - one.kernel_calls
