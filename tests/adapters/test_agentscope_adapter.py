"""The AgentScope adapter as a harness of the bench: chosen by one setting, not applicable where
AgentScope has no equivalent (a failed run with the reason, never a pass), its clock the
simulated one, its records deterministic, its state an AgentState JSON round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.events import ListSink
from harnesslab.harness.config import HarnessConfig
from harnesslab.harnesses.registry import load_harness
from harnesslab.messages import HintBlock, dumps
from harnesslab.record.format import Record
from harnesslab.run.doors import harness_context
from harnesslab.run.runner import run_scenario_file, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World, WorldSpec
from harnesslab.tokens import Bytes4Rule, count_request
from tests.adapters.support import AGENTSCOPE_EXTRA, Scripted, run, say, track
from tests.harness.support import WORLD

pytestmark = pytest.mark.agentscope
agentscope = pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)

from harnesslab.adapters.agentscope import AgentScopeHarness  # noqa: E402
from harnesslab.adapters.agentscope_settings import NotApplicable  # noqa: E402

WHERE = "Where is O-1001?"


def test_one_setting_chooses_it() -> None:
    assert load_harness("agentscope") is AgentScopeHarness


@pytest.mark.parametrize(("settings", "reason"), [
    ({"strategy": "truncate"}, "strategy truncate: AgentScope 2.0.x compacts with a structured "
                               "summary only"),
    ({"estimator": "o200k_base"}, "estimator o200k_base"),
    ({"time_hint": False}, "time_hint=false with context_length_hint=true"),
    ({"retry_on_overflow": True}, "retry_on_overflow"),
    ({"memory": {"mode": "workspace", "threshold": 0.3}},
     "memory.threshold=0.3: ReMeMiddleware passes no score threshold"),
    ({"memory": {"mode": "background"}}, "memory background: AgentScope 2.0.11 has no "
                                         "middleware"),
    ({"memory": {"mode": "vector", "position": "before_question"}},
     "memory.position=before_question: Mem0Middleware always puts retrieved memory"),
    ({"memory": {"mode": "agentic", "key": "named"}}, "memory.key=named: AgentScope's memory "
                                                      "middlewares have no notion of users"),
])
def test_what_agentscope_cannot_express_is_not_applicable(settings: dict[str, object],
                                                          reason: str) -> None:
    with pytest.raises(NotApplicable, match="not applicable to AgentScope: " + reason):
        run("agentscope", **settings)


def test_a_clock_offset_without_a_zone_name_is_not_applicable() -> None:
    world = World(WorldSpec.model_validate({**WORLD, "now": "2026-11-28T10:00:00+05:30"}))
    sink = ListSink()
    ctx = harness_context(Endpoint(SimulatedService(), Scripted([], say), sink), ToolBox(world),
                          world.clock, sink, session_id="s1", user_id="U-1")
    with pytest.raises(NotApplicable, match=r"UTC offset \(\+0530\) is not whole hours"):
        AgentScopeHarness(ctx, HarnessConfig(harness="agentscope"))


def test_both_hints_off_is_applicable() -> None:
    assert run("agentscope", time_hint=False, context_length_hint=False).harness is not None


def test_the_runner_records_not_applicable_as_a_failed_run(tmp_path: Path) -> None:
    results = run_scenario_file(bundled_dir() / "followup-o1001-zh.yaml", out_dir=tmp_path,
                                harness="agentscope")
    by = {r.variant: r for r in results}
    na = by["estimator-o200k"]
    assert not na.expected and na.error is not None
    assert na.error.startswith("NotApplicable: not applicable to AgentScope: estimator o200k_base")
    (err,) = Record.load(na.record).of_type("run_error")  # type: ignore[arg-type]
    assert err["error"] == na.error
    assert by["default"].expected and by["default"].settings["harness"] == "agentscope"


def test_agentscope_reads_the_simulated_clock_never_the_wall_clock() -> None:
    r = run("agentscope", replies=[say("a."), say("b.")])
    r.turn(WHERE)
    r.world.clock.advance(__import__("datetime").timedelta(days=3, minutes=7))
    r.turn("Thanks!")
    times = [b.hint.split("<current-time>")[1][:24] for c in r.calls()
             for m in c.request.messages for b in m.content
             if isinstance(b, HintBlock) and isinstance(b.hint, str) and "<current-time>" in b.hint]
    assert times == ["2026-11-28T10:00:00+0800", "2026-11-28T10:00:00+0800",
                     "2026-12-01T10:07:00+0800"]
    created = {m.created_at for m in r.harness.agent.state.context}
    assert created <= {"2026-11-28T10:00:00+08:00", "2026-12-01T10:07:00+08:00"}


def test_the_same_run_twice_writes_the_same_record(tmp_path: Path) -> None:
    sc = load_scenario(bundled_dir() / "summary-fails-truncation-zh.yaml")
    v = sc.variants[0]
    a = run_variant(sc, v, out_dir=tmp_path / "a", cli_set={"harness": "agentscope"})
    b = run_variant(sc, v, out_dir=tmp_path / "b", cli_set={"harness": "agentscope"})
    assert a.error is None and a.metrics["compactions"] >= 1
    assert a.record is not None and b.record is not None
    assert a.record.read_bytes() == b.record.read_bytes()


def test_context_estimate_is_agentscopes_count_of_its_next_request() -> None:
    r = run("agentscope", replies=[track(), say("fine.")])
    r.turn(WHERE)
    h = r.harness
    kw = h._run(h.agent._prepare_model_input())
    req = h._request(kw["messages"], kw["tools"], (("purpose", "reply"),))
    assert h.context_estimate() == count_request(Bytes4Rule(), req) > 0
    assert [m.role for m in req.messages] == ["user", "assistant"]


def test_state_round_trips_through_agentstate_json() -> None:
    replies = [track(), say("a."), say("b.")]
    straight = run("agentscope", replies=replies)
    straight.turn(WHERE)
    straight.turn("Thanks!")

    restarted = run("agentscope", replies=replies)
    restarted.turn(WHERE)
    saved = json.loads(json.dumps(restarted.harness.save_state()))
    assert saved["agent_state"]["session_id"] == "s1"
    fresh = AgentScopeHarness(restarted.harness.ctx, restarted.harness.cfg)
    fresh.load_state(saved)
    restarted.harness = fresh
    restarted.turn("Thanks!")
    assert [dumps(c.request) for c in restarted.calls()] == \
        [dumps(c.request) for c in straight.calls()]

    forgetful = run("agentscope", replies=replies)  # same session id, no state: nothing back
    forgetful.turn(WHERE)
    forgetful.harness = AgentScopeHarness(forgetful.harness.ctx, forgetful.harness.cfg)
    forgetful.turn("Thanks!")
    assert forgetful.calls()[-1].request.messages[0].plain_text() == "Thanks!"
