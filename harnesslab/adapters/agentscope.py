"""The real AgentScope 2.0.x ``Agent`` behind the bench's harness interface (the ``agentscope``
extra; chosen with ``--set harness=agentscope``).

One ``agentscope.agent.Agent`` serves the session. Its chat model is the bench's endpoint
(``agentscope_bridge.BenchModel``): every call AgentScope makes, replies and summaries alike, is
formatted into a request, sent with AgentScope's own ``count_tokens`` as the estimate, and
answered by the fake model behind the simulated service, which still enforces the true window.
The scenario's tools are ``FunctionTool``\\ s with their exact schemas and an ALLOW permission,
acting for the verified session user (``identity`` as the reference harness reads it: the
integrator's wiring). AgentScope's clock, ids and timestamps read the simulated clock and a
per-session counter, so no wall time reaches a record.

Nothing of AgentScope's loop is reimplemented here: the bench only watches it. An
``on_compress_context`` middleware passes every compaction check through unchanged and records
what it did (the events the reference harness emits: image_limit, compaction,
compaction_error); ``on_acting`` notes which call a tool runs for. The settings it maps and
those it cannot express are listed in ``agentscope_settings``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from agentscope import message as am
from agentscope.agent import Agent, ContextConfig, InjectionConfig, ReActConfig
from agentscope.event import HintBlockEvent
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionDecision
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from harnesslab.adapters.agentscope_bridge import (
    ACTIVE,
    SUMMARY_TOOL,
    BenchModel,
    BenchOffloader,
    Source,
    from_message,
    from_part,
    install_sources,
)
from harnesslab.adapters.agentscope_memory import (
    BenchBackend,
    agentic_memory,
    allow_rules,
    memory_folder,
)
from harnesslab.adapters.agentscope_settings import HONOURS, NotApplicable, not_applicable
from harnesslab.errors import ServiceRejected
from harnesslab.harness.agentscope_profile import AgentScopeOffloader
from harnesslab.harness.base import HarnessContext, TurnResult
from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.prompts import (
    AGENTSCOPE_TIME_FORMAT,
    DEFAULT,
    agentscope_timezone,
    load_prompts,
)
from harnesslab.messages import Block, DataBlock, Message, Request
from harnesslab.tokens import Bytes4Rule

T = TypeVar("T")
AGENT_NAME = "assistant"
_REPLY: tuple[tuple[str, str], ...] = (("purpose", "reply"),)
_RULE = Bytes4Rule()


def _images(msgs: Sequence[Any]) -> int:
    """Image blocks where AgentScope's image limit looks for them (semantics spec §2.9)."""
    n = 0
    for m in msgs:
        for b in m.content:
            t = b.type
            parts = [b] if t == "data" else b.output if t == "tool_result" else \
                b.hint if t == "hint" else None
            if parts is None or isinstance(parts, str):
                continue
            n += sum(p.type == "data" and p.source.media_type.startswith("image/")
                     for p in parts)
    return n


class _Watch(MiddlewareBase):  # type: ignore[misc]
    """Passes AgentScope's compaction and tool execution through unchanged, telling the
    harness what happened."""

    def __init__(self, harness: AgentScopeHarness) -> None:
        self.h = harness

    async def on_compress_context(self, agent: Any, input_kwargs: dict[str, Any],
                                  next_handler: Callable[..., Awaitable[None]]) -> None:
        await self.h.watch_compaction(next_handler(**input_kwargs))

    async def on_acting(self, agent: Any, input_kwargs: dict[str, Any],
                        next_handler: Callable[..., Any]) -> AsyncIterator[Any]:
        self.h.tool_call_id = input_kwargs["tool_call"].id
        async for item in next_handler(**input_kwargs):
            yield item


def _mem0_results(raw: Any) -> list[dict[str, Any]]:
    # mem0 answers {"results": [...]} (or a bare list from older clients)
    out = raw.get("results", []) if isinstance(raw, dict) else raw if isinstance(raw, list) \
        else []
    return [r for r in out if isinstance(r, dict)]


def _close_reme(reme: Any, loop: asyncio.AbstractEventLoop) -> None:
    # ReMe's app holds a BM25 index and an embedding cache open; AgentScope leaves closing to
    # the integrator (ReMeMiddleware.close).
    if not loop.is_closed() and not loop.is_running():
        with contextlib.suppress(Exception):
            loop.run_until_complete(reme.close())


