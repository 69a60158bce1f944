"""The CI gate of one scenario variant run over seeds: pass^k against a minimum, quarantine of
flaky items, what a control's outcome means, and the few lines a failing item reports.

An ordinary variant's seed is *ok* when every check passed (its verdict). A control's seed is
*ok* when the control failed as designed: every check it lists in ``expect_fail`` failed and
nothing else did (its verdict too). The gated number is pass^k of ok seeds (tau-bench's
unbiased estimator; pass^1 is the plain rate); the item holds when it is at least
``min_pass_rate``. Otherwise:

- quarantine: the ok rate is strictly between 0 and 1 and the flakiness, min(ok, not ok) /
  seeds, exceeds ``quarantine_flaky_rate`` (reported, not failing);
- a control whose every missed seed passed every check is ``control_passed``: the control no
  longer fails (pytest's strict xfail turns it into a failure);
- anything else fails with the lines of :func:`explain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harnesslab.harness.honours import describe
from harnesslab.judge.checks import CheckOutcome, expectations_met
from harnesslab.run.runner import RunResult
from harnesslab.scenario.schema import Scenario, UserStep, Variant
from harnesslab.stats import pass_hat_k

Status = Literal["ok", "failed", "quarantined", "control_passed"]


@dataclass(frozen=True)
class Gate:
    min_pass_rate: float = 1.0
    pass_k: int = 1
    quarantine_flaky_rate: float | None = None


@dataclass(frozen=True)
class Judgement:
    status: Status
    ok_seeds: int
    seeds: int
    statistic: float   # pass^k of ok seeds
    flakiness: float   # min(ok, not ok) / seeds
    summary: str       # one line: what the seeds did against the gate

    @property
    def pass_rate(self) -> float:
        return self.ok_seeds / self.seeds


def judge(results: Sequence[RunResult], control: bool, gate: Gate) -> Judgement:
    n = len(results)
    ok = sum(r.expected for r in results)
    stat = pass_hat_k(ok, n, gate.pass_k)
    if stat is None:
        raise ValueError(f"pass_k = {gate.pass_k} needs at least {gate.pass_k} seeds; got {n}")
    flaky = min(ok, n - ok) / n
    what = "failed as designed" if control else "passed"
    stat_name = "pass rate" if gate.pass_k == 1 else f"pass^{gate.pass_k}"
    summary = f"{what} in {ok}/{n} seeds ({stat_name} {stat:.2f}, minimum {gate.min_pass_rate:.2f})"
    status: Status
    if stat >= gate.min_pass_rate:
        status = "ok"
    elif 0 < ok < n and gate.quarantine_flaky_rate is not None \
            and flaky > gate.quarantine_flaky_rate:
        status = "quarantined"
        summary += f"; flakiness {flaky:.2f} > {gate.quarantine_flaky_rate:g}: quarantined"
    elif control and ok == 0 and all(r.all_passed for r in results):
        status = "control_passed"
    else:
        status = "failed"
    return Judgement(status, ok, n, stat, flaky, summary)


def display_path(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` when inside it (what a user pastes into a shell there)."""
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(path)


def control_deviation(checks: Sequence[CheckOutcome],
                      variant: Variant) -> tuple[list[str], list[CheckOutcome]]:
    """For a control: the expect_fail entries that did not fail, and the failing checks no
    entry lists (the same coverage rule as ``checks.verdict``)."""
    passed, covered = expectations_met(checks, variant)
    return [want for want, _ in passed], [c for c in checks
                                          if c.id not in covered and not c.passed]


def _expected(sc: Scenario, c: CheckOutcome) -> str:
    step = sc.steps[c.step - 1] if 0 < c.step <= len(sc.steps) else None
    if not isinstance(step, UserStep):
        return c.kind
    value = getattr(step.expect, c.kind, None)
    if isinstance(value, bool):
        return c.kind if value else f"not {c.kind}"
    if isinstance(value, dict):
        value = {str(k.value if hasattr(k, "value") else k): v for k, v in value.items()}
    return f"{c.kind} {value}"


def _turn_calls(record: Path) -> dict[int, tuple[int, int]]:
    from harnesslab.record.format import Record

    try:
        rec = Record.load(record)
    except Exception:  # a broken record must not hide the failure being reported
        return {}
    return {e["step"]: (e["first_call"], e["last_call"]) for e in rec.of_type("turn")}


def explain(sc: Scenario, variant: Variant, result: RunResult, cwd: Path) -> list[str]:
    """What went wrong in one seed's run, in a few lines: each check (step, the user's words,
    expected, actual), the record, and the command that shows the model's view at the last
    call of the first failing turn."""
    where = display_path(result.record, cwd) if result.record else None
    lines: list[str] = []
    if result.error:
        lines.append(f"run error: {result.error}")
    failing: list[CheckOutcome]
    if variant.expect_fail:
        listed_passed, failing = control_deviation(result.checks, variant)
        lines += [f"{w}: expected to fail (this variant is a control), but it passed"
                  for w in listed_passed]
    else:
        failing = [c for c in result.checks if not c.passed]
    for c in failing:
        step = sc.steps[c.step - 1] if 0 < c.step <= len(sc.steps) else None
        said = f" {step.user!r}" if isinstance(step, UserStep) else ""
        lines.append(f"{c.id} failed at step {c.step}{said}: expected {_expected(sc, c)}; "
                     f"got: {c.detail}")
    if where:
        lines.append(f"record: {where}")
        calls = _turn_calls(result.record) if result.record else {}
        for c in failing:
            first, last = calls.get(c.step, (0, -1))
            if last >= first:
                lines.append(f"what the model saw (step {c.step}, call {last}): "
                             f"harnesslab show {where} --call {last}")
                break
    return lines


def failure_text(sc: Scenario, variant: Variant, results: Sequence[RunResult],
                 verdict: Judgement, cwd: Path) -> str:
    """The report of a failing item: the first missed seed explained (after the gate's line
    when there are several seeds)."""
    missed = [r for r in results if not r.expected]
    if not missed:
        return f"{sc.id} / {variant.name}: {verdict.summary}"
    first = missed[0]
    declared = declared_line(first)
    if len(results) == 1:
        lines = [f"{sc.id} / {variant.name} (seed {first.seed}):", *declared]
    else:
        lines = [f"{sc.id} / {variant.name}: {verdict.summary}", *declared,
                 f"seed {first.seed}" + (f" (first of {len(missed)} missed seeds):"
                                         if len(missed) > 1 else ":")]
    return "\n".join([*lines, *("  " + ln for ln in explain(sc, variant, first, cwd))])


def declared_line(result: RunResult) -> list[str]:
    """The harness and the settings it declared it honours (none when no harness was built)."""
    if result.honours is None:
        return []
    return [f"harness {result.settings.get('harness', '?')} honours "
            f"{describe(frozenset(result.honours))}"]


def seed_label(seeds: Sequence[int]) -> str:
    s = sorted(seeds)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))

