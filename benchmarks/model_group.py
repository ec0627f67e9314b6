"""`python -m benchmarks --group models`: training steps and scientific programs, numbax
against JAX (and PyTorch where installed), from a cold start to steady state.

For every workload of model_workloads.py, in three phases:

1. time to compiled code: `cold_samples` fresh processes per library, taking turns, each
   with empty caches (first_compile.py); numbax `tiered=False`, JAX's first call, PyTorch
   eager's first call and `torch.compile`'s; every answer checked against the float64
   reference.
2. steady state: the suite's runner (runner.py, timing.py): built, checked, then timed
   taking turns; median and min–max. numbax's steady row loads what its last cold process
   compiled from that process's disk cache, so the group compiles each program once more
   at most.
3. with `--loaded`: the steady state again with two busy-loop processes running beside
   it; each library's slowdown is its loaded median over its quiet median (issue #36).

With both transformer_2 and transformer_8 in the run, their time to compiled code is also
taken as pairs of fresh processes in turns (`layer_scaling`, issue #34's 8/2 target).
With mlp_64 in the run, its steady state is taken again in pairs of fresh processes, one
that imported SciPy and scikit-learn before numbax and one that imported numbax first
(import_order.py, issue #36: import order must not change numbax's speed).

The table (report.models_table) has one line per workload; results.json keeps every row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace

from . import import_order, report
from .first_compile import first_compile_call
from .implementation import NotSupportedYet, PeerUnavailable
from .machine import busy_warning, describe, load_average
from .model_workloads import MODEL_WORKLOAD_BUILDERS, model_workload
from .peers import JaxPeer, NumbaxPeer, TorchCpuPeer
from .runner import (
    FAILED,
    NOT_SUPPORTED,
    OK,
    Row,
    WorkloadResult,
    first_line,
    mismatch_summary,
    run_suite,
)
from .timing import Timing, TimingSettings

COLD_LIBRARIES = ("numbax", "jax")
COLD_SAMPLES = {"quick": 1, "full": 3}
BUSY_PROCESSES = 2
BUSY_LOOP = "while True: pass"


def make_peers(scratch_dir: str) -> tuple[list, dict[str, str]]:
    """numbax, JAX and PyTorch (eager and torch.compile) on the CPU, and why any of the
    last two is missing."""
    peers, missing = [NumbaxPeer("cpu", scratch_dir)], {}
    for label, make in (("jax", lambda: JaxPeer(False, scratch_dir)), ("torch", TorchCpuPeer)):
        try:
            peers.append(make())
        except PeerUnavailable as error:
            missing[label] = str(error)
    return peers, missing


def cold_libraries(peers: list) -> tuple[str, ...]:
    """The libraries timed from a cold start: numbax, JAX, and each PyTorch row."""
    torch = [TorchCpuPeer.LABELS for peer in peers if isinstance(peer, TorchCpuPeer)]
    return COLD_LIBRARIES + tuple(label for labels in torch for label in labels)


# --- phase 1: time to compiled code -------------------------------------------------------


def cold_result(
    workload, scale: str, samples: int, scratch_dir: str, libraries: tuple[str, ...]
) -> tuple[WorkloadResult, dict[str, str]]:
    """Each library's time to compiled code, `samples` fresh processes each, taking turns;
    and the disk cache each library's last process filled."""
    rows = {library: Row(library, OK, is_numbax=library == "numbax") for library in libraries}
    seconds: dict[str, list[float]] = {library: [] for library in libraries}
    caches: dict[str, str] = {}
    start = time.perf_counter()
    expected = workload.reference()
    for sample in range(samples):
        turn = sample % len(libraries)
        order = libraries[turn:] + libraries[:turn]
        for library in order:
            row = rows[library]
            if row.status != OK:
                continue
            try:
                figure, answer, caches[library] = first_compile_call(
                    library, workload.name, scale, scratch_dir
                )()
            except NotSupportedYet as error:
                row.status, row.reason = NOT_SUPPORTED, str(error)
                continue
            except Exception as error:
                row.status, row.reason = FAILED, f"error: {first_line(error)}"
                continue
            try:
                workload.check(answer, expected)
            except AssertionError as error:
                row.status, row.reason = FAILED, mismatch_summary(error)
                continue
            seconds[library].append(figure)
    for library, row in rows.items():
        if row.status == OK and seconds[library]:
            row.timing = Timing(tuple(seconds[library]), 1)
    cold = replace(workload, name=f"{workload.name} cold", style="first_compile")
    return WorkloadResult(cold, list(rows.values()), time.perf_counter() - start), caches


