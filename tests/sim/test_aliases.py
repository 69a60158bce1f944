"""The world's tools offered under a framework's names (Semantic Kernel's ``shop-track_order``,
an MCP client's ``mcp__shop__track_order``) are the world's tools to the fake model: it calls
them by the name offered, reads their results, and the judge counts those calls as the world's
(sim.aliases)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import HarnessContext
from harnesslab.messages import Message, Request, ToolCallBlock, ToolOutcome, ToolResultBlock, ToolSchema
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sim import aliases as aliases_module
from harnesslab.sim.aliases import aliases

from .test_model import ALL_TOOLS, AS_OF, ASK_1001, T10, clock, model, req, user

WORLD = frozenset({"track_order", "get_user_profile", "search_kb", "get_logistics_trace"})


def named(*names: str) -> tuple[ToolSchema, ...]:
    return tuple(ToolSchema.from_dict({"type": "function", "function": {
        "name": n, "parameters": {"type": "object", "properties": {}}}}) for n in names)


def test_a_decorated_name_is_read_as_the_world_tool_it_ends_with() -> None:
    assert aliases(named("track_order", "search_kb"), WORLD) == {}
    assert aliases(named("shop-track_order", "mcp__shop__search_kb", "functions.get_user_profile",
                         "srv:get_logistics_trace", "time-now"), WORLD) == {
        "shop-track_order": "track_order", "mcp__shop__search_kb": "search_kb",
        "functions.get_user_profile": "get_user_profile",
        "srv:get_logistics_trace": "get_logistics_trace"}
    # Not after a separator, or the world's own name offered beside it: not that tool.
    assert aliases(named("retrack_order", "mytrack_order"), WORLD) == {}
    assert aliases(named("track_order", "shop-track_order"), WORLD) == {}
    # The longest world name wins; two offered names for one tool: the first is it.
    assert aliases(named("a-logistics_trace"), frozenset({"trace", "logistics_trace"})) == {
        "a-logistics_trace": "logistics_trace"}
    assert aliases(named("a-track_order", "b-track_order"), WORLD) == {
        "a-track_order": "track_order"}


def _decorated(r: Request, prefix: str) -> Request:
    def tool(t: ToolSchema) -> ToolSchema:
        d = t.to_dict()
        d["function"]["name"] = prefix + t.name
        return ToolSchema.from_dict(d)

    return replace(r, tools=tuple(tool(t) for t in r.tools))


def test_the_fake_model_calls_a_decorated_tool_by_the_name_offered() -> None:
    r = _decorated(req(user(ASK_1001), clock(T10)), "shop-")
    got = model().reply(r)
    (call,) = got.blocks
    assert isinstance(call, ToolCallBlock) and call.name == "shop-track_order"
    assert got.annotations["tool_names"]["shop-track_order"] == "track_order"
    # Its result, under the offered name, is the fact the answer cites.
    result = json.dumps({"tool": "track_order", "as_of": AS_OF, "order_id": "O-1001",
                         "status": "in_transit", "eta": "2026-11-29"}, ensure_ascii=False)
    after = replace(r, messages=(*r.messages, Message("assistant", (
        call, ToolResultBlock(call.id, call.name, result)))))
    answered = model().reply(after)
    assert answered.annotations["kind"] == "answer"
    assert answered.annotations["cited"]["key"] == "O-1001"
    # The control: a name that is no world tool decorated is a tool the model cannot use.
    other = model().reply(_decorated(req(user(ASK_1001), clock(T10)), "shop"))
    assert other.annotations["reason"] == "tool_not_offered"
    assert len(r.tools) == len(ALL_TOOLS)


class _Namespaced:
    """The world's tools as a framework offers them: each under ``shop-<name>``."""

    def __init__(self, tools: Any) -> None:
        self._tools = tools

    def schemas(self) -> tuple[ToolSchema, ...]:
        return _decorated(Request("", (), tools=self._tools.schemas()), "shop-").tools

    def run(self, name: str, arguments: str, acting_user: str) -> ToolOutcome:
        return self._tools.run(name.removeprefix("shop-"), arguments, acting_user)


class Namespacing(ReferenceHarness):
    """The reference harness, offering the tools under a namespace."""

    def __init__(self, ctx: HarnessContext, *args: Any, **kw: Any) -> None:
        super().__init__(replace(ctx, tools=_Namespaced(ctx.tools)), *args, **kw)


def _run(name: str, tmp: Path, harness: str | None) -> Any:
    sc = load_scenario(bundled_dir() / f"{name}.yaml")
    v = next(x for x in sc.variants if x.name == "default")
    return run_variant(sc, v, out_dir=tmp, cli_set={"harness": harness} if harness else None)


@pytest.mark.parametrize("name", ["stale-logistics-zh", "followup-o1001-zh"])
def test_a_namespacing_harness_is_judged_as_the_reference(name: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ref = _run(name, tmp_path / "ref", None)
    ns = _run(name, tmp_path / "ns", f"{__name__}:Namespacing")
    assert ref.error is None and ns.error is None, (ref.error, ns.error)
    assert [(c.id, c.passed) for c in ns.checks] == [(c.id, c.passed) for c in ref.checks]
    assert any(c.kind == "called" for c in ns.checks)
    for k in ("followup_accuracy", "stale_fact_rate", "wasted_requery_rate", "entity_fidelity"):
        assert ns.metrics[k] == ref.metrics[k], k
    # The control: read by the names alone, the same harness cannot look anything up.
    monkeypatch.setattr(aliases_module, "aliases", lambda tools, world: {})
    monkeypatch.setattr("harnesslab.sim.model.aliases", lambda tools, world: {})
    blind = _run(name, tmp_path / "blind", f"{__name__}:Namespacing")
    assert [c.id for c in blind.checks if not c.passed]
