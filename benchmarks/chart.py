"""chart.png: numbax against each peer, one group of bars per workload.

Each bar is an implementation's median time over the best peer's (the fastest implementation
that is not numbax), on a log axis: 1 is the best peer, below 1 is faster than every peer.
Times relative to the best peer, not to NumPy, because NumPy has no row in the compile
workloads and a ratio to the fastest is the question numbax has to answer. The label on each
bar is the absolute median, so the chart reads without the table; results.md has the spreads.

A group holds only the implementations that produced a time (plus a cross for a numbax row
that did not), so a workload two peers ran is two bars wide, not a row of empty slots.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from .machine import one_line
from .runner import OK, WorkloadResult
from .timing import format_seconds

NUMBAX_COLOURS = ("#d62728", "#ff7f0e", "#8c564b")
PEER_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#7f7f7f", "#bcbd22", "#e377c2")

# Peers in the order their rows are built (peers.make_peers); numbax's rows come first.
PEER_ORDER = ("numpy", "numba", "numba parallel", "jax", "cupy", "torch", "cuda memcpy")

BAR_WIDTH = 1.0  # x units per bar; groups are laid out in these units
GROUP_GAP = 1.2  # empty x units between two groups
INCHES_PER_UNIT = 0.24  # enough for a rotated time label per bar at LABEL_FONT_SIZE
LABEL_FONT_SIZE = 7


@dataclass(frozen=True)
class Bar:
    x: float
    label: str
    ratio: float | None  # None: a numbax row without a time (not supported / failed)
    seconds: float | None


def _ordered_labels(groups: list[WorkloadResult]) -> list[str]:
    labels = list(dict.fromkeys(row.implementation for result in groups for row in result.rows))

    def rank(label: str) -> tuple[int, int]:
        if label.startswith("numbax"):
            return 0, labels.index(label)
        return 1, PEER_ORDER.index(label) if label in PEER_ORDER else len(PEER_ORDER)

    return sorted(labels, key=rank)


def _colours(labels: list[str]) -> dict[str, str]:
    numbax = [label for label in labels if label.startswith("numbax")]
    peers = [label for label in labels if not label.startswith("numbax")]
    # Cycling keeps a colour for every label, should a run ever have more than the palette.
    colours = {label: NUMBAX_COLOURS[i % len(NUMBAX_COLOURS)] for i, label in enumerate(numbax)}
    colours |= {label: PEER_COLOURS[i % len(PEER_COLOURS)] for i, label in enumerate(peers)}
    return colours


def _shown_rows(result: WorkloadResult, labels: list[str]):
    """The rows that get a slot, in legend order: every timed row, and numbax's others."""
    rows = [row for row in result.rows if row.status == OK or row.is_numbax]
    return sorted(rows, key=lambda row: labels.index(row.implementation))


def layout(groups: list[WorkloadResult], labels: list[str]) -> tuple[list[list[Bar]], float]:
    """Each group's bars at their x positions, and the total width in x units."""
    placed, left = [], 0.0
    for result in groups:
        rows = _shown_rows(result, labels)
        bars = []
        for slot, row in enumerate(rows):
            timed = row.status == OK
            bars.append(
                Bar(
                    x=left + (slot + 0.5) * BAR_WIDTH,
                    label=row.implementation,
                    ratio=row.ratio_to_best_peer if timed else None,
                    seconds=row.timing.median_s if timed else None,
                )
            )
        placed.append(bars)
        left += len(rows) * BAR_WIDTH + GROUP_GAP
    return placed, max(left - GROUP_GAP, BAR_WIDTH)


def _tick_label(result: WorkloadResult, n_bars: int) -> str:
    # Wrap the size to the group's own width (and its share of the gaps), so neighbouring
    # labels never run together: about 5 points a character at font size 8.
    inches = (n_bars * BAR_WIDTH + GROUP_GAP * 0.8) * INCHES_PER_UNIT
    characters = max(9, int(inches * 72 / 5))
    size = textwrap.fill(result.workload.size, characters)
    return f"{result.workload.name}\n{size}"


def write_chart(results: list[WorkloadResult], machine: dict, options: dict, path: Path) -> bool:
    """Draw the chart; False (and no file) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = [result for result in results if result.best_peer is not None]
    labels = _ordered_labels(groups)
    colours = _colours(labels)
    placed, total_width = layout(groups, labels)
    figure, axes = plt.subplots(
        figsize=(max(7.0, total_width * INCHES_PER_UNIT + 3.5), 5.5), layout="constrained"
    )
    legend_done: set[str] = set()
    ratios = [1.0]
    for bars in placed:
        for bar in bars:
            if bar.ratio is None:
                # A numbax row with no time is shown, not left out: a cross on the 1 line.
                name = "numbax: not supported / failed"
                axes.plot(
                    bar.x, 1.0, "x", color="black", markersize=7, label=_once(name, legend_done)
                )
                continue
            drawn = axes.bar(
                bar.x,
                bar.ratio,
                BAR_WIDTH * 0.9,
                color=colours[bar.label],
                label=_once(bar.label, legend_done),
            )
            axes.bar_label(
                drawn,
                [format_seconds(bar.seconds)],
                fontsize=LABEL_FONT_SIZE,
                rotation=90,
                padding=2,
            )
            ratios.append(bar.ratio)
    axes.set_yscale("log")
    # Bars grow from the bottom of a log axis: leave room below the smallest so its bar shows,
    # and above the tallest for its rotated time label.
    axes.set_ylim(min(ratios) / 3, max(ratios) * 12)
    axes.set_xlim(-GROUP_GAP / 2, total_width + GROUP_GAP / 2)
    # Behind the bars and their labels, so a label near 1 stays legible.
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--", zorder=0.5)
    axes.set_xticks([(bars[0].x + bars[-1].x) / 2 for bars in placed])
    axes.set_xticklabels(
        [_tick_label(result, len(bars)) for result, bars in zip(groups, placed, strict=True)],
        fontsize=8,
    )
    axes.tick_params(axis="x", length=0)
    axes.set_ylabel("time / best peer's time (log; lower is faster)")
    scale = (
        ", quick sizes"
        if options["quick"]
        else (", smaller sizes" if options.get("smaller") else "")
    )
    axes.set_title(
        f"numbax vs peers, backend {options['backend']}{scale}\n{one_line(machine)}\n"
        "bar height: time relative to the fastest peer (dashed line); label: median time",
        fontsize=9,
    )
    handles, names = axes.get_legend_handles_labels()
    order = sorted(range(len(names)), key=lambda i: _legend_rank(names[i], labels))
    axes.legend(
        [handles[i] for i in order],
        [names[i] for i in order],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def _once(name: str, seen: set[str]) -> str | None:
    """The legend label the first time an implementation is drawn; None (no entry) after."""
    if name in seen:
        return None
    seen.add(name)
    return name


def _legend_rank(name: str, labels: list[str]) -> int:
    return labels.index(name) if name in labels else len(labels)
