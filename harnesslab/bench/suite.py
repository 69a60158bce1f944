"""A suite's results pooled per (scenario, variant) across seeds, written as summary.json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnesslab.bench.metrics import aggregate, error_stats, pass_hat_k
from harnesslab.bench.runner import RunResult


def summarize(results: Sequence[RunResult]) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.scenario, r.variant), []).append(r)
    rows = []
    for (scenario, variant), runs in groups.items():
        n = len(runs)
        passed = sum(r.all_passed for r in runs)
        rows.append({
            "scenario": scenario, "variant": variant, "locale": runs[0].locale, "seeds": n,
            "role": runs[0].role, "settings": runs[0].settings,
            "overridden": runs[0].overridden,
            "expected": all(r.expected for r in runs),
            "unexpected": sorted({u for r in runs for u in (r.verdict.unexpected if r.verdict
                                                             else [r.error or "run failed"])}),
            "checks_passed": sum(sum(c.passed for c in r.checks) for r in runs),
            "checks": sum(len(r.checks) for r in runs),
            "pass_hat_k": {str(k): pass_hat_k(passed, n, k) for k in range(1, n + 1)},
            "metrics": aggregate([r.metrics for r in runs if r.metrics]),
            "errors": [r.error for r in runs if r.error],
        })
    by_locale: dict[str, list[float]] = {}
    for r in results:
        for e in r.call_errors:
            by_locale.setdefault(r.locale, []).append(e)
    return {"runs": len(results), "expected": all(r.expected for r in results), "rows": rows,
            "estimate_error_by_locale": {k: error_stats(v) for k, v in sorted(by_locale.items())}}


def write_summary(results: Sequence[RunResult], out: Path) -> dict[str, Any]:
    summary = summarize(results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n",
                                      encoding="utf-8")
    return summary
