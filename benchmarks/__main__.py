"""`python -m benchmarks`: numbax against its peers, in one run, with a table, JSON and a chart.

    python -m benchmarks                      # default backend: cuda if a GPU is visible, else cpu
    python -m benchmarks --quick              # small sizes, seconds: the CI smoke test
    python -m benchmarks --only chain,softmax --repeat 20
    python -m benchmarks --group kernels      # PolyBench-style kernels, with first-call times
    python -m benchmarks --group linalg       # numpy.linalg and sort against NumPy and JAX
    python -m benchmarks --group fft          # numpy.fft: a 2^20 fft, a batched rfft; NumPy, JAX
    python -m benchmarks --group math         # tanh, exp, log, expit, erf, sin, cos; f32, f64
    python -m benchmarks --group compile_scaling  # compile time against program size, and JAX's
    python -m benchmarks --group models       # training steps, GP, n-body, stencils vs JAX
    python -m benchmarks --group models --loaded  # ... and again beside two busy processes
    python -m benchmarks --backend cpu --update-results   # refresh benchmarks/RESULTS.md

Exits 1 when any implementation disagrees with NumPy or fails; "not supported yet" rows and
peers that are not installed do not count against it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from . import chart, compile_scaling, model_group, report
from .fft import FFT_WORKLOAD_BUILDERS
from .kernel_workloads import KERNEL_WORKLOAD_BUILDERS
from .linalg import LINALG_WORKLOAD_BUILDERS
from .machine import blas_kernels, busy_warning, describe, load_average
from .math_functions import MATH_WORKLOAD_BUILDERS
from .model_workloads import MODEL_WORKLOAD_BUILDERS
from .peers import make_peers
from .runner import FAILED, any_failed, run_suite
from .timing import TimingSettings
from .workloads import (
    GPU_ONLY,
    NARROW_WORKLOAD_BUILDERS,
    SINGLE_CALL_STYLES,
    WORKLOAD_BUILDERS,
    Workload,
    make_workloads,
    workload_names,
)

DEFAULT_OUT = Path(__file__).resolve().parent / "out"

# Seconds of timing per workload, shared by its rows: the full run takes a few minutes on a
# 2-core machine, the quick one seconds. Compilation, warm-up and checks come on top.
WORKLOAD_BUDGET_S = {"quick": 0.4, "full": 12.0}
SAMPLES = {"quick": (2, 5), "full": (3, 30)}  # (min, max) when --repeat is not given
MIN_SAMPLE_S = {"quick": 1e-3, "full": 0.02}
SETTLE_S = {"quick": 0.05, "full": 0.3}  # see timing.py: other libraries' threads go idle
WARMUP_S = {"quick": 0.0, "full": 0.15}  # see timing.py: the row's threads spread again

# Every workload, in run order. The kernels group takes minutes at full size, so the default
# run (CI's) leaves it out; `--group kernels` or `--group all` runs it, `--only` any of it.
ALL_BUILDERS = WORKLOAD_BUILDERS | KERNEL_WORKLOAD_BUILDERS | LINALG_WORKLOAD_BUILDERS
ALL_BUILDERS |= FFT_WORKLOAD_BUILDERS | NARROW_WORKLOAD_BUILDERS | MATH_WORKLOAD_BUILDERS
GROUPS = {
    "default": WORKLOAD_BUILDERS,
    "kernels": KERNEL_WORKLOAD_BUILDERS,
    "linalg": LINALG_WORKLOAD_BUILDERS,
    "fft": FFT_WORKLOAD_BUILDERS,
    "narrow": NARROW_WORKLOAD_BUILDERS,
    "math": MATH_WORKLOAD_BUILDERS,
    "all": ALL_BUILDERS,
}
# Groups that are a table of their own rather than workloads run against every peer.
SEPARATE_GROUPS = {
    "compile_scaling": compile_scaling.main,
    "models": lambda args: model_group.main(args, settings_for(args)),
}


def gpu_visible() -> bool:
    """Whether Numba sees a CUDA GPU; numba.cuda is imported only to answer this."""
    try:
        from numba import cuda
    except ImportError:
        return False
    return cuda.is_available()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--backend",
        choices=("cpu", "cuda", "interpret"),
        help="numbax backend (default: cuda if a GPU is visible, else cpu)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and a short time budget: the whole run in seconds",
    )
    parser.add_argument(
        "--smaller",
        action="store_true",
        help="the CPU suite's rows at smaller sizes (chain 2^22, softmax and layer norm "
        "2048x1024, MLP batch 64), where fixed costs weigh more",
    )
    parser.add_argument(
        "--group",
        choices=tuple(GROUPS) + tuple(SEPARATE_GROUPS),
        default="default",
        help="which workloads to run: default (the suite), kernels (scientific kernels, "
        "opt-in: minutes at full size), linalg (solve, cholesky, svd, sort), all, "
        "compile_scaling (trace/optimise/compile time of 10 to 10,000 ops, numbax and JAX), "
        "models (training steps and scientific programs: time to compiled code and steady "
        "state, numbax and JAX)",
    )
    parser.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        help=f"run only these workloads, of any group: {', '.join(ALL_BUILDERS)}; the "
        "bandwidth ceiling is added when a selected workload is read against it",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help="exactly N timed samples per row (default: as many as the time "
        "budget allows, at least 3, or 2 with --quick)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="where results.json, results.md and chart.png go (default: benchmarks/out)",
    )
    parser.add_argument(
        "--loaded",
        action="store_true",
        help="--group models: time the steady state again beside two busy-loop processes "
        "and report each library's slowdown (loaded/quiet)",
    )
    parser.add_argument(
        "--cold-samples",
        type=int,
        metavar="N",
        help="--group models: fresh processes per library for the time to compiled code, "
        "and pairs for the MLP step by import order (default 3, 1 with --quick; 0 skips them)",
    )
    parser.add_argument(
        "--update-results",
        action="store_true",
        help="write the Markdown table into benchmarks/RESULTS.md (CPU or GPU section by backend)",
    )
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.update_results and (args.quick or args.backend == "interpret"):
        parser.error(
            "--update-results records full-size figures of a compiled backend: "
            "drop --quick, use --backend cpu or cuda"
        )
    if args.smaller and args.quick:
        parser.error("--smaller picks full-run sizes: drop --quick")
    if args.update_results and (args.group != "default" or args.only or args.smaller):
        # RESULTS.md's sections hold the default suite; another selection would replace it.
        parser.error("--update-results records the default suite: drop --group and --only")
    if (args.loaded or args.cold_samples is not None) and args.group != "models":
        parser.error("--loaded and --cold-samples belong to --group models")
    if args.cold_samples is not None and args.cold_samples < 0:
        parser.error("--cold-samples must be at least 0")
    if args.group == "models":
        args.backend = args.backend or "cpu"
        args.names = model_group.names_of(args.only)
        for name in args.names:
            if name not in MODEL_WORKLOAD_BUILDERS:
                parser.error(
                    f"unknown workload {name!r}; choose from {', '.join(MODEL_WORKLOAD_BUILDERS)}"
                )
        return args
    if args.backend is None:
        args.backend = "cuda" if gpu_visible() else "cpu"
    elif args.backend == "cuda" and not gpu_visible():
        parser.error("--backend cuda: Numba sees no CUDA GPU (numba.cuda.is_available() is False)")
    available = workload_names(on_gpu=args.backend == "cuda", builders=ALL_BUILDERS)
    args.names = [name for name in available if name in GROUPS.get(args.group, ())]
    if args.only:
        args.names = [name.strip() for name in args.only.split(",") if name.strip()]
        for name in args.names:
            if name in GPU_ONLY and name not in available:
                parser.error(f"workload {name!r} runs only with --backend cuda")
            if name not in available:
                parser.error(f"unknown workload {name!r}; choose from {', '.join(available)}")
    return args


def settings_for(args: argparse.Namespace):
    mode = "quick" if args.quick else "full"

    def settings(workload: Workload, n_rows: int) -> TimingSettings:
        min_samples, max_samples = SAMPLES[mode]
        if args.quick and workload.style in SINGLE_CALL_STYLES:
            # Each sample is a compilation or a whole process: one is enough for a smoke test.
            min_samples = 1
        if args.repeat is not None:
            min_samples = max_samples = args.repeat
        return TimingSettings(
            budget_s=WORKLOAD_BUDGET_S[mode] / max(n_rows, 1),
            min_samples=min_samples,
            max_samples=max_samples,
            min_sample_s=MIN_SAMPLE_S[mode],
            settle_s=SETTLE_S[mode],
            warmup_s=WARMUP_S[mode],
        )

    return settings


def size_name(args: argparse.Namespace) -> str:
    return "quick" if args.quick else ("smaller" if args.smaller else "full")


def select_workloads(args: argparse.Namespace) -> list[Workload]:
    on_gpu = args.backend == "cuda"
    workloads = make_workloads(args.names, on_gpu, args.quick, ALL_BUILDERS, args.smaller)
    wants_ceiling = any(w.bytes_moved is not None for w in workloads if w.style != "copy")
    if wants_ceiling and "bandwidth" not in args.names:
        workloads = (
            make_workloads(["bandwidth"], on_gpu, args.quick, smaller=args.smaller) + workloads
        )
    return workloads


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.group in SEPARATE_GROUPS:
        return SEPARATE_GROUPS[args.group](args)
    # No OMP_WAIT_POLICY: Numba's workers (numbax's and the Numba rows') wait as numbax
    # has them wait, a bounded spin then sleep (threads.launch_numba_threads), which hands
    # the cores back well before the next row's library runs; a policy set here would be
    # the user's choice, which numbax keeps, and the suite would time another numbax.
    options = {
        "backend": args.backend,
        "quick": args.quick,
        "smaller": args.smaller,
        "group": args.group,
        "workloads": args.names,
        "repeat": args.repeat,
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "unset"),
    }
    with tempfile.TemporaryDirectory(prefix="numbax-bench-") as scratch:
        # Before numbax is first imported: in this process numbax compiles into an empty disk
        # cache, so no figure (compile latency above all) is a hit left by an earlier run.
        os.environ["NUMBAX_CACHE_DIR"] = os.path.join(scratch, "numbax-cache")
        peers, missing = make_peers(args.backend, scratch)
        machine = describe(args.backend, {peer.label: peer.version for peer in peers}, missing)
        warning = busy_warning(machine["load_average_start"], machine["cores_usable"])
        if warning:
            print(f"warning: {warning}", file=sys.stderr, flush=True)
        workloads = select_workloads(args)
        print(
            f"numbax benchmarks: backend {args.backend}, {size_name(args)}"
            f" sizes, {len(workloads)} workloads, peers {', '.join(p.label for p in peers)}",
            file=sys.stderr,
            flush=True,
        )
        results = run_suite(workloads, peers, settings_for(args))
        machine["load_average_end"] = load_average()
        machine["blas"] = blas_kernels()

    print(report.format_table(results, machine, options))
    paths = report.write_outputs(results, machine, options, args.out)
    chart_path = args.out / "chart.png"
    if chart.write_chart(results, machine, options, chart_path):
        paths["chart"] = chart_path
    else:
        print("chart skipped: matplotlib is not installed", file=sys.stderr)
    if args.update_results:
        section = "gpu" if args.backend == "cuda" else "cpu"
        report.update_results_md(paths["markdown"].read_text(), section)
        paths["RESULTS.md"] = report.RESULTS_MD
    print("wrote " + ", ".join(str(path) for path in paths.values()), file=sys.stderr)

    if any_failed(results):
        failed = [
            f"{r.workload.name}/{row.implementation}"
            for r in results
            for row in r.rows
            if row.status == FAILED
        ]
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("every implementation that ran agrees with NumPy", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
