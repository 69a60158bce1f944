"""The conversion between Anthropic's Messages API (``POST /v1/messages``) and the bench's
:class:`Request` and :class:`Response`: what Claude-style harnesses and many frameworks'
Anthropic providers send.

Anthropic -> Request (``request_from_anthropic``):

- ``system`` (a string, or a list of ``text`` blocks, joined by a blank line) is
  ``Request.system``;
- each message (role ``user`` or ``assistant``) is one bench message; its content a string
  (one text block) or blocks, in order: ``text`` a text block, ``image`` (a ``base64`` or
  ``url`` source) and ``document`` (a ``base64`` PDF) data blocks, ``thinking`` a thinking
  block, ``tool_use`` a tool call (its ``input`` object as JSON text with Python's default
  separators, key order kept), ``tool_result`` a tool result (named after the call with its
  ``tool_use_id``; its content a string or text/image blocks; ``is_error`` kept). Results
  stay at the head of the user message, as Anthropic lays them out (the service accepts
  that layout);
- ``tools``: each tool's JSON text as sent; ``max_tokens`` (required, as the API requires it)
  is the output budget; a ``tool_choice`` other than ``auto`` is kept as the request's
  ``("tool_choice", ...)`` meta (``adapters.tool_choice``; the fake model obeys it), and
  ``output_config.format`` (structured outputs) as ``("response_format", ...)``
  (``adapters.output_format``: the fake model answers in the schema). Of
  ``context_management`` (the server's context editing), ``clear_thinking_20251015`` is
  done as the API does it (``keep`` ``"all"``, as Claude Code sends it, changes nothing;
  ``thinking_turns`` N keeps the thinking blocks of the latest N assistant turns that have
  any, a turn running through its tool rounds), and so is the API's default with
  ``thinking`` on and no edit (the last turn's thinking only: earlier thinking is neither
  seen nor counted); any other edit is a 400 (``adapters.server_side``).

Request -> Anthropic (``request_to_anthropic``) writes the **normal form**: a message whose
content is exactly one text block is a string, anything else a list of blocks; a
``tool_result`` always has its ``content``; ``is_error`` only when true. ``to(from(x)) == x``
for any ``x`` in normal form (tested). Lossy: ``Request.summary`` (written as part of
``system``, after a blank line), hint blocks (text), ``cache_control`` and thinking ``signature``s,
system blocks (joined), and a ``system`` message later in the conversation (a user text).

Response -> Anthropic (``message_object``, ``stream_events``): a ``message`` with a ``text``
block (when there is text) and one ``tool_use`` block per call, ``stop_reason`` ``tool_use``
or ``end_turn``, usage ``input_tokens``/``output_tokens``. Streaming is the API's event
sequence: ``message_start``, per block ``content_block_start``, ``content_block_delta``
(``text_delta`` or ``input_json_delta``), ``content_block_stop``, then ``message_delta``
(stop reason, output tokens) and ``message_stop``. Errors have Anthropic's shape
(``error_body``): ``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from harnesslab.adapters import server_side
from harnesslab.adapters.openai_wire import PIECE, URL_MEDIA
from harnesslab.adapters.output_format import format_from_anthropic, format_of
from harnesslab.adapters.tool_choice import choice_from_anthropic, choice_of
from harnesslab.errors import InputError
from harnesslab.messages import (
    Block,
    Converted,
    DataBlock,
    HintBlock,
    Message,
    Part,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

PDF = "application/pdf"
SYSTEM_JOIN = "\n\n"


def _where(i: int, suffix: str = "") -> str:
    return f"messages[{i}]{suffix}"


def _source(b: Mapping[str, Any], at: str) -> DataBlock:
    src = b.get("source")
    if isinstance(src, Mapping):
        if src.get("type") == "base64" and isinstance(src.get("data"), str) \
                and isinstance(src.get("media_type"), str):
            return DataBlock(src["media_type"], src["data"])
        if src.get("type") == "url" and isinstance(src.get("url"), str):
            return DataBlock(URL_MEDIA, src["url"])
    raise InputError("expected a 'source' of type base64 (media_type, data) or url",
                     field=f"{at}.source")


def _parts(content: Any, where: str) -> tuple[Part, ...]:
    """A tool result's content: a string or text/image blocks."""
    if isinstance(content, str):
        return (TextBlock(content),)
    if not isinstance(content, list):
        raise InputError("expected a string or a list of content blocks", field=where)
    out: list[Part] = []
    for k, b in enumerate(content):
        at = f"{where}[{k}]"
        kind = b.get("type") if isinstance(b, Mapping) else None
        if kind == "text" and isinstance(b.get("text"), str):
            out.append(TextBlock(b["text"]))
        elif kind in ("image", "document"):
            out.append(_source(b, at))
        else:
            raise InputError(f"unsupported content block {kind!r}; expected one of text, image",
                             field=at)
    return tuple(out)


