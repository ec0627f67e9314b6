"""What a run produces: the table on stdout, results.json, results.md, and RESULTS.md's section."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from statistics import geometric_mean, median

from .implementation import COMPILED_FIRST_CALL
from .import_order import ORDERS
from .machine import one_line, software_line
from .runner import OK, WorkloadResult, bandwidth_ceiling
from .timing import format_seconds, format_spread

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"

METHOD = (
    "median over samples after warm-up (first call excluded; it compiles), spread min–max; "
    "each sample is enough back-to-back calls to last a minimum time, each call synchronised "
    "(JAX block_until_ready, CUDA synchronize); every implementation checked against NumPy "
    "before it is timed; a workload's implementations take turns, in three rounds of blocks of "
    "samples. GB/s = bytes read + written by an ideal implementation / time; "
    "'ceiling' = that GB/s over the best large-copy GB/s; 'vs best peer' = time / time of the "
    "fastest implementation that is not numbax."
)

COLUMNS = (
    "workload",
    "implementation",
    "median",
    "min–max",
    "throughput",
    "ceiling",
    "vs best peer",
    "status",
)


def _format_ratio(ratio: float) -> str:
    # Two decimals hide a ratio far below 1 (a compile 1000x faster reads 0.00x).
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def _cells(result: WorkloadResult) -> list[list[str]]:
    workload, lines = result.workload, []
    for index, row in enumerate(result.rows):
        name = workload.name if index == 0 else ""
        if row.status != OK:
            lines.append(
                [name, row.implementation, "—", "—", "—", "—", "—", f"{row.status}: {row.reason}"]
            )
            continue
        throughput = "—"
        if row.gb_per_s is not None:
            throughput = f"{row.gb_per_s:.3g} GB/s"
        elif row.gflop_per_s is not None:
            throughput = f"{row.gflop_per_s:.3g} GFLOP/s"
        ceiling = "—" if row.fraction_of_ceiling is None else f"{row.fraction_of_ceiling:.0%}"
        ratio = "—" if row.ratio_to_best_peer is None else _format_ratio(row.ratio_to_best_peer)
        timing = row.timing
        lines.append(
            [
                name,
                row.implementation,
                format_seconds(timing.median_s),
                format_spread(timing),
                throughput,
                ceiling,
                ratio,
                OK,
            ]
        )
    return lines


def _header_lines(results: list[WorkloadResult], machine: dict, options: dict) -> list[str]:
    ceiling = bandwidth_ceiling(results)
    ceiling_text = (
        f"{ceiling[0]:.3g} GB/s ({ceiling[1]} copy)"
        if ceiling
        else "not measured (run the bandwidth workload)"
    )
    if options["quick"]:
        scale = "quick (smoke-test sizes)"
    elif options.get("smaller"):
        scale = "smaller sizes (--smaller)"
    else:
        scale = "full sizes"
    return [
        f"backend: {options['backend']}, {scale}",
        f"machine: {one_line(machine)}",
        f"software: {software_line(machine)}",
        f"bandwidth ceiling: {ceiling_text}",
        f"method: {METHOD}",
    ]


def _median(result: WorkloadResult, implementation: str) -> float | None:
    for row in result.rows:
        if row.implementation == implementation and row.status == OK:
            return row.timing.median_s
    return None


def group_summary(results: list[WorkloadResult]) -> list[str]:
    """The kernel group's figures, as issue #15 states its targets: numbax's geometric
    mean over the kernels against JAX's and hand-written Numba's, the slowest kernel
    against the faster of the two, and the same for first calls against JAX's. Empty
    when the run has no kernels."""
    lines = []
    steady = [r for r in results if r.workload.style == "kernel"]
    ratios = {}
    for peer in ("jax", "numba"):
        ratios[peer] = [
            numbax / other
            for r in steady
            if (numbax := _median(r, "numbax")) and (other := _median(r, peer))
        ]
    against_faster = [
        (numbax / min(others), r.workload.name)
        for r in steady
        if (numbax := _median(r, "numbax"))
        and (others := [t for peer in ("jax", "numba") if (t := _median(r, peer))])
    ]
    if against_faster:
        means = ", ".join(
            f"{_format_ratio(geometric_mean(v))} {peer} ({len(v)} kernels)"
            for peer, v in ratios.items()
            if v
        )
        worst, name = max(against_faster)
        lines.append(
            f"kernel group, numbax's time: geometric mean {means}; slowest against the "
            f"faster peer: {name} {_format_ratio(worst)}"
        )
    for label, what in (("numbax", "first calls"), (COMPILED_FIRST_CALL, "time to compiled code")):
        first = [
            (numbax / jax, r.workload.name)
            for r in results
            if r.workload.style == "first_call"
            and (numbax := _median(r, label))
            and (jax := _median(r, "jax"))
        ]
        if first:
            worst, name = max(first)
            mean = _format_ratio(geometric_mean([ratio for ratio, _ in first]))
            lines.append(
                f"kernel group, {what}: geometric mean {mean} jax's first call "
                f"({len(first)} kernels); slowest: {name} {_format_ratio(worst)}"
            )
    return lines


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_table(results: list[WorkloadResult], machine: dict, options: dict) -> str:
    """The plain-text table for the terminal; long reasons are cut, results.json has them."""
    groups = [
        (result, [[*line[:-1], _truncate(line[-1], 90)] for line in _cells(result)])
        for result in results
    ]
    body = [line for _, lines in groups for line in lines]
    widths = [max(len(line[i]) for line in [COLUMNS, *body]) for i in range(len(COLUMNS))]

    def render(line):
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        return "  ".join(cells).rstrip()

    text = [*_header_lines(results, machine, options), *group_summary(results), "", render(COLUMNS)]
    text.append("  ".join("-" * width for width in widths))
    for result, lines in groups:
        text.append(f"{'':{widths[0]}}  # {result.workload.title}, {result.workload.size}")
        text.extend(render(line) for line in lines)
    return "\n".join(text)


def _escape_markdown(cell: str) -> str:
    return cell.replace("|", "\\|")


def format_markdown(results: list[WorkloadResult], machine: dict, options: dict) -> str:
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f"Run of {date}: `python -m benchmarks --backend {options['backend']}"
        f"{' --quick' if options['quick'] else ''}`",
        "",
    ]
    lines += [f"- {line}" for line in _header_lines(results, machine, options)]
    lines += [f"- {line}" for line in group_summary(results)]
    lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for result in results:
        for line in _cells(result):
            if line[0]:
                line[0] = f"**{line[0]}** ({result.workload.size})"
            lines.append("| " + " | ".join(_escape_markdown(cell) for cell in line) + " |")
    return "\n".join(lines) + "\n"


def to_json(results: list[WorkloadResult], machine: dict, options: dict) -> dict:
    ceiling = bandwidth_ceiling(results)
    workloads = []
    for result in results:
        workload = result.workload
        rows = []
        for row in result.rows:
            entry = {
                "implementation": row.implementation,
                "status": row.status,
                "reason": row.reason,
                "is_numbax": row.is_numbax,
            }
            if row.timing is not None:
                q1, q3 = row.timing.quartiles_s
                entry |= {
                    "median_s": row.timing.median_s,
                    "min_s": row.timing.min_s,
                    "max_s": row.timing.max_s,
                    "q1_s": q1,
                    "q3_s": q3,
                    "samples_s": list(row.timing.samples_s),
                    "calls_per_sample": row.timing.calls_per_sample,
                    "gb_per_s": row.gb_per_s,
                    "gflop_per_s": row.gflop_per_s,
                    "fraction_of_ceiling": row.fraction_of_ceiling,
                    "ratio_to_best_peer": row.ratio_to_best_peer,
                }
            rows.append(entry)
        workloads.append(
            {
                "name": workload.name,
                "title": workload.title,
                "size": workload.size,
                "style": workload.style,
                "bytes_moved": workload.bytes_moved,
                "flops": workload.flops,
                "wall_s": result.wall_s,
                "rows": rows,
            }
        )
    return {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "options": options,
        "machine": machine,
        "method": METHOD,
        "bandwidth_ceiling": (
            None if ceiling is None else {"gb_per_s": ceiling[0], "implementation": ceiling[1]}
        ),
        "workloads": workloads,
    }


def write_outputs(results, machine: dict, options: dict, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "results.json", "markdown": out_dir / "results.md"}
    paths["json"].write_text(json.dumps(to_json(results, machine, options), indent=2) + "\n")
    paths["markdown"].write_text(format_markdown(results, machine, options))
    return paths


def _markers(section: str) -> tuple[str, str]:
    return f"<!-- results:{section}:begin -->", f"<!-- results:{section}:end -->"


def update_results_md(markdown: str, section: str, path: Path = RESULTS_MD) -> None:
    """Replace the text between the section's markers in RESULTS.md, leaving the rest."""
    begin, end = _markers(section)
    text = path.read_text()
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path} has no '{begin}' ... '{end}' markers; restore them first")
    path.write_text(pattern.sub(lambda _: f"{begin}\n{markdown}{end}", text, count=1))