# Issue #34's 8-layer / 2-layer target, measured in turns (``layer_scaling``).
LAYER_PAIR = ("transformer_2", "transformer_8")


def layer_scaling(scale: str, samples: int, scratch_dir: str) -> dict[str, list[tuple]]:
    """Each library's time to compiled code of the 2- and 8-layer transformer steps as
    ``samples`` pairs of fresh processes, the two in turns (2 then 8, then 8 then 2): the
    table's two rows are minutes apart, and this machine's speed drifts over minutes (the
    same 8-layer compile took 0.98-1.18 s in one run and 1.26-1.41 s in the next), which
    a ratio of the rows takes for the program's. A library that fails is left out (its
    rows say why)."""
    pairs: dict[str, list[tuple]] = {}
    for library in COLD_LIBRARIES:
        try:
            for sample in range(samples):
                names = LAYER_PAIR if sample % 2 == 0 else LAYER_PAIR[::-1]
                seconds = {
                    name: first_compile_call(library, name, scale, scratch_dir)()[0]
                    for name in names
                }
                pairs.setdefault(library, []).append(tuple(seconds[n] for n in LAYER_PAIR))
        except (NotSupportedYet, RuntimeError):
            pairs.pop(library, None)
    return pairs


# --- phase 3: beside busy processes -------------------------------------------------------


def start_busy_loops(count: int = BUSY_PROCESSES) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]


