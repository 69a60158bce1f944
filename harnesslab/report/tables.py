"""What the report shows, computed from the sweep table (a DataFrame) alone: the ranking of the
swept cells, the tables per strategy, the heatmaps, the Pareto chart, the estimate error, the
fact survival, the controls. Each function returns plain JSON-able data with the run keys
behind every number; plots draw it and the HTML embeds it unchanged.

Which runs are **compared**: not a control (a control is expected to fail), not an errored run,
not a variant that sets a swept key itself (the cell did not apply to it), and like for like:
only the (scenario, variant, seed) units that every cell with a completed run completed. A cell
that cannot run a variant (a harness reporting it not applicable, a crash) would otherwise be
ranked on an easier set of runs than the others; its missing units are left out of every cell.
**Quality** of a set of runs = (follow-ups answered correctly + constraint-turns obeyed) /
(follow-up turns + constraint-turns), pooled over its runs, with a Wilson interval. **Cost** =
mean true input tokens per run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harnesslab.stats import pass_hat_k, wilson

if TYPE_CHECKING:
    import pandas as pd


def py(v: Any) -> Any:
    """A pandas/numpy scalar as plain Python (NaN as None)."""
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def cell_label(cell: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell.items()) or "(no swept key)"


def _overrides_swept(overridden: Any, keys: Sequence[str]) -> bool:
    if not isinstance(overridden, str) or not overridden:
        return False
    return any(k in keys or k.split(".", 1)[0] in keys for k in overridden.split(","))


def _eligible(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    mask = [not bool(c) and (e is None or e != e) and not _overrides_swept(o, keys)
            for c, e, o in zip(df["control"], df["error"], df["overridden"], strict=True)]
    return df[mask]


def _units(df: pd.DataFrame) -> pd.Series:
    return df["scenario"].astype(str) + "\0" + df["variant"].astype(str) + "\0" + \
        df["seed"].astype(str)


def _cell_ids(df: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    cols = [f"set.{k}" for k in keys]
    return df[cols].astype(str).agg("\0".join, axis=1)


def compared(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    comp = _eligible(df, keys)
    if not keys or comp.empty:
        return comp
    units, cells = _units(comp), _cell_ids(comp, keys)
    per_unit = cells.groupby(units).nunique()
    full = set(per_unit[per_unit == cells.nunique()].index)
    return comp[units.isin(full)]


def unmatched(df: pd.DataFrame, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The completed runs left out of the comparison because another cell did not complete
    the same (scenario, variant, seed): per cell, how many and which units."""
    comp = _eligible(df, keys)
    left = comp[~comp["run_key"].isin(set(compared(df, keys)["run_key"]))]
    return [{"cell": c, "label": cell_label(c), "runs": len(g),
             "units": sorted({f"{s}/{v}/{n}" for s, v, n in
                              zip(g["scenario"], g["variant"], g["seed"], strict=True)}),
             "run_keys": sorted(g["run_key"])} for c, g in _cells(left, keys)]


def _rate(num: int, den: int) -> dict[str, Any]:
    ci = wilson(num, den)
    return {"value": num / den if den else None, "num": num, "den": den,
            "ci": list(ci) if ci else None}


def _pool(g: pd.DataFrame, *names: str) -> dict[str, Any]:
    num = sum(int(g[f"{n}_num"].fillna(0).sum()) for n in names)
    den = sum(int(g[f"{n}_den"].fillna(0).sum()) for n in names)
    return _rate(num, den)


def _pass_k(g: pd.DataFrame) -> tuple[int, float | None]:
    groups = g.groupby(["scenario", "variant"], sort=True)["all_passed"]
    trials = [(int(s.sum()), len(s)) for _, s in groups]
    if not trials:
        return 0, None
    k = min(n for _, n in trials)
    vals = [pass_hat_k(c, n, k) for c, n in trials]
    got = [v for v in vals if v is not None]
    return k, (sum(got) / len(got)) if got else None