# --- the models group (`--group models`): one line per workload ---------------------------

MODEL_COLUMNS = (
    "workload",
    "size",
    "numbax cold",
    "jax first call",
    "cold ratio",
    "numbax median",
    "numbax min–max",
    "jax median",
    "jax min–max",
    "steady ratio",
)
LOADED_COLUMNS = ("numbax loaded/quiet", "jax loaded/quiet")

MODELS_METHOD = (
    "cold = trace to first result in a fresh process, the library imported and initialised "
    "but every cache empty (numbax tiered=False: the call waits for compiled code), median "
    "(min–max) of the processes; steady = the suite's method (median, min–max, after the "
    "first call); ratios = numbax / jax; every answer checked against a float64 reference "
    "before it is timed; loaded/quiet = the steady median with two busy-loop processes "
    "beside it over the quiet one."
)


def _ok_row(result: WorkloadResult | None, implementation: str):
    if result is None:
        return None
    for row in result.rows:
        if row.implementation == implementation and row.status == OK:
            return row
    return None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _median_of(result: WorkloadResult | None, implementation: str) -> float | None:
    row = _ok_row(result, implementation)
    return None if row is None else row.timing.median_s


def _cold_cell(result: WorkloadResult | None, implementation: str) -> str:
    row = _ok_row(result, implementation)
    if row is None:
        return "—"
    if len(row.timing.samples_s) == 1:
        return format_seconds(row.timing.median_s)
    return f"{format_seconds(row.timing.median_s)} ({format_spread(row.timing)})"


