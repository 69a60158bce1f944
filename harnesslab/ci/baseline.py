"""Baselines: per-item, per-seed metrics keyed by (scenario, variant), saved as JSON, and the
comparison of a run against them.

Compared metrics and which way is better:

- quality, higher is better: ``pass_rate`` (1 when the seed's outcome was the expected one),
  ``followup_accuracy``, ``constraint_retention``, ``entity_fidelity``,
  ``summary_entity_fidelity``;
- quality, lower is better: ``stale_fact_rate``, ``wasted_requery_rate``,
  ``identity_leak_rate``, ``overflow_rate``;
- cost, lower is better: ``true_input_tokens``, ``compactions``, ``summary_tokens``. Cost
  changes are listed; they fail an item only when a ``cost_tolerance`` is configured.

Seeds are paired (the fake model's draws depend on the seed, never on the harness, so the
same seed is the same world). When the comparison is deterministic (one common seed, or every
seed giving the same value in both runs) the mean difference is compared with the tolerance
exactly. Otherwise an exact one-sided sign test on the per-seed differences decides:
a seed counts as worse when its difference goes the wrong way by more than the tolerance,
better when it goes the right way by more; the metric regressed when P(at least that many
worse seeds | worse + better seeds, p = 1/2) < alpha (and improved symmetrically). With
alpha 0.05 that needs at least five seeds that moved, all the same way.

A control's changes are listed but never fail it: its configuration is broken on purpose.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnesslab.errors import InputError
from harnesslab.run.runner import RunResult

BASELINE_VERSION = 1
HIGHER = ("pass_rate", "followup_accuracy", "constraint_retention", "entity_fidelity",
          "summary_entity_fidelity")
LOWER = ("stale_fact_rate", "wasted_requery_rate", "identity_leak_rate", "overflow_rate")
COST = ("true_input_tokens", "compactions", "summary_tokens")
METRICS = (*HIGHER, *LOWER, *COST)


class BaselineItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: str
    variant: str
    control: bool = Field(description="The variant expects failures (changes never fail it)")
    seeds: dict[str, dict[str, float | None]] = Field(description="seed -> metric -> value "
                                                      "(null: the metric had no cases)")


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = Field(default=BASELINE_VERSION, description="Baseline file format version")
    settings: dict[str, Any] = Field(default_factory=dict, description="The harness and settings "
                                     "of the run that saved it (for people; never compared)")
    seeds: list[int] = Field(default_factory=list, description="The seeds of that run")
    items: list[BaselineItem]

    def by_key(self) -> dict[tuple[str, str], BaselineItem]:
        return {(i.scenario, i.variant): i for i in self.items}


def seed_values(result: RunResult) -> dict[str, float | None]:
    """The compared metrics of one run (a run that crashed has only ``pass_rate``)."""
    out: dict[str, float | None] = {"pass_rate": 1.0 if result.expected else 0.0}
    for name in METRICS[1:]:
        v = result.metrics.get(name)
        if isinstance(v, dict):
            v = v.get("value")
        out[name] = float(v) if isinstance(v, int | float) else None
    return out


def item_of(results: Sequence[RunResult]) -> BaselineItem:
    r = results[0]
    return BaselineItem(scenario=r.scenario, variant=r.variant, control=r.control,
                        seeds={str(x.seed): seed_values(x) for x in results})


def save_baseline(path: Path, items: Sequence[BaselineItem], settings: Mapping[str, Any],
                  seeds: Sequence[int]) -> None:
    data = Baseline(settings=dict(settings), seeds=list(seeds),
                    items=sorted(items, key=lambda i: (i.scenario, i.variant)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data.model_dump(mode="json"), ensure_ascii=False, indent=1) + "\n",
                    encoding="utf-8")


def load_baseline(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", file=str(path), field="--harnesslab-baseline") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", file=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"bad JSON: {e.msg}", file=str(path), line=e.lineno) from None
    try:
        b = Baseline.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(str(err["msg"]), file=str(path),
                         field=".".join(str(x) for x in err["loc"]) or None) from None
    if b.version != BASELINE_VERSION:
        raise InputError(f"baseline version {b.version}; this harnesslab reads version "
                         f"{BASELINE_VERSION}", file=str(path), field="version")
    return b


@dataclass(frozen=True)
class Tolerance:
    quality: float = 0.0          # absolute, on rates
    cost: float | None = None     # relative to the baseline's mean; None: report only
    alpha: float = 0.05


@dataclass(frozen=True)
class Change:
    scenario: str
    variant: str
    metric: str
    kind: Literal["regression", "improvement"]
    before: float      # mean over the paired seeds
    after: float
    test: str          # "exact" or the sign test's counts and p
    gating: bool       # fails the item

    def line(self) -> str:
        fmt = "{:.0f}" if self.metric in COST else "{:.2f}"
        note = ""
        if self.kind == "regression" and not self.gating:
            note = " (cost: reported only)" if self.metric in COST else " (control: not gating)"
        return (f"{self.scenario}/{self.variant}: {self.metric} {fmt.format(self.before)} -> "
                f"{fmt.format(self.after)} ({self.test}){note}")


def sign_test_p(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2): the exact one-sided sign test."""
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n if n else 1.0


def compare_metric(before: Sequence[float], after: Sequence[float], better: int, tol: float,
                   alpha: float) -> tuple[Literal["regression", "improvement"] | None, str]:
    """Paired values of one metric (``better`` = +1 when higher is better, -1 when lower is);
    the module docstring's rule. Returns the kind of change (or None) and how it was decided."""
    d = [better * (a - b) for b, a in zip(before, after, strict=True)]
    if len(d) == 1 or (len(set(before)) == 1 and len(set(after)) == 1):
        mean = sum(d) / len(d)
        if mean < -tol:
            return "regression", "exact"
        if mean > tol:
            return "improvement", "exact"
        return None, "exact"
    worse = sum(x < -tol for x in d)
    gained = sum(x > tol for x in d)
    n = worse + gained
    p_worse, p_better = sign_test_p(worse, n), sign_test_p(gained, n)
    test = f"sign test over {len(d)} seeds: {worse} worse, {gained} better"
    if worse > gained and p_worse < alpha:
        return "regression", f"{test}, p={p_worse:.3f}"
    if gained > worse and p_better < alpha:
        return "improvement", f"{test}, p={p_better:.3f}"
    return None, test


def compare_item(base: BaselineItem, results: Sequence[RunResult], tol: Tolerance) -> list[Change]:
    """This run's seeds of one item against its baseline, paired by seed."""
    now = {str(r.seed): seed_values(r) for r in results}
    common = [s for s in base.seeds if s in now]
    changes: list[Change] = []
    for metric in METRICS:
        before: list[float] = []
        after: list[float] = []
        for s in common:
            b, a = base.seeds[s].get(metric), now[s][metric]
            if b is not None and a is not None:
                before.append(b)
                after.append(a)
        if not before:
            continue
        mean_before = sum(before) / len(before)
        allowed = (tol.cost or 0.0) * mean_before if metric in COST else tol.quality
        kind, test = compare_metric(before, after, -1 if metric not in HIGHER else 1, allowed,
                                    tol.alpha)
        if kind is None:
            continue
        gating = kind == "regression" and not base.control and (
            metric not in COST or tol.cost is not None)
        changes.append(Change(base.scenario, base.variant, metric, kind, mean_before,
                              sum(after) / len(after), test, gating))
    return changes
