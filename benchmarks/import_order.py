"""The MLP step with SciPy and scikit-learn imported before numbax, against numbax first.

Issue #36: the backend once set ``OPENBLAS_NUM_THREADS=1`` when it first loaded, which a
BLAS already loaded (SciPy's, imported first) ignores: a 64-example MLP step took 62 ms
instead of 0.33 ms. numbax now sets BLAS's threads around each call
(``backends/cpu/threads.py``), so the order should change nothing; this row measures it.

Each sample is a fresh process, ``python -m benchmarks.import_order ORDER SCALE OUT_DIR``:
it imports ORDER's modules (none, or ``scipy.linalg`` and ``sklearn`` where installed),
then numbax, builds the models group's ``mlp_64`` step as the steady row does (its first
call waits for the compiled program), writes its answer, and times the step by the
suite's method (``timing.measure_in_turns``). The parent takes the two orders in turns,
checks every answer against the float64 reference, and keeps each process's median.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from .cold_start import run_checked
from .implementation import tree_map
from .timing import Contender, TimingSettings, measure_in_turns
from .workloads import leaves

WORKLOAD = "mlp_64"
# What each process imports before numbax: the order of a user's script.
ORDERS = {"numbax first": (), "scipy, sklearn first": ("scipy.linalg", "sklearn")}
PROCESS_TIMEOUT_S = 600
SETTINGS = {
    "full": TimingSettings(
        budget_s=3.0, min_samples=9, max_samples=15, min_sample_s=0.02, settle_s=0.05,
        warmup_s=0.3,
    ),
    "quick": TimingSettings(
        budget_s=0.3, min_samples=3, max_samples=3, min_sample_s=0.005, settle_s=0.0,
    ),
}  # fmt: skip


def import_order_pairs(scale: str, pairs: int, scratch_dir: str) -> dict[str, list[float]]:
    """Each order's per-process median seconds of the step, ``pairs`` processes per order,
    the orders taking turns (the first of each pair alternating)."""
    from .model_workloads import model_workload

    workload = model_workload(WORKLOAD, scale)
    expected = workload.reference()
    medians: dict[str, list[float]] = {order: [] for order in ORDERS}
    env = dict(os.environ, NUMBAX_TIERED="0")
    for pair in range(pairs):
        orders = list(ORDERS) if pair % 2 == 0 else list(reversed(ORDERS))
        for order in orders:
            out_dir = tempfile.mkdtemp(prefix="import-order-", dir=scratch_dir)
            command = [sys.executable, "-m", "benchmarks.import_order", order, scale, out_dir]
            cache = {"NUMBAX_CACHE_DIR": os.path.join(out_dir, "cache")}
            run_checked(command, {**env, **cache}, PROCESS_TIMEOUT_S)
            with np.load(Path(out_dir, "answer.npz")) as answer:
                workload.check([answer[f"arr_{i}"] for i in range(len(answer.files))], expected)
            figures = json.loads(Path(out_dir, "figures.json").read_text())
            medians[order].append(figures["median_s"])
    return medians


def main(argv: list[str]) -> int:
    order, scale, out_dir = argv
    imported = []
    for module in ORDERS[order]:
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        imported.append(module)
    numbax_first = "numbax" not in sys.modules  # nothing above imported it
    from .first_compile import initialised_peer
    from .model_workloads import model_workload

    peer = initialised_peer("numbax", out_dir)
    workload = model_workload(WORKLOAD, scale)
    [implementation] = [row for row in peer.implement(workload) if row.label == "numbax"]
    inputs = tree_map(implementation.to_device, workload.inputs)
    step = implementation.build()
    result = step(*inputs)
    implementation.sync(result)
    np.savez(Path(out_dir, "answer.npz"), *leaves(tree_map(implementation.to_numpy, result)))
    contender = Contender(lambda: step(*inputs), implementation.sync)
    [timing] = measure_in_turns([contender], SETTINGS[scale])
    if isinstance(timing, Exception):
        raise timing
    figures = {
        "median_s": timing.median_s,
        "samples_s": timing.samples_s,
        "imported_before_numbax": imported if numbax_first else None,
    }
    Path(out_dir, "figures.json").write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
