"""The ``harnesslab`` fixture for hand-written tests, and the gate's judgement of seeds."""

from __future__ import annotations

import pytest

from harnesslab.ci.gate import Gate, judge
from harnesslab.judge.checks import CheckOutcome, Verdict
from harnesslab.run.runner import RunResult
from tests.plugin.support import FOLLOWUP, INI, agent_source, outcomes_by_name

HAND_WRITTEN = f'''
from pathlib import Path

from myagent import LastN

SCENARIO = {str(FOLLOWUP)!r}


def test_defaults_keep_the_referent(harnesslab):
    result = harnesslab.run(SCENARIO)
    assert result.expected
    assert result.metrics["followup_accuracy"]["value"] == 1.0
    assert result.record.is_relative_to(harnesslab.out)
    assert result.record.is_file()


def test_truncation_on_a_small_window_loses_it(harnesslab):
    result = harnesslab.run(SCENARIO, "default", seed=1, strategy="truncate", context_size=4096)
    assert result.metrics["followup_accuracy"]["value"] == 0.0
    assert result.settings["strategy"] == "truncate" and result.seed == 1
    assert "s3.resolves failed at step 3" in harnesslab.explain(result)


def test_a_variant_keeps_its_own_settings(harnesslab):
    # The control sets truncate and 4096 itself; a keyword setting goes beneath it. LastN
    # honours no strategy, so the control does not apply to it (the reference's control holds).
    result = harnesslab.run(SCENARIO, "truncate-small-window", strategy="structured")
    assert result.not_applicable and result.settings["strategy"] == "truncate"
    assert result.error == ("NotApplicable: sets strategy=truncate, context_size=4096; LastN "
                            "honours none of: context_size, strategy")
    ref = harnesslab.run(SCENARIO, "truncate-small-window", strategy="structured",
                         harness="reference")
    assert ref.expected and ref.settings["strategy"] == "truncate"


def test_the_configured_harness_or_a_class(harnesslab):
    assert harnesslab.settings["harness"].endswith("agent.py:LastN")
    by_config = harnesslab.run(SCENARIO)
    by_class = harnesslab.run(SCENARIO, harness=LastN)
    assert by_config.settings["harness"] == by_class.settings["harness"] == "LastN"
    assert [c.passed for c in by_config.checks] == [c.passed for c in by_class.checks]
    harnesslab.assert_expected(by_config)
'''


def test_the_fixture_runs_scenarios_from_hand_written_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI.replace("\n", '\npythonpath = ["."]\n', 1)
                               + '[tool.harnesslab]\nharness = "agent.py:LastN"\n')
    pytester.makefile(".py", agent=agent_source(fixed=False), myagent=agent_source(fixed=False))
    pytester.makepyfile(test_hand=HAND_WRITTEN)
    result = pytester.runpytest("-rA")
    assert outcomes_by_name(result.outlines) == {
        "test_defaults_keep_the_referent": "FAILED",   # the configured LastN drops it
        "test_truncation_on_a_small_window_loses_it": "PASSED",
        "test_a_variant_keeps_its_own_settings": "PASSED",
        "test_the_configured_harness_or_a_class": "FAILED"}
    out = result.stdout.str()
    # assert_expected fails readably, without a traceback.
    tail = out[out.index("_ test_the_configured_harness_or_a_class _"):]
    assert "followup-after-filler-zh / default (seed 0):\n  s3.answered failed at step 3" in tail
    assert "harnesslab show .harnesslab/pytest/_fixture/test_hand.py_test_the_configured_" \
           "harness_or_a_class/followup-after-filler-zh/default/seed0.jsonl --call 3" in tail
    assert "def test_" not in tail.split("\n_")[0]


def _run(seed: int, ok: bool, all_passed: bool | None = None) -> RunResult:
    checks = [CheckOutcome("s1.answered", "answered", 1, ok if all_passed is None else all_passed,
                           "")]
    return RunResult("s", "v", seed, None, checks=checks, verdict=Verdict(ok, []))


@pytest.mark.parametrize(("oks", "control", "gate", "status"), [
    ([True, True, True], False, Gate(), "ok"),
    ([True, False, True], False, Gate(), "failed"),
    ([True, False, True], False, Gate(min_pass_rate=0.6), "ok"),
    ([True, False, True], False, Gate(min_pass_rate=0.5, pass_k=2), "failed"),  # 1/3
    ([True, False, True], False, Gate(quarantine_flaky_rate=0.3), "quarantined"),
    ([True, False, True], False, Gate(quarantine_flaky_rate=0.34), "failed"),
    ([False, False, False], False, Gate(quarantine_flaky_rate=0.0), "failed"),
    ([True, True], True, Gate(), "ok"),
])
def test_judge(oks: list[bool], control: bool, gate: Gate, status: str) -> None:
    assert judge([_run(i, ok) for i, ok in enumerate(oks)], control, gate).status == status


def test_a_control_that_passes_every_check_is_told_apart() -> None:
    passed_all = [_run(0, False, all_passed=True)]
    other = [_run(0, False, all_passed=False)]
    assert judge(passed_all, True, Gate()).status == "control_passed"
    assert judge(other, True, Gate()).status == "failed"
    # An ordinary variant that passed every check is simply ok.
    assert judge([_run(0, True, all_passed=True)], False, Gate()).status == "ok"
