"""Compaction strategies, behind one registry (design 3.5).

- ``none``: never compacts (the window overflows eventually: a baseline).
- ``truncate``: AgentScope's trigger and split; the compressed part is dropped, no summary.
- ``structured``: AgentScope 2.0.x's default: a five-field structured summary (template a
  setting: AgentScope's or the seed's) replacing the previous one; truncation on failure.
- ``freeform``: the same, with a free-text summary.
- ``pinned``: structured, plus constraints and entities found in the conversation's text
  (never in intents) kept outside the summary and re-injected as tags on every call.
- ``offload``: structured with the offloader on (JSONL of what was removed, a path hint).
- ``codex``: triggers on the last usage the service reported plus bytes/4 of later items,
  against an absolute limit; keeps recent user messages up to a budget and a handoff summary;
  drops tool outputs.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from harnesslab.errors import ContextOverflowError
from harnesslab.messages import (
    HintBlock,
    History,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
    block_texts,
)
from harnesslab.sim.intents import (
    CONFLICTS,
    CONSTRAINT_PHRASES,
    ID_PATTERNS,
    SUMMARY_TOOL,
    TAG_RE,
    Constraint,
    constraint_tag,
)
from harnesslab.tokens import Bytes4Rule

if TYPE_CHECKING:
    from harnesslab.harness.agent import ReferenceHarness


class Strategy(Protocol):
    name: str

    def should_compact(self, h: ReferenceHarness, estimate: int) -> bool: ...

    def compact(self, h: ReferenceHarness, estimate: int) -> bool: ...

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]: ...


STRATEGIES: dict[str, type[Any]] = {}


def register(name: str) -> Any:
    def deco(cls: type[Any]) -> type[Any]:
        if name in STRATEGIES:
            raise ValueError(f"compaction strategy {name!r} is already registered")
        cls.name = name
        STRATEGIES[name] = cls
        return cls
    return deco


def make_strategy(name: str) -> Strategy:
    s: Strategy = STRATEGIES[name]()
    return s


@register("none")
class NoCompaction:
    name = "none"

    def should_compact(self, h: ReferenceHarness, estimate: int) -> bool:
        return False

    def compact(self, h: ReferenceHarness, estimate: int) -> bool:
        return True

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]:
        return messages


def _summary_from_fields(raw: str, fields: tuple[str, ...]) -> dict[str, str] | None:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or any(not isinstance(data.get(f), str) for f in fields):
        return None
    return {f: data[f] for f in fields}


class AgentScopeCompaction:
    """AgentScope 2.0.x ``_compress_context_impl`` (semantics spec §2.3), with the summary kind
    (structured, freeform or none) and the offloader as the strategy's parameters."""

    name = "structured"
    summary_kind = "structured"  # "structured" | "freeform" | "none"
    force_offload = False

    def should_compact(self, h: ReferenceHarness, estimate: int) -> bool:
        return estimate >= h.cfg.trigger_tokens

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]:
        return messages

    # -- the summary call --------------------------------------------------------------------
    def _summary_request(self, h: ReferenceHarness, msgs: tuple[Message, ...]) -> Request:
        now = h.now().isoformat(timespec="seconds")
        if self.summary_kind == "structured":
            prompt = Message("user", (TextBlock(h.prompts.compression.replace("{current_time}", now)),
                                      TextBlock(h.prompts.structured_reminder)), id=h.new_id())
            tools: tuple[ToolSchema, ...] = (h.summary_tool,)
        else:
            prompt = Message.text("user", h.prompts.freeform.replace("{current_time}", now),
                                  id=h.new_id())
            tools = ()
        return h.request(messages=History.of((*msgs, prompt)), tools=tools, purpose="summary")

    def _parse(self, h: ReferenceHarness, blocks: tuple[Any, ...]) -> str | None:
        if self.summary_kind == "structured":
            fields = tuple(h.prompts.summary_fields[h.cfg.summary_template])
            for b in blocks:
                if isinstance(b, ToolCallBlock) and b.name == SUMMARY_TOOL:
                    values = _summary_from_fields(b.input, fields)
                    if values is not None:
                        return h.prompts.summary_templates[h.cfg.summary_template].format(**values)
            return None
        text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
        if not text.startswith("[summary]"):
            return None
        return f"<system-info>{text}</system-info>"

    def _generate(self, h: ReferenceHarness, req: Request, est: int) -> str | None:
        """One ``generate_structured_output``: AgentScope's ladder (forced, auto, none), three
        tries when the model answers without the tool. A service error is not retried by the
        ladder: it propagates."""
        tries = 3 if self.summary_kind == "structured" else 1
        for choice in ("forced", "auto", "none")[:tries]:
            resp = h.call(req.with_meta(("tool_choice", choice)), purpose="summary",
                          estimate=est)
            summary = self._parse(h, resp.blocks)
            if summary is not None:
                return summary
        return None

    def _counted(self, h: ReferenceHarness, req: Request) -> int:
        """The estimate AgentScope compares with its limits: of the request as built, before
        ``generate_structured_output`` appends its reminder to the last user message."""
        if self.summary_kind != "structured":
            return h.estimate(req)
        last = req.messages[-1]
        bare = Message(last.role, last.content[:-1], name=last.name, id=last.id)
        return h.estimate(replace(req, messages=(*req.messages[:-1], bare)))

    def _summarize(self, h: ReferenceHarness, msgs: tuple[Message, ...]) -> str | None:
        req = self._summary_request(h, msgs)
        est = h.estimate(req)
        # AgentScope logs a warning and remembers it
        overflow = self._counted(h, req) > h.cfg.context_size
        try:
            summary = self._generate(h, req, est)
        except ContextOverflowError:
            summary = None
        if summary is not None or not overflow:
            return summary
        # Whatever made the summary call fail (the service, or a model that never called the
        # tool), an overflowing request is retried once: drop the oldest compressed messages
        # until it fits the trigger; whatever was dropped is simply not summarised.
        rest = msgs
        while rest:
            rest = rest[1:]
            req = self._summary_request(h, rest)
            est = h.estimate(req)
            if self._counted(h, req) < h.cfg.trigger_tokens:
                break
        try:
            return self._generate(h, req, est)
        except ContextOverflowError:
            return None

    # -- compaction ---------------------------------------------------------------------------
    def compact(self, h: ReferenceHarness, estimate: int) -> bool:
        if not h.context:
            h.emit({"type": "compaction_error", "reason": "system prompt and summary alone "
                    "exceed the trigger", "estimate": estimate})
            return True
        before = h.request()
        split = h.split(h.cfg.reserve_tokens)
        if not split.to_compress:
            split = h.split(0)
        summary: str | None = None
        if self.summary_kind != "none":
            summary = self._summarize(h, split.to_compress)
        ok = summary is not None
        if not ok and self.summary_kind != "none" and not h.cfg.fallback_to_truncation:
            h.emit({"type": "compaction", "strategy": self.name, "estimate": estimate,
                    "request": before, "summary_ok": False, "applied": False,
                    "removed": 0, "kept": len(h.context)})
            return False
        new_summary = summary if summary is not None else \
            (h.summary or (h.prompts.truncated_summary if self.summary_kind != "none" else ""))
        offload_path = None
        if h.offloader is not None and (self.force_offload or h.cfg.offload):
            offload_path = h.offloader.offload_context(h.session_id, split.to_compress)
            reminder = h.prompts.offload_reminder.format(path=offload_path)
            if reminder not in new_summary:
                new_summary += reminder
        h.summary = new_summary
        h.context = History.of(split.to_keep)
        h.emit({"type": "compaction", "strategy": self.name, "estimate": estimate,
                "request": before, "summary_ok": ok, "applied": True,
                "removed": len(split.to_compress), "kept": len(split.to_keep),
                "summary": new_summary, "summary_tokens": h.estimate_text(new_summary),
                "offload_path": offload_path, "after_estimate": h.estimate(h.request())})
        return True


