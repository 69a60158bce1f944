"""The sweep report: one self-contained HTML file (jinja2, autoescaped; plots as inline SVG; the
data behind every plot embedded as JSON with its run keys), written to
``reports/<timestamp>/index.html``. The timestamp names the folder only; nothing inside the
report depends on the clock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnesslab.errors import InputError
from harnesslab.record.format import Record
from harnesslab.record.table import MANIFEST, load_table, table_path
from harnesslab.report import tables

if TYPE_CHECKING:
    import pandas as pd
    from markupsafe import Markup

# Candidates (scenario, variant, strategy, failed checks) read for their cause; after grouping
# by cause far fewer drill-downs are shown.
MAX_DRILLDOWNS = 48
MAX_GALLERY = 24
# Drill-downs shown open (the most frequent cause); the others are one line each until clicked
# (the page stays a few screens tall, every cause one click away).
OPEN_DRILLDOWNS = 1


def script_json(obj: Any) -> Markup:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' can end it."""
    from markupsafe import Markup

    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def new_report_dir(root: str | Path, suffix: str = "") -> Path:
    """``root/<YYYYmmdd-HHMMSS><suffix>``, made unique (the one use of the wall clock)."""
    base = Path(root)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path, n = base / f"{stamp}{suffix}", 1
    while path.exists():
        n += 1
        path = base / f"{stamp}{suffix}-{n}"
    path.mkdir(parents=True)
    return path


def load_sweep_dir(sweep_dir: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    d = Path(sweep_dir)
    df = load_table(d)
    try:
        manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
    except OSError:
        manifest = {"grid": {c[4:]: [] for c in df.columns if c.startswith("set.")}}
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg}", file=str(d / MANIFEST), line=e.lineno) \
            from None
    if df.empty:
        raise InputError("the sweep table has no rows", file=str(table_path(d)))
    return df, manifest


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.0f}%"


def _ci(r: dict[str, Any]) -> str:
    return "" if not r.get("ci") else f" (95% CI {_pct(r['ci'][0])}–{_pct(r['ci'][1])})"


def _tokens(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f}"


def headline(rank: list[dict[str, Any]]) -> str:
    """The one sentence at the top: the best cell by quality at cost, and the last."""
    rated = [r for r in rank if r["quality"]["value"] is not None]
    if not rated:
        return ("No compared run had a follow-up or a constraint to keep: every run here is a "
                "control, an error, a variant that sets the swept keys itself, or a scenario "
                "without follow-ups or constraints.")
    best, worst = rated[0], rated[-1]
    q = best["quality"]["value"]
    ties = [r for r in rated if r["quality"]["value"] == q]
    passed = (best.get("all_passed") or {}).get("value")
    # Pooled turns can read 97% while a fifth of the runs failed a check: both are said.
    runs = f", {_pct(passed)} of its runs passing every check" if passed is not None else ""
    lead = (f"Best quality at the lowest cost: {best['label']} kept {_pct(q)} of follow-ups "
            f"and constraints{_ci(best['quality'])} at {_tokens(best['cost'])} true input "
            f"tokens per run{runs}")
    if len(ties) > 1:
        lead += f" (the cheapest of {len(ties)} cells at that quality)"
    if worst is not best and worst["quality"]["value"] != q:
        lead += f"; last: {worst['label']} at {_pct(worst['quality']['value'])}"
    return lead + "."


