"""The kill rule the bug zoo and the mutation report share: a harness is worse than the reference
when a check that should pass fails, when the service rejects more of its requests as malformed
than the reference's on the same run (a broken chat protocol: no correct harness sends one, and
the reference harness sends none on any bundled variant), or when a cost the scenario declares
gets worse than the reference harness's on the same run by more than the declared margin. A
check a control expects to fail that passes is reported apart ("changed a control"), never
counted as a kill: a bug can make one scenario better (keeping more messages removes a
documented failure) without the suite having seen a worse harness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harnesslab.judge.checks import CheckOutcome, expectations_met
from harnesslab.scenario.schema import Variant

# Variants that reject every call fail every check at once and say nothing about a harness.
REJECT_ALL = frozenset({"service-rejects-all", "window-too-small"})

How = Literal["failed", "protocol", "cost", "passed"]


@dataclass(frozen=True)
class Finding:
    """One way a run differs from what its variant expects of a correct harness."""

    check: str       # a check id, an expect_fail entry (how="passed"), or cost.<metric>
    step: int | None
    how: How         # failed: should pass and failed; protocol: more requests rejected as
    #                  malformed than the reference's; cost: a declared cost regressed;
    #                  passed: a control's expected failure passed (a changed control)
    detail: str

    @property
    def kills(self) -> bool:
        return self.how != "passed"


def protocol_errors(metrics: Mapping[str, Any]) -> int:
    """Requests the service rejected as malformed (a tool result without its call, a call
    without its result before the next message, ...)."""
    return int((metrics.get("protocol_error_rate") or {}).get("num", 0))


def protocol_regression(metrics: Mapping[str, Any],
                        reference: Mapping[str, Any] | None) -> list[Finding]:
    """A finding when the run broke the chat protocol more often than the reference's run (none
    when there is no reference run: the reference harness breaks it on no bundled variant).
    Counted whatever the scenario declares: a rejected malformed request is a defect whatever
    it costs, and a harness can make one and still answer (a summary request the service
    rejects, then truncation), cheaper than the reference."""
    mine, ref = protocol_errors(metrics), protocol_errors(reference or {})
    if mine <= ref:
        return []
    return [Finding("protocol", None, "protocol",
                    f"the service rejected {mine} malformed request(s) (reference {ref})")]


def costs(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The cost metrics a scenario may declare, from a run's metrics: true input tokens summed,
    service rejections counted, true tokens spent on summaries and pin extractions."""
    rate = metrics.get("overflow_rate") or {}
    return {"true_input_tokens": float(metrics.get("true_input_tokens", 0)),
            "overflows": float(rate.get("num", 0)),
            "summary_tokens": float(metrics.get("summary_tokens", 0))}


def cost_regressions(metrics: Mapping[str, Any], reference: Mapping[str, Any],
                     declared: Mapping[Any, float]) -> list[Finding]:
    """A finding per declared cost that exceeds the reference's by more than its relative
    margin (0.01 = 1%) on the same scenario, variant and seed."""
    mine, ref = costs(metrics), costs(reference)
    out: list[Finding] = []
    for name, margin in sorted(declared.items()):
        if mine[name] > ref[name] * (1 + margin):
            out.append(Finding(f"cost.{name}", None, "cost",
                               f"{name} {mine[name]:g} > reference {ref[name]:g} "
                               f"(margin {margin:.0%})"))
    return out


def findings(checks: Sequence[CheckOutcome], variant: Variant,
             metrics: Mapping[str, Any] | None = None,
             reference: Mapping[str, Any] | None = None,
             declared: Mapping[Any, float] | None = None) -> list[Finding]:
    """Every finding of one run, kills first (should-pass failures, then cost regressions),
    then the changed controls. A check expected to fail only at a rate is free either way."""
    met, covered = expectations_met(checks, variant)
    passed = [Finding(want, hits[0].step if "." in want and hits else None, "passed",
                      "expected to fail, but it passed") for want, hits in met]
    failed = [Finding(c.id, c.step, "failed", c.detail) for c in checks
              if not c.passed and c.id not in covered]
    cost = (cost_regressions(metrics, reference, declared)
            if metrics is not None and reference is not None and declared else [])
    broke = protocol_regression(metrics, reference) if metrics is not None else []
    return [*failed, *broke, *cost, *passed]