@register("structured")
class StructuredCompaction(AgentScopeCompaction):
    summary_kind = "structured"


@register("truncate")
class TruncateCompaction(AgentScopeCompaction):
    summary_kind = "none"


@register("freeform")
class FreeformCompaction(AgentScopeCompaction):
    summary_kind = "freeform"


@register("offload")
class OffloadCompaction(AgentScopeCompaction):
    summary_kind = "structured"
    force_offload = True


@register("pinned")
class PinnedCompaction(AgentScopeCompaction):
    """Structured, plus a pin board kept outside the summary: the ids and constraints found in
    the conversation's own text, re-injected as tags right after the summary on every call."""

    summary_kind = "structured"

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._keep: list[Message] = []   # keeps scanned messages alive so ids stay unique
        self._entities: dict[str, int] = {}       # id -> order of last mention
        self._constraints: dict[Constraint, int] = {}
        self._tick = 0
        self._last: tuple[Message, ...] | None = None  # the context decorated last time
        self._board: Message | None = None

    def _scan(self, m: Message) -> None:
        if id(m) in self._seen:
            return
        self._seen.add(id(m))
        self._keep.append(m)
        if m.name == "pinned":
            return
        for b in m.content:
            for text in block_texts(b):
                found: list[tuple[int, str, Any]] = []
                for pat in ID_PATTERNS.values():
                    found += [(x.start(), "id", x.group()) for x in pat.finditer(text)]
                # Every mention, at its offset in the text itself: the latest one decides.
                for c, phrases in CONSTRAINT_PHRASES.items():
                    found += [(x.start(), "c", c) for p in phrases
                              for x in re.finditer(re.escape(p), text, re.IGNORECASE)]
                for t in TAG_RE.finditer(text):
                    if t.group(1) == "constraint" and t.group(2) in Constraint._value2member_map_:
                        found.append((t.start(), "c", Constraint(t.group(2))))
                for _, kind, value in sorted(found, key=lambda f: f[0]):
                    self._tick += 1
                    if kind == "id":
                        self._entities[value] = self._tick
                    else:
                        self._constraints.pop(CONFLICTS[value], None)
                        self._constraints[value] = self._tick

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]:
        # Scan only what is new since the last call when the context says what it extends.
        start = messages.shared if isinstance(messages, History) and \
            messages.base is self._last else 0
        for m in messages[start:]:
            self._scan(m)
        self._last = messages
        if not self._entities and not self._constraints:
            return messages
        tags = [constraint_tag(c) for c, _ in sorted(self._constraints.items(), key=lambda x: x[1])]
        ids = [e for e, _ in sorted(self._entities.items(), key=lambda x: x[1])]
        text = "[pinned] " + " ".join(tags) + (" entities: " + " ".join(ids) if ids else "")
        if self._board is None or self._board.content[0] != HintBlock(text, source="pinned"):
            # A new board only when its text changes: the same object lets counters compare
            # the decorated requests by identity.
            self._board = Message("assistant", (HintBlock(text, source="pinned"),),
                                  name="pinned")
        return (self._board, *messages)