def _by_name(results: list[WorkloadResult], suffix: str = "") -> dict[str, WorkloadResult]:
    return {r.workload.name.removesuffix(suffix): r for r in results}


def _problems(phases: dict[str, WorkloadResult | None]) -> str:
    """Every row of a workload that did not run cleanly, with its reason."""
    problems = [
        f"{row.implementation} {phase}: {row.status}: {row.reason}"
        for phase, result in phases.items()
        if result is not None
        for row in result.rows
        if row.status != OK
    ]
    return "; ".join(problems) or OK


def models_table(
    steady: list[WorkloadResult],
    cold: list[WorkloadResult],
    loaded: list[WorkloadResult] | None = None,
) -> list[str]:
    """The Markdown table of the models group: per workload, time to compiled code and
    steady state for numbax and JAX and their ratios, and with `loaded` each library's
    slowdown beside busy processes."""
    cold_by, loaded_by = _by_name(cold, " cold"), _by_name(loaded or [])
    columns = MODEL_COLUMNS + (LOADED_COLUMNS if loaded else ()) + ("status",)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for result in steady:
        name = result.workload.name
        cold_result, loaded_result = cold_by.get(name), loaded_by.get(name)
        cells = [name, result.workload.size]
        cells += [_cold_cell(cold_result, "numbax"), _cold_cell(cold_result, "jax")]
        cells.append(_ratio_cell(cold_result, "jax"))
        for implementation in ("numbax", "jax"):
            row = _ok_row(result, implementation)
            if row is None:
                cells += ["—", "—"]
            else:
                cells += [format_seconds(row.timing.median_s), format_spread(row.timing)]
        cells.append(_ratio_cell(result, "jax"))
        if loaded:
            for implementation in ("numbax", "jax"):
                slowdown = _ratio(
                    _median_of(loaded_result, implementation), _median_of(result, implementation)
                )
                cells.append("—" if slowdown is None else _format_ratio(slowdown))
        phases = {"cold": cold_result, "steady": result, "loaded": loaded_result}
        cells.append(_problems(phases))
        lines.append("| " + " | ".join(_escape_markdown(cell) for cell in cells) + " |")
    return lines


