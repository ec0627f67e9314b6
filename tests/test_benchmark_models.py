"""The models benchmark group: every workload agrees with its float64 reference on numbax
and JAX at its quick (tiny) size, the gradient references agree with finite differences,
and the group's table has its columns. Nothing here is timed.

numbax runs on the interpreter: the programs, transforms and references are what is under
test; the compiled path of every workload is what `python -m benchmarks --group models
--quick` runs.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import switches

import numbax
from benchmarks import report
from benchmarks.__main__ import parse_args
from benchmarks.implementation import bind, tree_map
from benchmarks.kernels import EAGER_NUMPY, library_loops
from benchmarks.model_workloads import (
    MODEL_WORKLOAD_BUILDERS,
    model_workload,
    to_float64,
)
from benchmarks.runner import OK, Row, WorkloadResult
from benchmarks.timing import Timing
from benchmarks.workloads import leaves

NAMES = list(MODEL_WORKLOAD_BUILDERS)
# The same program as transformer_1 and _2 with more layers: JAX unrolls and compiles every
# layer, ten seconds and more on one core.
DEEP = {"transformer_4", "transformer_8"}
TRAINING = [name for name in NAMES if model_workload(name, "quick").style != "kernel"]


def _transformed(workload, library, xp, loops):
    function = bind(workload.program, xp, loops)
    if workload.style == "value_and_grad":
        return library.value_and_grad(function)
    if workload.style == "per_example_grad":
        return library.vmap(library.grad(function), in_axes=(None, 0))
    return function


@pytest.fixture(scope="module")
def references():
    return {name: model_workload(name, "quick").reference() for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_numbax_matches_the_float64_reference(name, references):
    import numbax.numpy as xnp

    workload = model_workload(name, "quick")
    loops = library_loops(numbax.fori_loop, numbax.scan)
    function = numbax.jit(_transformed(workload, numbax, xnp, loops), backend="interpret")
    workload.check(tree_map(np.asarray, function(*workload.inputs)), references[name])


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in DEEP else n for n in NAMES]
)
def test_jax_matches_the_float64_reference(name, references):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # as the JAX peer runs: float32 must stay so
    workload = model_workload(name, "quick")
    loops = library_loops(jax.lax.fori_loop, jax.lax.scan)
    function = jax.jit(_transformed(workload, jax, jnp, loops))
    result = jax.tree_util.tree_map(np.asarray, function(*workload.inputs))
    workload.check(tree_map(np.asarray, result), references[name])


def _perturbed(tree, leaf_index: int, flat_index: int, step: float):
    flat = leaves(tree)
    copies = [leaf.copy() for leaf in flat]
    copies[leaf_index].reshape(-1)[flat_index] += step
    iterator = iter(copies)
    return tree_map(lambda _: next(iterator), tree)


@pytest.mark.parametrize("name", TRAINING)
def test_gradient_references_agree_with_finite_differences(name, references):
    """The oracle is numbax's own derivative on the interpreter: central differences of the
    NumPy loss check it at three coordinates of every parameter."""
    workload = model_workload(name, "quick")
    params, batch = to_float64(workload.inputs)
    if workload.style == "per_example_grad":
        batch = tuple(part[:1] for part in batch)  # example 0, the first row of each leaf
        gradients = [g[0] for g in leaves(references[name])]
        loss = lambda p: workload.program(np, EAGER_NUMPY, p, tuple(b[0] for b in batch))  # noqa: E731
    else:
        gradients = leaves(references[name][1])
        loss = lambda p: workload.program(np, EAGER_NUMPY, p, batch)  # noqa: E731
    rng = np.random.default_rng(0)
    step = 1e-6
    for leaf_index, gradient in enumerate(gradients):
        for flat_index in rng.choice(gradient.size, min(3, gradient.size), replace=False):
            above = loss(_perturbed(params, leaf_index, flat_index, step))
            below = loss(_perturbed(params, leaf_index, flat_index, -step))
            estimate = (above - below) / (2 * step)
            np.testing.assert_allclose(
                gradient.reshape(-1)[flat_index], estimate, rtol=1e-5, atol=1e-7
            )


def _result(name: str, medians: dict[str, float], style: str = "value_and_grad"):
    workload = model_workload("mlp_64", "quick")
    from dataclasses import replace

    workload = replace(workload, name=name, style=style)
    rows = []
    for library, median in medians.items():
        row = Row(library, OK, is_numbax=library == "numbax")
        row.timing = Timing((median * 0.9, median, median * 1.2), 1)
        rows.append(row)
    return WorkloadResult(workload, rows, 0.0)


def test_the_table_has_the_columns_of_both_issues():
    steady = [_result("transformer_2", {"numbax": 2.0, "jax": 1.0})]
    steady.append(_result("transformer_8", {"numbax": 3.0, "jax": 1.5}))
    cold = [
        _result("transformer_2 cold", {"numbax": 8.0, "jax": 2.0}, "first_compile"),
        _result("transformer_8 cold", {"numbax": 10.0, "jax": 6.0}, "first_compile"),
    ]
    loaded = [_result("transformer_2", {"numbax": 4.0, "jax": 1.5})]
    quiet_table = report.models_table(steady, cold)
    assert quiet_table[0].strip("| ").split(" | ") == [*report.MODEL_COLUMNS, "status"]
    table = report.models_table(steady, cold, loaded)
    header = table[0].strip("| ").split(" | ")
    assert header == [*report.MODEL_COLUMNS, *report.LOADED_COLUMNS, "status"]
    assert all(len(line.strip("| ").split(" | ")) == len(header) for line in table[2:])
    cells = dict(zip(header, table[2].strip("| ").split(" | "), strict=True))
    assert cells["cold ratio"] == "4.00x" and cells["steady ratio"] == "2.00x"
    assert cells["numbax loaded/quiet"] == "2.00x" and cells["status"] == OK
    summary = "\n".join(report.models_summary(steady, cold, loaded))
    assert "numbax cold / jax first call" in summary
    assert "8 layers / 2 layers" in summary and "loaded/quiet" in summary


def test_models_is_a_group_with_its_own_options():
    args = parse_args(["--group", "models", "--quick"])
    assert args.names == NAMES and args.backend == "cpu" and not args.loaded
    args = parse_args(["--group", "models", "--only", "transformer_2", "--loaded"])
    assert args.names == ["transformer_2"] and args.loaded
    with pytest.raises(SystemExit):
        parse_args(["--loaded"])
    with pytest.raises(SystemExit):
        parse_args(["--group", "models", "--only", "chain"])


def test_the_layer_ratio_is_taken_from_pairs_in_turns(monkeypatch):
    """Issue #34's 8-layer / 2-layer ratio: pairs of fresh processes, 2 then 8, then 8
    then 2, so the machine's drift between the table's rows does not enter it."""
    from benchmarks import model_group

    calls, seconds = [], {"transformer_2": 1.0, "transformer_8": 1.5}

    def fake_first_compile_call(library, name, scale, scratch_dir):
        def run():
            calls.append((library, name))
            factor = 2.0 if library == "jax" else 1.0 + 0.1 * len(calls)
            return seconds[name] * factor, [], scratch_dir

        return run

    monkeypatch.setattr(model_group, "first_compile_call", fake_first_compile_call)
    pairs = model_group.layer_scaling("quick", 2, "/nowhere")
    assert [name[-1] for _, name in calls] == ["2", "8", "8", "2"] * 2
    assert set(pairs) == {"numbax", "jax"} and all(len(p) == 2 for p in pairs.values())
    assert pairs["jax"] == [(2.0, 3.0), (2.0, 3.0)]
    line = report.layer_scaling_line(pairs)
    assert line.startswith("transformer 8 layers / 2 layers, time to compiled code, 2 pairs")
    assert "jax 1.50x (1.50x–1.50x)" in line
    numbax_ratios = sorted(eight / two for two, eight in pairs["numbax"])
    low, high = report._format_ratio(numbax_ratios[0]), report._format_ratio(numbax_ratios[-1])
    assert f"({low}–{high})" in line
    assert report.layer_scaling_line({}) is None


def test_the_mlp_step_by_import_order_runs_in_fresh_processes_in_turns(tmp_path):
    """Issue #36's import-order row: two real processes per pair, SciPy and scikit-learn
    imported before numbax in one, numbax first in the other, each answer checked
    against the float64 reference by the parent (a mismatch raises)."""
    import json
    import subprocess
    import sys

    from benchmarks import import_order

    medians = import_order.import_order_pairs("quick", 1, str(tmp_path))
    assert set(medians) == set(import_order.ORDERS)
    assert all(len(m) == 1 and m[0] > 0 for m in medians.values())
    line = report.import_order_lines(medians)[0]
    assert line.startswith("mlp_64 steady, scipy and sklearn imported before numbax / numbax")
    assert "1 pairs of fresh processes" in line
    # What the SciPy-first process imported, before anything imported numbax.
    out = tmp_path / "one"
    out.mkdir()
    subprocess.run(
        [sys.executable, "-m", "benchmarks.import_order", "scipy, sklearn first", "quick", out],
        cwd=import_order.Path(import_order.__file__).parent.parent,
        check=True,
        capture_output=True,
    )
    before = json.loads((out / "figures.json").read_text())["imported_before_numbax"]
    expected = ["scipy.linalg"] + (["sklearn"] if importlib.util.find_spec("sklearn") else [])
    assert before == expected
    assert report.import_order_lines({}) == []
    assert "FAILED" in report.import_order_lines({"failed": "a mismatch"})[0]


# --- PyTorch's rows (eager and torch.compile), where PyTorch is installed -----------------


@pytest.fixture
def torch_peer():
    """The models group's PyTorch peer; skipped without PyTorch (failed where CI asks for
    these tests: ``NUMBAX_TEST_TORCH=1``, set by ``.ci/run``, which installs it)."""
    from benchmarks.implementation import PeerUnavailable
    from benchmarks.peers import TorchCpuPeer

    try:
        return TorchCpuPeer()
    except PeerUnavailable as error:
        problem = f"PyTorch: {error} (pip install torch)"
        if switches.flag("NUMBAX_TEST_TORCH"):
            pytest.fail(f"NUMBAX_TEST_TORCH=1 but {problem}")
        pytest.skip(problem)


def _torch_answer(peer, workload, label: str):
    [row] = [row for row in peer.implement(workload) if row.label == label]
    function = row.build()
    inputs = tree_map(row.to_device, workload.inputs)
    function(*inputs)  # a second call, as the suite times it: a compiled step runs again
    return tree_map(row.to_numpy, function(*inputs))


@pytest.mark.parametrize("name", NAMES)
def test_torch_eager_matches_the_float64_reference(name, references, torch_peer):
    workload = model_workload(name, "quick")
    workload.check(_torch_answer(torch_peer, workload, "torch"), references[name])


# One program of each style: Inductor's C++ compile takes seconds per program.
COMPILED = ["mlp_64", "per_example_grads", "lstm_scan", "wave_pad"]


@pytest.mark.parametrize("name", COMPILED)
def test_torch_compile_matches_the_float64_reference(name, references, torch_peer):
    from torch._dynamo.utils import counters

    workload = model_workload(name, "quick")
    counters.clear()
    workload.check(_torch_answer(torch_peer, workload, "torch.compile"), references[name])
    # The row is compiled by Dynamo in one graph per function, not eager after a graph break.
    assert counters["stats"]["unique_graphs"] >= 1, dict(counters["graph_break"])
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_the_torch_table_and_summary_read_numbax_over_each_torch_row():
    steady = [_result("mlp_64", {"numbax": 1.0, "jax": 2.0, "torch": 4.0, "torch.compile": 2.0})]
    cold = [
        _result(
            "mlp_64 cold",
            {"numbax": 0.3, "jax": 0.3, "torch": 0.01, "torch.compile": 6.0},
            "first_compile",
        )
    ]
    table = report.models_torch_table(steady, cold)
    header = table[0].strip("| ").split(" | ")
    assert header == list(report.TORCH_COLUMNS)
    cells = dict(zip(header, table[2].strip("| ").split(" | "), strict=True))
    assert cells["numbax / torch"] == "0.25x" and cells["numbax / torch.compile"] == "0.50x"
    assert cells["numbax cold / torch.compile"] == "0.05x"
    summary = report.models_summary(steady, cold)
    assert "numbax steady / torch.compile steady: geometric mean 0.50x" in "\n".join(summary)
    assert "numbax cold / torch first call: geometric mean 30.00x" in "\n".join(summary)
    # Without PyTorch's rows there is no table, and the summary names only JAX.
    jax_only = [_result("mlp_64", {"numbax": 1.0, "jax": 2.0})]
    assert report.models_torch_table(jax_only, []) == []
    assert "torch" not in "\n".join(report.models_summary(jax_only, []))
