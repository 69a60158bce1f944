"""The report's plots: matplotlib (this package is its only importer) drawn to inline SVG from
the data the tables and runs modules computed; nothing here computes a number of its own."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator

# Same inputs, same SVG: fixed ids and no creation date.
matplotlib.rcParams.update({
    "svg.hashsalt": "harnesslab", "svg.fonttype": "none", "font.size": 9,
    "font.family": "DejaVu Sans",
    "axes.spines.top": False, "axes.spines.right": False, "axes.titlesize": 10,
    "axes.titleweight": "bold", "axes.edgecolor": "#8a8f98", "axes.labelcolor": "#333",
    "xtick.color": "#555", "ytick.color": "#555", "legend.frameon": False,
})

PALETTE = ["#3b6fb6", "#e07b39", "#3f9e5a", "#b5485d", "#7b5fb3", "#8c6d46", "#d16fb0",
           "#6b7280", "#b4a03a", "#2aa3b8"]
KNOWN = {"structured": PALETTE[0], "truncate": PALETTE[1], "pinned": PALETTE[2],
         "codex": PALETTE[3], "freeform": PALETTE[4], "offload": PALETTE[5], "none": PALETTE[7]}
PARTS = (("system", "#c9d3e3"), ("tools", "#a9b8d1"), ("summary", "#f2c48d"),
         ("history", "#b9dcc0"))
QUALITY_CMAP = LinearSegmentedColormap.from_list("q", ["#c0392b", "#f1c40f", "#27ae60"])


def color(strategy: str, order: Sequence[str] = ()) -> str:
    if strategy in KNOWN:
        return KNOWN[strategy]
    # A stable pick for other names (str hash is salted per process).
    i = list(order).index(strategy) if strategy in order else sum(map(ord, strategy))
    return PALETTE[i % len(PALETTE)]


def _k(v: float, _pos: object = None) -> str:
    return f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"


def svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline: no XML declaration or doctype


def heatmaps(data: dict[str, Any]) -> str:
    panels = data["panels"]
    strategies = list(dict.fromkeys(p["strategy"] for p in panels))
    metrics = ["followup_accuracy", "constraint_retention"]
    sizes, ratios = data["context_sizes"], data["trigger_ratios"]
    fig, axes = plt.subplots(len(metrics), len(strategies), squeeze=False,
                             figsize=(2.1 + 2.3 * len(strategies), 1.2 + 1.9 * len(metrics)))
    for j, strategy in enumerate(strategies):
        for i, metric in enumerate(metrics):
            ax = axes[i][j]
            grid = [[math.nan] * len(sizes) for _ in ratios]
            labels: dict[tuple[int, int], str] = {}
            panel = next(p for p in panels if p["strategy"] == strategy and p["metric"] == metric)
            for c in panel["cells"]:
                y, x = ratios.index(c["trigger_ratio"]), sizes.index(c["context_size"])
                if c["value"] is not None:
                    grid[y][x] = c["value"]
                labels[(y, x)] = "–" if c["value"] is None else f"{c['value']:.2f}"
            ax.imshow(grid, cmap=QUALITY_CMAP, vmin=0, vmax=1, aspect="auto", origin="lower")
            for (y, x), text in labels.items():
                ax.text(x, y, text, ha="center", va="center", fontsize=9, color="#111",
                        fontweight="bold")
            ax.set_xticks(range(len(sizes)), [f"{s // 1024}k" if s % 1024 == 0 else str(s)
                                              for s in sizes])
            ax.set_yticks(range(len(ratios)), [f"{r:g}" for r in ratios])
            for s in ax.spines.values():
                s.set_visible(False)
            if i == 0:
                ax.set_title(strategy, color=color(strategy, strategies))
            if i == len(metrics) - 1:
                ax.set_xlabel("context_size")
            if j == 0:
                ax.set_ylabel(f"{metric.replace('_', ' ')}\ntrigger_ratio")
    fig.tight_layout()
    return svg(fig)


def pareto(points: list[dict[str, Any]]) -> str:
    fig, ax = plt.subplots(figsize=(7.4, 4.2))
    order = sorted({s for p in points for s in p["strategy"]})
    pts = [p for p in points if p["quality"] is not None and p["cost"]]
    for p in pts:
        s = p["strategy"][0] if len(p["strategy"]) == 1 else "mixed"
        ax.scatter(p["cost"], p["quality"], s=70 if p["pareto"] else 30,
                   color=color(s, order), edgecolor="#222" if p["pareto"] else "none",
                   linewidth=1.2, alpha=0.9, zorder=3)
    front = sorted((p for p in pts if p["pareto"]), key=lambda p: p["cost"])
    if front:
        ax.plot([p["cost"] for p in front], [p["quality"] for p in front], color="#222",
                linewidth=1, linestyle="--", zorder=2)
        # The rank beside each front point: the table next to the chart names the cell.
        rank = {id(p): i for i, p in enumerate(points, start=1)}
        for p in front:
            ax.annotate(f"#{rank[id(p)]}", (p["cost"], p["quality"]),
                        textcoords="offset points", xytext=(5, 5), fontsize=8,
                        fontweight="bold", color="#222")
    for s in order:
        ax.scatter([], [], color=color(s, order), label=s, s=30)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(_k))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("true input tokens per run (mean, log scale)")
    ax.set_ylabel("quality (follow-ups + constraints kept)")
    ax.set_ylim(-0.05, 1.08)
    ax.grid(alpha=0.25)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=max(1, len(order)),
              fontsize=8, handletextpad=0.3, columnspacing=1.2)
    fig.tight_layout()
    return svg(fig)


def estimate_error(data: dict[str, list[dict[str, Any]]]) -> str:
    parts = [("by_locale", "locale", "by scenario locale"), ("by_kind", "kind", "by content kind")]
    parts = [p for p in parts if data[p[0]]]
    fig, axes = plt.subplots(1, max(1, len(parts)), squeeze=False,
                             figsize=(4.2 * max(1, len(parts)), 0.9 + 0.36 * max(
                                 (len(data[p[0]]) for p in parts), default=1)))
    for ax, (name, key, title) in zip(axes[0], parts, strict=False):
        rows = data[name]
        labels = [f"{r[key]} · {r['estimator']} vs {r['tokenizer']}" for r in rows]
        vals = [r["signed_mean"] or 0.0 for r in rows]
        ax.barh(range(len(rows)), vals, color=["#c0392b" if v < 0 else "#2e86c1" for v in vals],
                height=0.6)
        ax.scatter([r["mape"] or 0.0 for r in rows], range(len(rows)), marker="|", s=120,
                   color="#111", zorder=3, label="MAPE")
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="#555", linewidth=0.8)
        ax.set_xlabel("(estimate − true) / true: bars signed mean, | MAPE")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.25)
    fig.tight_layout()
    return svg(fig)


def survival(series: list[dict[str, Any]]) -> str:
    fig, ax = plt.subplots(figsize=(5.6, 3.0))
    order = [s["strategy"] for s in series]
    styles = ("-", "--", ":", "-.")
    marks = ("o", "s", "^", "D", "v", "P")
    for i, s in enumerate(series):
        # Lines that lie on one another (pinned and structured often keep the same facts) stay
        # apart: each its own dash and marker, and a small sideways shift.
        shift = 0.08 * (i - (len(series) - 1) / 2)
        ks = [p["k"] + shift for p in s["points"]]
        ax.plot(ks, [p["mean"] for p in s["points"]], marker=marks[i % len(marks)],
                linestyle=styles[i % len(styles)], label=s["strategy"],
                color=color(s["strategy"], order), linewidth=2.0, markersize=6, alpha=0.9)
    ax.set_xlabel("compaction number")
    ax.set_ylabel("facts still shown")
    ax.set_ylim(-0.05, 1.05)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.25)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return svg(fig)


def sawtooth(tr: dict[str, Any]) -> str:
    calls = tr["calls"]
    fig, ax = plt.subplots(figsize=(7.6, 3.3))
    xs = list(range(1, len(calls) + 1))
    ax.stackplot(xs, *[[c[p] for c in calls] for p, _ in PARTS], colors=[c for _, c in PARTS],
                 labels=[f"{p} ({tr['budget_unit']})" for p, _ in PARTS], alpha=0.9,
                 step="mid")
    ax.plot(xs, [c["true"] for c in calls], color="#1b2631", linewidth=1.6, marker=".",
            label="true input")
    ax.plot(xs, [c["estimate"] for c in calls], color="#e67e22", linewidth=1.3, marker=".",
            linestyle="--", label=f"estimate ({tr['estimator']})")
    ax.axhline(tr["trigger"], color="#8e44ad", linewidth=1, linestyle=":",
               label=f"trigger {tr['trigger']:.0f}")
    top = max([tr["trigger"], *(c["true"] for c in calls), *(c["estimate"] or 0 for c in calls)],
              default=1)
    # The true window only when it is on the axis: a 128000 window over a 4096-token context
    # would squash the plot, and a legend entry for a line not drawn misleads.
    window_shown = tr["window"] <= top * 1.6
    if window_shown:
        ax.axhline(tr["window"], color="#c0392b", linewidth=1,
                   label=f"true window {tr['window']}")
    index = {c["call"]: i + 1 for i, c in enumerate(calls)}
    for k, comp in enumerate(tr["compactions"]):
        ax.axvline(index.get(comp["after_call"], 0) + 0.5, color="#7f8c8d", linewidth=1,
                   linestyle="-.", label="compaction" if k == 0 else None)
    over = [i + 1 for i, c in enumerate(calls) if c["overflow"]]
    if over:
        ax.scatter(over, [calls[i - 1]["true"] for i in over], marker="x", color="#c0392b",
                   s=50, zorder=4, label="rejected (overflow)")
    ax.set_ylim(0, max(top, tr["window"]) * 1.08 if window_shown else top * 1.18)
    ax.set_xlim(0.5, len(calls) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(_k))
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens")
    ax.grid(alpha=0.2)
    if not window_shown:
        ax.set_title(f"true window {tr['window']:,} (above the axis)", fontsize=9, loc="right",
                     color="#555")
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return svg(fig)


def fact_strip(fx: dict[str, Any]) -> str:
    facts = fx["facts"]
    fig, ax = plt.subplots(figsize=(7.6, 0.6 + 0.28 * max(1, len(facts))))
    if facts:
        grid = [[1.0 if row[i] else 0.0 for row in fx["present"]] for i in range(len(facts))]
        cmap = LinearSegmentedColormap.from_list("p", ["#f4f6f7", "#2e86c1"])
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_yticks(range(len(facts)), facts, fontsize=8)
        for k in fx["compactions"]:
            ax.axvline(k - 0.5, color="#c0392b", linewidth=1.2)
    ax.set_xlabel("reply call (red: a compaction)")
    calls = fx.get("calls") or []
    if facts and calls:
        # Ticks name the model call of each column, a few of them, as the sawtooth numbers them.
        step = max(1, len(calls) // 10)
        cols = list(range(0, len(calls), step))
        ax.set_xticks(cols, [str(calls[i]) for i in cols], fontsize=8)
    else:
        ax.set_xticks([])
    for s in ax.spines.values():
        s.set_visible(False)
    fig.tight_layout()
    return svg(fig)
