"""The reports_failure check: what the harness told its caller about a turn, read from its own
report (the turn event's harness_failed), never from the bench's verdict on the model's text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnesslab.errors import InputError
from harnesslab.judge.checks import evaluate_turn
from harnesslab.record.format import Record
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import Expect
from tests.scenario.test_scenario import GOOD, write


def turn(failed: bool, harness_failed: bool | None, reason: str = "") -> dict[str, Any]:
    t = {"type": "turn", "step": 1, "reply": "", "failed": failed, "reason": reason,
         "first_call": 1, "last_call": 1, "now": "2026-11-28T10:00:00+08:00"}
    return t if harness_failed is None else {**t, "harness_failed": harness_failed}


def outcome(expect: bool, t: dict[str, Any]) -> tuple[bool, str]:
    (c,) = evaluate_turn(Record({}, [t], {}), 1, Expect(reports_failure=expect), t)
    assert c.id == "s1.reports_failure"
    return c.passed, c.detail


def test_a_rejected_turn_the_harness_reports_failed_passes_and_one_it_reports_answered_fails(
) -> None:
    assert outcome(True, turn(True, True, "overflow")) == \
        (True, "the harness reported the turn failed (overflow)")
    # The control: the same rejection returned as an empty answer (failed=False).
    assert outcome(True, turn(False, False, "overflow")) == \
        (False, "the harness reported an answer")
    rejected = {"type": "overflow", "step": 1, "call": 1}
    t = turn(False, False)
    (c,) = evaluate_turn(Record({}, [rejected, t], {}), 1, Expect(reports_failure=True), t)
    assert (c.passed, c.detail) == \
        (False, "the harness reported an answer, but the service rejected the turn's last request")


def test_the_models_could_not_check_is_an_answer_the_harness_delivered() -> None:
    # The bench fails the turn (the model asked to clarify); the harness reported an answer.
    t = turn(True, False, "the model asked to clarify (unresolved_ref)")
    assert outcome(False, t) == (True, "the harness reported an answer")
    assert outcome(True, t)[0] is False


def test_a_record_without_harness_failed_reads_failed() -> None:
    assert outcome(True, turn(True, None, "overflow"))[0] is True


def test_the_scenario_field_is_a_boolean(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD.replace(
        "mentions: [O-1001]}", "mentions: [O-1001], reports_failure: false}")))
    assert sc.steps[0].expect.kinds()[-1] == "reports_failure"
    with pytest.raises(InputError, match=r"s\.yaml:18: steps\[0\]\.expect\.reports_failure: "
                       r"Input should be a valid boolean"):
        load_scenario(write(tmp_path, GOOD.replace(
            "mentions: [O-1001]}", "mentions: [O-1001], reports_failure: sometimes}")))


def test_the_bundled_scenario_reads_it_on_the_rejected_turn() -> None:
    sc = load_scenario(bundled_dir() / "failure-reported-zh.yaml")
    kinds = {i: s.expect.kinds() for i, s in enumerate(sc.steps, 1) if hasattr(s, "expect")}
    assert "reports_failure" in kinds[1] and "reports_failure" in kinds[3]
