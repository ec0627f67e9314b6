"""Compile time against program size (`python -m benchmarks --group compile_scaling`).

Two shapes of program, each at 10, 100, 1,000 and 10,000 traced operations:

  straight_line   `x = sin(x) * 0.5 + 0.25`, repeated: a chain that fuses into one kernel
  unrolled_loop   `acc = acc + x[i] * w[i]` in a Python loop (issue #15's case): every
                  term reads two rows, so the program keeps many kernels

For numbax, each stage of `jit` is timed on its own: tracing (`jit(f).lower`), the passes
(optimise: the pass manager's log names the slowest pass), writing the program (codegen),
and Numba with LLVM (`Lowered.compile()`'s `CompileStats`: Numba's typing and lowering,
and LLVM's share). For JAX the same program is traced (`jax.jit(f).trace`), lowered to
StableHLO and compiled by XLA. Both run in this process, one size after the other, with
numbax's disk cache empty (a private folder) and every program under a new name.

The same model at 1, 2, 4 and 8 identical layers (issue #34): the models group's
transformer training step, `jit(value_and_grad(loss))` (benchmarks/model_workloads.py),
each size in a process of its own with an empty disk cache, so that every row is a cold
compile (a row after another in one process would find the earlier row's kernels in
memory). Its JAX row is `jax.jit(jax.value_and_grad(loss))`.

Each stage's growth is shown as the factor from one size to the next (x10 is linear for
operations, x2 for layers), and numbax's row says into how many njit functions the
program was cut (`parts`, see backends/cpu/parts.py), its distinct kernels against the
kernel calls its launcher makes (identical kernels compile once), how many of the
distinct kernels came from a cache (memory or disk) rather than a compile, and the time to
compiled code: from `jit(f).lower` to the first result of the compiled program (tiered
off, so no call is interpreted; the passes are timed apart as well, and not counted twice).

A size compiles only when the previous size of its shape compiled within
`COMPILE_BUDGET_S`, so that a linear compiler's next size takes at most about ten times
that; otherwise the larger sizes still trace and optimise, and say why they did not
compile. At full scale the 10,000-op rows compile for minutes each on a 2-core machine.
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
from dataclasses import asdict, dataclass, field

import numpy as np

SIZES = {"quick": (10, 100), "full": (10, 100, 1_000, 10_000)}
# The transformer's layer counts, and the size of its layers (model_workloads' scales).
LAYERS = {"quick": (1, 2), "full": (1, 2, 4, 8)}
COMPILE_BUDGET_S = {"quick": 60.0, "full": 60.0}
WIDTH = 64  # elements of each array: the programs' cost is their size, not their data


def straight_line(xnp, ops: int) -> tuple[Callable, tuple]:
    steps = max(1, ops // 3)

    def straight_line_program(x):
        for _ in range(steps):
            x = xnp.sin(x) * 0.5 + 0.25
        return x

    return straight_line_program, (np.linspace(0.0, 1.0, WIDTH),)


def unrolled_loop(xnp, ops: int) -> tuple[Callable, tuple]:
    terms = max(1, ops // 6)  # a row, a weight (slice + reshape each), mul, add

    def unrolled_loop_program(x, w):
        acc = xnp.zeros(x.shape[1:])
        for i in range(terms):
            acc = acc + x[i] * w[i]
        return acc

    rng = np.random.default_rng(0)
    return unrolled_loop_program, (rng.standard_normal((terms, WIDTH)), rng.standard_normal(terms))


SHAPES = {"straight_line": straight_line, "unrolled_loop": unrolled_loop}


@dataclass
class Stages:
    """Seconds per stage of one library compiling one program; None: not run (``note``)."""

    eqns: int | None = None
    trace_s: float | None = None
    optimize_s: float | None = None
    codegen_s: float | None = None
    compile_s: float | None = None  # numbax: Numba and LLVM; JAX: XLA
    llvm_s: float | None = None
    parts: int | None = None  # numbax: njit functions besides the program function
    kernels: int | None = None  # numbax: distinct kernels compiled as units of their own
    kernel_calls: int | None = None  # numbax: kernel calls in the launcher (same kernel: 1)
    kernel_hits: int | None = None  # numbax: distinct kernels found in memory or on disk
    to_compiled_s: float | None = None  # trace to the first result of compiled code
    slowest_pass: str | None = None
    note: str = ""


@dataclass
class Row:
    shape: str
    ops: int
    numbax: Stages = field(default_factory=Stages)
    jax: Stages = field(default_factory=Stages)


def _renamed(function: Callable, name: str) -> Callable:
    function.__name__ = function.__qualname__ = name
    return function


def _traced_and_optimized(jitted, args, function: Callable):
    """``jitted`` lowered at ``args`` and its program optimized, each timed in a new
    ``Stages`` (with the program's size and its slowest pass)."""
    from numbax import passes

    stages = Stages()
    start = time.perf_counter()
    lowered = jitted.lower(*args)
    stages.trace_s = time.perf_counter() - start
    stages.eqns = len(lowered.jaxpr.eqns)
    start = time.perf_counter()
    _, log = passes.optimize(lowered.jaxpr, name=function.__name__)
    stages.optimize_s = time.perf_counter() - start
    name, seconds = max(log.seconds().items(), key=lambda item: item[1])
    stages.slowest_pass = f"{name} {seconds:.2f} s"
    return lowered, stages


def numbax_stages(shape: str, ops: int, compile_it: bool, index: int) -> Stages:
    import numbax
    import numbax.numpy as xnp

    function, args = SHAPES[shape](xnp, ops)
    function = _renamed(function, f"{shape}_{ops}_{index}")
    lowered, stages = _traced_and_optimized(numbax.jit(function, tiered=False), args, function)
    if not compile_it:
        stages.note = "not compiled: the previous size took longer than the budget"
        return stages
    executable, result = _compiled_and_run(lowered, args, stages)
    np.testing.assert_allclose(result, function_reference(shape, ops, args))
    return stages


def _compiled_and_run(lowered, args, stages: Stages):
    """Compile ``lowered``, run it once, and fill numbax's compile columns of ``stages``."""
    from numbax.backends.cpu.program import ADDRESSES

    start = time.perf_counter()
    executable = lowered.compile()
    result = executable(*args)
    stages.to_compiled_s = stages.trace_s + time.perf_counter() - start
    stats = executable.compile_stats
    stages.codegen_s, stages.compile_s, stages.llvm_s = (
        stats.codegen_s,
        stats.backend_s,
        stats.llvm_s,
    )
    stages.parts = executable.program.parts
    kernels = stats.kernels or {}
    stages.kernels = sum(kernels.values())
    stages.kernel_hits = kernels.get("memory", 0) + kernels.get("disk", 0)
    stages.kernel_calls = executable.program.code.count(f"{ADDRESSES}[")
    return executable, result


def transformer_stages(layers: int, scale: str) -> Stages:
    """numbax's stages for the transformer at ``layers`` layers, measured in this process
    (``transformer_row`` runs it in a fresh one)."""
    import numbax

    from .model_workloads import TRANSFORMER_LAYER_ROWS, _numbax_loss, model_workload

    workload = model_workload(TRANSFORMER_LAYER_ROWS[layers], scale)
    loss = _renamed(_numbax_loss(workload.program), f"transformer_{layers}_layers")
    jitted = numbax.jit(numbax.value_and_grad(loss), tiered=False)
    lowered, stages = _traced_and_optimized(jitted, workload.inputs, loss)
    _, result = _compiled_and_run(lowered, workload.inputs, stages)
    workload.custom_check(result, workload.reference_program())
    return stages


def transformer_row(layers: int, scale: str) -> Stages:
    """``transformer_stages`` in a new Python process with an empty disk cache: a cold
    compile whatever this process compiled before."""
    command = [sys.executable, "-m", __name__, "--transformer-row", str(layers), scale]
    environment = dict(os.environ, NUMBAX_TIERED="0", JAX_PLATFORMS="cpu")
    with tempfile.TemporaryDirectory(prefix="numbax-compile-scaling-") as scratch:
        environment["NUMBAX_CACHE_DIR"] = scratch
        done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        return Stages(note=f"failed: {done.stderr.strip().splitlines()[-1:]}")
    return Stages(**json.loads(done.stdout.strip().splitlines()[-1]))


def _transformer_row_main(layers: int, scale: str) -> None:
    _warm_up(with_jax=False)
    print(json.dumps(asdict(transformer_stages(layers, scale))))


def jax_transformer_stages(layers: int, scale: str) -> Stages:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        return Stages(note=f"JAX is not installed ({error})")
    from .implementation import bind
    from .kernels import library_loops
    from .model_workloads import TRANSFORMER_LAYER_ROWS, model_workload

    workload = model_workload(TRANSFORMER_LAYER_ROWS[layers], scale)
    loops = library_loops(jax.lax.fori_loop, jax.lax.scan)
    loss = _renamed(bind(workload.program, jnp, loops), f"transformer_{layers}_layers")
    stages = Stages()
    start = time.perf_counter()
    traced = jax.jit(jax.value_and_grad(loss)).trace(*workload.inputs)
    stages.trace_s = time.perf_counter() - start
    stages.eqns = len(traced.jaxpr.eqns)
    start = time.perf_counter()
    lowered = traced.lower()
    stages.optimize_s = time.perf_counter() - start
    start = time.perf_counter()
    compiled = lowered.compile()
    stages.compile_s = time.perf_counter() - start
    result = jax.block_until_ready(compiled(*workload.inputs))
    stages.to_compiled_s = stages.trace_s + stages.optimize_s + time.perf_counter() - start
    workload.custom_check(jax.tree_util.tree_map(np.asarray, result), workload.reference_program())
    return stages


def function_reference(shape: str, ops: int, args) -> np.ndarray:
    function, _ = SHAPES[shape](np, ops)
    return function(*args)


def jax_stages(shape: str, ops: int, compile_it: bool) -> Stages:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        return Stages(note=f"JAX is not installed ({error})")
    function, args = SHAPES[shape](jnp, ops)
    stages = Stages()
    start = time.perf_counter()
    traced = jax.jit(function).trace(*args)
    stages.trace_s = time.perf_counter() - start
    stages.eqns = len(traced.jaxpr.eqns)
    start = time.perf_counter()
    lowered = traced.lower()
    stages.optimize_s = time.perf_counter() - start  # lowering to StableHLO
    if not compile_it:
        stages.note = "not compiled: the previous size took longer than the budget"
        return stages
    start = time.perf_counter()
    compiled = lowered.compile()
    stages.compile_s = time.perf_counter() - start
    result = np.asarray(compiled(*args))  # float32: JAX's default
    np.testing.assert_allclose(result, function_reference(shape, ops, args), rtol=1e-4, atol=1e-4)
    return stages


def run(scale: str) -> list[Row]:
    rows = []
    for shape in SHAPES:
        compile_numbax = compile_jax = True
        for index, ops in enumerate(SIZES[scale]):
            print(f"compile_scaling: {shape}, {ops} ops", file=sys.stderr, flush=True)
            row = Row(shape, ops)
            row.numbax = numbax_stages(shape, ops, compile_numbax, index)
            row.jax = jax_stages(shape, ops, compile_jax)
            compile_numbax &= _within_budget(row.numbax, scale)
            compile_jax &= _within_budget(row.jax, scale)
            rows.append(row)
    for layers in LAYERS[scale]:
        print(f"compile_scaling: transformer, {layers} layers", file=sys.stderr, flush=True)
        row = Row("transformer", layers)
        row.numbax = transformer_row(layers, scale)
        row.jax = jax_transformer_stages(layers, scale)
        rows.append(row)
    return rows


def _within_budget(stages: Stages, scale: str) -> bool:
    return stages.compile_s is not None and stages.compile_s < COMPILE_BUDGET_S[scale]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if value < 1.0 else f"{value:.2f} s"


def _growth(rows: list[Row], library: str, stage: str) -> list[str]:
    """Per row: the stage's factor over the previous size of its shape (x10 is linear)."""
    out, previous = [], {}
    for row in rows:
        value = getattr(getattr(row, library), stage)
        before = previous.get(row.shape)
        if value is None or before is None or before <= 0:
            out.append("")
        else:
            out.append(f" (x{value / before:.3g})")
        previous[row.shape] = value
    return out


STAGE_COLUMNS = {
    "numbax": (
        ("trace", "trace_s"),
        ("optimise", "optimize_s"),
        ("codegen", "codegen_s"),
        ("Numba+LLVM", "compile_s"),
        ("of which LLVM", "llvm_s"),
        ("parts", "parts"),
        ("kernels", "kernels"),
        ("cache hits", "kernel_hits"),
        ("to compiled code", "to_compiled_s"),
    ),
    "jax": (
        ("trace", "trace_s"),
        ("lower", "optimize_s"),
        ("XLA compile", "compile_s"),
        ("to compiled code", "to_compiled_s"),
    ),
}
COUNT_COLUMNS = ("parts", "kernel_hits")  # counts, not times


def format_table(rows: list[Row], machine: str) -> str:
    header = ["program", "ops"]
    columns = []
    for library, stages in STAGE_COLUMNS.items():
        for label, attribute in stages:
            header.append(f"{library} {label}")
            columns.append((library, attribute, _growth(rows, library, attribute)))
    header += ["numbax slowest pass", "notes"]
    lines = [
        f"Compile time against program size, {machine}. (xN): the factor over the previous "
        "size of the same program (x10 is linear).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for i, row in enumerate(rows):
        size = f"{row.ops} layer{'s' * (row.ops != 1)}" if row.shape == "transformer" else row.ops
        cells = [row.shape, f"{size} ({row.numbax.eqns} eqns)"]
        for library, attribute, growth in columns:
            value = getattr(getattr(row, library), attribute)
            if attribute in COUNT_COLUMNS:
                cells.append("-" if value is None else str(value))
            elif attribute == "kernels":  # distinct of the launcher's calls
                calls = row.numbax.kernel_calls
                cells.append("-" if value is None else f"{value} of {calls} calls")
            else:
                cells.append(_seconds(value) + growth[i])
        notes = "; ".join(n for n in (row.numbax.note, row.jax.note) if n)
        cells += [row.numbax.slowest_pass or "-", notes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run by `python -m benchmarks --group compile_scaling [--quick] [--out DIR]`."""
    if args.backend != "cpu":
        print("compile_scaling measures the cpu backend: use --backend cpu", file=sys.stderr)
        return 2
    scale = "quick" if args.quick else "full"
    from .machine import describe, one_line

    machine = describe("cpu", {}, {})
    with tempfile.TemporaryDirectory(prefix="numbax-compile-scaling-") as scratch:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        from numbax.config import config

        config.cache_dir = scratch  # empty: every compile is a compile
        _warm_up()
        rows = run(scale)
    table = format_table(rows, one_line(machine))
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compile_scaling.md").write_text(table + "\n")
    payload = {"machine": machine, "scale": scale, "rows": [asdict(r) for r in rows]}
    (args.out / "compile_scaling.json").write_text(json.dumps(payload, indent=2, default=str))
    print(f"wrote {args.out / 'compile_scaling.md'}", file=sys.stderr)
    return 0


def _warm_up(with_jax: bool = True) -> None:
    """Import and initialise both compilers once, so the first row does not pay it."""
    import numbax

    numbax.jit(lambda x: x * 2.0 + 1.0, tiered=False)(np.ones(3))
    if not with_jax:
        return
    try:
        import jax
    except ImportError:
        return
    jax.jit(lambda x: x * 2.0 + 1.0)(np.ones(3))


if __name__ == "__main__":  # one transformer row in a fresh process (transformer_row)
    _, flag, layer_count, row_scale = sys.argv
    assert flag == "--transformer-row", sys.argv
    _transformer_row_main(int(layer_count), row_scale)