def stop_busy_loops(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
        process.wait()


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(
    workloads: list,
    peers: list,
    scale: str,
    cold_samples: int,
    loaded: bool,
    settings_for: Callable[..., TimingSettings],
    scratch_dir: str,
) -> dict[str, list[WorkloadResult]]:
    """The three phases over `workloads`: the results by phase."""
    from numbax.config import config

    phases: dict = {"cold": [], "steady": [], "loaded": [], "scaling": {}, "import_order": {}}
    # numbax compiled each program in its last cold process: its rows load it from there.
    caches = {}
    for index, workload in enumerate(workloads, start=1):
        _progress(f"models [{index}/{len(workloads)}] {workload.name} ({workload.size})")
        caches[workload.name] = os.path.join(scratch_dir, "numbax-cache")
        if cold_samples:
            _progress(f"    time to compiled code: {cold_samples} fresh process(es) per library")
            cold, cold_caches = cold_result(
                workload, scale, cold_samples, scratch_dir, cold_libraries(peers)
            )
            phases["cold"].append(cold)
            caches[workload.name] = cold_caches.get("numbax", caches[workload.name])
        config.cache_dir = caches[workload.name]
        phases["steady"] += run_suite([workload], peers, settings_for, _progress)
    if cold_samples and set(LAYER_PAIR) <= {w.name for w in workloads}:
        _progress(f"models: {LAYER_PAIR[1]} / {LAYER_PAIR[0]} cold, {cold_samples} pairs in turns")
        phases["scaling"] = layer_scaling(scale, cold_samples, scratch_dir)
    if cold_samples and import_order.WORKLOAD in {w.name for w in workloads}:
        _progress(f"models: {import_order.WORKLOAD} by import order, {cold_samples} pairs in turns")
        try:
            phases["import_order"] = import_order.import_order_pairs(
                scale, cold_samples, scratch_dir
            )
        except (AssertionError, NotSupportedYet, RuntimeError) as error:
            _progress(f"    import order: {first_line(error)}")
            phases["import_order"] = {"failed": str(error)}
    if loaded:
        _progress(f"models: steady state again beside {BUSY_PROCESSES} busy-loop processes")
        busy = start_busy_loops()
        try:
            for workload in workloads:
                config.cache_dir = caches[workload.name]
                phases["loaded"] += run_suite([workload], peers, settings_for, _progress)
        finally:
            stop_busy_loops(busy)
    return phases


def main(args: argparse.Namespace, settings_for: Callable[..., TimingSettings]) -> int:
    """Run by `python -m benchmarks --group models [--quick] [--loaded] [--only ...]`."""
    if args.backend != "cpu":
        print("the models group measures the cpu backend: use --backend cpu", file=sys.stderr)
        return 2
    scale = "quick" if args.quick else "full"
    cold_samples = COLD_SAMPLES[scale] if args.cold_samples is None else args.cold_samples
    # No OMP_WAIT_POLICY for the process: numbax's Numba workers wait as numbax has them
    # wait (threads.launch_numba_threads), and PyTorch's OpenMP runtime reads the variable
    # too: passive, torch.compile's n-body step took 232 ms instead of 15 ms, every one of
    # Inductor's loops waking its workers.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    options = {
        "backend": "cpu",
        "quick": args.quick,
        "group": "models",
        "workloads": args.names,
        "repeat": args.repeat,
        "cold_samples": cold_samples,
        "loaded": args.loaded,
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "unset"),
    }
    with tempfile.TemporaryDirectory(prefix="numbax-models-") as scratch:
        peers, missing = make_peers(scratch)
        for label, reason in missing.items():
            print(f"{label} skipped: {reason}", file=sys.stderr, flush=True)
        machine = describe("cpu", {peer.label: peer.version for peer in peers}, missing)
        warning = busy_warning(machine["load_average_start"], machine["cores_usable"])
        if warning:
            print(f"warning: {warning}", file=sys.stderr, flush=True)
        workloads = [model_workload(name, scale) for name in args.names]
        phases = run(workloads, peers, scale, cold_samples, args.loaded, settings_for, scratch)
    machine["load_average_end"] = load_average()

    table = report.models_table(phases["steady"], phases["cold"], phases["loaded"])
    summary = report.models_summary(
        phases["steady"], phases["cold"], phases["loaded"], phases["scaling"]
    ) + report.import_order_lines(phases["import_order"])
    heading = report.models_heading(machine, options)
    torch_table = report.models_torch_table(phases["steady"], phases["cold"])
    text = "\n".join([*heading, *summary, "", *table, *([""] if torch_table else []), *torch_table])
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "models.md").write_text(text + "\n")
    every_row = [
        *phases["cold"],
        *phases["steady"],
        *(replace_name(r, " loaded") for r in phases["loaded"]),
    ]
    payload = report.to_json(every_row, machine, options)
    payload["models_summary"] = summary
    payload["layer_scaling_pairs"] = phases["scaling"]
    payload["import_order_s"] = phases["import_order"]
    (args.out / "models.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"wrote {args.out / 'models.md'}, {args.out / 'models.json'}", file=sys.stderr)

    failed = [
        f"{r.workload.name}/{row.implementation}"
        for r in every_row
        for row in r.rows
        if row.status == FAILED
    ]
    if "failed" in phases["import_order"]:
        failed.append(f"{import_order.WORKLOAD} by import order")
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("every implementation that ran agrees with its float64 reference", file=sys.stderr)
    return 0


def replace_name(result: WorkloadResult, suffix: str) -> WorkloadResult:
    workload = replace(result.workload, name=result.workload.name + suffix)
    return WorkloadResult(workload, result.rows, result.wall_s)


def names_of(only: str | None) -> list[str]:
    """The workloads `--only` selects from this group (all of it without `--only`)."""
    if not only:
        return list(MODEL_WORKLOAD_BUILDERS)
    return [name.strip() for name in only.split(",") if name.strip()]