def _block(b: Any, at: str, role: str, names: dict[str, str]) -> Block:
    kind = b.get("type") if isinstance(b, Mapping) else None
    if kind == "text" and isinstance(b.get("text"), str):
        return TextBlock(b["text"])
    if kind in ("image", "document") and role == "user":
        return _source(b, at)
    if kind == "thinking" and isinstance(b.get("thinking"), str) and role == "assistant":
        return ThinkingBlock(b["thinking"])
    if kind == "tool_use" and role == "assistant":
        if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str) \
                or not isinstance(b.get("input"), Mapping):
            raise InputError("a tool_use block needs a string 'id' and 'name' and an object "
                             "'input'", field=at)
        names[b["id"]] = b["name"]
        # Python's default separators: the bytes the fake model wrote, so a resent call
        # bills as it did when the model made it.
        return ToolCallBlock(b["id"], b["name"], json.dumps(b["input"], ensure_ascii=False))
    if kind == "tool_result" and role == "user":
        cid = b.get("tool_use_id")
        if not isinstance(cid, str):
            raise InputError("a tool_result block needs a string 'tool_use_id'",
                             field=f"{at}.tool_use_id")
        content = b.get("content", "")
        output: str | tuple[Part, ...] = content if isinstance(content, str) else \
            _parts(content, f"{at}.content")
        return ToolResultBlock(cid, names.get(cid, ""), output, bool(b.get("is_error", False)))
    allowed = ("text, image, document, tool_result" if role == "user"
               else "text, thinking, tool_use")
    raise InputError(f"unsupported content block {kind!r} in a {role} message; expected one "
                     f"of {allowed}", field=at)


def _message(d: Any, i: int, names: dict[str, str]) -> Message:
    if not isinstance(d, Mapping):
        raise InputError("expected a message object", field=_where(i))
    role = d.get("role")
    if role not in ("user", "assistant"):
        raise InputError(f"unknown role {role!r}; expected one of user, assistant",
                         field=_where(i, ".role"))
    content = d.get("content")
    if isinstance(content, str):
        return Message(role, (TextBlock(content),))
    if not isinstance(content, list):
        raise InputError("expected a string or a list of content blocks",
                         field=_where(i, ".content"))
    return Message(role, tuple(_block(b, _where(i, f".content[{k}]"), role, names)
                               for k, b in enumerate(content)))


def _system(raw: Any) -> str:
    if raw is None or isinstance(raw, str):
        return raw or ""
    if isinstance(raw, list) and all(isinstance(b, Mapping) and b.get("type") == "text"
                                     and isinstance(b.get("text"), str) for b in raw):
        return SYSTEM_JOIN.join(b["text"] for b in raw)
    raise InputError("expected a string or a list of text blocks", field="system")


def _tool(t: Any, k: int) -> ToolSchema:
    if not isinstance(t, Mapping) or not isinstance(t.get("name"), str):
        raise InputError("a tool needs a string 'name'", field=f"tools[{k}]")
    return ToolSchema(t["name"], json.dumps(t, ensure_ascii=False))


