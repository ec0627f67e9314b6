"""The GPU check: numbax's CUDA backend on a real GPU, in one command, in under 8 minutes.

    python benchmarks/gpu_check.py OUTDIR                  # on a machine with an NVIDIA GPU
    python benchmarks/gpu_check.py OUTDIR --simulate-tiny  # dry run without a GPU: Numba's
                                                           # CUDA simulator, tiny sizes

Phases, each failing soft (an error is recorded and the next phase runs), with progress on
stdout:

1. device      the GPU, driver and versions.
2. corpus      every case of the shared test corpus (tests/corpus.py) on the device, up to
               ``--signatures`` argument signatures each, checked against NumPy. Numba's
               compiler is CPU-bound, so cases run in worker processes; cases not reached
               within ``--corpus-seconds`` are reported as not run.
3. residency   a result of one jitted call passed to the next stays on the device (no
               host copy), and CuPy / PyTorch device arrays go in without copies when those
               libraries are installed.
   narrow      float16 and bfloat16: an elementwise chain, sums and matmuls against the
               program computed in float32 by NumPy (within one ulp of the narrow dtype),
               through the tiled kernels and, with CuPy, cuBLAS's tensor-core GEMM; then
               the chain's GB/s and the 4096^3 matmul's TFLOP/s against float32.
   collectives  every collective of numbax.distributed (psum, pmax, pmin, all_gather,
               psum_scatter, all_to_all, ppermute, broadcast) on the cuda backend in this
               one process, against NumPy: through a one-process NCCL communicator where
               CuPy has NCCL (recorded: the path, NCCL's version), else host-staged;
               not run without mpi4py.
4. benchmarks  the device's own copy bandwidth (the ceiling), the elementwise chain
               (2^26 float32), row softmax and layer norm (8192x8192 float32), the float32
               matmul (4096^3), the MLP training step and an RNN through scan (control
               flow run by the host, forward and grad), against JAX, CuPy and PyTorch on
               the GPU when installed, with the workloads, timing and report of
               ``python -m benchmarks``.

Writes OUTDIR/gpu_check.json (everything), OUTDIR/gpu_check.txt (the summary and the
table), and the benchmark table as OUTDIR/results.json and OUTDIR/results.md. Exits 1 if
anything that ran failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import threading
import time
import traceback
import zlib
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
TESTS_DIR = REPOSITORY_ROOT / "tests"

PHASES = ("device", "corpus", "residency", "narrow", "collectives", "benchmarks")
BENCHMARKS = [
    "bandwidth",
    "chain",
    "softmax",
    "layer_norm",
    "matmul",
    "mlp_step",
    "rnn",
    "rnn_grad",
]
# Sizes of the dry run: every code path at a size the simulator runs in seconds.
TINY_SIZES = {
    "bandwidth": 1024,
    "chain": 300,
    "rows": (5, 40),
    "matmul_bias_relu": 9,
    "matmul": 9,
    "mlp": (6, 12, 8, 3),
    "grad": 50,
    "rnn": (3, 5, 6, 4),
    "narrow_chain": 300,
    "narrow_matmul": 9,
    "collectives": 24,
}
GPU_NARROW_SIZES = {"narrow_chain": 1 << 26, "narrow_matmul": 4096}
F32_TOLERANCE, F64_TOLERANCE = 1e-6, 1e-12
WORKLOAD_RESERVE_S = 45  # a benchmark workload is started only with this much time left


def progress(message: str) -> None:
    print(f"[gpu_check {time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python benchmarks/gpu_check.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("outdir", type=Path, help="folder for the results")
    parser.add_argument(
        "--simulate-tiny",
        action="store_true",
        help="run under Numba's CUDA simulator with tiny sizes (no GPU needed)",
    )
    parser.add_argument("--signatures", type=int, default=3, help="per corpus case (default 3)")
    parser.add_argument("--corpus-seconds", type=float, default=210.0)
    parser.add_argument("--workers", type=int, default=0, help="corpus processes (0: auto)")
    parser.add_argument("--bench-seconds", type=float, default=8.0, help="timing per workload")
    parser.add_argument("--skip", default="", help="phases to skip, comma separated")
    parser.add_argument(
        "--deadline-seconds",
        type=float,
        default=460.0,
        help="the whole run: later workloads are skipped as it nears, and past it the "
        "results so far are written and the process exits (default 460)",
    )
    return parser.parse_args(argv)


# --- phases -----------------------------------------------------------------------------


def describe_device(simulated: bool) -> dict:
    import numba

    import numbax

    info = {"numbax": numbax.__version__, "numba": numba.__version__, "simulated": simulated}
    from numba import cuda

    info["cuda_available"] = bool(cuda.is_available())
    if not simulated:
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
        info |= {
            "gpu": name,
            "compute_capability": list(device.compute_capability),
            "driver": ".".join(map(str, cuda.cudadrv.driver.driver.get_version())),
            "runtime": ".".join(map(str, cuda.runtime.get_version())),
        }
    progress(f"device: {info}")
    return info


def _tolerance_factor(case, signature, expected) -> float:
    """The corpus's tolerance, except that a float64 result computed from float32
    arguments is compared at float32 precision: the GPU rounds its float32 steps in
    another order than NumPy (sums, matmuls), and float64 cannot hide that."""
    factor = case.tolerance
    if expected.dtype.kind == "f" and expected.dtype.itemsize == 8:
        if any(arg.dtype == "float32" for arg in signature):
            factor *= F32_TOLERANCE / F64_TOLERANCE
    return factor


def corpus_case(task) -> tuple[str, list[dict]]:
    """Run one corpus case's signatures on the device (in a worker process)."""
    position, max_signatures = task
    if str(TESTS_DIR) not in sys.path:
        sys.path.insert(0, str(TESTS_DIR))
    import numpy as np
    from corpus import CASES, assert_array_matches, signature_id

    import numbax

    case = CASES[position]  # by position: some names are shared by dtype variants
    name = case.name
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    results = []
    for signature in case.signatures[:max_signatures]:
        where = f"{name} {signature_id(signature)}"
        start = time.perf_counter()
        entry = {"case": name, "signature": signature_id(signature), "status": "ok"}
        try:
            args = case.arguments(signature, rng)
            out = numbax.jit(case.fn, backend="cuda")(*args)
            got, got_tree = numbax.tree_flatten(numbax.tree_map(np.asarray, out))
            want, want_tree = numbax.tree_flatten(case.oracle(*args))
            assert got_tree == want_tree, f"{where}: tree {got_tree} != {want_tree}"
            for k, (a, b) in enumerate(zip(got, want, strict=True)):
                b = np.asarray(b)
                factor = _tolerance_factor(case, signature, b)
                assert_array_matches(a, b, factor, f"{where} output {k}")
        except NotImplementedError as error:
            entry |= {"status": "unsupported", "reason": _first_line(error)}
        except AssertionError as error:
            entry |= {"status": "FAILED", "reason": str(error)[:2000]}
        except Exception as error:  # noqa: BLE001 - every error is a result here
            entry |= {"status": "FAILED", "reason": f"{type(error).__name__}: {error}"[:2000]}
        entry["seconds"] = round(time.perf_counter() - start, 3)
        results.append(entry)
    return position, results


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def run_corpus(args) -> dict:
    import multiprocessing

    sys.path.insert(0, str(TESTS_DIR))
    from corpus import CASES

    names = [f"{case.name}#{position}" for position, case in enumerate(CASES)]
    workers = args.workers or max(1, min(8, (os.cpu_count() or 2) - 1))
    if args.simulate_tiny:
        workers = min(workers, 2)
    progress(f"corpus: {len(names)} cases, up to {args.signatures} signatures, {workers} workers")
    deadline = time.monotonic() + args.corpus_seconds
    results: list[dict] = []
    done = set()
    context = multiprocessing.get_context("spawn")  # a CUDA context does not survive fork
    pool = context.Pool(workers)
    try:
        tasks = [(position, args.signatures) for position in range(len(CASES))]
        pending = pool.imap_unordered(corpus_case, tasks)
        while len(done) < len(names):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                position, case_results = pending.next(timeout=remaining)
            except multiprocessing.TimeoutError:
                break
            done.add(names[position])
            results += case_results
            for entry in case_results:
                if entry["status"] != "ok":
                    progress(
                        f"  {entry['status']}: {entry['case']} {entry['signature']}: "
                        f"{entry.get('reason', '')[:300]}"
                    )
            if len(done) % 20 == 0:
                progress(f"corpus: {len(done)}/{len(names)} cases")
    finally:
        pool.terminate()
    not_run = [name for name in names if name not in done]
    counts = {}
    for entry in results:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    progress(f"corpus: {counts}, {len(not_run)} cases not reached in the time budget")
    return {"counts": counts, "not_run": not_run, "results": results}


