"""The reference harness: context assembly and budget, the reasoning-acting loop, runtime
hints, tool execution with identity binding, and compaction through the strategy registry.

Its loop and layout reproduce AgentScope 2.0.x (semantics spec §2, §3.1, §7): a user message
of its own, then one assistant message per reply holding hints, tool calls, tool results and
the final text; the compaction check before every model call (after the user message is
appended and after every tool round), then the runtime-state injection.

Over 400 lines on purpose: this is the reference harness's one loop (assembly, budget, tools,
state); the parts that can stand alone already do (compaction, split, limits, memory, store).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from harnesslab.errors import ContextOverflowError, ServiceRejected
from harnesslab.harness.base import HarnessContext, TurnResult
from harnesslab.harness.compaction import make_strategy
from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.honours import ALL_SETTINGS
from harnesslab.harness.identity import bind_identity
from harnesslab.harness.limits import head_tail_truncate, limit_images, truncate_tool_result
from harnesslab.harness.memory import make_memory
from harnesslab.harness.offload import Offloader
from harnesslab.harness.prompts import load_prompts
from harnesslab.harness.split import Split, split_context
from harnesslab.harness.store import SessionStore, StoreLink
from harnesslab.messages import (
    Block,
    DataBlock,
    HintBlock,
    History,
    Message,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    message_from_dict,
    message_images,
    message_to_dict,
)
from harnesslab.tokens import Bytes4Rule, RequestCounter, make_rule

_BYTES4 = Bytes4Rule()
RUNTIME_SOURCE = '{"label": "System", "sublabel": "Runtime State"}'
# The runtime-state line stating "now" (ISO-8601 with offset). The harness reads its own hints
# back only to know when it last stated the time.
_TIME_RE = re.compile(r"<current-time>([^<]+)</current-time>")


def _time_line(now: datetime) -> str:
    return f"<current-time>{now.isoformat(timespec='seconds')}</current-time>"


def _parse_time(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def _tz_name(now: datetime) -> str:
    off = now.utcoffset()
    if off is None:
        return "UTC"
    minutes = int(off.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


class ReferenceHarness:
    """One agent instance serving one verified session."""

    name = "reference"
    # It restores itself from its own store (``resume``); the bench hands it no state.
    owns_store = True
    # Every setting is one of its own (the settings are the reference harness's).
    honours = ALL_SETTINGS

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        self.cfg = config
        self.endpoint = context.endpoint
        self.tools = context.tools
        self.clock = context.clock
        self.sink = context.sink
        self.session_id = context.session.id
        self.user_id = context.session.user  # verified by the server, never by the chat
        workdir, cache = context.workdir, context.cache
        self.prompts = load_prompts(config.prompts)
        self.system = config.system_prompt or self.prompts.system
        offered = config.tools
        self.tool_schemas: tuple[ToolSchema, ...] = tuple(
            t for t in self.tools.schemas() if offered is None or t.name in offered)
        self.memory = make_memory(config.memory, workdir)
        self.tool_schemas += self.memory.tools()
        self.named_user: str | None = None  # the user id the model last passed to a tool
        self.summary_tool = ToolSchema.from_dict(self.prompts.summary_tool(config.summary_template))
        self.strategy = make_strategy(config.strategy)
        wants_offload = config.offload or config.strategy == "offload"
        self.agentscope = config.prompts == "agentscope"  # AgentScope's edge behaviour too
        offloader: type[Offloader] = Offloader
        if self.agentscope:
            from harnesslab.harness.agentscope_profile import AgentScopeOffloader

            offloader = AgentScopeOffloader
        self.offloader = offloader(workdir / "workspace") if wants_offload and workdir else None
        rule = make_rule(config.estimator, cache)
        self.rule = rule
        self._counter = RequestCounter(rule)      # reply requests, in order: prefix sums hold
        self._aux_counter = RequestCounter(rule)  # summary requests and probes
        self.summary = ""
        self._context = History.of()
        self._sent: tuple[Request, frozenset[str]] | None = None  # the last reply request
        self._ids = 0
        self._reply_id = ""
        self._images = 0
        self._last_time: datetime | None = None
        # Codex's trigger: the last usage the service reported, plus what came after it.
        self.last_usage = 0
        self.bytes_since_usage = 0
        # The session store (``persist``); read lazily, before the instance first serves.
        self.link = StoreLink(SessionStore(workdir / "store"), self.session_id, self.user_id,
                              restore=config.resume == "store") \
            if config.persist and workdir else None

    # -- state ----------------------------------------------------------------------------------
    @property
    def context(self) -> History:
        return self._context

    @context.setter
    def context(self, value: History) -> None:
        # A wholesale replacement (compaction) may have removed hints and images: rescan once.
        self._context = value
        self._images = sum(1 for m in value for _ in message_images(m))
        self._last_time = None
        for m in value:
            t = self._time_in(m)
            if t is not None:
                self._last_time = t

    def now(self) -> datetime:
        """The harness's own idea of the time (the world's clock plus any configured skew)."""
        return self.clock.now() + timedelta(hours=self.cfg.clock_offset_hours)

    def new_id(self) -> str:
        self._ids += 1
        return f"{self.session_id}-m{self._ids}"

    def emit(self, event: dict[str, Any]) -> None:
        if self.link is not None and event.get("type") == "compaction" and event.get("applied"):
            self.link.compactions += 1
        self.sink.emit(event)

    def _sync(self) -> None:
        """Take the store's state when it is newer than this instance's (StoreLink.newer)."""
        link = self.link
        saved = link.newer() if link is not None else None
        if link is not None and saved is not None:
            self.load_state(saved.state)
            link.adopted(saved)
            self.emit({"type": "session_restored", "rev": saved.rev, "turns": saved.turns})

    def _commit(self, kind: str) -> None:
        if self.link is not None:
            self.link.commit(self._state(), kind, self.clock.now())

    # -- requests and estimates -----------------------------------------------------------------
    def request(self, *, messages: tuple[Message, ...] | None = None, summary: str | None = None,
                tools: tuple[ToolSchema, ...] | None = None, purpose: str = "reply") -> Request:
        msgs = self.memory.decorate(self.strategy.decorate(self, self._context)) \
            if messages is None else messages
        return Request(system=self.system, messages=msgs,
                       summary=self.summary if summary is None else summary,
                       tools=self.tool_schemas if tools is None else tools,
                       output_budget=self.cfg.output_budget, session_id=self.session_id,
                       meta=(("purpose", purpose),))

    def estimate(self, request: Request) -> int:
        purpose = dict(request.meta).get("purpose", "reply")
        return (self._counter if purpose == "reply" else self._aux_counter).count(request)

    def estimate_text(self, text: str) -> int:
        return self.rule.finalize(self.rule.head_units("", text, ()))

    def split(self, budget: float) -> Split:
        head = self._counter.head_units(self.system, self.summary, self.tool_schemas)
        return split_context(self._context, head, budget, self._counter.message_units,
                             self.rule.finalize)

    def call(self, request: Request, *, purpose: str, estimate: int) -> Response:
        resp = self.endpoint.call(request, purpose=purpose, estimate=estimate)
        if purpose == "reply":
            self.last_usage = resp.input_tokens + resp.output_tokens
            self.bytes_since_usage = 0
        return resp

    # -- context edits ----------------------------------------------------------------------------
    def _count_new(self, blocks: Sequence[Block]) -> None:
        # Only Codex's trigger needs it: bytes/4 of the items added since the last usage.
        if self.cfg.strategy == "codex" and blocks:
            self.bytes_since_usage += _BYTES4.message_units(Message("user", tuple(blocks)))

    def _append(self, m: Message, *, counted: bool = True) -> None:
        self._context = self._context.appended(m)
        self._images += sum(1 for _ in message_images(m))
        if counted:
            self._count_new(m.content)

    def _append_reply(self, blocks: Sequence[Block], *, counted: bool = True) -> None:
        ctx = self._context
        if ctx and ctx[-1].id == self._reply_id and ctx[-1].role == "assistant":
            last = ctx[-1]
            self._context = ctx.replaced(len(ctx) - 1, Message(
                "assistant", last.content + tuple(blocks), id=last.id))
            self._images += sum(1 for _ in message_images(Message("assistant", tuple(blocks))))
            if counted:
                self._count_new(blocks)
        else:
            self._append(Message("assistant", tuple(blocks), id=self._reply_id), counted=counted)

    def inject(self, messages: Sequence[Message]) -> None:
        """Put messages into the context as earlier turns (filler), without a model call."""
        for m in messages:
            self._append(m)

    # -- the harness interface ------------------------------------------------------------------
    def preload(self, exchanges: Sequence[Sequence[Message]]) -> None:
        self._sync()
        for pair in exchanges:
            self.inject(pair)
            self.maintain()
        self._commit("preload")

    def context_estimate(self) -> int | None:
        self._sync()
        return self.estimate(self.request())

    def save_state(self) -> dict[str, Any]:
        self._sync()
        return self._state()

    def _state(self) -> dict[str, Any]:
        return {"version": 1, "summary": self.summary, "ids": self._ids,
                "context": [message_to_dict(m) for m in self._context],
                "last_usage": self.last_usage, "bytes_since_usage": self.bytes_since_usage,
                "strategy": self.strategy.save_state()}

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.summary = str(state["summary"])
        self._ids = int(state["ids"])
        self.context = History.of(tuple(message_from_dict(d) for d in state["context"]))
        self.last_usage = int(state["last_usage"])
        self.bytes_since_usage = int(state["bytes_since_usage"])
        self.strategy.load_state(state.get("strategy") or {})

    # -- the loop ---------------------------------------------------------------------------------
    def maintain(self, iteration: int = 1) -> bool:
        """What runs before a model call: the image limit, then the compaction check.
        Returns False when a compaction failed and the context was left as it was."""
        if self._images > self.cfg.max_image_num:
            self._context, removed = self._limit_images()
            self._images -= removed
            self.emit({"type": "image_limit", "removed": removed})
        est = self.estimate(self.request())
        if self.strategy.should_compact(self, est):
            return self.strategy.compact(self, est)
        return True

    def _limit_images(self) -> tuple[History, int]:
        return limit_images(self._context, self.cfg.max_image_num, self.prompts, self.offloader)

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        self._sync()
        self.memory.begin_turn(self, text)
        result = self._serve(text, images)
        if not result.failed:
            # What the turn added: the user's words and the one reply message (hints, tool
            # calls, results, the answer), wherever compaction left it.
            reply = tuple(m for m in self._context if m.id == self._reply_id)
            self.memory.end_turn(self, (Message("user", (TextBlock(text),)), *reply))
        self._commit("turn")  # a turn killed before this line leaves no trace in the store
        return result

    def _serve(self, text: str, images: Sequence[DataBlock]) -> TurnResult:
        self._reply_id = self.new_id()
        self._append(Message("user", (TextBlock(text), *images), id=self.new_id()))
        retried = False
        # AgentScope: at the limit, one more call, told to answer in text with no tools.
        for it in range(self.cfg.max_iters + (1 if self.agentscope else 0)):
            last = self.agentscope and it == self.cfg.max_iters
            if last:
                from harnesslab.harness.agentscope_profile import max_iters_hint

                self._append_reply([max_iters_hint(self.cfg.max_iters)])
            if not self.maintain(it):
                return TurnResult("", True, "compaction_failed")
            self._inject_runtime(it)
            req = self.request()
            if last:
                req = req.with_meta(("tool_choice", "none"))
            est = self.estimate(req)
            self._left_out(req, est)
            try:
                resp = self.call(req, purpose="reply", estimate=est)
            except ServiceRejected as e:
                if isinstance(e, ContextOverflowError) and self.cfg.retry_on_overflow \
                        and not retried:
                    retried = True
                    self.strategy.compact(self, est)
                    continue
                return TurnResult("", True, e.reason)
            self._append_reply(resp.blocks, counted=False)
            if self.agentscope and resp.blocks and \
                    all(isinstance(b, ThinkingBlock) for b in resp.blocks):
                continue  # AgentScope takes a thinking-only reply as a step, not an answer
            if not resp.tool_calls:
                return TurnResult(resp.text, last, "max_iters" if last else "")
            for call in resp.tool_calls:
                self._append_reply([self._run_tool(call)])
        if self.agentscope:
            from harnesslab.harness.agentscope_profile import MAX_ITERS_EXCEEDED

            return TurnResult(MAX_ITERS_EXCEEDED, True, "max_iters")
        return TurnResult("", True, "max_iters")

    def _left_out(self, req: Request, estimate: int) -> None:
        """A strategy that leaves conversation out of the requests it decorates (``window``)
        compacts as a truncation does, though its context stays whole: a reply request that
        leaves out a message of the context the previous one carried is a compaction (nothing
        summarised), the point the model loses it, as the outside view sees it too."""
        carried = frozenset(m.id for m in req.messages if m.id)
        before, self._sent = self._sent, (req, carried)
        if before is None:
            return
        left = [m for m in self._context if m.id in before[1] and m.id not in carried]
        if left:
            self.emit({"type": "compaction", "strategy": self.strategy.name,
                       "estimate": estimate, "request": before[0], "summary_ok": False,
                       "applied": True, "removed": len(left), "kept": len(req.messages),
                       "summary": "", "summary_tokens": 0, "offload_path": None,
                       "after_estimate": estimate})

    # -- runtime hints ------------------------------------------------------------------------------
    @staticmethod
    def _time_in(m: Message) -> datetime | None:
        found = None
        for b in m.content:
            if isinstance(b, HintBlock) and b.source == RUNTIME_SOURCE and isinstance(b.hint, str):
                for x in _TIME_RE.finditer(b.hint):
                    found = _parse_time(x.group(1)) or found
        return found

    def _inject_runtime(self, iteration: int) -> None:
        lines: list[str] = []
        now = self.now()
        if self.cfg.time_hint:
            last = self._last_time
            elapsed = (now - last).total_seconds() / 3600 if last is not None else None
            if elapsed is None or not 0 <= elapsed <= self.cfg.time_interval_hours:
                if self.prompts.time_format is None:
                    lines += [_time_line(now), f"<timezone>{_tz_name(now)}</timezone>"]
                else:
                    from harnesslab.harness.agentscope_profile import time_text, zone_name

                    lines += [f"<current-time>{time_text(now, self.prompts.time_format)}"
                              "</current-time>", f"<timezone>{zone_name(now)}</timezone>"]
        if iteration == 0 and self.cfg.context_length_hint:
            est = self.estimate(self.request())
            cfg = self.cfg
            if est > (cfg.trigger_ratio - cfg.context_buffer_ratio) * cfg.context_size:
                lines.append(f"<context-length>Your current context contains {est} tokens. When "
                             f"reaching {int(cfg.trigger_tokens)} tokens, your context will be "
                             "compressed.</context-length>")
        if self.agentscope and (self.cfg.time_hint or self.cfg.context_length_hint):
            from harnesslab.harness.agentscope_profile import repeated_tool_error

            stuck = repeated_tool_error(self._context)
            if stuck:
                lines.append(f"<tool-error>{stuck}</tool-error>")
        if not lines:
            return
        hint = HintBlock(self.prompts.runtime_template.replace("{runtime_state}", "\n".join(lines)),
                         source=RUNTIME_SOURCE)
        self._append_reply([hint])
        if lines[0].startswith("<current-time>"):
            self._last_time = now
        self.emit({"type": "hint", "kinds": [ln[1:ln.index(">")] for ln in lines]})

    # -- tools ------------------------------------------------------------------------------------
    def _identity(self, call: ToolCallBlock) -> tuple[str, str, str, Any]:
        """Who a tool call acts for: (arguments to run with, acting user, decision, the user id
        the model passed)."""
        b = bind_identity(self.cfg.identity, self.user_id, call.input)
        if isinstance(b.claimed, str) and b.claimed:
            self.named_user = b.claimed  # what memory.key: named keys by (the control)
        return b.arguments, b.acting, b.decision, b.claimed

    def _limit_output(self, text: str, call: ToolCallBlock) -> tuple[str | tuple[Any, ...], bool]:
        """The result as saved into the context (tool_result_limit, or Codex's head + tail)."""
        if self.cfg.strategy == "codex":
            return head_tail_truncate(text, self.cfg.codex.tool_output_limit)
        return truncate_tool_result(text, self.cfg.tool_result_limit, self.prompts,
                                    session_id=self.session_id, call_id=call.id,
                                    offloader=self.offloader)

    def _run_tool(self, call: ToolCallBlock) -> ToolResultBlock:
        if self.agentscope:
            # AgentScope repairs and validates the arguments before anything runs.
            from harnesslab.harness.agentscope_profile import check_tool_input, tool_arguments

            checked, problem = check_tool_input(call.name, call.input, self.tool_schemas)
            if checked is None:
                return ToolResultBlock(call.id, call.name, problem, True)
            call = replace(call, input=tool_arguments(checked))
        mem = self.memory.run_tool(self, call)
        if mem is not None:  # a memory tool: scoped by the memory itself, never by user_id
            self.emit({"type": "memory_tool", "id": call.id, "name": call.name,
                       "args": call.input, "is_error": mem.is_error})
            return mem
        raw, acting, identity, claimed = self._identity(call)
        if identity == "refused":
            now = self.now().isoformat(timespec="seconds")
            text = json.dumps({"tool": call.name, "as_of": now, "error": f"user_id {claimed} "
                               "does not match the verified session"}, ensure_ascii=False)
            is_error = True
        else:
            outcome = self.tools.run(call.name, raw, acting)
            text, is_error = outcome.text, outcome.is_error
        output, truncated = self._limit_output(text, call)
        # The bench records the tool run itself; this says what the harness decided about it.
        self.emit({"type": "tool_policy", "id": call.id, "name": call.name, "claimed": claimed,
                   "identity": identity, "truncated": truncated})
        return ToolResultBlock(call.id, call.name, output, is_error)

