"""The terminal table of a run: checks, expected outcomes and the main metrics per variant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harnesslab.bench.runner import RunResult
from harnesslab.bench.suite import summarize

COLUMNS = [("followup_accuracy", "follow-up"), ("constraint_retention", "retention"),
           ("entity_fidelity", "entities"), ("stale_fact_rate", "stale"),
           ("wasted_requery_rate", "wasted"), ("identity_leak_rate", "leaks"),
           ("overflow_rate", "overflow")]


def _rate(m: dict[str, Any], name: str) -> str:
    v = m.get(name, {})
    if not isinstance(v, dict) or v.get("value") is None:
        return "-"
    return f"{v['value']:.2f}"


def format_results(results: Sequence[RunResult]) -> str:
    summary = summarize(results)
    head = ["scenario", "variant", "checks", "outcome", *(c[1] for c in COLUMNS), "est.err",
            "compactions"]
    rows = [head]
    for row in summary["rows"]:
        m = row["metrics"]
        signed = (m.get("estimate_error") or {}).get("signed_mean", {}).get("value")
        err = "-" if signed is None else f"{signed:+.2f}"
        comp = m.get("compactions", {}).get("value")
        rows.append([row["scenario"], row["variant"], f"{row['checks_passed']}/{row['checks']}",
                     "as expected" if row["expected"] else "UNEXPECTED",
                     *(_rate(m, c[0]) for c in COLUMNS), err,
                     "-" if comp is None else f"{comp:g}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for row in summary["rows"]:
        for u in row["unexpected"]:
            lines.append(f"  ! {row['scenario']}/{row['variant']}: {u}")
    ok = sum(r["expected"] for r in summary["rows"])
    lines.append(f"{ok}/{len(summary['rows'])} variants as expected "
                 f"({summary['runs']} runs); est.err = signed mean (estimate - true) / true")
    return "\n".join(lines) + "\n"
