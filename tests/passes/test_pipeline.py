"""The pass manager: order, fixed point, debug checks naming the pass that broke the
program, dumps (API flag and NUMBAX_DUMP), the pass log, and ``jit(f).lower``."""

from __future__ import annotations

import os

import numpy as np
import pytest
from passes_util import trace

import numbax
from numbax import passes
from numbax.config import config
from numbax.ir.core import ClosedJaxpr, Jaxpr
from numbax.ir.errors import TypecheckError
from numbax.passes import cse, dce
from numbax.passes.manager import FixedPoint, Pass, run_pipeline

x3 = np.arange(3.0)


def program(x):
    return np.tanh(x * 1.0 + 2.0) * (np.ones(3) * 3.0)


def test_pipeline_reads_like_the_table_of_contents():
    names = [stage.name for stage in passes.PIPELINE]
    assert names == [
        "inline",
        "narrow_floats",
        "cleanup",
        "contractions",
        "fusion",
        "fused_cleanup",
        "memory_plan",
    ]
    cleanup = passes.PIPELINE[2]
    assert [p.name for p in cleanup.passes] == [
        "constant_fold",
        "control_flow",
        "ranges",
        "simplify",
        "loop_invariants",
        "scan_products",
        "cse",
        "dce",
        "loop_dce",
    ]


def test_log_records_every_pass_in_order_until_the_fixed_point():
    _, log = passes.optimize(trace(program, x3), debug_checks=True)
    ran = [(r.group, r.name) for r in log]
    assert ran[0] == (None, "inline")
    rounds = [r.round for r in log if r.group == "cleanup"]
    assert rounds == sorted(rounds) and len(rounds) % len(passes.PIPELINE[2].passes) == 0
    last_round = [r for r in log if r.group == "cleanup" and r.round == rounds[-1]]
    assert not any(r.changed for r in last_round)  # it stopped at the fixed point
    assert any(r.changed for r in log if r.group == "cleanup" and r.round == 1)
    assert [r.index for r in log] == list(range(1, len(log) + 1))
    assert log.totals("simplify")["multiply_by_one"] == 1
    assert log.totals("fusion") == {"elementwise_kernels": 1, "eqns_fused": 3}
    assert "fusion" in str(log) and "multiply_by_one=1" in str(log)


def test_fixed_point_stops_after_max_rounds():
    flip = Pass("flip", lambda closed: (closed, {"flipped": 1}))
    _, log = run_pipeline(
        (FixedPoint("endless", (flip,), max_rounds=3),),
        trace(program, x3),
        dump_dir=None,
        debug_checks=True,
    )
    assert [r.round for r in log] == [1, 2, 3]


def test_an_idempotent_pass_runs_again_only_after_another_pass_changed_the_program():
    """``Pass.idempotent``: one run is the pass's own fixed point, so in a fixed-point
    group it runs again only once another pass has changed the program; each round still
    logs every pass."""
    runs = []

    def counted(closed):
        runs.append(len(closed.jaxpr.eqns))
        return closed, {}

    def changes_once():
        done = []

        def run(closed):
            changes = {} if done else {"changed": 1}
            done.append(True)
            return closed, changes

        return Pass("changes_once", run)

    settles = Pass("settles", counted, idempotent=True)
    # Nothing changes after its first run: the second round logs it, does not run it.
    _, log = run_pipeline(
        (FixedPoint("after", (changes_once(), settles)),),
        trace(program, x3),
        dump_dir=None,
        debug_checks=True,
    )
    assert len(runs) == 1
    assert [(r.name, r.round, r.changed) for r in log] == [
        ("changes_once", 1, True),
        ("settles", 1, False),
        ("changes_once", 2, False),
        ("settles", 2, False),
    ]
    # A pass after it changed the program: it runs again in the second round.
    runs.clear()
    run_pipeline(
        (FixedPoint("before", (settles, changes_once())),),
        trace(program, x3),
        dump_dir=None,
        debug_checks=True,
    )
    assert len(runs) == 2
    fused_cleanup = passes.PIPELINE[5]
    assert [(p.name, p.idempotent) for p in fused_cleanup.passes] == [
        ("cse", True),
        ("dce", True),
    ]