TORCH_LABELS = ("torch", "torch.compile")
TORCH_COLUMNS = (
    "workload",
    "torch cold",
    "torch.compile cold",
    "numbax cold / torch.compile",
    "torch median (min–max)",
    "torch.compile median (min–max)",
    "numbax / torch",
    "numbax / torch.compile",
)


def models_torch_table(steady: list[WorkloadResult], cold: list[WorkloadResult]) -> list[str]:
    """PyTorch's rows of the models group beside numbax's (eager and torch.compile: time to
    compiled code and steady state), or nothing where no PyTorch row ran."""
    if not any(_ok_row(r, label) for r in steady for label in TORCH_LABELS):
        return []
    cold_by = _by_name(cold, " cold")
    lines = ["| " + " | ".join(TORCH_COLUMNS) + " |", "|" + "---|" * len(TORCH_COLUMNS)]
    for result in steady:
        name = result.workload.name
        cold_result = cold_by.get(name)
        cells = [name, *(_cold_cell(cold_result, label) for label in TORCH_LABELS)]
        cells.append(_ratio_cell(cold_result, "torch.compile"))
        for label in TORCH_LABELS:
            row = _ok_row(result, label)
            timing = row and f"{format_seconds(row.timing.median_s)} ({format_spread(row.timing)})"
            cells.append(timing or "—")
        cells += [_ratio_cell(result, label) for label in TORCH_LABELS]
        lines.append("| " + " | ".join(_escape_markdown(cell) for cell in cells) + " |")
    return lines


def _ratio_cell(result: WorkloadResult | None, peer: str) -> str:
    """numbax's median over `peer`'s in `result`, formatted, or a dash."""
    ratio = _ratio(_median_of(result, "numbax"), _median_of(result, peer))
    return "—" if ratio is None else _format_ratio(ratio)


def _ratios_over(results: list[WorkloadResult], peer: str) -> dict[str, float]:
    """numbax's median over `peer`'s, per workload where both ran."""
    return {
        r.workload.name.removesuffix(" cold"): ratio
        for r in results
        if (ratio := _ratio(_median_of(r, "numbax"), _median_of(r, peer))) is not None
    }


def _geometric_mean_line(label: str, ratios: dict[str, float]) -> str | None:
    if not ratios:
        return None
    worst = max(ratios, key=ratios.get)
    return (
        f"{label}: geometric mean {_format_ratio(geometric_mean(ratios.values()))} over "
        f"{len(ratios)} workloads; highest {worst} {_format_ratio(ratios[worst])}"
    )


