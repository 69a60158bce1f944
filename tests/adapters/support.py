"""Driving the reference harness (prompts=agentscope) and the real AgentScope agent side by side
with the same scripted model, through the same kind of endpoint (the simulated service), so a
test can compare what each one sent, call by call, and what each one answered.

The script is a queue of reply-call answers and a rule for summary calls; both harnesses get
their own copy. The scripted model never looks at who is asking: it sees only the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harnesslab.events import ListSink
from harnesslab.harness.base import TurnResult
from harnesslab.harness.config import HarnessConfig
from harnesslab.messages import Block, Message, Request, TextBlock, ToolCallBlock
from harnesslab.run.doors import harness_context
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.service import PROFILES, SimulatedService
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World, WorldSpec
from harnesslab.study.fidelity import CALLS, canonical
from harnesslab.tokens import TokenCache
from tests.harness.support import WORLD

AGENTSCOPE_EXTRA = "the agentscope extra is not installed: pip install -e '.[agentscope]'"
SUMMARY_TOOL = "generate_structured_output"
FIELDS = ("task_overview", "current_state", "important_discoveries", "next_steps",
          "context_to_preserve")


def require_agentscope() -> None:
    pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)


def summary_call(text: str = "O-1001 in transit") -> tuple[Block, ...]:
    return (ToolCallBlock("sum", SUMMARY_TOOL, json.dumps({f: text for f in FIELDS})),)


def refuse(request: Request) -> tuple[Block, ...]:
    return (TextBlock("I cannot summarize this."),)


def faithful(request: Request) -> tuple[Block, ...]:
    return summary_call()


def track(call_id: str = "c1", order: str = "O-1001") -> tuple[Block, ...]:
    return (ToolCallBlock(call_id, "track_order", json.dumps({"order_id": order})),)


def say(text: str) -> tuple[Block, ...]:
    return (TextBlock(text),)


@dataclass(frozen=True)
class _Reply:
    blocks: tuple[Block, ...]
    annotations: dict[str, Any] = field(default_factory=dict)


class Scripted:
    """Reply calls answered in order from ``replies`` (then "ok."), summary calls by
    ``summarize``."""

    def __init__(self, replies: Sequence[tuple[Block, ...]],
                 summarize: Callable[[Request], tuple[Block, ...]]) -> None:
        self.replies = list(replies)
        self.summarize = summarize

    def reply(self, request: Request) -> _Reply:
        if dict(request.meta).get("purpose") == "summary":
            return _Reply(self.summarize(request))
        return _Reply(self.replies.pop(0) if self.replies else say("ok."))


@dataclass(frozen=True)
class Call:
    purpose: str
    estimate: int | None
    rejected: bool
    request: Request

    @property
    def tool_choice(self) -> str | None:
        return dict(self.request.meta).get("tool_choice")

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.purpose, self.estimate, self.rejected, canonical(self.request))


@dataclass
class Run:
    harness: Any
    sink: ListSink
    world: World
    endpoint: Endpoint
    results: list[TurnResult] = field(default_factory=list)

    def turn(self, text: str) -> TurnResult:
        res = self.harness.turn(text)
        self.results.append(res)
        return res

    def preload(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.harness.preload([(Message.text("user", u, id=f"f{i}u"),
                               Message.text("assistant", a, id=f"f{i}a"))
                              for i, (u, a) in enumerate(pairs)])

    def calls(self) -> list[Call]:
        return [Call(e["purpose"], e["estimate"], e["type"] != "model_call", e["request"])
                for e in self.sink.events if e["type"] in CALLS]

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.sink.events if e["type"] in kinds]

    def compaction_points(self) -> list[tuple[int, bool]]:
        """(the call a compaction came just before, applied) in order."""
        out, calls = [], 0
        for e in self.sink.events:
            if e["type"] in CALLS:
                calls += 1
            elif e["type"] in ("compaction", "compaction_error"):
                out.append((calls + 1, bool(e.get("applied"))))
        return out

    def tool_runs(self) -> list[dict[str, Any]]:
        return self.events("tool_call")


def run(harness: str, *, replies: Sequence[tuple[Block, ...]] = (),
        summarize: Callable[[Request], tuple[Block, ...]] = faithful, window: int | None = None,
        workdir: Path | None = None, **settings: Any) -> Run:
    """One harness (``reference`` with prompts=agentscope, or ``agentscope``) in the test world,
    session ``s1`` of U-1, behind a simulated service (``window`` shrinks it)."""
    world = World(WorldSpec.model_validate(WORLD))
    cache = TokenCache()
    sink = ListSink()
    profile = PROFILES["openai-128k"]
    if window is not None:
        profile = profile.with_overrides(window=window, max_output=100, default_output=100)
    endpoint = Endpoint(SimulatedService(profile, cache), Scripted(replies, summarize), sink)
    ctx = harness_context(endpoint, ToolBox(world), world.clock, sink, session_id="s1",
                          user_id="U-1", workdir=workdir, cache=cache)
    if harness == "reference":
        from harnesslab.harness.agent import ReferenceHarness

        h: Any = ReferenceHarness(ctx, HarnessConfig(prompts="agentscope", **settings))
    else:
        from harnesslab.adapters.agentscope import AgentScopeHarness

        h = AgentScopeHarness(ctx, HarnessConfig(harness="agentscope", **settings))
    return Run(h, sink, world, endpoint)


def both(**kwargs: Any) -> tuple[Run, Run]:
    return run("reference", **kwargs), run("agentscope", **kwargs)


def assert_same(ref: Run, ags: Run) -> None:
    """Call by call the same purpose, estimate, rejection and request; the same compaction
    points; the same turn outcomes."""
    rc, ac = ref.calls(), ags.calls()
    for i, (x, y) in enumerate(zip(rc, ac, strict=False), start=1):
        assert x.key == y.key, f"call {i}: {x.purpose}/{y.purpose} est {x.estimate}/{y.estimate}"
    assert len(rc) == len(ac)
    assert ref.compaction_points() == ags.compaction_points()
    kinds = ("compaction", "compaction_error")
    for x, y in zip(ref.events(*kinds), ags.events(*kinds), strict=True):
        assert view(x) == view(y)
    assert ref.results == ags.results


def view(e: dict[str, Any]) -> dict[str, Any]:
    """A compaction as both harnesses should record it (fidelity.COMPACTION_FIELDS)."""
    from harnesslab.study.fidelity import COMPACTION_FIELDS

    out = {k: e.get(k) for k in COMPACTION_FIELDS}
    out["request"] = canonical(e["request"]) if e.get("request") is not None else None
    return out
