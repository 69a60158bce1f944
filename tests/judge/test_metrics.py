"""Each metric flips under a one-setting change to the harness (design 3.7), and the
statistics across seeds are exact."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import Variant
from harnesslab.stats import bootstrap_mean, error_stats, pass_hat_k, wilson

Suite = tuple[Path, list[RunResult]]


def run(scenario: str, **settings: object) -> RunResult:
    sc = load_scenario(bundled_dir() / f"{scenario}.yaml")
    r = run_variant(sc, Variant(name="probe"), cli_set=settings)
    assert r.error is None, r.error
    return r


def value(r: RunResult, name: str) -> object:
    v = r.metrics[name]
    return v["value"] if isinstance(v, dict) and "value" in v else v


def test_followup_accuracy_flips_when_no_summary_is_sent() -> None:
    base = dict(context_size=4096)
    assert value(run("followup-after-filler-zh", **base), "followup_accuracy") == 1.0
    assert value(run("followup-after-filler-zh", strategy="truncate", **base),
                 "followup_accuracy") == 0.0


def test_constraint_retention_flips_with_pinned() -> None:
    lossy = {"summarizer": {"profile": "lossy", "drop": {"constraint": 1.0}}}
    structured = value(run("brevity-30-turns-zh", **lossy), "constraint_retention")
    pinned = value(run("brevity-30-turns-zh", strategy="pinned", **lossy),
                   "constraint_retention")
    assert pinned == 1.0
    assert isinstance(structured, float) and structured < 0.2


def test_entity_fidelity_flips_with_pinned() -> None:
    swap = {"summarizer": {"profile": "lossy", "swap": 1.0}}
    assert value(run("entity-swap-o1001-o1010-zh", **swap), "entity_fidelity") == 0.5
    assert value(run("entity-swap-o1001-o1010-zh", strategy="pinned", **swap),
                 "entity_fidelity") == 1.0


def test_stale_fact_rate_flips_without_the_time_hint() -> None:
    assert value(run("stale-logistics-zh"), "stale_fact_rate") == 0.0
    assert value(run("stale-logistics-zh", time_hint=False), "stale_fact_rate") == 0.5


def test_identity_leak_rate_flips_when_claims_are_trusted() -> None:
    assert value(run("spoofed-identity-zh"), "identity_leak_rate") == 0.0
    assert value(run("spoofed-identity-zh", identity="trust"), "identity_leak_rate") == 1.0


def test_overflow_rate_and_estimate_error_flip_with_the_estimator() -> None:
    b4 = run("cl100k-chinese-overflow-zh")
    cl = run("cl100k-chinese-overflow-zh", estimator="cl100k_base")
    assert value(b4, "overflow_rate") == pytest.approx(1 / 3)
    assert value(cl, "overflow_rate") == 0.0
    e_b4, e_cl = b4.metrics["estimate_error"], cl.metrics["estimate_error"]
    assert e_b4["signed_mean"] < -0.1 and abs(e_cl["signed_mean"]) < 0.06


def test_trigger_lateness_flips_with_the_estimator() -> None:
    # A cl100k service whose true window equals the configured context_size: bytes4 lets the
    # true count run ~1.5x past the trigger before compaction fires; cl100k does not.
    common = dict(service="openai-cl100k-128k", **{"service.window": 8192,
                                                    "service.max_output": 1024,
                                                    "service.default_output": 512})
    late = value(run("followup-after-filler-zh", **common), "trigger_lateness")
    exact = value(run("followup-after-filler-zh", estimator="cl100k_base", **common),
                  "trigger_lateness")
    assert isinstance(late, float) and isinstance(exact, float)
    assert late > 1.2 and exact < 1.1


def test_wasted_requery_rate_flips_with_a_skewed_harness_clock() -> None:
    assert value(run("followup-o1001-zh"), "wasted_requery_rate") == 0.0
    assert value(run("followup-o1001-zh", clock_offset_hours=24), "wasted_requery_rate") == 0.5


def test_cost_flips_with_the_strategy() -> None:
    none = run("followup-after-filler-zh", strategy="none")
    structured = run("followup-after-filler-zh")
    assert value(none, "compactions") == 0 and value(structured, "compactions") >= 1
    assert value(structured, "summary_tokens") > 0 == value(none, "summary_tokens")
    # Without compaction every reply carries the whole filler: the last call costs more.
    assert value(none, "model_calls") == value(structured, "model_calls") - 1


def test_wilson_interval_values() -> None:
    lo, hi = wilson(8, 10)  # type: ignore[misc]
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    assert wilson(0, 0) is None
    lo0, hi0 = wilson(0, 5)  # type: ignore[misc]
    assert lo0 == 0.0 and 0.4 < hi0 < 0.6


def test_pass_hat_k_is_taus_unbiased_estimator() -> None:
    assert pass_hat_k(3, 4, 1) == 0.75
    assert pass_hat_k(3, 4, 2) == 3 / 6
    assert pass_hat_k(3, 4, 4) == 0.0
    assert pass_hat_k(4, 4, 4) == 1.0
    assert pass_hat_k(1, 2, 3) is None


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    xs = [0.1, 0.4, 0.35, 0.8, 0.5]
    a, b = bootstrap_mean(xs), bootstrap_mean(xs)
    assert a == b
    assert a is not None and a[0] <= sum(xs) / len(xs) <= a[1]
    assert bootstrap_mean(xs, seed=1) != a


def test_bootstrap_is_the_percentile_interval_of_the_resampled_means() -> None:
    xs, iterations = [0.1, 0.4, 0.35, 0.8, 0.5, 0.2, 0.9], 400
    picks = np.random.default_rng(7).integers(0, len(xs), size=(iterations, len(xs)))
    means = sorted(sum(xs[j] for j in row) / len(xs) for row in picks)
    got = bootstrap_mean(xs, iterations=iterations, seed=7, level=0.95)
    assert got is not None
    assert got[0] == pytest.approx(means[10]) and got[1] == pytest.approx(means[390])


@pytest.mark.parametrize("xs", [[0.3], [0.1, 0.1, 0.1], [2.0] * 50])
def test_bootstrap_of_a_constant_sample_is_that_value(xs: list[float]) -> None:
    assert bootstrap_mean(xs) == (xs[0], xs[0])


def test_error_stats() -> None:
    s = error_stats([-0.2, 0.1, -0.1, 0.4])
    assert math.isclose(s["signed_mean"] or 0, 0.05)
    assert math.isclose(s["mape"] or 0, 0.2)
    assert s["p95"] == 0.4


def test_a_metric_only_some_seeds_have_is_zero_in_the_others() -> None:
    # The server cut a request in one seed and not in the other: the pooled rate counts the
    # other's calls as uncut (not a KeyError, not a rate over the cutting seed alone).
    from harnesslab.judge.metrics import aggregate

    cut = {"model_calls": 4, "server_truncation_rate": {"num": 1, "den": 4, "value": 0.25},
           "server_dropped_messages": 12}
    whole = {"model_calls": 6}
    pooled = aggregate([whole, cut])
    assert (pooled["server_truncation_rate"]["num"], pooled["server_truncation_rate"]["den"]) \
        == (1, 10)
    assert pooled["server_dropped_messages"]["value"] == 6.0
    assert "server_truncation_rate" not in aggregate([whole, whole])  # the control