def check_residency() -> dict:
    """A jitted result fed to the next jitted call never visits the host."""
    import numpy as np
    from numba import cuda

    import numbax

    double = numbax.jit(lambda x: x * 2.0 + 1.0, backend="cuda")
    total = numbax.jit(lambda y: (y * y).sum(axis=-1), backend="cuda")
    x = np.linspace(-1.0, 1.0, 4096, dtype=np.float32).reshape(8, 512)
    x_device = cuda.to_device(x)
    double(x_device), total(double(x_device))  # compile first
    copies = {"to_device": 0, "copy_to_host": 0}
    to_device, array_type = cuda.to_device, type(double(x_device))
    copy_to_host = array_type.copy_to_host

    def counted_to_device(*a, **k):
        copies["to_device"] += 1
        return to_device(*a, **k)

    def counted_copy_to_host(self, *a, **k):
        copies["copy_to_host"] += 1
        return copy_to_host(self, *a, **k)

    cuda.to_device, array_type.copy_to_host = counted_to_device, counted_copy_to_host
    try:
        y = double(x_device)
        z = total(y)
    finally:
        cuda.to_device, array_type.copy_to_host = to_device, copy_to_host
    expected = ((x * 2 + 1) ** 2).sum(-1)
    np.testing.assert_allclose(np.asarray(z), expected, rtol=1e-5)
    assert copies == {"to_device": 0, "copy_to_host": 0}, f"host copies: {copies}"
    result = {"host_copies": copies, "result_type": type(y).__name__}
    result["interop"] = _interop(double, x)
    progress(f"residency: {result}")
    return result