def request_from_anthropic(body: Mapping[str, Any], *, session_id: str = "",
                           last: Converted | None = None) -> Request:
    """The bench's request for a Messages body (module docstring). Bad input raises
    :class:`InputError` naming the field, in the API's words where it has them. ``last``, a
    session's previous body converted, spares converting again what it shares with that one;
    it is updated only when the body converts."""
    budget = body.get("max_tokens")
    if budget is None:
        raise InputError("Field required", field="max_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise InputError(f"expected a positive integer, got {budget!r}", field="max_tokens")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InputError("expected a non-empty list of messages", field="messages")
    server_side.refuse_unsimulated(body, server_side.ANTHROPIC)
    kept = server_side.thinking_kept(body)
    converted = (last or Converted()).messages(raw, 0, _message)
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("expected a list of tools", field="tools")
    tools = last.tools(tools_raw) if last is not None else None
    if tools is None:
        tools = tuple(_tool(t, k) for k, t in enumerate(tools_raw))
    messages = tuple(converted) if kept is None else _thinking_cleared(converted, kept)
    request = Request(system=_system(body.get("system")), messages=messages,
                      tools=tools, output_budget=budget, session_id=session_id,
                      meta=format_from_anthropic(body)
                      + choice_from_anthropic(body.get("tool_choice"), [t.name for t in tools]))
    if last is not None:
        last.keep(raw, converted, tools_raw, tools)
    return request


def _thinking_cleared(messages: list[Message], kept: int) -> tuple[Message, ...]:
    """The server's thinking clearing (``clear_thinking_20251015``, and the API's default
    with thinking on): thinking blocks stay in the latest ``kept`` assistant turns that have
    any and go from the earlier ones (a message left with nothing goes too). A turn is what
    the assistant says from one user message to the next, tool rounds included: a user
    message of tool results does not start one."""
    turn = 0
    turn_of: list[int] = []
    having: list[int] = []
    for m in messages:
        if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content):
            turn += 1
        turn_of.append(turn)
        if m.role == "assistant" and any(isinstance(b, ThinkingBlock) for b in m.content) \
                and (not having or having[-1] != turn):
            having.append(turn)
    cleared = set(having[:-kept])
    if not cleared:
        return tuple(messages)
    out = []
    for m, t in zip(messages, turn_of, strict=True):
        if t in cleared and m.role == "assistant":
            rest = tuple(b for b in m.content if not isinstance(b, ThinkingBlock))
            if not rest:
                continue
            m = replace(m, content=rest)
        out.append(m)
    return tuple(out)


# --- Request -> Anthropic ----------------------------------------------------------------------

def _data(b: DataBlock) -> dict[str, Any]:
    if b.media_type == URL_MEDIA:
        return {"type": "image", "source": {"type": "url", "url": b.source}}
    kind = "document" if b.media_type == PDF else "image"
    return {"type": kind, "source": {"type": "base64", "media_type": b.media_type,
                                     "data": b.source}}


def _to_block(b: Block) -> dict[str, Any]:
    if isinstance(b, TextBlock):
        return {"type": "text", "text": b.text}
    if isinstance(b, DataBlock):
        return _data(b)
    if isinstance(b, ThinkingBlock):
        return {"type": "thinking", "thinking": b.thinking}
    if isinstance(b, HintBlock):
        hint = b.hint if isinstance(b.hint, str) else \
            "\n".join(p.text for p in b.hint if isinstance(p, TextBlock))
        return {"type": "text", "text": hint}
    if isinstance(b, ToolCallBlock):
        try:
            args = json.loads(b.input) if b.input.strip() else {}
        except ValueError:
            args = {}
        return {"type": "tool_use", "id": b.id, "name": b.name,
                "input": args if isinstance(args, dict) else {}}
    out = b.output if isinstance(b.output, str) else [_to_block(p) for p in b.output]
    d: dict[str, Any] = {"type": "tool_result", "tool_use_id": b.id, "content": out}
    if b.is_error:
        d["is_error"] = True
    return d


def _content(blocks: list[Block]) -> str | list[dict[str, Any]]:
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
        return blocks[0].text
    return [_to_block(b) for b in blocks]


