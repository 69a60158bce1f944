"""What a harness is handed offers only the harness interface: no attribute leads to the
world, the fake model, the record or the scenario."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from harnesslab.events import ListSink
from harnesslab.harness.base import HarnessContext
from harnesslab.messages import Message, Request
from harnesslab.run.doors import harness_context
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.model import FakeModel
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World, WorldSpec
from tests.harness.support import WORLD


def _context() -> tuple[HarnessContext, ListSink, World]:
    world = World(WorldSpec.model_validate(WORLD))
    sink = ListSink()
    endpoint = Endpoint(SimulatedService("openai-128k"), FakeModel({}), sink)
    return harness_context(endpoint, ToolBox(world), world.clock, sink, session_id="s",
                           user_id="U-1"), sink, world


def _reachable(obj: Any) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def test_each_door_offers_only_its_methods() -> None:
    ctx, _, _ = _context()
    # as the APIs offer: a call, a token count, the model's window (a model server's info)
    assert _reachable(ctx.endpoint) == {"call", "count_tokens", "context_window"}
    assert ctx.endpoint.context_window() == 128000  # type: ignore[attr-defined]
    assert _reachable(ctx.tools) == {"schemas", "run"}
    assert _reachable(ctx.clock) == {"now"}
    assert _reachable(ctx.sink) == {"emit"}
    for door in (ctx.endpoint, ctx.tools, ctx.clock, ctx.sink):
        assert not hasattr(door, "__dict__")  # nothing can be hung on it either


def test_the_clock_reads_but_cannot_move() -> None:
    ctx, _, world = _context()
    assert ctx.clock.now() == world.clock.now()
    assert isinstance(ctx.clock.now(), datetime)
    with pytest.raises(AttributeError):
        ctx.clock.advance  # type: ignore[attr-defined]  # noqa: B018


def test_a_count_is_the_true_input_of_the_call_and_not_recorded() -> None:
    ctx, sink, _ = _context()
    r = Request("sys", (Message.text("user", "帮我查订单 O-1001"),))
    n = ctx.endpoint.count_tokens(r)  # type: ignore[attr-defined]
    assert sink.events == []
    ctx.endpoint.call(r, estimate=None)
    assert [e["type"] for e in sink.events] == ["model_call"]
    assert sink.events[0]["true_input"] == n


def test_tool_runs_and_model_calls_are_recorded_by_the_bench() -> None:
    ctx, sink, _ = _context()
    out = ctx.tools.run("track_order", '{"order_id": "O-1001"}', "U-1")
    assert not out.is_error
    ctx.endpoint.call(Request("sys", (Message.text("user", "hi"),)), estimate=None)
    assert [e["type"] for e in sink.events] == ["tool_call", "model_call"]
    assert sink.events[0]["acting_user"] == "U-1" and sink.events[1]["estimate"] is None


def test_a_harness_event_must_have_a_type() -> None:
    ctx, sink, _ = _context()
    with pytest.raises(TypeError, match="a dict with a string 'type'"):
        ctx.sink.emit({"no": "type"})
    ctx.sink.emit({"type": "mine"})
    assert sink.events == [{"type": "mine"}]