def _interop(double, x) -> dict:
    """CuPy and PyTorch device arrays in and out, without copies (when installed)."""
    import importlib.util

    import numpy as np

    outcome = {}
    if importlib.util.find_spec("cupy"):
        try:
            import cupy

            out = cupy.asarray(double(cupy.asarray(x)))
            np.testing.assert_allclose(cupy.asnumpy(out), x * 2 + 1, rtol=1e-6)
            outcome["cupy"] = "ok"
        except Exception as error:  # noqa: BLE001 - recorded
            outcome["cupy"] = f"FAILED: {_first_line(error)}"
    if importlib.util.find_spec("torch"):
        try:
            import torch

            tensor = torch.from_numpy(x).cuda()
            out = torch.as_tensor(double(tensor), device="cuda")
            np.testing.assert_allclose(out.cpu().numpy(), x * 2 + 1, rtol=1e-6)
            outcome["torch"] = "ok"
        except Exception as error:  # noqa: BLE001 - recorded
            outcome["torch"] = f"FAILED: {_first_line(error)}"
    return outcome


def check_narrow_floats(simulated: bool) -> dict:
    """float16 and bfloat16 on the device, checked against the same program computed in
    float32 by NumPy and rounded (``passes.narrow_floats`` then the interpreter), then
    timed against float32: the elementwise chain moves half the bytes, and the matmul
    runs on the tensor cores when cuBLAS takes it."""
    import importlib.util

    import numpy as np

    import numbax
    from numbax.backends.cuda import CudaBackend, CudaOptions
    from numbax.ir import dtypes
    from numbax.ir.interpret import eval_jaxpr
    from numbax.passes import narrow_floats

    sizes = TINY_SIZES if simulated else GPU_NARROW_SIZES
    n, side = sizes["narrow_chain"], sizes["narrow_matmul"]
    with_cublas = [False] + ([True] if importlib.util.find_spec("cupy") else [])
    preset = CudaOptions.for_simulator if simulated else CudaOptions.for_gpu
    rng = np.random.default_rng(16)

    def program(x, y, a, b):
        return np.tanh(x * 1.5) + y, x.sum(), np.maximum(a @ b, 0)

    outcome = {}
    for dtype in [np.dtype(np.float16)] + ([dtypes.bfloat16] if dtypes.bfloat16 else []):
        x, y = (rng.standard_normal(min(n, 1 << 20)).astype(dtype) for _ in range(2))
        a, b = (rng.standard_normal((min(side, 512),) * 2).astype(dtype) for _ in range(2))
        closed = numbax.make_jaxpr(program)(x, y, a, b)
        widened, _ = narrow_floats.run(closed)
        want = eval_jaxpr(widened.jaxpr, widened.consts, x, y, a, b)
        eps = float(dtypes.finfo(dtype).eps)
        for cublas in with_cublas:
            options = preset(cublas=cublas, cublas_min_flops=0)
            executable = CudaBackend(options).compile(closed, "narrow")
            got = [out.copy_to_host() for out in executable(x, y, a, b)]
            for k, (g, w) in enumerate(zip(got, want, strict=True)):
                assert g.dtype == w.dtype == dtype, (str(dtype), k, g.dtype)
                error = np.abs(g.astype(np.float64) - w.astype(np.float64))
                ulps = float(np.max(error / (eps * np.maximum(np.abs(w.astype(np.float64)), 1))))
                assert ulps <= 1, f"{dtype} output {k} (cublas={cublas}): {ulps} ulps off"
        outcome[str(dtype)] = {"checked": "ok", "cublas": with_cublas[-1]}
    # Under the simulator the figures mean nothing: the run only exercises the code.
    outcome["speed"] = _narrow_speed(n, side, with_cublas[-1], repeats=1 if simulated else 5)
    progress(f"narrow: {outcome}")
    return outcome


