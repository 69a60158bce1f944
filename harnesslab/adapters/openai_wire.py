"""The conversion between OpenAI Chat Completions messages and the bench's :class:`Request`
and :class:`Response` (what ``harnesslab serve`` receives and answers).

OpenAI -> Request (``request_from_openai``):

- a leading ``system`` (or ``developer``) message with text content is ``Request.system``;
  later ``system``/``developer`` messages stay in the conversation as ``system`` messages;
- ``user`` content: a string is one text block; a list of parts keeps their order: ``text``
  parts are text blocks, ``image_url`` parts are data blocks (a ``data:MEDIA;base64,DATA`` URL
  becomes ``DataBlock(MEDIA, DATA)``; any other URL is kept as the source with the media type
  ``image/url``), ``input_audio`` parts are ``DataBlock("audio/FORMAT", DATA)``;
- ``assistant``: ``reasoning_content`` is a thinking block, then the content's text, then one
  tool-call block per ``tool_calls`` entry (its ``arguments`` string kept verbatim);
- ``tool``: one tool-result block with the ``tool_call_id``; its name is the name of the call
  with that id earlier in the request (OpenAI's tool message carries none; "" when no call
  has it, which the service then rejects as the real API does);
- a message's ``name`` is kept; ``tools`` keep each schema's JSON text as sent;
  ``max_completion_tokens`` (or the older ``max_tokens``) is the output budget; a
  ``response_format`` of type ``json_schema`` or ``json_object`` is kept as the request's
  ``("response_format", JSON)`` metadata (``adapters.output_format``: what a model is asked
  to answer in; the fake model fills such a schema, docs/understanding.md); a
  ``tool_choice`` other than ``auto`` is kept as ``("tool_choice", ...)``
  (``adapters.tool_choice``: the fake model obeys it, as an API does).

Request -> OpenAI (``request_to_openai``) writes the **normal form**: a message whose content
is exactly one text block is a string, anything else a list of parts; a data URL is rebuilt
from the media type and data. So ``to(from(x)) == x`` for any ``x`` in normal form (tested),
and a list holding one text part comes back as a string (equivalent for every API). Lossy,
because OpenAI has no place for them: ``Request.summary`` (written as a ``system`` message
after the system prompt), hint blocks (written as text parts), a tool result's ``is_error``
and an image part's ``detail``. Tool results that sit inside an assistant message (AgentScope's
layout) are written as ``tool`` messages right after it.

Response -> OpenAI (``completion``, ``stream_chunks``): the reply's text is ``content`` (null
when there is none), its tool calls ``tool_calls`` with ``finish_reason`` ``tool_calls``, the
billed usage is ``usage``. Ids and the ``created`` time come from the caller (the session's
call number and the world's clock), so an answer never depends on the wall clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harnesslab.adapters.output_format import format_from_openai, format_of
from harnesslab.adapters.tool_choice import choice_from_openai, choice_of
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

URL_MEDIA = "image/url"  # an image given by a URL rather than inline data


def _where(i: int, suffix: str = "") -> str:
    return f"messages[{i}]{suffix}"


def _data_from_url(url: str) -> DataBlock:
    if url.startswith("data:"):
        head, sep, data = url[5:].partition(",")
        media, _, enc = head.partition(";")
        if sep and enc == "base64" and media:
            return DataBlock(media, data)
    return DataBlock(URL_MEDIA, url)


def _data_to_part(b: DataBlock) -> dict[str, Any]:
    if b.media_type.startswith("audio/"):
        return {"type": "input_audio",
                "input_audio": {"data": b.source, "format": b.media_type[6:]}}
    url = b.source if b.media_type == URL_MEDIA else f"data:{b.media_type};base64,{b.source}"
    return {"type": "image_url", "image_url": {"url": url}}


def _parts(content: Any, where: str, *, data: bool) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (TextBlock(content),)
    if content is None:
        return ()
    if not isinstance(content, list):
        raise InputError("expected a string or a list of content parts", field=where)
    out: list[Part] = []
    for k, p in enumerate(content):
        at = f"{where}[{k}]"
        kind = p.get("type") if isinstance(p, Mapping) else None
        if kind == "text" and isinstance(p.get("text"), str):
            out.append(TextBlock(p["text"]))
        elif data and kind == "image_url" and isinstance(p.get("image_url"), Mapping) \
                and isinstance(p["image_url"].get("url"), str):
            out.append(_data_from_url(p["image_url"]["url"]))
        elif data and kind == "input_audio" and isinstance(p.get("input_audio"), Mapping):
            a = p["input_audio"]
            out.append(DataBlock(f"audio/{a.get('format', 'wav')}", str(a.get("data", ""))))
        else:
            allowed = "text, image_url, input_audio" if data else "text"
            raise InputError(f"unsupported content part {kind!r}; expected one of {allowed}",
                             field=at)
    return tuple(out)


def _tool_calls(raw: Any, where: str) -> list[ToolCallBlock]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("expected a list of tool calls", field=where)
    out = []
    for k, c in enumerate(raw):
        fn = c.get("function") if isinstance(c, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(c.get("id"), str) \
                or not isinstance(fn.get("name"), str):
            raise InputError("a tool call needs an 'id' and a 'function' with a 'name'",
                             field=f"{where}[{k}]")
        args = fn.get("arguments", "")
        out.append(ToolCallBlock(c["id"], fn["name"], args if isinstance(args, str)
                                 else json.dumps(args, ensure_ascii=False)))
    return out


def _message(d: Any, i: int, names: dict[str, str]) -> Message:
    if not isinstance(d, Mapping):
        raise InputError("expected a message object", field=_where(i))
    role, name = d.get("role"), d.get("name") or ""
    content = d.get("content")
    if role in ("system", "developer"):
        return Message("system", _parts(content, _where(i, ".content"), data=False), name=name)
    if role == "user":
        return Message("user", _parts(content, _where(i, ".content"), data=True), name=name)
    if role == "assistant":
        blocks: list[Block] = []
        if isinstance(d.get("reasoning_content"), str):
            blocks.append(ThinkingBlock(d["reasoning_content"]))
        blocks += _parts(content, _where(i, ".content"), data=False)
        calls = _tool_calls(d.get("tool_calls"), _where(i, ".tool_calls"))
        names.update((c.id, c.name) for c in calls)
        return Message("assistant", (*blocks, *calls), name=name)
    if role == "tool":
        cid = d.get("tool_call_id")
        if not isinstance(cid, str):
            raise InputError("a tool message needs a string 'tool_call_id'",
                             field=_where(i, ".tool_call_id"))
        parts = _parts(content, _where(i, ".content"), data=False)
        output: str | tuple[Part, ...] = content if isinstance(content, str) else parts
        return Message("tool", (ToolResultBlock(cid, names.get(cid, ""), output),), name=name)
    raise InputError(f"unknown role {role!r}; expected one of system, developer, user, "
                     "assistant, tool", field=_where(i, ".role"))


def request_from_openai(body: Mapping[str, Any], *, session_id: str = "",
                        last: Converted | None = None) -> Request:
    """The bench's request for a Chat Completions body (module docstring). Bad input raises
    :class:`InputError` naming the field. ``last``, a session's previous body converted,
    spares converting again what it shares with that one; it is updated only when the body
    converts."""
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InputError("expected a non-empty list of messages", field="messages")
    system, start = "", 0
    first = raw[0]
    if isinstance(first, Mapping) and first.get("role") in ("system", "developer") \
            and isinstance(first.get("content"), str) and not first.get("name"):
        system, start = first["content"], 1
    converted = (last or Converted()).messages(raw, start, _message)
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("expected a list of tools", field="tools")
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        raise InputError(f"expected a positive integer, got {budget!r}",
                         field="max_completion_tokens")
    tools = last.tools(tools_raw) if last is not None else None
    if tools is None:
        for k, t in enumerate(tools_raw):
            if not isinstance(t, Mapping):
                raise InputError("expected a tool object", field=f"tools[{k}]")
        tools = tuple(ToolSchema.from_dict(t) for t in tools_raw)
    meta = format_from_openai(body) + choice_from_openai(body.get("tool_choice"),
                                                          [t.name for t in tools])
    request = Request(system=system, messages=tuple(converted), tools=tools,
                      output_budget=budget, session_id=session_id, meta=meta)
    if last is not None:
        last.keep(raw, converted, tools_raw, tools)
    return request


# --- Request -> OpenAI -------------------------------------------------------------------------

def _part(b: Block) -> dict[str, Any]:
    if isinstance(b, DataBlock):
        return _data_to_part(b)
    if isinstance(b, HintBlock):
        hint = b.hint if isinstance(b.hint, str) else \
            "\n".join(p.text for p in b.hint if isinstance(p, TextBlock))
        return {"type": "text", "text": hint}
    assert isinstance(b, TextBlock)
    return {"type": "text", "text": b.text}


def _content(blocks: Sequence[Block]) -> str | list[dict[str, Any]] | None:
    if not blocks:
        return None
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
        return blocks[0].text
    return [_part(b) for b in blocks]


def _tool_output(out: str | tuple[Part, ...]) -> str | list[dict[str, Any]]:
    return out if isinstance(out, str) else [_part(p) for p in out]


def message_to_openai(m: Message) -> list[dict[str, Any]]:
    """One message in OpenAI's form: usually one, more when results ride in an assistant
    message (AgentScope's layout), each then written as its own ``tool`` message."""
    named = {"name": m.name} if m.name else {}
    results = [b for b in m.content if isinstance(b, ToolResultBlock)]
    if m.role == "tool" or (m.role != "assistant" and results and len(results) == len(m.content)):
        return [{"role": "tool", "tool_call_id": r.id, "content": _tool_output(r.output), **named}
                for r in results]
    if m.role == "assistant":
        d: dict[str, Any] = {"role": "assistant"}
        thinking = [b.thinking for b in m.content if isinstance(b, ThinkingBlock)]
        if thinking:
            d["reasoning_content"] = "\n".join(thinking)
        d["content"] = _content([b for b in m.content if isinstance(b, TextBlock | HintBlock
                                                                     | DataBlock)])
        calls = [b for b in m.content if isinstance(b, ToolCallBlock)]
        if calls:
            d["tool_calls"] = [{"id": c.id, "type": "function",
                                "function": {"name": c.name, "arguments": c.input}}
                               for c in calls]
        d.update(named)
        return [d, *({"role": "tool", "tool_call_id": r.id, "content": _tool_output(r.output)}
                     for r in results)]
    # Results at the head of a user message (Anthropic's layout) go first, as tool messages.
    head = [{"role": "tool", "tool_call_id": r.id, "content": _tool_output(r.output)}
            for r in results]
    rest = [b for b in m.content if not isinstance(b, ToolResultBlock | ThinkingBlock
                                                   | ToolCallBlock)]
    return [*head, {"role": m.role, "content": _content(rest) or "", **named}]


def request_to_openai(r: Request, *, model: str = "harnesslab") -> dict[str, Any]:
    """A Chat Completions body for ``r`` in normal form (module docstring)."""
    msgs: list[dict[str, Any]] = []
    if r.system:
        msgs.append({"role": "system", "content": r.system})
    if r.summary:
        msgs.append({"role": "system", "content": r.summary})
    for m in r.messages:
        msgs += message_to_openai(m)
    body: dict[str, Any] = {"model": model, "messages": msgs}
    if r.tools:
        body["tools"] = [t.to_dict() for t in r.tools]
    choice = choice_of(r)
    if choice is not None:
        kind, name = choice
        body["tool_choice"] = kind if name is None else \
            {"type": "function", "function": {"name": name}}
    fmt = format_of(r)
    if fmt is not None:
        body["response_format"] = fmt
    if r.output_budget is not None:
        body["max_completion_tokens"] = r.output_budget
    return body


# --- Response -> OpenAI ------------------------------------------------------------------------

def _calls(resp: Response) -> list[dict[str, Any]]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input}}
            for c in resp.tool_calls]