def test_a_pass_runs_only_on_programs_holding_what_it_acts_on():
    """``Pass.acts_on``: the loop passes skip a program without loops (the primitives are
    looked up again only after a pass that changed something); a loop inside a branch's
    body counts."""
    seen = []

    def record(closed):
        seen.append(len(closed.jaxpr.eqns))
        return closed, {}

    loops = Pass("loops", record, acts_on=frozenset({"while", "scan"}))
    shrink = Pass("shrink", dce.run)
    stages = (FixedPoint("rounds", (loops, shrink)),)
    run_pipeline(stages, trace(program, x3), dump_dir=None, debug_checks=True)
    assert seen == []

    def nested(x, flag):
        def body(carry, _):
            return carry * 2.0, None

        return numbax.lax.cond(
            flag, lambda v: numbax.lax.scan(body, v, None, length=3)[0], lambda v: v, x
        )

    closed = trace(nested, x3, True)
    assert "scan" in passes.manager.primitive_names(closed.jaxpr)
    assert "scan" not in {eqn.prim.name for eqn in closed.jaxpr.eqns}  # only in a body
    run_pipeline(stages, closed, dump_dir=None, debug_checks=True)
    assert seen == [len(closed.jaxpr.eqns)]
    pipeline_loops = [p for p in passes.PIPELINE[2].passes if p.acts_on is not None]
    assert {p.name for p in pipeline_loops} == {
        "control_flow",
        "loop_invariants",
        "scan_products",
        "loop_dce",
    }
    assert all("scan" in p.acts_on for p in pipeline_loops)


def _break_program(closed: ClosedJaxpr):
    jaxpr = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], jaxpr.invars, jaxpr.eqns[1:], jaxpr.outvars)), {"broke": 1}


def test_debug_checks_name_the_pass_that_broke_the_program():
    pipeline = (Pass("cse", cse.run), Pass("breaker", _break_program), Pass("dce", dce.run))
    with pytest.raises(TypecheckError, match="after pass 'breaker'"):
        run_pipeline(pipeline, trace(program, x3), dump_dir=None, debug_checks=True)
    run_pipeline(pipeline[:2], trace(program, x3), dump_dir=None, debug_checks=False)


def test_debug_checks_default_to_the_config(monkeypatch):
    monkeypatch.setattr(config, "debug_checks", True)
    with pytest.raises(TypecheckError):
        passes.optimize(_break_program(trace(program, x3))[0])
    monkeypatch.setattr(config, "debug_checks", False)
    passes.optimize(trace(program, x3))


def test_dump_writes_one_file_per_pass_in_order(tmp_path):
    _, log = passes.optimize(trace(program, x3), dump_dir=str(tmp_path))
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".txt"))
    pictures = sorted(f for f in os.listdir(tmp_path) if not f.endswith(".txt"))
    assert pictures == [f.replace(".txt", ".dot") for f in files[:-1]]  # not the analysis
    assert files[0] == "00_input.txt"
    assert files[1:4] == ["01_inline.txt", "02_narrow_floats.txt", "03_constant_fold.txt"]
    assert files[-1] == f"{len(log) + 1:02d}_memory_plan.txt"
    assert len(files) == len(log) + 2
    fusion_file = next(f for f in files if f.endswith("_fusion.txt"))
    text = (tmp_path / fusion_file).read_text()
    assert text.startswith("# ") and "kernel[name='fused_add_tanh_mul'" in text


def test_numbax_dump_writes_a_folder_per_program(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    passes.optimize(trace(program, x3), name="first")
    passes.optimize(trace(program, x3), name="second")
    folders = sorted(os.listdir(tmp_path))
    assert [f.split("_", 1)[1] for f in folders] == ["first", "second"]
    assert "06_simplify.txt" in os.listdir(tmp_path / folders[0])


def test_lowered_prints_the_fused_program():
    f = numbax.jit(program, backend="interpret")
    lowered = f.lower(x3)
    text = lowered.as_text()
    assert "kernel[name='fused_add_tanh_mul' kind='elementwise'" in text
    assert str(lowered.fused) == text
    assert [e.prim.name for e in lowered.jaxpr.eqns][:2] == ["mul", "add"]  # as traced
    assert lowered.pass_log.totals("fusion")["elementwise_kernels"] == 1
    assert lowered.memory_plan.num_buffers == 0
    out = lowered.compile()(x3)
    np.testing.assert_allclose(out, program(x3))


def test_lowered_dumps_its_passes(tmp_path):
    numbax.jit(program).lower(x3).dump_passes(str(tmp_path))
    assert "00_input.txt" in os.listdir(tmp_path)
