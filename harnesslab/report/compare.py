"""``harnesslab report A B``: two sweeps compared on the runs they share (same scenario, variant,
seed and values of A's swept keys), as paired deltas B − A with an exact two-sided sign test.
What else differs between the two (a fixed ``--set``, the code, the scenario files) is what the
comparison measures.

Only runs compared in the single report count (not controls, not errors, not variants that
set a swept key themselves). The sign test counts the pairs where B is above A and where it is
below (ties dropped): p = min(1, 2 · P[X ≤ min(up, down)]) for X ~ Binomial(up + down, 1/2).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnesslab.errors import InputError
from harnesslab.report import tables

if TYPE_CHECKING:
    import pandas as pd

# name, label, higher is better
METRICS = (("quality", "quality (follow-ups + constraints)", True),
           ("followup_accuracy", "follow-up accuracy", True),
           ("constraint_retention", "constraint retention", True),
           ("all_passed", "all checks passed", True),
           ("true_input_tokens", "true input tokens", False),
           ("compactions", "compactions", False),
           ("overflow_rate", "overflow rate", False),
           ("estimate_error_mape", "estimate error (MAPE)", False))
PAIR = ["scenario", "variant", "seed"]


def sign_test(up: int, down: int) -> float | None:
    """Exact two-sided sign test; None without a single non-tied pair."""
    n = up + down
    if n == 0:
        return None
    k = min(up, down)
    tail: float = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2.0 * tail)


def _per_run(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    num = out["followup_accuracy_num"].fillna(0) + out["constraint_retention_num"].fillna(0)
    den = out["followup_accuracy_den"].fillna(0) + out["constraint_retention_den"].fillna(0)
    out["quality"] = (num / den).where(den > 0)
    out["all_passed"] = out["all_passed"].astype(float)
    return out


def _stats(a: pd.Series, b: pd.Series) -> dict[str, Any]:
    ok = a.notna() & b.notna()
    a, b = a[ok].astype(float), b[ok].astype(float)
    d = b - a
    up, down = int((d > 0).sum()), int((d < 0).sum())
    return {"pairs": int(ok.sum()), "mean_a": tables.py(a.mean()) if len(a) else None,
            "mean_b": tables.py(b.mean()) if len(b) else None,
            "delta": tables.py(d.mean()) if len(d) else None,
            "up": up, "down": down, "ties": int(len(d) - up - down), "p": sign_test(up, down)}


def compare(a_dir: str | Path, b_dir: str | Path) -> dict[str, Any]:
    from harnesslab.report.html import load_sweep_dir

    a_df, a_man = load_sweep_dir(a_dir)
    b_df, _ = load_sweep_dir(b_dir)
    grid = list(a_man.get("grid", {}))
    swept = [f"set.{k}" for k in grid if f"set.{k}" in b_df.columns]
    a = _per_run(tables.compared(a_df, grid))
    b = _per_run(tables.compared(b_df, grid))
    merged = a.merge(b, on=[*PAIR, *swept], suffixes=("_a", "_b"))
    if merged.empty:
        raise InputError("the two sweeps share no compared run (same scenario, variant, seed "
                         "and swept settings)", file=str(b_dir))
    overall = [{"metric": m, "label": label, "higher_better": hb,
                **_stats(merged[f"{m}_a"], merged[f"{m}_b"])} for m, label, hb in METRICS]
    cells = []
    for vals, g in merged.groupby(swept, sort=True) if swept else [((), merged)]:
        vals = vals if isinstance(vals, tuple) else (vals,)
        label = ", ".join(f"{k[4:]}={tables.py(v)}" for k, v in zip(swept, vals, strict=True))
        cells.append({"cell": label or "(all)", "runs": len(g),
                      "quality": _stats(g["quality_a"], g["quality_b"]),
                      "tokens": _stats(g["true_input_tokens_a"], g["true_input_tokens_b"]),
                      "run_keys_a": sorted(g["run_key_a"]), "run_keys_b": sorted(g["run_key_b"])})
    q = next(o for o in overall if o["metric"] == "quality")
    t = next(o for o in overall if o["metric"] == "true_input_tokens")
    return {"a": str(a_dir), "b": str(b_dir), "pairs": len(merged),
            "only_a": len(a) - len(merged), "only_b": len(b) - len(merged),
            "overall": overall, "cells": cells, "headline": _headline(q, t, len(merged))}


def _p(p: float | None) -> str:
    return "no pair differs" if p is None else f"sign test p = {p:.3g}"


def _headline(q: dict[str, Any], t: dict[str, Any], pairs: int) -> str:
    parts = [f"Over {pairs} paired runs, B − A:"]
    if q["delta"] is not None:
        parts.append(f"quality {100 * q['delta']:+.1f} points ({q['up']} better, {q['down']} "
                     f"worse, {_p(q['p'])});")
    if t["delta"] is not None and t["mean_a"]:
        parts.append(f"true input tokens {100 * t['delta'] / t['mean_a']:+.1f}% "
                     f"({t['down']} cheaper, {t['up']} dearer, {_p(t['p'])}).")
    return " ".join(parts)


def write_compare(a_dir: str | Path, b_dir: str | Path, *, out: str | Path | None = None,
                  reports_root: str | Path = "reports") -> tuple[Path, dict[str, Any]]:
    from harnesslab.report.html import new_report_dir, render

    data = compare(a_dir, b_dir)
    folder = Path(out) if out is not None else new_report_dir(reports_root, "-compare")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "index.html"
    path.write_text(render({"c": data}, "compare.html"), encoding="utf-8")
    return path, data
