"""Repeats: ``--harnesslab-seeds K``, pass^k or a minimum pass rate, and quarantine of flaky items.

The scenario's summarizer drops the brevity constraint with probability 0.5 per seed (the fake
model's seeded draw, independent of the harness), so the follow-up's max_chars check passes in
some seeds and fails in others: seeds 0-3 give pass, fail, fail, pass (pinned below)."""

from __future__ import annotations

import pytest

from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Variant
from tests.plugin.support import FOLLOWUP, INI, followup, outcomes_by_name

FLAKY = {"summarizer": {"profile": "lossy", "drop": {"constraint": 0.5}}}


def test_the_scenario_is_flaky_across_seeds() -> None:
    sc = load_scenario(FOLLOWUP)
    v = Variant(name="flaky", set=FLAKY)
    assert [run_variant(sc, v, seed=s).expected for s in range(4)] == [True, False, False, True]


def _project(pytester: pytest.Pytester, table: str) -> None:
    pytester.makepyprojecttoml(INI + "[tool.harnesslab]\n" + table + "\n")
    pytester.makefile(".yaml", followup=followup([{"name": "flaky", "set": FLAKY}]))


@pytest.mark.parametrize(("table", "outcome", "line"), [
    # Every seed must pass by default: 2/4 fails.
    ("", "FAILED", "followup / flaky: passed in 2/4 seeds (pass rate 0.50, minimum 1.00)"),
    ("min_pass_rate = 0.5", "PASSED", None),
    # pass^2 = C(2,2)/C(4,2) = 1/6.
    ("pass_k = 2\nmin_pass_rate = 0.2", "FAILED",
     "followup / flaky: passed in 2/4 seeds (pass^2 0.17, minimum 0.20)"),
    # Flakiness min(2, 2)/4 = 0.5 above 0.25: reported, not failing.
    ("quarantine_flaky_rate = 0.25", "SKIPPED", None),
])
def test_the_gate_over_seeds(pytester: pytest.Pytester, table: str, outcome: str,
                             line: str | None) -> None:
    _project(pytester, table)
    result = pytester.runpytest("-rA", "--harnesslab-seeds", "4")
    if outcome == "SKIPPED":  # -rA names a skip by its location, not its node id
        result.assert_outcomes(skipped=1)
    else:
        assert outcomes_by_name(result.outlines) == {"flaky": outcome}
    out = result.stdout.str()
    if line:
        assert line in out
        assert "seed 1 (first of 2 missed seeds):" in out
        assert "s3.max_chars failed at step 3 '那我明天还要等吗？': expected max_chars 60" in out
        assert "record: .harnesslab/pytest/followup/flaky/seed1.jsonl" in out
    if outcome == "SKIPPED":
        assert result.ret == pytest.ExitCode.OK
        assert "quarantined (flaky; reported, not failing): 1" in out
        assert "followup.yaml::flaky: passed in 2/4 seeds (pass rate 0.50, minimum 1.00); " \
               f"flakiness 0.50 > {table.split('= ')[1]}: quarantined" in out
        # Located at the variant in the file.
        text = (pytester.path / "followup.yaml").read_text(encoding="utf-8").splitlines()
        line = text.index("- name: flaky") + 1
        assert f"SKIPPED [1] followup.yaml:{line}: harnesslab quarantine: passed in 2/4 " \
               "seeds" in out
    assert "1 scenario variant, seeds 0-3;" in out
    for seed in range(4):
        assert (pytester.path / ".harnesslab/pytest/followup/flaky" / f"seed{seed}.jsonl").is_file()


def test_a_consistently_failing_item_is_not_quarantined(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI + "[tool.harnesslab]\nquarantine_flaky_rate = 0.1\n")
    pytester.makefile(".yaml", followup=followup([
        {"name": "always", "set": {"summarizer": {"profile": "lossy",
                                                  "drop": {"constraint": 1.0}}}}]))
    result = pytester.runpytest("-rA", "--harnesslab-seeds", "3")
    assert outcomes_by_name(result.outlines) == {"always": "FAILED"}
    assert "passed in 0/3 seeds" in result.stdout.str()


def test_seeds_from_the_config(pytester: pytest.Pytester) -> None:
    _project(pytester, "seeds = [0, 3]")
    result = pytester.runpytest("-rA")
    assert outcomes_by_name(result.outlines) == {"flaky": "PASSED"}
    assert "1 scenario variant, seeds 0, 3;" in result.stdout.str()
