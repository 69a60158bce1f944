"""The terminal table of a run: per variant, its role and effective settings, its checks and
outcome, the main metrics and their cost; a legend; then a headline that keeps "everything
as expected" apart from "controls failed as designed"."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from harnesslab.judge.checks import NOT_APPLICABLE_WHY
from harnesslab.run.runner import RunResult
from harnesslab.run.suite import summarize

# (metric, column, direction of better)
RATES = [("followup_accuracy", "follow-up", "higher"), ("constraint_retention", "retention", "higher"),
         ("entity_fidelity", "entities", "higher"), ("stale_fact_rate", "stale", "lower"),
         ("wasted_requery_rate", "wasted", "lower"), ("identity_leak_rate", "leaks", "lower"),
         ("overflow_rate", "overflow", "lower")]
COSTS = [("true_input_tokens", "true-in"), ("compactions", "compact"),
         ("summary_tokens", "sum-tok")]
SETTINGS = [("harness", "harness"), ("strategy", "strategy"), ("context_size", "ctx"),
            ("trigger_ratio", "trig"), ("estimator", "estimator"), ("service", "service")]

LEGEND = (
    "legend: follow-up = follow-up accuracy, retention = constraint retention, entities = "
    "entity fidelity (higher is better); stale = stale-fact rate, wasted = wasted re-queries, "
    "leaks = identity-leak rate, overflow = service rejections per call (lower is better); "
    "est.err = signed mean of (estimate - true) / true; true-in = true input tokens sent, "
    "compact = compactions, sum-tok = summary tokens (cost, lower is cheaper); "
    "'-' = the run had nothing to measure (no such turn or call); "
    "* = the variant's own setting won over --set; role: control = its checks must fail, "
    "fix = the setting that repairs a control")


def _value(m: dict[str, Any], name: str) -> Any:
    v = m.get(name, {})
    return v.get("value") if isinstance(v, dict) else None


def _rate(m: dict[str, Any], name: str, seeds: int) -> str:
    v = _value(m, name)
    if v is None:
        return "-"
    ci = m[name].get("ci")
    if seeds > 1 and ci:
        return f"{v:.2f} [{ci[0]:.2f},{ci[1]:.2f}]"
    return f"{v:.2f}"


def _count(m: dict[str, Any], name: str, seeds: int) -> str:
    v = _value(m, name)
    if v is None:
        return "-"
    text = f"{v:,.0f}" if abs(v - round(v)) < 1e-9 else f"{v:,.1f}"
    ci = m[name].get("ci")
    if seeds > 1 and ci and ci[0] != ci[1]:
        text += f" [{ci[0]:,.0f},{ci[1]:,.0f}]"
    return text


def _setting(row: dict[str, Any], key: str) -> str:
    value = row["settings"].get(key)
    text = "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
    if any(o == key or o.startswith(key + ".") for o in row["overridden"]):
        text += "*"
    return text


def format_results(results: Sequence[RunResult], summary: dict[str, Any] | None = None) -> str:
    summary = summary if summary is not None else summarize(results)
    seeds = max((r["seeds"] for r in summary["rows"]), default=1)
    head = ["scenario", "variant", "role", *(c[1] for c in SETTINGS), "checks", "outcome",
            *(c[1] for c in RATES), "est.err", *(c[1] for c in COSTS)]
    if seeds > 1:
        head.append("pass^1..k")
    rows = [head]
    for row in summary["rows"]:
        m = row["metrics"]
        signed = (m.get("estimate_error") or {}).get("signed_mean", {}).get("value")
        line = [row["scenario"], row["variant"], row["role"],
                *(_setting(row, k) for k, _ in SETTINGS),
                f"{row['checks_passed']}/{row['checks']}",
                _outcome(row),
                *(_rate(m, k, row["seeds"]) for k, _, _ in RATES),
                "-" if signed is None else f"{signed:+.2f}",
                *(_count(m, k, row["seeds"]) for k, _ in COSTS)]
        if seeds > 1:
            ks = row["pass_hat_k"]
            line.append("/".join("-" if ks[str(k)] is None else f"{ks[str(k)]:.2f}"
                                 for k in (1, row["seeds"])))
        rows.append(line)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for row in summary["rows"]:
        for u in row["unexpected"]:
            lines.append(f"  ! {row['scenario']}/{row['variant']}: {u}")
        for u in row.get("not_applicable", []):
            lines.append(f"  - {row['scenario']}/{row['variant']}: {u}")
        if row.get("checks_not_applicable"):
            lines.append(f"  n/a {row['scenario']}/{row['variant']}: "
                         f"{', '.join(row['checks_not_applicable'])} ({NOT_APPLICABLE_WHY})")
        for u in row.get("checks_unreadable", []):
            # The bench's fault, not the harness's: apart from the failures above.
            lines.append(f"  ? {row['scenario']}/{row['variant']}: unreadable {u}")
        cut = (row.get("metrics") or {}).get("server_truncation_rate") or {}
        if cut.get("num"):
            # No overflow says it: the harness left its window to the server, which cut.
            dropped = (row["metrics"].get("server_dropped_messages") or {}).get("value") or 0
            lines.append(f"  cut {row['scenario']}/{row['variant']}: the server truncated "
                         f"{cut['num']} of {cut['den']} calls, dropping {dropped:g} messages "
                         f"(per seed) the harness sent")
    notes = LEGEND
    if seeds > 1:
        notes += (f"; with {seeds} seeds: rates with 95% Wilson intervals, costs with bootstrap "
                  "intervals, pass^1..k = tau-bench's pass^k of every check passing for k = 1 "
                  "and k = seeds")
    lines.extend(textwrap.wrap(notes, 100))
    lines.append(headline(summary))
    return "\n".join(lines) + "\n"


def _outcome(row: dict[str, Any]) -> str:
    if row.get("skipped") and not row["checks"]:
        return "skipped"
    if row.get("not_applicable") and not row["checks"]:
        return "n/a"
    return "as expected" if row["expected"] else "UNEXPECTED"


def headline(summary: dict[str, Any]) -> str:
    rows = summary["rows"]
    skipped = [r for r in rows if _outcome(r) == "skipped"]
    na = [r for r in rows if _outcome(r) == "n/a"] + skipped
    unexpected = [r for r in rows if not r["expected"]]
    controls = [r for r in rows if r["role"] == "control" and r["expected"] and r not in na]
    unread = [r for r in rows if r.get("checks_unreadable")]
    # A variant with a check the bench could not read did not pass every check.
    others = len(rows) - len(controls) - len(unexpected) - len(na) - len(
        [r for r in unread if r["expected"] and r not in controls and r not in na])
    runs = summary["runs"]
    names = sorted({str(r["settings"].get("harness")) for r in na if r["settings"].get("harness")})
    who = names[0] if len(names) == 1 else "this harness"
    na = [r for r in na if r not in skipped]
    tail = f"; {len(na)} variant{'' if len(na) == 1 else 's'} not applicable to {who}" if na else ""
    for why in sorted({w for r in skipped for w in r["skipped"]}):
        n = sum(why in r["skipped"] for r in skipped)
        tail += f"; {n} variant{'' if n == 1 else 's'} skipped ({why})"
    if unread:
        tail += (f"; {len(unread)} with checks the bench could not read (its fault, not the "
                 "harness's: lines '?')")
    if unexpected:
        return (f"{len(unexpected)} of {len(rows)} variants NOT as expected ({runs} runs); "
                f"{others} passed, {len(controls)} controls failed as designed{tail}")
    return (f"all {len(rows)} variants as expected ({runs} runs): {others} passed every check, "
            f"{len(controls)} controls failed as designed{tail}")