def request_to_anthropic(r: Request, *, model: str = "harnesslab",
                         default_max_tokens: int = 4096) -> dict[str, Any]:
    """A Messages body for ``r`` in normal form (module docstring). Results riding in an
    assistant message (AgentScope's layout) go to the head of a user message after it, as
    Anthropic requires."""
    msgs: list[dict[str, Any]] = []
    carry: list[Block] = []  # results to put at the head of the next user message
    for m in r.messages:
        if m.role == "assistant":
            results = [b for b in m.content if isinstance(b, ToolResultBlock)]
            rest: list[Block] = [b for b in m.content if not isinstance(b, ToolResultBlock)]
            if carry:
                msgs.append({"role": "user", "content": _content(carry)})
                carry = []
            msgs.append({"role": "assistant", "content": _content(rest)})
            carry = list(results)
        elif m.role == "tool":
            carry += m.content
        else:
            msgs.append({"role": "user", "content": _content([*carry, *m.content])})
            carry = []
    if carry:
        msgs.append({"role": "user", "content": _content(carry)})
    system = SYSTEM_JOIN.join(x for x in (r.system, r.summary) if x)
    body: dict[str, Any] = {"model": model,
                            "max_tokens": r.output_budget or default_max_tokens,
                            "messages": msgs}
    if system:
        body["system"] = system
    if r.tools:
        body["tools"] = [t.to_dict() for t in r.tools]
    choice = choice_of(r)
    if choice is not None:
        kind, name = choice
        body["tool_choice"] = {"type": "tool", "name": name} if name is not None else \
            {"type": "any" if kind == "required" else "none"}
    fmt = format_of(r)
    spec = fmt.get("json_schema") if fmt is not None else None
    if fmt is not None and fmt.get("type") == "json_schema" and isinstance(spec, Mapping):
        # Anthropic has no json_object: only a schema goes over.
        body["output_config"] = {"format": {"type": "json_schema",
                                            "schema": spec.get("schema") or {}}}
    return body


# --- Response -> Anthropic ---------------------------------------------------------------------

def content_blocks(resp: Response) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if resp.text:
        out.append({"type": "text", "text": resp.text})
    for c in resp.tool_calls:
        out.append(_to_block(c))
    return out


def _stop(resp: Response) -> str:
    return "tool_use" if resp.tool_calls else "end_turn"


def message_object(resp: Response, *, id: str, model: str) -> dict[str, Any]:
    """A non-streaming ``message`` for ``resp``."""
    return {"id": f"msg_{id}", "type": "message", "role": "assistant", "model": model,
            "content": content_blocks(resp), "stop_reason": _stop(resp),
            "stop_sequence": None,
            "usage": {"input_tokens": resp.input_tokens, "output_tokens": resp.output_tokens}}


def _pieces(text: str) -> Iterator[str]:
    for i in range(0, len(text), PIECE):
        yield text[i:i + PIECE]


def stream_events(resp: Response, *, id: str, model: str) -> Iterator[dict[str, Any]]:
    """The server-sent events of a streamed answer, in the API's order (module docstring).
    Joining the deltas gives exactly the non-streaming answer."""
    yield {"type": "message_start", "message": {
        "id": f"msg_{id}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": resp.input_tokens, "output_tokens": 1}}}
    for k, b in enumerate(content_blocks(resp)):
        if b["type"] == "text":
            yield {"type": "content_block_start", "index": k,
                   "content_block": {"type": "text", "text": ""}}
            for piece in _pieces(b["text"]):
                yield {"type": "content_block_delta", "index": k,
                       "delta": {"type": "text_delta", "text": piece}}
        else:
            yield {"type": "content_block_start", "index": k,
                   "content_block": {**b, "input": {}}}
            args = json.dumps(b["input"], ensure_ascii=False)
            for piece in _pieces(args):
                yield {"type": "content_block_delta", "index": k,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield {"type": "content_block_stop", "index": k}
    yield {"type": "message_delta", "delta": {"stop_reason": _stop(resp), "stop_sequence": None},
           "usage": {"output_tokens": resp.output_tokens}}
    yield {"type": "message_stop"}


def error_body(message: str, *, type: str = "invalid_request_error") -> dict[str, Any]:
    """An error as Anthropic's API writes it."""
    return {"type": "error", "error": {"type": type, "message": message}}