def check_collectives(simulated: bool) -> dict:
    """Every collective on the device in this one process (a communicator of one: each
    is the identity, or a stack of one), against NumPy; which path ran them."""
    import importlib.util

    if importlib.util.find_spec("mpi4py") is None:
        return {"not_run": "mpi4py is not installed: pip install 'numbax[mpi]'"}
    import numpy as np

    import numbax
    import numbax.distributed as nd
    from numbax.backends.cuda import nccl
    from numbax.config import config

    size = TINY_SIZES["collectives"] if simulated else 1 << 22  # float32: 16 MiB
    x = np.linspace(-1.0, 1.0, size, dtype=np.float32).reshape(4, size // 4)
    cases = {
        "psum": (nd.psum, x),
        "pmax": (nd.pmax, x),
        "pmin": (nd.pmin, x),
        "all_gather": (nd.all_gather, x[None]),
        "psum_scatter": (lambda v: nd.psum_scatter(v, tiled=True), x),
        "all_to_all": (lambda v: nd.all_to_all(v, None, 0, 0, tiled=True), x),
        "ppermute": (lambda v: nd.ppermute(v, [(0, 0)]), x),
        "broadcast": (lambda v: nd.broadcast(v, root=0), x),
    }
    library = nccl.library()
    result = {
        "processes": nd.process_count(),
        "nccl_version": library.get_version() if library is not None else None,
        "collectives": {},
    }
    for name, (collective, expected) in cases.items():
        try:
            got = numbax.jit(collective, backend="cuda")(x).copy_to_host()
            np.testing.assert_array_equal(got, expected)
            result["collectives"][name] = "ok"
        except Exception as error:  # noqa: BLE001 - recorded, then the phase fails
            result["collectives"][name] = f"FAILED: {_first_line(error)}"
    # NCCL ran them iff they made its communicator (the first NCCL call does).
    result["path"] = "nccl" if nccl._COMMUNICATORS else "staged"
    progress(f"collectives: {result}")
    failed = [n for n, outcome in result["collectives"].items() if outcome != "ok"]
    assert not failed, f"collectives failed: {failed}: {result}"
    if library is not None and config.cuda_nccl and not simulated:
        assert result["path"] == "nccl", f"CuPy has NCCL, yet it was not used: {result}"
    return result


def _narrow_speed(n: int, side: int, cublas: bool, repeats: int) -> dict:
    """GB/s of the chain and TFLOP/s of the matmul, per dtype (medians of ``repeats``)."""
    import numpy as np
    from numba import cuda

    import numbax
    from numbax.backends.cuda import CudaBackend, CudaOptions
    from numbax.ir import dtypes

    def median_seconds(function, *args):
        function(*args)
        cuda.synchronize()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            function(*args)
            cuda.synchronize()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    speed = {}
    narrow = [np.dtype(np.float16)] + ([dtypes.bfloat16] if dtypes.bfloat16 else [])
    for dtype in [np.dtype(np.float32)] + narrow:
        x, y = (cuda.to_device(np.ones(n, dtype).view(_bits(dtype))) for _ in range(2))
        x, y = x.view(dtype), y.view(dtype)
        chain = numbax.jit(lambda x, y: np.tanh(x * 1.5) + y * y, backend="cuda")
        seconds = median_seconds(chain, x, y)
        row = {"chain_GBps": round(3 * n * dtype.itemsize / seconds / 1e9, 1)}
        a = np.ones((side, side), dtype)
        closed = numbax.make_jaxpr(lambda a, b: a @ b)(a, a)
        options = dataclasses.replace(CudaOptions.default(), cublas=cublas)
        executable = CudaBackend(options).compile(closed, "mm")
        a_device = cuda.to_device(a.view(_bits(dtype))).view(dtype)
        seconds = median_seconds(executable, a_device, a_device)
        row["matmul_TFLOPs"] = round(2 * side**3 / seconds / 1e12, 1)
        row["matmul_path"] = "cublas" if cublas else "tiled kernel"
        speed[str(dtype)] = row
    return speed


def _bits(dtype):
    """The dtype a host array crosses as (bfloat16's bits; Numba copies raw bytes)."""
    import numpy as np

    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def run_benchmarks(args) -> dict:
    import numpy as np

    sys.path.insert(0, str(REPOSITORY_ROOT))
    from benchmarks import peers as peer_module
    from benchmarks import report, runner, workloads
    from benchmarks.__main__ import settings_for
    from benchmarks.machine import describe

    scale = "gpu"
    if args.simulate_tiny:
        scale = "tiny"
        for name, size in TINY_SIZES.items():
            if name in workloads.SIZES:  # the others are the narrow and collective checks'
                workloads.SIZES[name]["tiny"] = size
        peer_module._numba_cuda_transfers = _simulator_transfers
    options = {"backend": "cuda", "quick": args.simulate_tiny, "only": BENCHMARKS,
               "repeat": None, "gpu_check": True}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="numbax-gpu-check-") as scratch:
        try:
            peers, missing = peer_module.make_peers("cuda", scratch)
        except Exception as error:  # noqa: BLE001 - numbax and NumPy alone, then
            progress(f"benchmarks: peers failed ({_first_line(error)}); numbax and NumPy only")
            peers = [peer_module.NumbaxPeer("cuda", scratch), peer_module.NumPyPeer()]
            missing = {"others": _first_line(error)}
        machine = describe("cuda", {p.label: p.version for p in peers}, missing)
        suite_settings = settings_for(argparse.Namespace(quick=args.simulate_tiny, repeat=None))

        def settings(workload, n_rows):
            # The suite's method, with this check's time budget per workload.
            chosen = suite_settings(workload, n_rows)
            if args.simulate_tiny:
                return chosen
            return dataclasses.replace(chosen, budget_s=args.bench_seconds / max(n_rows, 1))

        results = []
        for index, name in enumerate(BENCHMARKS):
            if time.monotonic() > args.deadline - WORKLOAD_RESERVE_S:
                results.append(_not_run(name, "the run's deadline is near"))
                continue
            results.append(_one_workload(name, index, scale, peers, settings, np.random))
        runner.annotate(results)  # the ceiling, across all workloads
    table = report.format_table(results, machine, options)
    print(table, flush=True)
    paths = report.write_outputs(results, machine, options, args.outdir)
    failed = [f"{r.workload.name}/{row.implementation}" for r in results for row in r.rows
              if row.status == runner.FAILED]  # fmt: skip
    return {"table": table, "failed": failed, "files": {k: str(v) for k, v in paths.items()}}


