"""The bug zoo: realistic context-management mistakes, each a harness on the plug-in interface
(the reference harness with one thing done wrong), named ``bug/<name>``.

The bench runs its suite against each one (``harnesslab bugs``): a bug is killed when some
variant's outcome is no longer the expected one. The kill rate is the suite's measured power.
A zoo harness behaves exactly like the reference harness until its mistake is exercised.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import HarnessContext
from harnesslab.harness.compaction import PinnedCompaction
from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.limits import limit_images
from harnesslab.harness.split import Split, split_context
from harnesslab.messages import (
    Block,
    History,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)


class BuggyHarness(ReferenceHarness):
    """The reference harness with hooks a bug may use: ``after_compaction`` runs after every
    compaction the strategy applied."""

    name = "bug"

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config)
        self.strategy = self.adjust_strategy(self.strategy)
        compact = self.strategy.compact

        def compact_then(h: ReferenceHarness, estimate: int) -> bool:
            ok = compact(h, estimate)
            self.after_compaction()
            return ok

        self.strategy.compact = compact_then  # type: ignore[method-assign]

    def adjust_strategy(self, strategy: Any) -> Any:
        return strategy

    def after_compaction(self) -> None:
        return None


# --- compaction -----------------------------------------------------------------------------

class SplitToolPair(BuggyHarness):
    """Cuts between a tool call and its result at the reserve boundary: the kept part starts
    with a result whose call was compressed (a split that ignores pairing)."""

    def split(self, budget: float) -> Split:
        head = self._counter.head_units(self.system, self.summary, self.tool_schemas)
        return split_context(self.context, head, budget, self._counter.message_units,
                             self.rule.finalize, pair=False)


class KeepsOldest(BuggyHarness):
    """Compaction keeps the oldest messages and summarises the newest (the slice reversed)."""

    def split(self, budget: float) -> Split:
        s = super().split(budget)
        n = len(s.to_keep)
        ctx = tuple(self.context)
        return Split(ctx[n:], ctx[:n]) if n else s


class ReserveIgnoresHead(BuggyHarness):
    """The reserve is filled with messages as if the system prompt, summary and tool schemas
    cost nothing (the overhead left out of the budget)."""

    def split(self, budget: float) -> Split:
        return split_context(self.context, 0, budget, self._counter.message_units,
                             self.rule.finalize)


class TriggerAtContextSize(BuggyHarness):
    """Compacts when the estimate reaches context_size instead of trigger_ratio x it."""

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config)
        self.strategy.should_compact = (  # type: ignore[method-assign]
            lambda h, estimate: estimate >= h.cfg.context_size)


class NoCheckAfterToolRound(BuggyHarness):
    """Checks the context size only when a user message arrives, never after a tool result."""

    def maintain(self, iteration: int = 1) -> bool:
        return True if iteration > 0 else super().maintain(iteration)


class EstimateOmitsSummary(BuggyHarness):
    """Its estimator counts the messages, system prompt and tools but not the summary."""

    def estimate(self, request: Request) -> int:
        return super().estimate(replace(request, summary=""))


class RollingSummaryForgets(BuggyHarness):
    """Each summary covers only the newly compressed messages: the previous summary is not
    shown to the summarizer, so what it held is gone after the second compaction."""

    def request(self, *, messages: tuple[Message, ...] | None = None, summary: str | None = None,
                tools: Any = None, purpose: str = "reply") -> Request:
        if purpose == "summary":
            summary = ""
        return super().request(messages=messages, summary=summary, tools=tools, purpose=purpose)


class SummaryAfterNewest(BuggyHarness):
    """Sends the summary as the last message, after the user's newest question."""

    def request(self, *, messages: tuple[Message, ...] | None = None, summary: str | None = None,
                tools: Any = None, purpose: str = "reply") -> Request:
        req = super().request(messages=messages, summary=summary, tools=tools, purpose=purpose)
        if purpose != "reply" or not req.summary:
            return req
        note = Message("user", (TextBlock(req.summary),), id="summary")
        return replace(req, summary="", messages=(*req.messages, note))


class SummaryNeverParses(BuggyHarness):
    """Reads the summary tool's arguments with the wrong field names, so every summary is
    taken as a failure and the harness falls back to truncation."""

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config)
        if hasattr(self.strategy, "_parse"):
            self.strategy._parse = lambda h, blocks: None


_TAG = re.compile(r"\[[a-z]+:[^\]]*\]")


class SummaryStripsTags(BuggyHarness):
    """Sanitises the summary of bracketed markup before keeping it (the ``[constraint:...]``
    and ``[fact:...]`` tags go with it)."""

    def after_compaction(self) -> None:
        self.summary = _TAG.sub("", self.summary)


class SummaryPromotesClaims(BuggyHarness):
    """Rewrites the summary's unverified claims as plain statements (drops "unverified")."""

    def after_compaction(self) -> None:
        self.summary = self.summary.replace(" unverified]", "]")


class SystemPromptDroppedAtCompaction(BuggyHarness):
    """Rebuilds the context after compaction without the system prompt."""

    def after_compaction(self) -> None:
        self.system = ""


class ToolsDroppedAfterCompaction(BuggyHarness):
    """Rebuilds the request after compaction without the tool schemas."""

    def after_compaction(self) -> None:
        self.tool_schemas = ()


class OffloadPathWrongSession(BuggyHarness):
    """The offload reminder names the default session's file, not this session's."""

    def after_compaction(self) -> None:
        self.summary = self.summary.replace(f"/sessions/{self.session_id}/",
                                            "/sessions/default/")