def models_summary(
    steady: list[WorkloadResult],
    cold: list[WorkloadResult],
    loaded: list[WorkloadResult] | None = None,
    layer_pairs: dict[str, list[tuple[float, float]]] | None = None,
) -> list[str]:
    """The group's figures as issues #34 and #36 state their targets: numbax over JAX cold
    and steady, the 8-layer transformer's compile over the 2-layer one's (from the table's
    rows, and from ``layer_pairs`` taken in turns: ``layer_scaling_line``), and
    numbax's slowdown beside busy processes over JAX's."""
    lines = []
    cold_by = _by_name(cold, " cold")
    for peer in ("jax", *TORCH_LABELS):
        cold_line = f"numbax cold / {peer} first call"
        lines.append(_geometric_mean_line(cold_line, _ratios_over(cold, peer)))
        steady_line = f"numbax steady / {peer} steady"
        lines.append(_geometric_mean_line(steady_line, _ratios_over(steady, peer)))
    two, eight = cold_by.get("transformer_2"), cold_by.get("transformer_8")
    scaling = [
        f"{library} {_format_ratio(ratio)}"
        for library in ("numbax", "jax")
        if (ratio := _ratio(_median_of(eight, library), _median_of(two, library))) is not None
    ]
    if scaling:
        ratios = ", ".join(scaling)
        lines.append(f"transformer 8 layers / 2 layers, time to compiled code, rows: {ratios}")
    lines.append(layer_scaling_line(layer_pairs))
    if loaded:
        steady_by = _by_name(steady)
        slowdowns = {}
        for library in ("numbax", "jax"):
            slowdowns[library] = [
                ratio
                for r in loaded
                if (
                    ratio := _ratio(
                        _median_of(r, library), _median_of(steady_by.get(r.workload.name), library)
                    )
                )
                is not None
            ]
        if slowdowns["numbax"] and slowdowns["jax"]:
            numbax_mean = geometric_mean(slowdowns["numbax"])
            jax_mean = geometric_mean(slowdowns["jax"])
            lines.append(
                "loaded/quiet beside two busy-loop processes, geometric mean: numbax "
                f"{_format_ratio(numbax_mean)}, jax {_format_ratio(jax_mean)}; numbax's over "
                f"jax's {_format_ratio(numbax_mean / jax_mean)}"
            )
    return [line for line in lines if line is not None]


def layer_scaling_line(pairs: dict[str, list[tuple[float, float]]] | None) -> str | None:
    """The 8-layer transformer's time to compiled code over the 2-layer one's, from pairs
    of fresh processes taken in turns (``model_group.layer_scaling``): the median of each
    library's pair ratios, and their range."""
    if not pairs:
        return None
    parts = []
    for library, library_pairs in pairs.items():
        ratios = sorted(eight / two for two, eight in library_pairs if two > 0)
        if ratios:
            middle = median(ratios)
            spread = f"{_format_ratio(ratios[0])}–{_format_ratio(ratios[-1])}"
            parts.append(f"{library} {_format_ratio(middle)} ({spread})")
    if not parts:
        return None
    count = max(len(p) for p in pairs.values())
    return (
        f"transformer 8 layers / 2 layers, time to compiled code, {count} pairs taken in "
        f"turns: {', '.join(parts)}"
    )


def import_order_lines(medians: dict) -> list[str]:
    """The MLP step's steady state with SciPy and scikit-learn imported before numbax over
    numbax imported first (``import_order``), from each order's per-process medians: the
    ratio of their medians, and the range of the pairs' ratios; none where it did not
    run, the reason where it failed."""
    if not medians:
        return []
    if "failed" in medians:
        return [f"import order (mlp_64): FAILED: {medians['failed']}"]
    first, later = (medians[order] for order in ORDERS)  # numbax first, then SciPy's
    ratios = sorted(b / a for a, b in zip(first, later, strict=True))
    return [
        "mlp_64 steady, scipy and sklearn imported before numbax / numbax first: "
        f"{_format_ratio(median(later) / median(first))} ({format_seconds(median(later))} / "
        f"{format_seconds(median(first))}; pairs {_format_ratio(ratios[0])}–"
        f"{_format_ratio(ratios[-1])}, {len(ratios)} pairs of fresh processes in turns)"
    ]


def models_heading(machine: dict, options: dict) -> list[str]:
    flags = " --quick" if options["quick"] else ""
    flags += " --loaded" if options["loaded"] else ""
    return [
        f"`python -m benchmarks --group models{flags}`, cold samples {options['cold_samples']}",
        "",
        f"- machine: {one_line(machine)}",
        f"- software: {software_line(machine)}",
        f"- method: {MODELS_METHOD}",
    ]