def _one_workload(name, index, scale, peers, settings, random):
    from benchmarks import runner, workloads

    start = time.perf_counter()
    try:
        workload = workloads.WORKLOAD_BUILDERS[name](scale, random.default_rng(index))
        (result,) = runner.run_suite([workload], peers, settings, progress=progress)
        return result
    except Exception as error:  # noqa: BLE001 - one workload's failure is its row only
        progress(f"benchmarks: {name} failed: {_first_line(error)}")
        stub = workloads.Workload(name, "(could not run)", "", "forward", None, ())
        row = runner.Row("numbax", runner.FAILED, f"error: {_first_line(error)}", True)
        return runner.WorkloadResult(stub, [row], time.perf_counter() - start)


def _not_run(name, reason):
    from benchmarks import runner, workloads

    stub = workloads.Workload(name, "(not run)", "", "forward", None, ())
    return runner.WorkloadResult(stub, [runner.Row("numbax", runner.SKIPPED, reason, True)], 0.0)


def _simulator_transfers():
    """The simulator's device arrays have no CUDA Array Interface: copy with __array__."""
    import numpy as np
    from numba import cuda

    return cuda.to_device, lambda _: cuda.synchronize(), np.asarray


# --- driver -----------------------------------------------------------------------------


def run_phase(summary: dict, name: str, skip: set, function) -> None:
    if name in skip:
        summary[name] = {"status": "skipped"}
        return
    progress(f"phase {name} ...")
    start = time.perf_counter()
    try:
        summary[name] = {"status": "ok", "result": function()}
    except Exception as error:  # noqa: BLE001 - a phase fails soft
        traceback.print_exc()
        summary[name] = {"status": "FAILED", "error": _first_line(error),
                         "traceback": traceback.format_exc()}  # fmt: skip
    summary[name]["seconds"] = round(time.perf_counter() - start, 1)
    progress(f"phase {name}: {summary[name]['status']} in {summary[name]['seconds']} s")