def grouped_headline(groups: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> str:
    """The headline when the conversation changes with a swept key (``tables.sizing_keys``):
    one sentence per value of it, never a ranking across conversations that differ."""
    if len(groups) == 1 and not groups[0][0]:
        return headline(groups[0][1])
    keys = " and ".join(groups[0][0])
    parts = []
    for _at, rank in groups:
        rated = [r for r in rank if r["quality"]["value"] is not None]
        if not rated:
            continue
        best = rated[0]
        passed = (best.get("all_passed") or {}).get("value")
        runs = f", {_pct(passed)} of runs passing every check" if passed is not None else ""
        lead = "best " if len(rated) > 1 else ""
        parts.append(f"{lead}{best['label']}: {_pct(best['quality']['value'])} of follow-ups "
                     f"and constraints at {_tokens(best['cost'])} true input tokens per "
                     f"run{runs}")
    if not parts:
        return headline([])
    return (f"The conversation itself changes with {keys} (its small talk is sized in that "
            f"count), so cells are ranked only within one value of it: " + "; ".join(parts)
            + ".")


def wins_line(w: dict[str, Any]) -> str:
    """The strategies compared on the same conversation: how often each is best."""
    if not w["wins"] or not w["groups"]:
        return ""
    held = " and ".join(w["others"])
    where = f"With {held} held fixed (the same conversation)" if held else "Compared"
    parts = [f"{x['strategy']} in {x['wins']} of {w['groups']}" for x in w["wins"]]
    return f"{where}, the best strategy at the lowest cost is " + ", ".join(parts) + "."


def strategy_line(by_strategy: dict[str, list[dict[str, Any]]]) -> str:
    parts = []
    for s, cells in by_strategy.items():
        num = sum(c["quality"]["num"] for c in cells)
        den = sum(c["quality"]["den"] for c in cells)
        cost = [c["cost"] for c in cells if c["cost"] is not None]
        if den:
            parts.append((num / den, s, sum(cost) / len(cost) if cost else None))
    parts.sort(key=lambda p: (-p[0], p[2] if p[2] is not None else 0))
    return "By strategy, over all its cells: " + "; ".join(
        f"{s} {_pct(q)} at {_tokens(c)} tokens per run" for q, s, c in parts) + "." \
        if parts else ""


def _pick(rows: pd.DataFrame) -> Any:
    return rows.sort_values(["context_size", "trigger_ratio", "seed", "run_key"]).iloc[0]


def select_runs(df: pd.DataFrame, grid: Sequence[str]) -> tuple[list[dict[str, Any]],
                                                                 list[dict[str, Any]]]:
    """Drill-downs: one run per distinct failure (scenario, variant, strategy, failed checks)
    of the compared runs; gallery: one run per (scenario, strategy), the default variant where
    there is one, the cell with the most compactions."""
    comp = tables.compared(df, grid)
    failing = comp[~comp["all_passed"].astype(bool)]
    if "unreadable_checks" in failing.columns:
        # A run whose only failures are the bench's own (unreadable requests) is no failure.
        failing = failing[~((failing["failed_checks"].fillna("") == "")
                            & (failing["unreadable_checks"].fillna("") != ""))]
    drill = []
    for (sc, var, st, fc), g in failing.groupby(["scenario", "variant", "strategy",
                                                 "failed_checks"], sort=True):
        r = _pick(g)
        drill.append({"run_key": str(r.run_key), "scenario": str(sc), "variant": str(var),
                      "strategy": str(st), "failed_checks": str(fc), "cell": str(r.cell),
                      "record": str(r.record), "same": sorted(g["run_key"])})
    gallery = []
    for (sc, st), g in comp.groupby(["scenario", "strategy"], sort=True):
        pref = g[g["variant"] == "default"] if (g["variant"] == "default").any() else \
            g[g["variant"] == sorted(g["variant"])[0]]
        pref = pref[pref["seed"] == pref["seed"].min()]
        r = pref.sort_values(["compactions", "run_key"], ascending=[False, True]).iloc[0]
        gallery.append({"run_key": str(r.run_key), "scenario": str(sc), "variant": str(r.variant),
                        "strategy": str(st), "cell": str(r.cell), "record": str(r.record),
                        "all_passed": bool(r.all_passed)})
    return drill[:MAX_DRILLDOWNS], gallery[:MAX_GALLERY]


def cause_of(view: dict[str, Any]) -> tuple[Any, ...]:
    """A failure's cause, as a person groups them: the scenario, the checks that failed (by
    id) and what the failing request lost (the facts, or the question itself), whatever the
    variant or strategy that got there."""
    first = (view.get("failures") or [{}])[0]
    return (view["scenario"], view["failed_checks"], tuple(first.get("lost") or ()),
            bool(first.get("question_missing")))


def group_by_cause(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One drill-down per cause: the first run's view, with the count, the runs and the
    (variant, strategy) pairs behind it; the most frequent causes first."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for v in views:
        g = groups.get(cause_of(v))
        if g is None:
            groups[cause_of(v)] = {**v, "same": list(v["same"]),
                                   "where": [(v["variant"], v["strategy"], len(v["same"]))]}
            continue
        g["same"] = sorted({*g["same"], *v["same"]})
        g["where"].append((v["variant"], v["strategy"], len(v["same"])))
    out = sorted(groups.values(), key=lambda g: (-len(g["same"]), g["scenario"], g["run_key"]))
    for g in out:
        g["where_label"] = ", ".join(f"{var} · {st} ({n})" for var, st, n in sorted(g["where"]))
    return out


def _controls_off(ctl: list[dict[str, Any]]) -> str:
    """Which controls also failed another check, in a few words for the first screen."""
    off = [c for c in ctl if c["as_designed"] != c["runs"]]
    variants = sorted({c["variant"] for c in off})
    head = ", ".join(variants[:3]) + (f" and {len(variants) - 3} more" if len(variants) > 3
                                      else "")
    return f"{len(off)} control variant{'s' if len(off) != 1 else ''} ({head})"


def _run_view(sweep_dir: Path, sel: dict[str, Any], with_drill: bool) -> dict[str, Any]:
    from harnesslab.report import plots, runs

    rec = Record.load(sweep_dir / sel["record"])
    tr, fx = runs.trace(rec), runs.facts(rec)
    view = {**sel, "title": rec.header.get("title", ""), "trace": tr, "facts": fx,
            "sawtooth_svg": plots.sawtooth(tr), "facts_svg": plots.fact_strip(fx),
            "show": f"harnesslab show {sweep_dir / sel['record']}"}
    if with_drill:
        view["failures"] = runs.drilldown(rec)
        view["more_failures"] = runs.failed_turns(rec) - len(view["failures"])
    return view


def build(sweep_dir: str | Path) -> dict[str, Any]:
    """Everything the template shows, computed from the sweep folder."""
    from harnesslab.report import plots

    d = Path(sweep_dir)
    df, manifest = load_sweep_dir(d)
    grid = list(manifest.get("grid", {}))
    rank = tables.ranking(df, grid)
    by_strategy = tables.strategy_tables(df, grid)
    data: dict[str, Any] = {"ranking": rank, "heatmaps": tables.heatmaps(df, grid),
            "pareto": tables.pareto(df, grid), "estimate_error": tables.estimate_error(df),
            "survival": tables.survival(df, grid),
            "strategy_wins": tables.strategy_wins(df, grid),
            "kill_table": tables.kill_table(df, grid)}
    drill, gallery = select_runs(df, grid)
    groups = tables.ranking_groups(df, grid)
    lead = grouped_headline(groups)
    comp = tables.compared(df, grid)
    ctl = tables.controls(df)
    svgs = {
        "pareto": plots.pareto(data["pareto"]) if data["pareto"] else "",
        "heatmaps": plots.heatmaps(data["heatmaps"]) if data["heatmaps"]["panels"] else "",
        "estimate_error": plots.estimate_error(data["estimate_error"])
        if data["estimate_error"]["by_locale"] else "",
        "survival": plots.survival(data["survival"]) if data["survival"] else "",
    }
    return {
        "sweep_dir": str(d), "table": str(table_path(d)), "grid": manifest.get("grid", {}),
        "fixed": manifest.get("set", {}), "seeds": manifest.get("seeds", []),
        "headline": lead, "strategy_line": strategy_line(by_strategy),
        "wins_line": wins_line(data["strategy_wins"]),
        "sizing_keys": list(groups[0][0]),
        "counts": {"runs": len(df), "compared": len(comp), "cells": len(rank),
                   "scenarios": int(df["scenario"].nunique()),
                   "controls": sum(c["runs"] for c in ctl),
                   "controls_ok": sum(c["as_designed"] for c in ctl),
                   "errors": len(tables.errors(df)),
                   "not_applicable": sum(n["runs"] for n in tables.not_applicable(df)),
                   "unmatched": sum(u["runs"] for u in tables.unmatched(df, grid))},
        "data": data, "svgs": svgs, "by_strategy": by_strategy, "controls": ctl,
        "controls_off": _controls_off(ctl),
        "pinned": tables.pinned_variants(df, grid), "errors": tables.errors(df),
        "unreadable": tables.unreadable(df),
        "not_applicable": tables.not_applicable(df),
        "unmatched": tables.unmatched(df, grid),
        "OPEN_DRILLDOWNS": OPEN_DRILLDOWNS,
        "drilldowns": group_by_cause([_run_view(d, s, True) for s in drill]),
        "failing_runs": int((~comp["all_passed"].astype(bool)).sum()) if len(comp) else 0,
        "gallery": [_run_view(d, s, False) for s in gallery],
    }


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("harnesslab.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = _pct
    env.filters["tokens"] = _tokens
    env.filters["ci"] = lambda r: "" if not r or not r.get("ci") else \
        f"{_pct(r['ci'][0])}–{_pct(r['ci'][1])}"
    env.filters["json"] = script_json
    env.filters["svg"] = _svg_markup
    return env


def _svg_markup(text: str) -> Markup:
    from markupsafe import Markup

    # Our own matplotlib output; any text in it was escaped by matplotlib's SVG writer.
    return Markup(text)


def render(context: dict[str, Any], template: str = "index.html") -> str:
    return str(_env().get_template(template).render(**context))


@dataclass(frozen=True)
class Written:
    path: Path       # index.html
    headline: str    # the sentence at its top


def write_report(sweep_dir: str | Path, *, out: str | Path | None = None,
                 reports_root: str | Path = "reports") -> Written:
    """Write the report of a sweep folder (``out``, or a new ``reports_root/<timestamp>``)."""
    context = build(sweep_dir)
    folder = Path(out) if out is not None else new_report_dir(reports_root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "index.html"
    path.write_text(render(context), encoding="utf-8")
    return Written(path, context["headline"])
