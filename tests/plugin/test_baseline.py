"""Baselines: per-item metrics saved by (scenario, variant); an exact comparison when runs are
deterministic, a paired sign test across seeds otherwise; regressions fail, improvements are
listed. Done when: structured saved, truncate on the follow-up scenarios fails with a regression
list, structured again passes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harnesslab.ci.baseline import (
    BaselineItem,
    Tolerance,
    compare_item,
    compare_metric,
    load_baseline,
    sign_test_p,
)
from harnesslab.judge.checks import Verdict
from harnesslab.run.runner import RunResult
from harnesslab.scenario.loader import bundled_dir, load_scenario
from tests.plugin.support import INI, followup


def test_structured_baseline_then_truncate_fails_with_a_regression_list(
        pytester: pytest.Pytester) -> None:
    files = [str(bundled_dir() / f"followup-{name}.yaml")
             for name in ("after-filler-zh", "after-filler-en", "o1001-zh")]
    base = pytester.path / "baseline.json"
    common = ["-p", "no:cacheprovider", "--harnesslab-out", str(pytester.path / "runs"),
              "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    saved = pytester.runpytest(*files, *common, "--harnesslab-set", "strategy=structured",
                               "--harnesslab-save-baseline", str(base))
    assert saved.ret == pytest.ExitCode.OK
    n = sum(len(load_scenario(f).variants) for f in files)
    assert f"baseline saved: baseline.json ({n} items)" in saved.stdout.str()
    data = json.loads(base.read_text(encoding="utf-8"))
    assert data["settings"] == {"strategy": "structured"} and data["seeds"] == [0]
    keys = {(i["scenario"], i["variant"]) for i in data["items"]}
    assert ("followup-after-filler-zh", "default") in keys and len(keys) == n
    zh = next(i for i in data["items"] if (i["scenario"], i["variant"]) ==
              ("followup-after-filler-zh", "default"))
    assert zh["seeds"]["0"]["followup_accuracy"] == 1.0 and not zh["control"]

    worse = pytester.runpytest(*files, *common, "--harnesslab-set", "strategy=truncate",
                               "--harnesslab-baseline", str(base), "-rA")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    out = worse.stdout.str()
    for variant in ("followup-after-filler-zh/default", "followup-after-filler-zh/seed-template",
                    "followup-after-filler-en/default"):
        assert f"  regression   {variant}: followup_accuracy 1.00 -> 0.00 (exact)" in out
        assert f"  regression   {variant}: pass_rate 1.00 -> 0.00 (exact)" in out
    summary = out[out.index("= harnesslab ="):]
    counts = re.search(r"baseline\.json: (\d+) regressions \((\d+) failing\), (\d+) "
                       r"improvements", summary)
    assert counts is not None and int(counts[2]) >= 6 and int(counts[3]) >= 1
    listed = [ln for ln in summary.splitlines() if ln.startswith("  regression   ")]
    assert len(listed) == int(counts[1])
    # The failing item says it too, after its checks.
    assert "regressions against the baseline" in out
    # Less cost is listed as an improvement (cost never fails without a cost_tolerance).
    assert "improvement  followup-after-filler-zh/default: summary_tokens" in summary
    # followup-o1001 never compacts: truncate changes nothing there.
    assert "followup-o1001-zh/default" not in summary

    same = pytester.runpytest(*files, *common, "--harnesslab-set", "strategy=structured",
                              "--harnesslab-baseline", str(base))
    assert same.ret == pytest.ExitCode.OK
    assert "baseline.json: 0 regressions (0 failing), 0 improvements" in same.stdout.str()


def test_a_regression_the_gate_lets_through_fails_by_the_paired_test(
        pytester: pytest.Pytester) -> None:
    # A lossy summary drops the brevity constraint by a seeded draw (rate 0.5: 3 of seeds 0-5
    # pass). The gate accepts any pass rate (min_pass_rate = 0); the baseline does not: when
    # every summary drops it, the 3 passing seeds fail and the others stay as they were, 3
    # worse and 0 better of 6 paired seeds, p = 1/8: a regression at alpha 0.2, noise at 0.05.
    lossy = '{profile = "lossy", drop = {constraint = %s}}'
    pytester.makefile(".yaml", followup=followup([{"name": "default"}]))
    base = pytester.path / "base.json"
    pytester.makepyprojecttoml(INI + "[tool.harnesslab]\nseeds = 6\nmin_pass_rate = 0\n"
                               "baseline_alpha = 0.2\nsettings = {summarizer = %s}\n"
                               % (lossy % "0.5"))
    assert pytester.runpytest("--harnesslab-save-baseline", str(base)).ret == 0
    pytester.makepyprojecttoml(INI + "[tool.harnesslab]\nseeds = 6\nmin_pass_rate = 0\n"
                               "baseline_alpha = 0.2\nsettings = {summarizer = %s}\n"
                               % (lossy % "1.0"))
    worse = pytester.runpytest("--harnesslab-baseline", str(base), "-rA")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    out = worse.stdout.str()
    assert "followup/default: pass_rate 0.50 -> 0.00 (sign test over 6 seeds: 3 worse, 0 " \
           "better, p=0.125)" in out
    assert "followup / default: passed in 0/6 seeds" not in out  # the gate let it through
    # At the default alpha (0.05) the same 3 seeds are noise: compare_metric's cases below.


def test_sign_test_p_values() -> None:
    assert sign_test_p(5, 5) == 1 / 32
    assert sign_test_p(4, 4) == 1 / 16
    assert sign_test_p(4, 5) == 6 / 32
    assert sign_test_p(0, 3) == 1.0
    assert sign_test_p(0, 0) == 1.0


@pytest.mark.parametrize(("before", "after", "better", "tol", "expected"), [
    ([1.0], [0.0], 1, 0.0, ("regression", "exact")),
    ([1.0], [0.9], 1, 0.1, (None, "exact")),              # within the tolerance
    ([1.0], [0.85], 1, 0.1, ("regression", "exact")),
    ([0.2], [0.1], -1, 0.0, ("improvement", "exact")),    # lower is better
    ([0.5, 0.5, 0.5], [0.4, 0.4, 0.4], 1, 0.0, ("regression", "exact")),  # zero variance
    ([1, 1, 1, 1, 1], [0, 0, 0, 0, 0.5], 1, 0.0,
     ("regression", "sign test over 5 seeds: 5 worse, 0 better, p=0.031")),
    ([1, 1, 1, 1, 0], [0, 0, 0, 0, 0], 1, 0.0,
     (None, "sign test over 5 seeds: 4 worse, 0 better")),
    ([1, 0, 0, 1, 1, 0], [0, 0, 0, 0, 0, 0], 1, 0.0,
     (None, "sign test over 6 seeds: 3 worse, 0 better")),    # p = 1/8
    ([0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 0], 1, 0.0,
     (None, "sign test over 6 seeds: 1 worse, 5 better")),   # p = 7/64
    ([0, 0, 0, 0, 0, 0.5], [1, 1, 1, 1, 1, 1], 1, 0.0,
     ("improvement", "sign test over 6 seeds: 0 worse, 6 better, p=0.016")),
    ([1, 0, 1, 0, 1], [0, 1, 0, 1, 0.5], 1, 0.0,
     (None, "sign test over 5 seeds: 3 worse, 2 better")),
])
def test_compare_metric(before: list[float], after: list[float], better: int, tol: float,
                        expected: tuple[str | None, str]) -> None:
    assert compare_metric(before, after, better, tol, 0.05) == expected


def _result(seed: int, ok: bool, **metrics: float) -> RunResult:
    return RunResult("s", "v", seed, None, verdict=Verdict(ok, []),
                     metrics={k: {"value": v} if k.endswith("rate") else v
                              for k, v in metrics.items()})


def test_compare_item_pairs_seeds_and_gates_only_what_it_should() -> None:
    base = BaselineItem(scenario="s", variant="v", control=False, seeds={
        "0": {"pass_rate": 1.0, "overflow_rate": 0.0, "true_input_tokens": 1000.0},
        "7": {"pass_rate": 1.0, "overflow_rate": 0.0, "true_input_tokens": 1000.0}})
    now = [_result(0, True, overflow_rate=0.5, true_input_tokens=1200),
           _result(3, False, overflow_rate=1.0, true_input_tokens=5000)]  # seed 3: unpaired
    changes = {c.metric: c for c in compare_item(base, now, Tolerance())}
    assert set(changes) == {"overflow_rate", "true_input_tokens"}
    assert changes["overflow_rate"].line() == "s/v: overflow_rate 0.00 -> 0.50 (exact)"
    assert changes["overflow_rate"].gating
    # Cost is listed, never failing, without a cost tolerance...
    assert not changes["true_input_tokens"].gating
    assert changes["true_input_tokens"].line() == \
        "s/v: true_input_tokens 1000 -> 1200 (exact) (cost: reported only)"
    # ... and fails beyond one; within it, it is no change at all.
    costly = compare_item(base, now, Tolerance(cost=0.1))
    assert [c.gating for c in costly if c.metric == "true_input_tokens"] == [True]
    lenient = compare_item(base, now, Tolerance(quality=0.5, cost=0.25))
    assert lenient == []
    # A control's changes are listed, not gating.
    control = base.model_copy(update={"control": True})
    assert not any(c.gating for c in compare_item(control, now, Tolerance()))


def test_a_saved_baseline_loads_back(tmp_path: Path) -> None:
    from harnesslab.ci.baseline import item_of, save_baseline

    path = tmp_path / "b" / "base.json"
    item = item_of([_result(0, True, followup_accuracy=1.0), _result(1, False)])
    save_baseline(path, [item], {"strategy": "pinned"}, [0, 1])
    loaded = load_baseline(path)
    assert loaded.by_key() == {("s", "v"): item}
    assert loaded.seeds == [0, 1] and loaded.settings == {"strategy": "pinned"}
    assert item.seeds["1"]["pass_rate"] == 0.0 and item.seeds["1"]["followup_accuracy"] is None