class AgentScopeHarness:
    """AgentScope 2.0.x serving one verified session (module docstring)."""

    name = "agentscope"
    honours = HONOURS  # the settings it maps (agentscope_settings); their values checked below

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        reasons = not_applicable(config)
        self.ctx, self.cfg = context, config
        zone = agentscope_timezone(self.now())
        if zone is None:
            reasons.append(f"the session clock's UTC offset ({self.now():%z}) is not whole "
                           "hours: no IANA zone name for AgentScope's time hint")
        if reasons:
            raise NotApplicable("not applicable to AgentScope: " + "; ".join(reasons))
        install_sources()
        self._source = Source(self.now, prefix=f"{context.session.id}-as")
        self._loop = asyncio.new_event_loop()
        weakref.finalize(self, self._loop.close)
        self.tool_call_id = ""
        self._compacting = False
        self._failed_compaction = False
        self._removed: int | None = None
        wants_offload = config.offload or config.strategy == "offload"
        files = AgentScopeOffloader(context.workdir / "workspace") \
            if wants_offload and context.workdir else None
        self.offloader = BenchOffloader(files, files.offload_data) if files else None
        self.model = BenchModel(context_size=config.context_size, forward=self._forward)
        summary: dict[str, Any] = {}
        if config.summary_template != "agentscope":
            p = load_prompts("default")
            tool = p.structured_tool(p.summary_fields[config.summary_template])
            summary = {"summary_template": p.summary_templates[config.summary_template],
                       "summary_schema": tool["function"]["parameters"]}
        self._configs = {
            "context_config": ContextConfig(
                trigger_ratio=config.trigger_ratio, reserve_ratio=config.reserve_ratio,
                context_buffer_ratio=config.context_buffer_ratio,
                compression_fallback_to_truncation=config.fallback_to_truncation,
                tool_result_limit=config.tool_result_limit, max_image_num=config.max_image_num,
                **summary),
            "injection_config": InjectionConfig(
                inject_runtime_state=config.time_hint, timezone=zone,
                time_format=AGENTSCOPE_TIME_FORMAT, time_interval=config.time_interval_hours),
            "react_config": ReActConfig(max_iters=config.max_iters)}
        self.system = config.system_prompt or DEFAULT.system
        self.mem0: Any = None
        self._memory, memory_tools = self._memory_middleware()
        with self._active():
            offered = config.tools  # the deployment's tools, or the ones the setting names
            self.toolkit = Toolkit(tools=[*(self._tool(s.to_dict()["function"])
                                            for s in context.tools.schemas()
                                            if offered is None or s.name in offered),
                                          *memory_tools])
            state = AgentState(session_id=context.session.id)
            if self._memory:
                state.permission_context = PermissionContext(allow_rules=allow_rules())
            self.agent = self._agent(state)

    # -- plumbing -------------------------------------------------------------------------------
    def now(self) -> datetime:
        """The harness's clock: the world's, plus the configured host-clock skew."""
        return self.ctx.clock.now() + timedelta(hours=self.cfg.clock_offset_hours)

    @contextlib.contextmanager
    def _active(self) -> Iterator[None]:
        token = ACTIVE.set(self._source)
        try:
            yield
        finally:
            ACTIVE.reset(token)

    def _run(self, coro: Awaitable[T]) -> T:
        with self._active():
            return self._loop.run_until_complete(coro)

    def _memory_middleware(self) -> tuple[list[Any], list[Any]]:
        """AgentScope's memory middleware the ``memory`` settings choose, over the verified
        session user's folder, and the tools it needs (``agentscope_memory``,
        ``agentscope_mem0``)."""
        mem = self.cfg.memory
        if mem.mode not in ("agentic", "vector", "workspace"):
            return [], []
        if self.ctx.workdir is None:  # no run folder: a private one, removed with the harness
            tmp = tempfile.TemporaryDirectory(prefix="harnesslab-agentscope-memory-")
            weakref.finalize(self, tmp.cleanup)
            workdir = Path(tmp.name)
        else:
            workdir = self.ctx.workdir
        if mem.mode == "vector":
            return [self._mem0(workdir)], []
        if mem.mode == "workspace":
            watch, reme = self._reme(workdir)
            return [watch, reme], self._loop.run_until_complete(reme.list_tools())
        self.memory_backend = BenchBackend(
            memory_folder(workdir, mem.agent_id, self.ctx.session.user), self.now)
        middleware, tools = agentic_memory(self.memory_backend)
        return [middleware], tools

    def _mem0(self, workdir: Path) -> Any:
        """AgentScope's Mem0Middleware for the verified session user, over the run folder's
        local mem0 (``agentscope_mem0``)."""
        from agentscope.middleware import Mem0Middleware

        from harnesslab.adapters.agentscope_mem0 import mem0_store, observed

        mem = self.cfg.memory
        self.mem0 = mem0_store(workdir / "memory" / "mem0", lambda: BenchModel(
            context_size=self.cfg.context_size, forward=self._forward_memory))
        self.mem0.model._forward = self._forward_memory
        client = observed(self.mem0.client, self._mem0_searched, self._mem0_added)
        # The bench's threshold null is "the top_k best": mem0's widest is 0 (it accepts [0, 1];
        # without one it applies 0.1).
        return Mem0Middleware(user_id=self.ctx.session.user, client=client,
                              mode="static_control", agent_id=mem.agent_id, top_k=mem.top_k,
                              threshold=0.0 if mem.threshold is None else mem.threshold)

    def _reme(self, workdir: Path) -> tuple[Any, Any]:
        """The watch that fixes its timing, and AgentScope's ReMeMiddleware over the verified
        session user's workspace (``agentscope_reme``)."""
        from harnesslab.adapters.agentscope_reme import BenchReMe, ReMeWatch, reme_workspace

        mem, user = self.cfg.memory, self.ctx.session.user
        self.reme_dir = reme_workspace(workdir, mem.agent_id, user)
        zone = agentscope_timezone(self.now())
        reme = BenchReMe(workspace_dir=str(self.reme_dir), timezone=str(zone),
                         chat_model=BenchModel(context_size=self.cfg.context_size,
                                               forward=self._forward_memory),
                         top_k=mem.top_k)
        weakref.finalize(self, _close_reme, reme, self._loop)
        self._cards = self._reme_cards()
        return ReMeWatch(reme, self._reme_found, self._reme_written), reme

    def _reme_cards(self) -> dict[str, str]:
        daily = self.reme_dir / "daily"
        return {p.relative_to(self.reme_dir).as_posix(): p.read_text(encoding="utf-8")
                for p in sorted(daily.rglob("*.md"))} if daily.is_dir() else {}

    def _reme_found(self, memories: list[str]) -> None:
        user = self.ctx.session.user
        self.ctx.sink.emit({"type": "memory_read", "mode": "workspace", "user": user,
                            "query": "search", "items": [
                                {"id": f"r{n}", "user": user, "kind": "item", "text": t}
                                for n, t in enumerate(memories)]})

    def _reme_written(self) -> None:
        before, self._cards = self._cards, self._reme_cards()
        user = self.ctx.session.user
        items = [{"id": path, "user": user, "kind": "card",
                  "event": "ADD" if path not in before else "UPDATE", "text": text}
                 for path, text in self._cards.items() if before.get(path) != text]
        if items:
            self.ctx.sink.emit({"type": "memory_write", "mode": "workspace", "user": user,
                                "items": items})

    def _forward_memory(self, msgs: list[Any], tools: list[dict[str, Any]] | None,
                        tool_choice: Any, estimate: int) -> tuple[Block, ...]:
        """A call mem0 makes (its extraction), to this session's endpoint, purpose memory."""
        meta: tuple[tuple[str, str], ...] = (("purpose", "memory"),)
        req = self.model.formatter.request(
            msgs, tools, has_summary=False, meta=meta, output_budget=self.cfg.output_budget,
            session_id=self.ctx.session.id)
        return self.ctx.endpoint.call(req, purpose="memory", estimate=estimate).blocks

    def _mem0_searched(self, query: str, kwargs: dict[str, Any], raw: Any) -> None:
        user = str(kwargs.get("filters", {}).get("user_id", ""))
        self.ctx.sink.emit({"type": "memory_read", "mode": "vector", "user": user,
                            "query": query, "items": [
                                {"id": f"r{n}", "user": user, "kind": "item",
                                 "text": str(r.get("memory", ""))}
                                for n, r in enumerate(_mem0_results(raw))]})

    def _mem0_added(self, kwargs: dict[str, Any], raw: Any) -> None:
        user = str(kwargs.get("user_id", ""))
        items = [{"id": f"w{n}", "user": user, "kind": "item", "event": str(r.get("event", "")),
                  "text": str(r.get("memory", ""))} for n, r in enumerate(_mem0_results(raw))]
        if items:
            self.ctx.sink.emit({"type": "memory_write", "mode": "vector", "user": user,
                                "items": items})

    def _memory_read(self) -> None:
        """What the memory middleware shows this turn, as the reference harness reports its
        own read: the verified user's MEMORY.md (appended to every system prompt)."""
        if not self._memory or self.cfg.memory.mode != "agentic":
            return
        user = self.ctx.session.user
        try:
            index = self.memory_backend.dir.read("Memory/MEMORY.md").strip()
        except (OSError, ValueError):
            index = ""
        self.ctx.sink.emit({"type": "memory_read", "mode": self.cfg.memory.mode, "user": user,
                            "query": "MEMORY.md", "items": [{"id": "MEMORY.md", "user": user,
                                                             "kind": "index", "text": index}]
                            if index else []})

    def _agent(self, state: Any) -> Any:
        return Agent(name=AGENT_NAME, system_prompt=self.system, model=self.model,
                     toolkit=self.toolkit, middlewares=[_Watch(self), *self._memory],
                     state=state, offloader=self.offloader, **self._configs)

    def _request(self, msgs: Sequence[Any], tools: list[dict[str, Any]] | None,
                 meta: tuple[tuple[str, str], ...], has_summary: bool | None = None) -> Request:
        if has_summary is None:  # what AgentScope sends now: the summary it holds now
            has_summary = bool(self.agent.state.summary)
        return self.model.formatter.request(
            msgs, tools, has_summary=has_summary, meta=meta,
            output_budget=self.cfg.output_budget, session_id=self.ctx.session.id)

    def _forward(self, msgs: list[Any], tools: list[dict[str, Any]] | None, tool_choice: Any,
                 estimate: int) -> tuple[Block, ...]:
        names = [t["function"]["name"] for t in tools or []]
        summary = self._compacting and names == [SUMMARY_TOOL]
        meta: tuple[tuple[str, str], ...] = (("purpose", "summary" if summary else "reply"),)
        if tool_choice is not None:  # None: AgentScope sends none (the API's default)
            mode = str(tool_choice.mode)
            meta += (("tool_choice", "forced" if mode == SUMMARY_TOOL else mode),)
        if summary and self._removed is None:
            # system, the summary if any, what is compressed, the compression prompt
            self._removed = len(msgs) - 2 - bool(self.agent.state.summary)
        req = self._request(msgs, tools, meta)
        return self.ctx.endpoint.call(req, purpose=meta[0][1], estimate=estimate).blocks

    async def _count(self) -> int:
        kw = await self.agent._prepare_model_input()
        n: int = await ChatModelBase.count_tokens(self.model, **kw)  # not through the watch
        return n

    # -- watching AgentScope ----------------------------------------------------------------------
    async def watch_compaction(self, check: Awaitable[None]) -> None:
        """Run one AgentScope compaction check and record what it did, as the reference harness
        records its own: the image limit, then a compaction (or the error it raised)."""
        state = self.agent.state
        before_ctx, before_summary, images = state.context, state.summary, _images(state.context)
        first: dict[str, Any] = {}

        def observe(msgs: list[Any], tools: list[dict[str, Any]] | None, n: int) -> None:
            if first:
                return
            # AgentScope's first count in a check is its trigger estimate, after the image limit.
            first.update(msgs=list(msgs), tools=tools, estimate=n, summary=bool(state.summary))
            removed = images - _images(msgs)
            if removed:
                self.ctx.sink.emit({"type": "image_limit", "removed": removed})

        self.model.observers.append(observe)
        self.model.structured_ok = None
        self._compacting, self._removed = True, None
        if self.offloader is not None:
            self.offloader.last_context_path = None
        try:
            await check
        except Exception:
            self._failed_compaction = True
            if not before_ctx:
                self.ctx.sink.emit({"type": "compaction_error", "reason": "system prompt and "
                                    "summary alone exceed the trigger",
                                    "estimate": first.get("estimate")})
            else:
                self.ctx.sink.emit({
                    "type": "compaction", "strategy": self.cfg.strategy,
                    "estimate": first.get("estimate"), "request": self._before(first),
                    "summary_ok": False, "applied": False, "removed": 0,
                    "kept": len(before_ctx)})
            raise
        finally:
            self._compacting = False
            self.model.observers.remove(observe)
        if state.context is before_ctx and state.summary == before_summary:
            return  # under the trigger: nothing happened
        summary = state.summary if isinstance(state.summary, str) else "".join(
            b.text for b in state.summary if isinstance(b, am.TextBlock))
        self.ctx.sink.emit({
            "type": "compaction", "strategy": self.cfg.strategy, "estimate": first["estimate"],
            "request": self._before(first), "summary_ok": bool(self.model.structured_ok),
            "applied": True, "removed": self._removed or 0, "kept": len(state.context),
            "summary": summary, "summary_tokens": _RULE.finalize(_RULE.head_units("", summary, ())),
            "offload_path": self.offloader.last_context_path if self.offloader else None,
            "after_estimate": await self._count()})

    def _before(self, first: dict[str, Any]) -> Request | None:
        """The request a compaction was decided on (built only when one happened)."""
        if "msgs" not in first:
            return None
        return self._request(first["msgs"], first["tools"], _REPLY, first["summary"])

    # -- tools ------------------------------------------------------------------------------------
    def _tool(self, fn: Mapping[str, Any]) -> Any:
        name = str(fn["name"])

        async def run(**kwargs: Any) -> Any:
            text, is_error = self._run_tool(name, kwargs)
            return ToolChunk(content=[am.TextBlock(text=text)],
                             state=am.ToolResultState.ERROR if is_error
                             else am.ToolResultState.SUCCESS)

        return FunctionTool(run, name=name, description=fn.get("description", ""),
                            input_schema=dict(fn["parameters"]), is_concurrency_safe=False,
                            permission=PermissionDecision(behavior=PermissionBehavior.ALLOW,
                                                          message="allowed by the bench"))

    def _run_tool(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """The acting user, as the reference harness's ``identity`` setting chooses it."""
        session = self.ctx.session.user
        claimed = args.get("user_id")
        acting, identity = session, "bound"
        if self.cfg.identity == "trust":
            acting, identity = (claimed or session), "trusted"
        elif claimed not in (None, "", session):
            identity = "refused" if self.cfg.identity == "refuse" else "overridden"
            args = {**args, "user_id": session}
        self.ctx.sink.emit({"type": "tool_policy", "id": self.tool_call_id, "name": name,
                            "claimed": claimed, "identity": identity})
        if identity == "refused":
            now = self.now().isoformat(timespec="seconds")
            return json.dumps({"tool": name, "as_of": now, "error": f"user_id {claimed} does "
                               "not match the verified session"}, ensure_ascii=False), True
        out = self.ctx.tools.run(name, json.dumps(args, ensure_ascii=False), acting)
        return out.text, out.is_error

    # -- the harness interface --------------------------------------------------------------------
    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        with self._active():  # its id and timestamp too
            msg = am.Msg(name="user", role="user",
                         content=[am.TextBlock(text=text), *(from_part(i) for i in images)])
        self._failed_compaction = False
        self._memory_read()
        if self.mem0 is not None:
            self.mem0.model._forward = self._forward_memory  # this session's calls
        try:
            final = self._run(self._reply(msg))
        except Exception as e:
            if self._failed_compaction:
                return TurnResult("", True, "compaction_failed")
            if isinstance(e, ServiceRejected):  # a provider's 400, as the reference reports it
                return TurnResult("", True, e.reason)
            raise
        text_out = "".join(b.text for b in final.content if isinstance(b, am.TextBlock))
        if final.finished_reason == "exceed_max_iters":
            return TurnResult(text_out, True, "max_iters")
        return TurnResult(text_out)

    async def _reply(self, msg: Any) -> Any:
        final = None
        async for ev in self.agent.reply_stream(msg, yield_final_msg=True):
            if isinstance(ev, HintBlockEvent):
                text = ev.hint if isinstance(ev.hint, str) else "".join(
                    p.text for p in ev.hint if isinstance(p, am.TextBlock))
                kinds = [k for k in ("current-time", "timezone", "tasks", "context-length",
                                     "tool-error") if f"<{k}>" in text]
                self.ctx.sink.emit({"type": "hint", "kinds": kinds})
            elif isinstance(ev, am.Msg):
                final = ev
        if final is None:
            raise RuntimeError("AgentScope ended the reply without a message")
        return final

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> None:
        for pair in exchanges:
            with self._active():
                self.agent.state.context.extend(from_message(m, AGENT_NAME) for m in pair)
            self._failed_compaction = False
            try:
                self._run(self.agent.compress_context())
            except Exception:
                # A failed check is recorded (watch_compaction); AgentScope meets it again
                # before its next reasoning step, as the reference harness does.
                if not self._failed_compaction:
                    raise

    def context_estimate(self) -> int | None:
        return self._run(self._count())

    def save_state(self) -> dict[str, Any]:
        # The AgentState JSON is AgentScope's whole session memory (semantics spec §3.2).
        return {"version": 1, "ids": self._source.ids,
                "agent_state": json.loads(self.agent.state.model_dump_json())}

    def load_state(self, state: Mapping[str, Any]) -> None:
        # A new Agent with the same name and configuration, as AgentScope's app resumes one.
        self._source.ids = int(state["ids"])
        with self._active():
            restored = AgentState.model_validate_json(json.dumps(state["agent_state"]))
            self.agent = self._agent(restored)