def failures(summary: dict) -> list[str]:
    found = [f"phase {name}" for name, phase in summary.items()
             if isinstance(phase, dict) and phase.get("status") == "FAILED"]  # fmt: skip
    corpus = summary.get("corpus", {}).get("result") or {}
    found += [f"corpus {e['case']} {e['signature']}" for e in corpus.get("results", [])
              if e["status"] == "FAILED"]  # fmt: skip
    bench = summary.get("benchmarks", {}).get("result") or {}
    found += [f"benchmark {name}" for name in bench.get("failed", [])]
    if "deadline" in summary:
        found.append(summary["deadline"])
    return found


def write_summary(summary: dict, outdir: Path, started: float) -> list[str]:
    """gpu_check.json and gpu_check.txt from what has run so far; the summary lines."""
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary["failures"] = failures(summary)
    (outdir / "gpu_check.json").write_text(json.dumps(summary, indent=2, default=str))
    lines = [f"numbax GPU check ({summary['mode']}), {summary['seconds']} s"]
    for name in PHASES:
        lines.append(f"  {name}: {summary.get(name, {}).get('status', 'not run')}")
    corpus = summary.get("corpus", {}).get("result") or {}
    if corpus:
        lines.append(f"  corpus counts: {corpus['counts']}, not run: {len(corpus['not_run'])}")
    lines += [f"  FAILED: {item}" for item in summary["failures"]] or ["  no failures"]
    bench = summary.get("benchmarks", {}).get("result") or {}
    (outdir / "gpu_check.txt").write_text("\n".join(lines + ["", bench.get("table", "")]) + "\n")
    return lines


def watchdog(summary: dict, args, started: float) -> threading.Timer:
    """Past the deadline (a kernel that never returns, a stuck driver call), write what
    has run and end the process: the check ends on time either way."""

    def expire():
        summary["deadline"] = f"exceeded {args.deadline_seconds} s: the run was cut short"
        print("\n".join(write_summary(summary, args.outdir, started)), flush=True)
        os._exit(1)

    timer = threading.Timer(args.deadline_seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.simulate_tiny:
        # Before numba is first imported: the simulator is chosen at import time.
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    args.outdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NUMBAX_CACHE_DIR", str(args.outdir / "numbax-cache"))
    args.deadline = time.monotonic() + args.deadline_seconds
    args.corpus_seconds = min(args.corpus_seconds, args.deadline_seconds / 2)
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    summary: dict = {"mode": "simulate-tiny" if args.simulate_tiny else "gpu"}
    started = time.perf_counter()
    timer = watchdog(summary, args, started)
    run_phase(summary, "device", skip, lambda: describe_device(args.simulate_tiny))
    run_phase(summary, "corpus", skip, lambda: run_corpus(args))
    run_phase(summary, "residency", skip, check_residency)
    run_phase(summary, "narrow", skip, lambda: check_narrow_floats(args.simulate_tiny))
    run_phase(summary, "collectives", skip, lambda: check_collectives(args.simulate_tiny))
    run_phase(summary, "benchmarks", skip, lambda: run_benchmarks(args))
    timer.cancel()
    lines = write_summary(summary, args.outdir, started)
    print("\n".join(lines), flush=True)
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
