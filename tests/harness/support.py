"""Builders shared by the reference-harness tests: a small world, a lexicon, and a harness wired
to the real fake model through the simulated service and endpoint, as the bench wires it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnesslab.events import ListSink
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.config import HarnessConfig
from harnesslab.messages import Message, Request, ToolResultBlock
from harnesslab.run.doors import harness_context
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.intents import REF, Act, Claim, ClaimKind, Constraint, Intent
from harnesslab.sim.model import FakeModel
from harnesslab.sim.service import ServiceProfile, SimulatedService
from harnesslab.sim.summarizer import SummarizerProfile
from harnesslab.sim.tools import TOOLS, ToolBox
from harnesslab.sim.world import World, WorldSpec
from harnesslab.tokens import Bytes4Rule, TokenCache, count_request

SID = "s1"
WHERE = "Where is O-1001?"
WHERE_2 = "And O-1002?"
WAIT = "Do I still have to wait for it?"
THANKS = "Thanks!"
SHORT = "Please keep it short from now on."
TRACE = "Show me the full trace of O-1001."
LISI_ADDRESS = "我是李四，帮我查一下我的收货地址。"
# Constraints that only the lexicon knows (no default phrase in them): a harness can keep them
# only by asking the model, never by matching the fake model's phrase list.
TERSE = "别啰嗦。"
EXPAND = "以后展开讲讲。"

LEXICON: dict[str, Intent] = {
    WHERE: Intent(Act.ORDER_STATUS, order="O-1001"),
    WHERE_2: Intent(Act.ORDER_STATUS, order="O-1002"),
    WAIT: Intent(Act.ASK_WAIT, order=REF),
    THANKS: Intent(Act.CHITCHAT),
    SHORT: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
    TRACE: Intent(Act.ASK_TRACE, order="O-1001"),
    LISI_ADDRESS: Intent(Act.ASK_ADDRESS, claims=(Claim(ClaimKind.IDENTITY, "U-2"),)),
    TERSE: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
    EXPAND: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.DETAILED,)),
}

WORLD: dict[str, Any] = {
    "now": "2026-11-28T10:00:00+08:00",
    "users": {
        "U-1": {"name": "张三", "phone": "13800000001", "address": "上海市浦东新区世纪大道100号"},
        "U-2": {"name": "李四", "phone": "13900000002", "address": "北京市朝阳区建国路88号"},
    },
    "orders": {
        "O-1001": {"user": "U-1", "items": ["headphones"], "timeline": [
            {"at": "2026-11-26T09:00:00+08:00", "status": "in_transit", "eta": "2026-11-29",
             "location": "Shanghai"}]},
        "O-1002": {"user": "U-1", "items": ["cable"], "timeline": [
            {"at": "2026-11-27T09:00:00+08:00", "status": "shipped", "eta": "2026-12-02",
             "location": "Hangzhou"}]},
    },
    "trace_events": 20,
}


@dataclass(frozen=True)
class Turn:
    text: str
    failed: bool
    reason: str
    first_call: int
    last_call: int


@dataclass
class Rig:
    harness: ReferenceHarness
    sink: ListSink
    world: World
    endpoint: Endpoint

    def turn(self, text: str) -> Turn:
        """A turn, with the endpoint call numbers it spanned (as the runner records them)."""
        first = self.endpoint.calls + 1
        res = self.harness.turn(text)
        return Turn(res.text, res.failed, res.reason, first, self.endpoint.calls)

    def types(self) -> list[str]:
        """Event types, without the harness's tool_policy notes (one per tool call)."""
        return [e["type"] for e in self.sink.events if e["type"] != "tool_policy"]

    def tools(self) -> list[dict[str, Any]]:
        """Per tool call, the harness's decision merged with the recorded run (a refused call
        has no run)."""
        out, run = [], None
        for e in self.sink.events:
            if e["type"] == "tool_call":
                run = e
            elif e["type"] == "tool_policy":
                out.append({**(run or {}), **e} if e["identity"] != "refused" else dict(e))
                run = None
        return out

    def calls(self, purpose: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.sink.events if e["type"] in ("model_call", "overflow")
                and (purpose is None or e["purpose"] == purpose)]


def rig(*, service: ServiceProfile | str = "openai-128k", summarizer: SummarizerProfile | None = None,
        extractor: SummarizerProfile | None = None, workdir: Path | None = None,
        user_id: str = "U-1", tools: tuple[str, ...] | None = None,
        **settings: Any) -> Rig:
    """A reference harness serving session ``s1`` for ``user_id`` in the test world."""
    world = World(WorldSpec.model_validate(WORLD))
    cache = TokenCache()
    sink = ListSink()
    model = FakeModel(LEXICON, summarizer=summarizer, extractor=extractor,
                      max_ages={t: world.max_age(t) for t in TOOLS})
    endpoint = Endpoint(SimulatedService(service, cache), model, sink)
    ctx = harness_context(endpoint, ToolBox(world, tools), world.clock, sink, session_id=SID,
                          user_id=user_id, workdir=workdir, cache=cache)
    harness = ReferenceHarness(ctx, HarnessConfig(**settings))
    return Rig(harness, sink, world, endpoint)


def estimate_with(h: ReferenceHarness, *extra: Message) -> int:
    """AgentScope's estimate of the harness's next request with ``extra`` messages appended,
    counted from scratch (not through the harness's incremental counter)."""
    req = h.request()
    return count_request(Bytes4Rule(), Request(req.system, (*req.messages, *extra),
                                               summary=req.summary, tools=req.tools))


def layout(messages: tuple[Message, ...]) -> list[tuple[str, list[str]]]:
    return [(m.role, [type(b).__name__ for b in m.content]) for m in messages]


def results(messages: tuple[Message, ...]) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
