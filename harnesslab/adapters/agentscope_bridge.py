"""The bench's side of a real AgentScope 2.0.x agent (the ``agentscope`` extra): the chat model
that forwards every call to the harness context's endpoint, the formatter that turns what
AgentScope sends into the bench's :class:`~harnesslab.messages.Request`, an offloader, and the
time and id sources AgentScope reads, driven by the simulated clock.

The formatter is the "provider format" of the simulated service: AgentScope hands a chat model
raw ``Msg`` objects (system prompt, summary, context) and leaves formatting to the provider's
formatter (semantics spec §5.1); the bench's provider takes the block layout as it is, so the
service and the fake model see AgentScope's messages block for block, hints, tool calls and
results in place. Empty messages are skipped, as every AgentScope formatter skips them.
Message names are dropped (AgentScope's routing labels; the reference sends none).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from datetime import datetime, tzinfo
from typing import Any

import agentscope.agent._agent as _agent_module
from agentscope import message as am
from agentscope._utils._common import set_id_factory, set_timestamp_factory
from agentscope.formatter import FormatterBase
from agentscope.model import ChatModelBase, ChatResponse
from pydantic import BaseModel

from harnesslab.harness.offload import VIRTUAL_ROOT, Offloader
from harnesslab.harness.paths import PathEscape
from harnesslab.harness.prompts import SUMMARY_TOOL
from harnesslab.messages import (
    Block,
    DataBlock,
    HintBlock,
    Message,
    Part,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

_ERROR_STATES = {am.ToolResultState.ERROR, am.ToolResultState.DENIED,
                 am.ToolResultState.INTERRUPTED}


# --- time and ids: the simulated clock, never the wall clock -------------------------------------

class Source:
    """What the patched AgentScope time and id sources read while an adapter runs."""

    def __init__(self, now: Callable[[], datetime], prefix: str) -> None:
        self.now = now
        self.prefix = prefix
        self.ids = 0

    def new_id(self) -> str:
        self.ids += 1
        return f"{self.prefix}{self.ids}"


ACTIVE: ContextVar[Source | None] = ContextVar("harnesslab_agentscope_source", default=None)


class _SimDatetime(datetime):
    """``datetime`` for AgentScope's agent module: ``now`` is the running adapter's clock (its
    runtime time hint and compression prompt read ``datetime.now(tz)``); outside an adapter it
    is the real one."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        src = ACTIVE.get()
        if src is None:
            return datetime.now(tz)
        t = src.now()
        return t.astimezone(tz) if tz is not None else t.replace(tzinfo=None)


def _new_id() -> str:
    src = ACTIVE.get()
    return src.new_id() if src is not None else uuid.uuid4().hex


def _timestamp() -> str:
    src = ACTIVE.get()
    return src.now().isoformat() if src is not None else datetime.now().isoformat()


def install_sources() -> None:
    """Route AgentScope's clock, ids and timestamps through :data:`ACTIVE` (idempotent), and
    keep its log lines (warnings the record already shows, e.g. an overflowing summary
    request) out of the bench's output."""
    _agent_module.datetime = _SimDatetime
    logging.getLogger("as").setLevel(logging.ERROR)
    set_id_factory(_new_id)
    set_timestamp_factory(_timestamp)


# --- conversion ------------------------------------------------------------------------------------

def _part(p: Any) -> Part:
    if isinstance(p, am.TextBlock):
        return TextBlock(p.text)
    return _data(p)


def _parts(v: str | list[Any]) -> str | tuple[Part, ...]:
    if isinstance(v, str):
        return v
    parts = tuple(_part(p) for p in v)
    # One text block is the same text as a plain string (counted, billed and read the same).
    return parts[0].text if len(parts) == 1 and isinstance(parts[0], TextBlock) else parts


def _data(b: Any) -> DataBlock:
    src = b.source
    where = src.data if isinstance(src, am.Base64Source) else str(src.url)
    return DataBlock(src.media_type, where, b.name or "")


def to_block(b: Any) -> Block:
    """An AgentScope content block as the bench's block (ids and timestamps dropped)."""
    if isinstance(b, am.TextBlock):
        return TextBlock(b.text)
    if isinstance(b, am.ThinkingBlock):
        return ThinkingBlock(b.thinking)
    if isinstance(b, am.HintBlock):
        return HintBlock(_parts(b.hint), b.source or "")
    if isinstance(b, am.ToolCallBlock):
        return ToolCallBlock(b.id, b.name, b.input)
    if isinstance(b, am.ToolResultBlock):
        return ToolResultBlock(b.id, b.name, _parts(b.output), b.state in _ERROR_STATES)
    if isinstance(b, am.DataBlock):
        return _data(b)
    raise TypeError(f"AgentScope block {type(b).__name__} has no bench equivalent")


