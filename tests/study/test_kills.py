"""The kill rule the zoo and the mutation report share: a should-pass check failing, a request
rejected as malformed where the reference's run had none, or a declared cost regressing kills;
a control's expected failure that passes does not."""

from __future__ import annotations

from harnesslab.judge.checks import CheckOutcome
from harnesslab.scenario.schema import Variant
from harnesslab.study.kills import cost_regressions, costs, findings

CHECKS = [CheckOutcome("s1.mentions", "mentions", 1, False, "missing O-1001"),
          CheckOutcome("s2.max_chars", "max_chars", 2, True, "ok")]


def _metrics(tokens: int, overflows: int = 0, summary: int = 0,
             protocol: int = 0) -> dict[str, object]:
    return {"true_input_tokens": tokens, "summary_tokens": summary,
            "overflow_rate": {"num": overflows, "den": 4, "value": overflows / 4},
            "protocol_error_rate": {"num": protocol, "den": 4, "value": protocol / 4}}


def test_a_should_pass_check_that_fails_kills() -> None:
    [f] = findings(CHECKS, Variant(name="default"))
    assert (f.check, f.how, f.kills) == ("s1.mentions", "failed", True)


def test_a_control_that_passes_is_reported_apart_and_kills_nothing() -> None:
    # The control expects s1.mentions to fail (it does) and max_chars to fail (it passes).
    found = findings(CHECKS, Variant(name="c", expect_fail=["s1.mentions", "max_chars"]))
    assert [(f.check, f.how, f.kills) for f in found] == [("max_chars", "passed", False)]


def test_a_declared_cost_beyond_its_margin_kills_and_within_it_does_not() -> None:
    ok = [CheckOutcome("s1.mentions", "mentions", 1, True, "ok")]
    v = Variant(name="default")
    worse = findings(ok, v, _metrics(1030), _metrics(1000), {"true_input_tokens": 0.02})
    assert [(f.check, f.how, f.kills) for f in worse] == [("cost.true_input_tokens", "cost", True)]
    assert "1030 > reference 1000" in worse[0].detail
    assert findings(ok, v, _metrics(1015), _metrics(1000), {"true_input_tokens": 0.02}) == []
    # Undeclared costs are free, however much worse.
    assert findings(ok, v, _metrics(9000), _metrics(1000), {}) == []


def test_overflows_and_summary_tokens_are_costs_too() -> None:
    assert costs(_metrics(10, 2, 7)) == {"true_input_tokens": 10.0, "overflows": 2.0,
                                         "summary_tokens": 7.0}
    found = cost_regressions(_metrics(10, 1, 7), _metrics(10, 0, 5),
                             {"overflows": 0.0, "summary_tokens": 0.5})
    assert [f.check for f in found] == ["cost.overflows"]


def test_a_request_rejected_as_malformed_kills_whatever_the_scenario_declares() -> None:
    # Every check passes and the run is cheaper than the reference's (a summary request the
    # service rejected, then truncation): still a worse harness.
    ok = [CheckOutcome("s1.mentions", "mentions", 1, True, "ok")]
    v = Variant(name="default")
    [f] = findings(ok, v, _metrics(900, protocol=1), _metrics(1000), {})
    assert (f.check, f.how, f.kills) == ("protocol", "protocol", True)
    assert "rejected 1 malformed request(s) (reference 0)" in f.detail
    # Without a reference run (the zoo runs one only for a scenario that declares a cost), the
    # reference harness's count is 0: it breaks the protocol on no bundled variant.
    assert [f.how for f in findings(ok, v, _metrics(900, protocol=2))] == ["protocol"]
    # No more than the reference's: nothing (the control of the rule).
    assert findings(ok, v, _metrics(900, protocol=1), _metrics(1000, protocol=1), {}) == []
    assert findings(ok, v, _metrics(900), _metrics(1000), {}) == []