def _mean(s: pd.Series) -> float | None:
    s = s.dropna()
    return float(s.mean()) if len(s) else None


def _cells(df: pd.DataFrame, grid: Sequence[str]) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    cols = [f"set.{k}" for k in grid]
    if not cols:
        return [({}, df)] if len(df) else []
    out = []
    for vals, g in df.groupby(cols, sort=True, dropna=False):
        vals = vals if isinstance(vals, tuple) else (vals,)
        out.append(({k: py(v) for k, v in zip(grid, vals, strict=True)}, g))
    return out


def cell_stats(cell: dict[str, Any], g: pd.DataFrame) -> dict[str, Any]:
    k, pk = _pass_k(g)
    return {
        "cell": cell, "label": cell_label(cell), "runs": len(g),
        "quality": _pool(g, "followup_accuracy", "constraint_retention"),
        "followup_accuracy": _pool(g, "followup_accuracy"),
        "constraint_retention": _pool(g, "constraint_retention"),
        "overflow_rate": _pool(g, "overflow_rate"),
        "all_passed": _rate(int(g["all_passed"].sum()), len(g)),
        "pass_k": {"k": k, "value": pk},
        "cost": _mean(g["true_input_tokens"]), "compactions": _mean(g["compactions"]),
        "strategy": sorted({str(s) for s in g["strategy"]}),
        "run_keys": sorted(g["run_key"]),
    }


def _better(a: dict[str, Any]) -> tuple[float, float, str]:
    q = a["quality"]["value"]
    return (-(q if q is not None else -1.0), a["cost"] if a["cost"] is not None else math.inf,
            a["label"])


def ranking(df: pd.DataFrame, grid: Sequence[str]) -> list[dict[str, Any]]:
    """The swept cells, best first: higher quality, then lower cost. Pareto-front cells (no other
    cell is at least as good and at most as costly, one of them strictly) are marked."""
    rows = sorted((cell_stats(c, g) for c, g in _cells(compared(df, grid), grid)), key=_better)
    for r in rows:
        q, c = r["quality"]["value"], r["cost"]
        r["pareto"] = q is not None and c is not None and not any(
            o is not r and o["quality"]["value"] is not None and o["cost"] is not None
            and o["quality"]["value"] >= q and o["cost"] <= c
            and (o["quality"]["value"] > q or o["cost"] < c) for o in rows)
    return rows


