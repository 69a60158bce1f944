"""Compaction strategies, behind one registry (design 3.5).

- ``none``: never compacts (the window overflows eventually: a baseline).
- ``truncate``: AgentScope's trigger and split; the compressed part is dropped, no summary.
- ``structured``: AgentScope 2.0.x's default: a five-field structured summary (template a
  setting: AgentScope's or the seed's) replacing the previous one; truncation on failure.
- ``freeform``: the same, with a free-text summary.
- ``pinned``: structured, plus a board of the user's standing instructions and the entities
  under discussion, extracted by the model at each compaction and pinned verbatim after the
  summary on every call.
- ``offload``: structured with the offloader on (JSONL of what was removed, a path hint).
- ``window``: no summary; each request carries the newest ``window_messages`` messages (a
  request that leaves out conversation the previous one carried is recorded as a compaction).
- ``codex``: triggers on the last usage the service reported plus bytes/4 of later items,
  against an absolute limit; keeps recent user messages up to a budget and a handoff summary;
  drops tool outputs.

Over 400 lines on purpose: the eight strategies share the summary call and its fallbacks,
and registration order here is the order every error message and table lists them in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from harnesslab.errors import ServiceRejected
from harnesslab.harness.prompts import SUMMARY_TOOL
from harnesslab.messages import (
    HintBlock,
    History,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolSchema,
)
from harnesslab.registries import class_registrar
from harnesslab.tokens import Bytes4Rule

if TYPE_CHECKING:
    from harnesslab.harness.agent import ReferenceHarness


class Strategy(Protocol):
    name: str

    def should_compact(self, h: ReferenceHarness, estimate: int) -> bool: ...

    def compact(self, h: ReferenceHarness, estimate: int) -> bool: ...

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]: ...

    def save_state(self) -> dict[str, Any]: ...

    def load_state(self, state: Mapping[str, Any]) -> None: ...


class Stateless:
    """Strategies that keep nothing between calls beyond what the harness keeps."""

    def save_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: Mapping[str, Any]) -> None:
        return None


STRATEGIES: dict[str, type[Any]] = {}


register = class_registrar(STRATEGIES, "compaction strategy")


def make_strategy(name: str) -> Strategy:
    s: Strategy = STRATEGIES[name]()
    return s


@register("none")
class NoCompaction(Stateless):
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


def structured_extract(h: ReferenceHarness, msgs: tuple[Message, ...], instruction: str,
                       fields: dict[str, str], purpose: str) -> dict[str, str] | None:
    """Ask the model, through the structured-output tool, to fill ``fields`` from ``msgs``
    (an extraction call: the pin board, memory items). None when the service rejected the
    request or the answer did not fill the fields."""
    prompt = Message("user", (TextBlock(instruction),), id=h.new_id())
    req = h.request(messages=History.of((*msgs, prompt)),
                    tools=(ToolSchema.from_dict(h.prompts.structured_tool(fields)),),
                    purpose=purpose)
    try:
        resp = h.call(req.with_meta(("tool_choice", "forced")), purpose=purpose,
                      estimate=h.estimate(req))
    except ServiceRejected:
        return None
    for b in resp.blocks:
        if isinstance(b, ToolCallBlock) and b.name == SUMMARY_TOOL:
            values = _summary_from_fields(b.input, tuple(fields))
            if values is not None:
                return values
    return None


class AgentScopeCompaction(Stateless):
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
        if h.prompts.time_format is not None:
            from harnesslab.harness.agentscope_profile import time_text, zone_name

            now = f"{time_text(h.now(), h.prompts.time_format)} ({zone_name(h.now())})"
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
        if self.summary_kind == "structured" and h.agentscope:
            # AgentScope: the first call of the tool counts, repaired and checked against the
            # schema it was sent.
            from harnesslab.harness.agentscope_profile import parse_structured

            call = next((b for b in blocks if isinstance(b, ToolCallBlock)
                         and b.name == SUMMARY_TOOL), None)
            schema = h.summary_tool.to_dict()["function"]["parameters"]
            data = parse_structured(call.input, schema) if call is not None else None
            return None if data is None else \
                h.prompts.summary_templates[h.cfg.summary_template].format(**data)
        if self.summary_kind == "structured":
            fields = tuple(h.prompts.summary_fields[h.cfg.summary_template])
            for b in blocks:
                if isinstance(b, ToolCallBlock) and b.name == SUMMARY_TOOL:
                    values = _summary_from_fields(b.input, fields)
                    if values is not None:
                        return h.prompts.summary_templates[h.cfg.summary_template].format(**values)
            return None
        # Free text has no form to check: whatever the model wrote is the summary (a refusal
        # included, which is the weakness of a freeform summary).
        text = "".join(b.text for b in blocks if isinstance(b, TextBlock)).strip()
        return f"<system-info>{text}</system-info>" if text else None

    def _generate(self, h: ReferenceHarness, req: Request, est: int) -> str | None:
        """One ``generate_structured_output``: AgentScope's ladder (forced, auto, then no
        tool_choice at all, the API's default), three tries when the model answers without
        the tool. A service error is not retried by the ladder: it propagates."""
        tries = 3 if self.summary_kind == "structured" else 1
        for choice in ("forced", "auto", "")[:tries]:  # "": AgentScope's "none", sent unset
            resp = h.call(req.with_meta(("tool_choice", choice)) if choice else req,
                          purpose="summary", estimate=est)
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
        except ServiceRejected:
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
        except ServiceRejected:
            return None

    # -- compaction ---------------------------------------------------------------------------
    def compact(self, h: ReferenceHarness, estimate: int) -> bool:
        if not h.context:
            h.emit({"type": "compaction_error", "reason": "system prompt and summary alone "
                    "exceed the trigger", "estimate": estimate})
            return not h.agentscope  # AgentScope raises RuntimeError: the reply fails
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
            if offload_path is not None and reminder not in new_summary:
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
    """Structured, plus a pin board kept outside the summary: at every compaction, before the
    summary, the model is asked (purpose ``pin``, through the structured-output tool) for the
    user's standing instructions and the entities under discussion in what is about to be
    compressed, the previous board included; its answer is pinned verbatim right after the
    summary on every call. The board is renewed with the summary, so it is never staler than
    the summary; a later instruction in the kept messages sits after it and wins."""

    summary_kind = "structured"

    def __init__(self) -> None:
        self.board = ""  # the pinned text, verbatim from the model's last extraction
        self._message: Message | None = None

    def save_state(self) -> dict[str, Any]:
        return {"board": self.board}

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.board = str(state.get("board", ""))
        self._message = None

    def _board_message(self) -> Message | None:
        if not self.board:
            return None
        if self._message is None or self._message.content[0] != HintBlock(self.board,
                                                                           source="pinned"):
            # A new board object only when its text changes: the same object lets counters
            # compare the decorated requests by identity.
            self._message = Message("assistant", (HintBlock(self.board, source="pinned"),),
                                    name="pinned")
        return self._message

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]:
        board = self._board_message()
        return messages if board is None else (board, *messages)

    def _extract(self, h: ReferenceHarness, msgs: tuple[Message, ...]) -> None:
        board = self._board_message()
        values = structured_extract(h, (*((board,) if board is not None else ()), *msgs),
                                    h.prompts.pin_request, h.prompts.pin_fields, "pin")
        if values is not None:  # else the old board stays: better stale than nothing
            self.board = h.prompts.pin_board.format(**values)
            h.emit({"type": "pin", "board": self.board})

    def _summarize(self, h: ReferenceHarness, msgs: tuple[Message, ...]) -> str | None:
        self._extract(h, msgs)
        return super()._summarize(h, msgs)


@register("window")
class WindowCompaction(Stateless):
    """LangChain's ``trim_messages`` by count, as many LangGraph agents keep their context:
    every request carries only the newest ``window_messages`` messages (starting at a user
    message, so no tool result is cut from its call); nothing is summarised. Each reply request
    that leaves out conversation the previous one carried is a compaction (the harness records
    it: ``ReferenceHarness._left_out``), as a truncation is."""

    name = "window"

    def should_compact(self, h: ReferenceHarness, estimate: int) -> bool:
        return False

    def compact(self, h: ReferenceHarness, estimate: int) -> bool:
        return True

    def decorate(self, h: ReferenceHarness, messages: History) -> tuple[Message, ...]:
        n = h.cfg.window_messages
        if len(messages) <= n:
            return messages
        start = len(messages) - n
        while start < len(messages) and messages[start].role != "user":
            start += 1
        return tuple(messages[start:])


@register("codex")
class CodexCompaction(Stateless):
    """Codex CLI's auto-compaction (persistence-codex-langgraph.md), on the reference loop."""

    name = "codex"

    def limit(self, h: ReferenceHarness) -> float:
        return h.cfg.codex_limit

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
            except ServiceRejected:
                if not history:
                    break
                history = history[1:]  # trim from the front and retry, as Codex does
                continue
            text = "".join(b.text for b in resp.blocks if isinstance(b, TextBlock)).strip()
            summary = text or None
            break
        rule = Bytes4Rule()
        kept: list[Message] = []
        budget = h.cfg.codex_user_budget
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