def _usage(resp: Response) -> dict[str, int]:
    return {"prompt_tokens": resp.input_tokens, "completion_tokens": resp.output_tokens,
            "total_tokens": resp.input_tokens + resp.output_tokens}


def completion(resp: Response, *, id: str, created: int, model: str) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` object for ``resp``."""
    msg: dict[str, Any] = {"role": "assistant", "content": resp.text or None}
    calls = _calls(resp)
    if calls:
        msg["tool_calls"] = calls
    return {"id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": _usage(resp)}


PIECE = 16  # characters per streamed delta: a client must join pieces, as with a real API


def _pieces(text: str) -> Iterator[str]:
    for i in range(0, len(text), PIECE):
        yield text[i:i + PIECE]


def stream_chunks(resp: Response, *, id: str, created: int, model: str,
                  include_usage: bool = False) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed answer, laid out as OpenAI streams:
    the role; the text in pieces of ``PIECE`` characters; each tool call opened by a delta with
    its index, id and name, its arguments following in pieces; the finish reason; then (when
    asked) the usage alone, with no choices. Joining the pieces gives exactly the
    non-streaming answer."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                             "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(resp.text):
        yield chunk({"content": piece})
    calls = resp.tool_calls
    for k, c in enumerate(calls):
        yield chunk({"tool_calls": [{"index": k, "id": c.id, "type": "function",
                                     "function": {"name": c.name, "arguments": ""}}]})
        for piece in _pieces(c.input):
            yield chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if include_usage:
        yield {"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [], "usage": _usage(resp)}


def error_body(message: str, *, type: str = "invalid_request_error", code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    """An error as the OpenAI API writes it (the SDK reads ``error.code``)."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}