def strategy_tables(df: pd.DataFrame, grid: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Per effective strategy, its cells, best first."""
    comp = compared(df, grid)
    front = {r["label"] for r in ranking(df, grid) if r["pareto"]}
    out: dict[str, list[dict[str, Any]]] = {}
    for strategy, g in comp.groupby("strategy", sort=True):
        rows = sorted((cell_stats(c, sub) for c, sub in _cells(g, grid)), key=_better)
        for r in rows:
            r["pareto"] = r["label"] in front
        out[str(strategy)] = rows
    return out


def heatmaps(df: pd.DataFrame, grid: Sequence[str]) -> dict[str, Any]:
    """Follow-up accuracy and constraint retention per strategy over context_size x
    trigger_ratio (the effective values of the compared runs). A black-box harness reports
    none of the three (its table shows '-'): its runs have no place on these axes."""
    comp = compared(df, grid).dropna(subset=["strategy", "context_size", "trigger_ratio"])
    sizes = sorted({int(x) for x in comp["context_size"]})
    ratios = sorted({float(x) for x in comp["trigger_ratio"]})
    panels = []
    for strategy, g in comp.groupby("strategy", sort=True):
        for metric in ("followup_accuracy", "constraint_retention"):
            cells = []
            for (cs, tr), sub in g.groupby(["context_size", "trigger_ratio"], sort=True):
                cells.append({"context_size": int(cs), "trigger_ratio": float(tr),
                              **_pool(sub, metric), "run_keys": sorted(sub["run_key"])})
            panels.append({"strategy": str(strategy), "metric": metric, "cells": cells})
    return {"context_sizes": sizes, "trigger_ratios": ratios, "panels": panels}


def pareto(df: pd.DataFrame, grid: Sequence[str]) -> list[dict[str, Any]]:
    return [{"label": r["label"], "cell": r["cell"], "strategy": r["strategy"],
             "quality": r["quality"]["value"], "cost": r["cost"], "pareto": r["pareto"],
             "run_keys": r["run_keys"]} for r in ranking(df, grid)]


def _weighted(g: pd.DataFrame, prefix: str) -> dict[str, Any]:
    n = g[f"{prefix}_n"].fillna(0)
    total = int(n.sum())
    if not total:
        return {"n": 0, "signed_mean": None, "mape": None}
    return {"n": total,
            "signed_mean": float((g[f"{prefix}_signed_mean"].fillna(0) * n).sum() / total),
            "mape": float((g[f"{prefix}_mape"].fillna(0) * n).sum() / total)}


def estimate_error(df: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Per-call estimate error pooled over runs (weighted by admitted calls), by scenario
    locale and by request content kind, for each estimator and true tokenizer. Every run that
    made calls counts, controls included: the error belongs to the estimator, not the outcome."""
    ok = df[df["error"].isna() & (df["estimate_error_n"].fillna(0) > 0)]
    by_locale, by_kind = [], []
    for (loc, est, tok), g in ok.groupby(["locale", "estimator", "tokenizer"], sort=True):
        by_locale.append({"locale": str(loc), "estimator": str(est), "tokenizer": str(tok),
                          **_weighted(g, "estimate_error"), "run_keys": sorted(g["run_key"])})
    for (est, tok), g in ok.groupby(["estimator", "tokenizer"], sort=True):
        for kind in ("zh", "en", "mixed", "json"):
            sub = g[g[f"estimate_error_{kind}_n"].fillna(0) > 0]
            if len(sub):
                by_kind.append({"kind": kind, "estimator": str(est), "tokenizer": str(tok),
                                **_weighted(sub, f"estimate_error_{kind}"),
                                "run_keys": sorted(sub["run_key"])})
    return {"by_locale": by_locale, "by_kind": by_kind}


def survival(df: pd.DataFrame, grid: Sequence[str]) -> list[dict[str, Any]]:
    """Mean share of the facts shown before the first compaction still shown after the k-th,
    per strategy (compared runs that compacted at least k times)."""
    comp = compared(df, grid)
    out = []
    for strategy, g in comp.groupby("strategy", sort=True):
        series: dict[int, list[float]] = {}
        keys: dict[int, list[str]] = {}
        for key, raw in zip(g["run_key"], g["fact_survival"], strict=True):
            for k, v in enumerate(json.loads(raw) if isinstance(raw, str) else [], start=1):
                series.setdefault(k, []).append(float(v))
                keys.setdefault(k, []).append(str(key))
        points = [{"k": k, "mean": sum(vs) / len(vs), "n": len(vs), "run_keys": sorted(keys[k])}
                  for k, vs in sorted(series.items())]
        if points:
            out.append({"strategy": str(strategy), "points": points})
    return out


def controls(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Controls per (scenario, variant): how many runs failed as designed, and where not."""
    ctl = df[df["control"].astype(bool) & ~_na_mask(df)]
    out = []
    for (sc, var), g in ctl.groupby(["scenario", "variant"], sort=True):
        bad = g[~g["expected"].astype(bool)]
        out.append({"scenario": str(sc), "variant": str(var), "runs": len(g),
                    "as_designed": int(g["expected"].astype(bool).sum()),
                    "failed_checks": sorted({c for s in g["failed_checks"].fillna("")
                                             for c in str(s).split(";") if c}),
                    # One line per distinct way it went wrong, with how many runs and which
                    # cells: the same surprise in 60 cells is one line, not 60.
                    "not_as_designed": _surprises(bad),
                    "not_as_designed_count": len(bad),
                    "run_keys": sorted(g["run_key"])})
    return out


def unreadable(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Runs with checks the bench could not read the request of, per (scenario, variant):
    the fake model's limit, not the harness's failure (a table from before has none)."""
    if "unreadable_checks" not in df.columns:
        return []
    hit = df[df["unreadable_checks"].fillna("").astype(str) != ""]
    return [{"scenario": str(sc), "variant": str(var), "runs": len(g),
             "checks": sorted({c for s in g["unreadable_checks"] for c in str(s).split(";") if c}),
             "run_keys": sorted(g["run_key"])}
            for (sc, var), g in hit.groupby(["scenario", "variant"], sort=True)]


def _surprises(bad: pd.DataFrame) -> list[dict[str, Any]]:
    by: dict[str, list[Any]] = {}
    for r in bad.itertuples():
        by.setdefault(str(r.unexpected or r.error or ""), []).append(r)
    out = []
    for text, rs in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        strategies = sorted({str(r.strategy) for r in rs})
        out.append({"unexpected": text, "runs": len(rs), "strategies": strategies,
                    "run_keys": sorted(str(r.run_key) for r in rs)})
    return out


def pinned_variants(df: pd.DataFrame, grid: Sequence[str]) -> list[dict[str, Any]]:
    """Non-control variants that set a swept key themselves: shown, never ranked."""
    mask = [not bool(c) and _overrides_swept(o, grid)
            for c, o in zip(df["control"], df["overridden"], strict=True)]
    out = []
    for (sc, var, ov), g in df[mask].groupby(["scenario", "variant", "overridden"], sort=True):
        out.append({"scenario": str(sc), "variant": str(var), "overridden": str(ov),
                    "runs": len(g), "all_passed": _rate(int(g["all_passed"].sum()), len(g)),
                    "quality": _pool(g, "followup_accuracy", "constraint_retention"),
                    "cost": _mean(g["true_input_tokens"]), "run_keys": sorted(g["run_key"])})
    return out


NOT_APPLICABLE = "NotApplicable: "


def _na_mask(df: pd.DataFrame) -> Any:
    """Runs the variant did not apply to (their error says so): neither failures nor errors."""
    return df["error"].fillna("").astype(str).str.startswith(NOT_APPLICABLE)


def errors(df: pd.DataFrame) -> list[dict[str, Any]]:
    bad = df[df["error"].notna() & ~_na_mask(df)]
    return [{"run_key": str(r.run_key), "scenario": str(r.scenario), "variant": str(r.variant),
             "seed": int(r.seed), "cell": str(r.cell), "error": str(r.error)}
            for r in bad.itertuples()]


def not_applicable(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (scenario, variant, reason): the runs it did not apply to, apart from errors."""
    na = df[_na_mask(df)]
    out = []
    for (sc, var, why), g in na.groupby(["scenario", "variant", "error"], sort=True):
        out.append({"scenario": str(sc), "variant": str(var), "runs": len(g),
                    "reason": str(why).removeprefix(NOT_APPLICABLE),
                    "run_keys": sorted(g["run_key"])})
    return out


def strategy_wins(df: pd.DataFrame, grid: Sequence[str]) -> dict[str, Any]:
    """Strategies compared where everything else swept is the same (so the conversation, filler
    included, is the same): per combination of the other swept keys, the strategy with the best
    quality, then the lowest cost; how many combinations each wins."""
    others = [k for k in grid if k != "strategy"]
    if "strategy" not in grid:
        return {"others": others, "groups": 0, "wins": []}
    comp = compared(df, grid)
    wins: dict[str, list[dict[str, Any]]] = {}
    groups = 0
    for key, g in (comp.groupby([f"set.{k}" for k in others], sort=True) if others
                   else [((), comp)]):
        cands = sorted((cell_stats({"strategy": py(s)}, sub)
                        for s, sub in g.groupby("set.strategy", sort=True)), key=_better)
        if not cands or cands[0]["quality"]["value"] is None:
            continue
        groups += 1
        key = key if isinstance(key, tuple) else (key,)
        wins.setdefault(str(cands[0]["cell"]["strategy"]), []).append(
            {"at": {k: py(v) for k, v in zip(others, key, strict=True)},
             "run_keys": sorted(g["run_key"])})
    return {"others": others, "groups": groups,
            "wins": sorted(({"strategy": s, "wins": len(w), "where": w} for s, w in wins.items()),
                           key=lambda x: (-x["wins"], x["strategy"]))}


def sizing_keys(df: pd.DataFrame, grid: Sequence[str]) -> list[str]:
    """The swept keys the conversation itself changes with: the same scenario, variant and seed,
    with every other swept key held, got a different amount of filler under different values
    (a swept estimator sizes the small talk in its own count). Cells that differ in such a key
    ran different conversations, so they are ranked only within one value of it."""
    # The number of exchanges where the table has it (a swept tokenizer counts the same small
    # talk differently), else their true size (tables written before it).
    col = next((c for c in ("filler_exchanges", "filler_tokens") if c in df.columns), None)
    if col is None or not grid:
        return []
    ok = df[df["error"].isna() & df[col].notna()]
    out = []
    for k in grid:
        held = ["scenario", "variant", "seed", *(f"set.{o}" for o in grid if o != k)]
        sizes = ok.groupby(held, sort=False, dropna=False)[col].nunique()
        if bool((sizes > 1).any()):
            out.append(k)
    return out


def ranking_groups(df: pd.DataFrame, grid: Sequence[str]
                   ) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The ranking per value of the sizing keys (``sizing_keys``): one group, the whole grid,
    when every cell ran the same conversation."""
    keys = sizing_keys(df, grid)
    if not keys:
        return [({}, ranking(df, grid))]
    out = []
    for vals, g in df.groupby([f"set.{k}" for k in keys], sort=True, dropna=False):
        vals = vals if isinstance(vals, tuple) else (vals,)
        out.append(({k: py(v) for k, v in zip(keys, vals, strict=True)}, ranking(g, grid)))
    return out


def kill_table(df: pd.DataFrame, grid: Sequence[str]) -> list[dict[str, Any]]:
    """When ``harness`` is swept with ``reference`` among its values (the bug zoo: bug/<name>):
    per other harness, the runs whose failed checks differ from the reference harness's on the
    same scenario, variant, seed and other swept settings. A harness with such a run is killed."""
    if "harness" not in grid:
        return []
    keys = ["scenario", "variant", "seed", *(f"set.{k}" for k in grid if k != "harness")]
    ok = df[df["error"].isna()]
    ref = ok[ok["set.harness"] == "reference"]
    if ref.empty:
        return []
    out = []
    for harness, g in ok[ok["set.harness"] != "reference"].groupby("set.harness", sort=True):
        m = g.merge(ref, on=keys, suffixes=("", "_ref"))
        diff = m[m["failed_checks"].fillna("") != m["failed_checks_ref"].fillna("")]
        first = None
        if len(diff):
            r = diff.sort_values([*keys, "run_key"]).iloc[0]
            mine = set(str(r["failed_checks"] or "").split(";")) - {""}
            theirs = set(str(r["failed_checks_ref"] or "").split(";")) - {""}
            first = {"scenario": str(r["scenario"]), "variant": str(r["variant"]),
                     "cell": str(r["cell"]), "fails": sorted(mine - theirs),
                     "passes": sorted(theirs - mine), "run_key": str(r["run_key"])}
        out.append({"harness": str(harness), "pairs": len(m), "killed_in": len(diff),
                    "first": first, "run_keys": sorted(diff["run_key"])})
    return out
