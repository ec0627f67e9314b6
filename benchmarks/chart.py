"""chart.png: numbax against each peer, one group of bars per workload.

Each bar is an implementation's median time over the best peer's (the fastest implementation
that is not numbax), on a log axis: 1 is the best peer, below 1 is faster than every peer.
Times relative to the best peer, not to NumPy, because NumPy has no row in the compile
workloads and a ratio to the fastest is the question numbax has to answer.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from .machine import one_line
from .runner import OK, WorkloadResult

NUMBAX_COLOURS = ("#d62728", "#ff7f0e", "#8c564b")
PEER_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#7f7f7f", "#bcbd22", "#e377c2")


# Peers in the order their rows are built (peers.make_peers); numbax's rows come first.
PEER_ORDER = ("numpy", "numba", "numba parallel", "jax", "cupy", "torch", "cuda memcpy")


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
    width = 0.8 / max(len(labels), 1)
    figure, axes = plt.subplots(figsize=(max(8.0, 1.5 * len(groups) + 3), 6.0))
    unsupported_marked = False
    all_ratios = [1.0]
    for slot, label in enumerate(labels):
        offset = (slot - (len(labels) - 1) / 2) * width
        xs, ratios = [], []
        for index, result in enumerate(groups):
            row = next((row for row in result.rows if row.implementation == label), None)
            if row is None:
                continue
            if row.status == OK:
                xs.append(index + offset)
                ratios.append(row.ratio_to_best_peer)
            elif row.is_numbax:
                # A numbax row with no time is shown, not left out: a cross on the 1 line.
                axes.plot(
                    index + offset,
                    1.0,
                    "x",
                    color="black",
                    markersize=7,
                    label=None if unsupported_marked else "numbax: not supported / failed",
                )
                unsupported_marked = True
        if xs:
            bars = axes.bar(xs, ratios, width, label=label, color=colours[label])
            axes.bar_label(bars, [f"{ratio:.2g}" for ratio in ratios], fontsize=6, rotation=90)
            all_ratios.extend(ratios)
    axes.set_yscale("log")
    # Bars grow from the bottom of a log axis: leave room below 1 so the best peer's bar shows,
    # and above the tallest for its label.
    axes.set_ylim(min(all_ratios) / 3, max(all_ratios) * 4)
    axes.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    axes.set_xticks(range(len(groups)))
    names = [f"{r.workload.name}\n{textwrap.fill(r.workload.size, 18)}" for r in groups]
    axes.set_xticklabels(names, fontsize=7)
    axes.set_xlabel("workload")
    axes.set_ylabel("time / best peer's time (log; lower is faster)")
    scale = ", quick sizes" if options["quick"] else ""
    axes.set_title(
        f"numbax vs peers, backend {options['backend']}{scale}\n{one_line(machine)}", fontsize=10
    )
    axes.legend(fontsize=8, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True
