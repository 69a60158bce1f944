"""A suite's results pooled per (scenario, variant) across seeds, written as summary.json; a
variant's expectations that span its seeds (a check failing in a fraction of them) are judged
here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnesslab.judge.checks import matching
from harnesslab.judge.metrics import aggregate
from harnesslab.run.runner import RunResult
from harnesslab.stats import error_stats, pass_hat_k


def rate_unexpected(runs: Sequence[RunResult]) -> list[str]:
    """What goes against the variant's fractional expectations across its seeds: a check
    expected to fail in at least ``at_least`` of ``of`` seeds that failed in fewer."""
    out = []
    n = len(runs)
    for rate in runs[0].rates if runs else ():
        failed = sum(1 for r in runs if any(not c.passed and not c.unreadable
                                            for c in matching(r.checks, rate.check)))
        if failed < rate.needed(n):
            out.append(f"expected {rate.check} to fail in at least {rate.at_least} of "
                       f"{rate.of} seeds ({rate.needed(n)} of {n}), it failed in {failed}")
    return out


def summarize(results: Sequence[RunResult]) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.scenario, r.variant), []).append(r)
    rows = []
    for (scenario, variant), runs in groups.items():
        n = len(runs)
        passed = sum(r.all_passed for r in runs)
        across = rate_unexpected(runs)
        # A run the scenario does not apply to is neither a pass nor a surprise.
        applicable = [r for r in runs if not r.not_applicable]
        rows.append({
            "scenario": scenario, "variant": variant, "locale": runs[0].locale, "seeds": n,
            "role": runs[0].role, "settings": runs[0].settings,
            "overridden": runs[0].overridden,
            "expected": all(r.expected for r in applicable) and not across,
            "not_applicable": sorted({r.error or "" for r in runs if r.not_applicable}),
            # only where it happened (rows of runs that ran stay as they were)
            **({"skipped": why} if (why := sorted({r.skipped for r in runs if r.skipped}))
               else {}),
            "unexpected": sorted({u for r in applicable for u in (r.verdict.unexpected if r.verdict
                                                             else [r.error or "run failed"])}
                                 | set(across)),
            "checks_passed": sum(sum(c.passed for c in r.checks) for r in runs),
            "checks": sum(len(r.checks) for r in runs),
            "pass_hat_k": {str(k): pass_hat_k(passed, n, k) for k in range(1, n + 1)},
            "metrics": aggregate([r.metrics for r in runs if r.metrics]),
            "errors": [r.error for r in runs if r.error],
            "checks_not_applicable": sorted({c for r in runs for c in r.checks_not_applicable}),
            # only where it happened (rows of readable runs stay as they were)
            **({"checks_unreadable": unread} if (unread := sorted(
                {c for r in runs for c in r.checks_unreadable})) else {}),
        })
    by_locale: dict[str, list[float]] = {}
    for r in results:
        for e in r.call_errors:
            by_locale.setdefault(r.locale, []).append(e)
    return {"runs": len(results), "expected": all(row["expected"] for row in rows), "rows": rows,
            "estimate_error_by_locale": {k: error_stats(v) for k, v in sorted(by_locale.items())}}


def write_summary(results: Sequence[RunResult], out: Path) -> dict[str, Any]:
    summary = summarize(results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n",
                                      encoding="utf-8")
    return summary