@register("codex")
class CodexCompaction:
    """Codex CLI's auto-compaction (persistence-codex-langgraph.md), on the reference loop."""

    name = "codex"

    def limit(self, h: ReferenceHarness) -> float:
        c = h.cfg.codex
        return c.auto_compact_limit if c.auto_compact_limit is not None else 0.9 * h.cfg.context_size

    def should_compact(self, h: ReferenceHarness, estimate: int) -> bool:
        # Codex does not re-count the history: it trusts the last usage the service reported
        # and adds a bytes/4 guess for what came after it.
        return h.last_usage + Bytes4Rule().finalize(h.bytes_since_usage) >= self.limit(h)

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]:
        return messages

    def compact(self, h: ReferenceHarness, estimate: int) -> bool:
        before = h.request()
        history = tuple(h.context)
        summary: str | None = None
        prompt = Message.text("user", h.prompts.handoff, id=h.new_id())
        while True:
            req = h.request(messages=History.of((*history, prompt)), tools=(), summary="",
                            purpose="summary")
            try:
                resp = h.call(req, purpose="summary", estimate=h.estimate(req))
            except ContextOverflowError:
                if not history:
                    break
                history = history[1:]  # trim from the front and retry, as Codex does
                continue
            text = "".join(b.text for b in resp.blocks if isinstance(b, TextBlock))
            summary = text if text.startswith("[handoff]") else None
            break
        rule = Bytes4Rule()
        kept: list[Message] = []
        budget = h.cfg.codex.user_message_budget
        used = 0
        for m in reversed(h.context):
            if m.role != "user" or not any(isinstance(b, TextBlock) for b in m.content):
                continue
            cost = rule.finalize(rule.message_units(m))
            if used + cost > budget:
                break
            used += cost
            kept.append(m)
        kept.reverse()
        removed = len(h.context) - len(kept)
        if summary is not None:
            bridge = h.prompts.handoff_bridge.format(summary=summary)
            kept.append(Message("user", (HintBlock(bridge, source="handoff"),), id=h.new_id()))
        h.summary = ""
        h.context = History.of(kept)
        h.last_usage = 0
        h.bytes_since_usage = sum(rule.message_units(m) for m in kept)
        h.emit({"type": "compaction", "strategy": self.name, "estimate": estimate,
                "request": before, "summary_ok": summary is not None, "applied": True,
                "removed": removed, "kept": len(kept),
                "summary": summary or "", "summary_tokens": h.estimate_text(summary or ""),
                "offload_path": None, "after_estimate": h.estimate(h.request())})
        return True