def from_part(p: Part) -> Any:
    if isinstance(p, TextBlock):
        return am.TextBlock(text=p.text)
    return am.DataBlock(source=am.Base64Source(data=p.source, media_type=p.media_type),
                        name=p.name or None)


def from_block(b: Block) -> Any:
    """The bench's block as AgentScope's (a reply's blocks, or preloaded messages)."""
    if isinstance(b, TextBlock | DataBlock):
        return from_part(b)
    if isinstance(b, ThinkingBlock):
        return am.ThinkingBlock(thinking=b.thinking)
    if isinstance(b, HintBlock):
        hint = b.hint if isinstance(b.hint, str) else [from_part(p) for p in b.hint]
        return am.HintBlock(hint=hint, source=b.source or None)
    if isinstance(b, ToolCallBlock):
        return am.ToolCallBlock(id=b.id, name=b.name, input=b.input)
    out = b.output if isinstance(b.output, str) else [from_part(p) for p in b.output]
    return am.ToolResultBlock(id=b.id, name=b.name, output=out,
                              state=am.ToolResultState.ERROR if b.is_error
                              else am.ToolResultState.SUCCESS)


def from_message(m: Message, agent_name: str) -> Any:
    """A bench message as the AgentScope message it stands for (the agent's own reply when it
    is an assistant message)."""
    name = agent_name if m.role == "assistant" else m.role
    ids = {"id": m.id} if m.id else {}
    return am.Msg(name=name, role=m.role, content=[from_block(b) for b in m.content], **ids)


def _payload(b: Any) -> tuple[Any, ...]:
    """What a block's conversion depends on: its type and its (immutable) strings."""
    if isinstance(b, am.TextBlock):
        return ("t", b.text)
    if isinstance(b, am.ThinkingBlock):
        return ("k", b.thinking)
    if isinstance(b, am.HintBlock):
        return ("h", b.source, b.hint if isinstance(b.hint, str) else
                tuple(_payload(p) for p in b.hint))
    if isinstance(b, am.ToolCallBlock):
        return ("c", b.id, b.name, b.input)
    if isinstance(b, am.ToolResultBlock):
        return ("r", b.id, b.name, b.state, b.output if isinstance(b.output, str) else
                tuple(_payload(p) for p in b.output))
    if isinstance(b, am.DataBlock):
        src = b.source
        return ("d", b.name, src.media_type,
                src.data if isinstance(src, am.Base64Source) else str(src.url))
    return ("?", b)


class _Converted:
    """Converted messages by id, reused while their content is the same: AgentScope deep-copies
    messages for every summary request and splits them at compaction, but their strings stay
    the same objects (so the comparison is cheap), and returning the same bench message lets
    the record and the service's counter reuse their work."""

    def __init__(self) -> None:
        self._by_id: dict[str, tuple[tuple[Any, ...], Message | None]] = {}

    def get(self, msg: Any) -> Message | None:
        key = (msg.role, *(_payload(b) for b in msg.content))
        hit = self._by_id.get(msg.id)
        if hit is not None and hit[0] == key:
            return hit[1]
        blocks = tuple(to_block(b) for b in msg.content)
        out = Message(msg.role, blocks, id=msg.id) if blocks else None
        self._by_id[msg.id] = (key, out)
        return out