class FrozenPinnedBoard(PinnedCompaction):
    def _extract(self, h: ReferenceHarness, msgs: tuple[Message, ...]) -> None:
        if not self.board:
            super()._extract(h, msgs)


class PinnedBoardNeverUpdated(BuggyHarness):
    """Pins the user's instructions and entities once, at the first compaction, and never
    renews the board."""

    def adjust_strategy(self, strategy: Any) -> Any:
        return FrozenPinnedBoard() if isinstance(strategy, PinnedCompaction) else strategy


# --- tools and identity -----------------------------------------------------------------------

class BindRunsClaimedUser(BuggyHarness):
    """Rewrites the model's user_id to the session's but runs the tool as the claimed user."""

    def _identity(self, call: ToolCallBlock) -> tuple[str, str, str, Any]:
        raw, acting, identity, claimed = super()._identity(call)
        if identity == "overridden":
            return raw, str(claimed), identity, claimed
        return raw, acting, identity, claimed


class ToolLimitKeepsTail(BuggyHarness):
    """Truncates a long tool result keeping its tail instead of its head."""

    def _limit_output(self, text: str, call: ToolCallBlock) -> tuple[str | tuple[Any, ...], bool]:
        out, truncated = super()._limit_output(text, call)
        if not truncated or not isinstance(out, str):
            return out, truncated
        return text[len(text) - len(out):], True


class ToolResultNotSaved(BuggyHarness):
    """Runs the tool but never puts its result into the context."""

    def _append_reply(self, blocks: Sequence[Block], *, counted: bool = True) -> None:
        kept = [b for b in blocks if not isinstance(b, ToolResultBlock)]
        if kept:
            super()._append_reply(kept, counted=counted)


# --- long-term memory --------------------------------------------------------------------------

class MemoryRetrievedNotSent(BuggyHarness):
    """Retrieves long-term memory (and says so) but never puts it into the request: saved and
    retrieved is not sent."""

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config)
        self.memory.decorate = lambda messages: messages  # type: ignore[method-assign]


class MemorySharedAcrossUsers(BuggyHarness):
    """Keys long-term memory by the agent alone, so every user of the agent shares one memory."""

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config)
        if hasattr(self.memory, "scope"):
            self.memory.scope = lambda h: "all-users"


# --- time and images --------------------------------------------------------------------------

class TimeHintHostClock(BuggyHarness):
    """States the time of the host it started on (a clock that never follows the world's)."""

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config)
        self._started = context.clock.now()

    def now(self) -> datetime:
        return self._started


class TimeHintOncePerSession(BuggyHarness):
    """Injects the current time once, on the session's first turn only."""

    told = False

    def _inject_runtime(self, iteration: int) -> None:
        if not self.told:
            super()._inject_runtime(iteration)
            self.told = self._last_time is not None
            return
        cfg = self.cfg
        self.cfg = cfg.model_copy(update={"time_hint": False})  # only other hints from now on
        try:
            super()._inject_runtime(iteration)
        finally:
            self.cfg = cfg


class ImageLimitKeepsOldest(BuggyHarness):
    """Over the image limit, keeps the oldest images and removes the newest."""

    def _limit_images(self) -> tuple[History, int]:
        flipped = History.of(tuple(reversed(self.context)))
        new, removed = limit_images(flipped, self.cfg.max_image_num, self.prompts, self.offloader)
        return History.of(tuple(reversed(new))), removed


# --- sessions -------------------------------------------------------------------------------

class LoadsSessionOnce(BuggyHarness):
    """Loads the session from the store when the instance first serves and never again: behind
    a load balancer it answers from what it held before another instance served the last turns
    (a cache never invalidated)."""

    loaded = False

    def _sync(self) -> None:
        if not self.loaded:
            self.loaded = True
            super()._sync()


class ResumeDropsSummary(BuggyHarness):
    """Resumes a session with its messages but not its compaction summary (the rollout is
    replayed, the summary kept elsewhere is forgotten): after a compaction and a restart the
    order and the user's instructions are gone."""

    def load_state(self, state: Mapping[str, Any]) -> None:
        super().load_state({**state, "summary": ""})


@dataclass(frozen=True)
class Bug:
    name: str
    cls: type[BuggyHarness]
    mistake: str  # one line: the real-world mistake it models


def _bug(cls: type[BuggyHarness]) -> Bug:
    name = re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    return Bug(name, cls, " ".join(doc.split()))


BUGS: dict[str, Bug] = {b.name: b for b in map(_bug, [
    SplitToolPair, SystemPromptDroppedAtCompaction, BindRunsClaimedUser, ToolLimitKeepsTail,
    EstimateOmitsSummary, PinnedBoardNeverUpdated, ToolsDroppedAfterCompaction,
    SummaryPromotesClaims, SummaryAfterNewest, TimeHintHostClock, RollingSummaryForgets,
    NoCheckAfterToolRound, KeepsOldest, TimeHintOncePerSession, ImageLimitKeepsOldest,
    ReserveIgnoresHead, TriggerAtContextSize, SummaryStripsTags, ToolResultNotSaved,
    SummaryNeverParses, OffloadPathWrongSession, LoadsSessionOnce, ResumeDropsSummary,
    MemoryRetrievedNotSent, MemorySharedAcrossUsers,
])}
for _b in BUGS.values():
    _b.cls.name = f"bug/{_b.name}"