class BenchFormatter(FormatterBase):  # type: ignore[misc]
    """AgentScope messages to the bench's request (module docstring). Accepts images, as the
    simulated service bills them."""

    input_types: list[str] = ["text/plain", "image/*"]  # noqa: RUF012 (a pydantic field)

    def model_post_init(self, context: Any) -> None:
        self._converted = _Converted()

    def messages(self, msgs: Sequence[Any]) -> tuple[Message, ...]:
        return tuple(m for msg in msgs if (m := self._converted.get(msg)) is not None)

    async def format(self, msgs: list[Any], *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        from harnesslab.messages import message_to_dict

        return [message_to_dict(m) for m in self.messages(msgs)]

    def request(self, msgs: Sequence[Any], tools: Sequence[dict[str, Any]] | None, *,
                has_summary: bool, meta: tuple[tuple[str, str], ...],
                output_budget: int | None, session_id: str) -> Request:
        """``msgs`` as AgentScope builds them: system prompt, the summary when there is one,
        then the context (semantics spec §1.1)."""
        if not msgs or msgs[0].role != "system":
            raise ValueError("AgentScope sent no system message first")
        system = "".join(b.text for b in msgs[0].content if isinstance(b, am.TextBlock))
        rest = list(msgs[1:])
        summary = ""
        if has_summary:
            head = rest.pop(0)
            summary = "".join(b.text for b in head.content if isinstance(b, am.TextBlock))
        return Request(system=system, messages=self.messages(rest), summary=summary,
                       tools=tuple(ToolSchema.from_dict(t) for t in tools or ()),
                       output_budget=output_budget, session_id=session_id, meta=meta)


# --- the model ------------------------------------------------------------------------------------

class _Params(BaseModel):
    pass


class BenchModel(ChatModelBase):  # type: ignore[misc]
    """A chat model whose API is the bench's endpoint. ``forward(messages, tools, tool_choice,
    estimate)`` formats what AgentScope sends into a request, calls the endpoint with AgentScope's
    own ``count_tokens`` of it as the estimate, and returns the reply; a service rejection
    propagates as a provider's 400 would. ``observers`` see every ``count_tokens``."""

    def __init__(self, *, context_size: int, forward: Callable[..., Any]) -> None:
        super().__init__(credential=None, model="harnesslab-endpoint", parameters=_Params(),
                         stream=False, max_retries=0, context_size=context_size)
        self.formatter = BenchFormatter()
        self._forward = forward
        self.observers: list[Callable[[list[Any], list[dict[str, Any]] | None, int], None]] = []
        self.structured_ok: bool | None = None  # the last generate_structured_output succeeded

    async def count_tokens(self, messages: list[Any], tools: list[dict[str, Any]] | None) -> int:
        n: int = await super().count_tokens(messages, tools)
        for observe in self.observers:
            observe(messages, tools, n)
        return n

    async def generate_structured_output(self, *args: Any, **kwargs: Any) -> Any:
        self.structured_ok = False
        res = await super().generate_structured_output(*args, **kwargs)
        self.structured_ok = True
        return res

    async def _call_api(self, model_name: str, messages: list[Any],
                        tools: list[dict[str, Any]] | None = None, tool_choice: Any = None,
                        **kwargs: Any) -> ChatResponse:
        # The estimate of exactly what is sent (ChatModelBase's, not through the observers).
        estimate = await ChatModelBase.count_tokens(self, messages, tools)
        blocks = self._forward(messages, tools, tool_choice, estimate)
        return ChatResponse(content=[from_block(b) for b in blocks], is_last=True)


# --- the offloader ---------------------------------------------------------------------------------

class BenchOffloader:
    """AgentScope's offloader protocol (duck-typed; semantics spec §2.6) over the reference's
    file layout, with the same virtual paths (``/workspace/...``), so the paths in the model's
    requests do not depend on where the run folder is. Not a ``WorkspaceBase``: AgentScope adds
    no workspace guide to the system prompt for it. Offloaded data is named as AgentScope's
    workspaces name it (``workspace:///data/<sha256>.<ext>``)."""

    def __init__(self, files: Offloader, data_url: Callable[[DataBlock], str | None]) -> None:
        self.files = files
        self._data_url = data_url
        self.last_context_path: str | None = None

    async def offload_data_block(self, block: Any) -> Any:
        if not isinstance(block.source, am.Base64Source):
            return block
        url = _confined(self._data_url(_data(block)))
        return am.DataBlock(id=block.id, name=block.name,
                            source=am.URLSource(url=url, media_type=block.source.media_type))

    async def offload_context(self, session_id: str, msgs: list[Any]) -> str:
        converted = [to_block_message(m) for m in msgs]
        path = _confined(self.files.offload_context(
            session_id, [m for m in converted if m is not None]))
        self.last_context_path = path
        return path

    async def offload_tool_result(self, session_id: str, tool_result: Any) -> str:
        out = tool_result.output
        text = out if isinstance(out, str) else "".join(
            p.text for p in out if isinstance(p, am.TextBlock))
        return _confined(self.files.offload_tool_result(session_id, tool_result.id, text))


def _confined(path: str | None) -> str:
    # None: the id would have led outside the workspace; AgentScope gets the error, no file.
    if path is None:
        raise PathEscape("offload path leaves the workspace")
    return path


def to_block_message(msg: Any) -> Message | None:
    blocks = tuple(to_block(b) for b in msg.content)
    return Message(msg.role, blocks, id=msg.id) if blocks else None


__all__ = ["ACTIVE", "SUMMARY_TOOL", "VIRTUAL_ROOT", "BenchFormatter", "BenchModel",
           "BenchOffloader", "Source", "from_block", "from_message", "install_sources",
           "to_block", "to_block_message"]
