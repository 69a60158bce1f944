"""The conversion between Ollama's native chat API (``POST /api/chat``) and the bench's
:class:`Request` and :class:`Response`: what harnesses built on the ``ollama`` client send
(AgentScope's ``OllamaChatModel``, LangChain's ``ChatOllama``, LlamaIndex's ``Ollama``), and
Ollama's context behaviour, which is the server's own.

Ollama -> Request (``request_from_ollama``):

- a leading ``system`` message is ``Request.system``; later ones stay in the conversation as
  ``system`` messages (roles are read in any case, as Ollama lower-cases them);
- ``content`` is a string (one text block; empty or absent: none); a user message's
  ``images`` (base64, no media type: it is told from the data's first bytes) are data blocks
  after its text; an assistant's ``thinking`` is a thinking block before it and its
  ``tool_calls`` (``{"function": {"name", "arguments": {...}}}``) tool-call blocks after it,
  the arguments as JSON text with Python's default separators (the bytes the fake model wrote);
- a call's ``id`` is kept when sent. The official Python client keeps none, so a call sent back
  without one gets the id this session answered it with (found by its name and arguments; of
  equal calls, the latest answered is the latest in the body, since a harness drops its oldest
  history first), and a ``tool`` message without ``tool_call_id`` answers the first call of the assistant
  message before it that no earlier tool message answered, the first one named
  ``tool_name`` when it names one: Ollama's own pairing, by order;
- ``tools`` are OpenAI's function schemas, kept as sent; ``format`` ``"json"`` or a JSON
  schema is the request's ``("response_format", ...)`` meta (the fake model answers in it);
- ``options.num_predict`` is the output budget; without it (or -1 and -2, "until done") Ollama
  writes into what the prompt leaves of its context, reserving nothing ahead: the planned
  output is that room, at least one token and at most the service's default
  (``("output", "rest")`` meta); ``options.num_ctx`` is the context the model is loaded with:
  the service's window for this request when it is smaller (``("window", N)`` meta);
- ``truncate`` (true unless false) is Ollama's truncation: a request over the window is not
  refused but served with its oldest messages dropped, system messages kept, until it fits
  (its input within the window, and the planned output when ``num_predict`` sets one)
  (``("truncation", "keep_system")`` meta; the record notes how many were dropped, and the
  model sees only what is left). With ``truncate: false`` it is a 400, as Ollama answers one.

Response -> Ollama (``chat_object``, ``stream_lines``): the reply's text as ``message.content``,
its calls as ``message.tool_calls`` (with their ids and ``index``), ``done_reason`` ``stop``,
``prompt_eval_count`` and ``eval_count`` the billed usage, ``created_at`` the world's clock.
``stream`` is true unless false, as in Ollama: newline-delimited JSON objects, the text in
pieces (``done: false``), the calls in one object, then the ``done: true`` object with the
counts. Errors are ``{"error": MESSAGE}``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from harnesslab.adapters.openai_wire import PIECE
from harnesslab.errors import InputError
from harnesslab.messages import (
    Block,
    Converted,
    DataBlock,
    Message,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

__all__ = ["CONTEXT_LENGTH", "VERSION", "OllamaState", "chat_object", "created_at", "error_body",
           "request_from_ollama", "show_object", "stream_lines"]

VERSION = "0.12.0"  # the Ollama API this wire follows (``GET /api/version``)
# What Ollama answers when a request does not fit and may not be truncated.
CONTEXT_LENGTH = "the input length exceeds the context length"
# Image formats by their base64 opening (Ollama's images carry no media type).
_MAGIC = (("iVBORw0KGgo", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"),
          ("UklGR", "image/webp"), ("Qk", "image/bmp"))
_KEPT_CALLS = 1024  # calls (and equal ones) remembered per session, for ids sent back without


def _where(i: int, suffix: str = "") -> str:
    return f"messages[{i}]{suffix}"


def _args_key(name: str, args: Mapping[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, ensure_ascii=False, sort_keys=True)


class OllamaState:
    """One session's Ollama wire: the last body as converted (only changes cost), and the tool
    calls it answered by name and arguments, for a client that sends a call back without the
    id it was answered with."""

    def __init__(self) -> None:
        self.converted = Converted()
        self._issued: dict[tuple[str, str], list[str]] = {}

    def answered(self, resp: Response) -> None:
        for c in resp.tool_calls:
            args = _arguments(c)
            if args is not None:
                ids = self._issued.setdefault(_args_key(c.name, args), [])
                ids.append(c.id)
                del ids[:-_KEPT_CALLS]
                if len(self._issued) > _KEPT_CALLS:
                    del self._issued[next(iter(self._issued))]

    def id_for(self, key: tuple[str, str], nth: int, of: int) -> str | None:
        """The id this session answered a call with: the ``nth`` of ``of`` equal calls (by
        name and arguments) in a request is the answer to the ``of - nth``-th latest of them
        (counted from the end, since a harness drops its oldest history first); None when
        this session answered no such call."""
        issued = self._issued.get(key, [])
        k = len(issued) - of + nth
        return issued[k] if 0 <= k < len(issued) else None


def _arguments(c: ToolCallBlock) -> dict[str, Any] | None:
    """A call's arguments as the object Ollama carries (none written: empty); None when its
    text is no JSON object."""
    try:
        args = json.loads(c.input) if c.input.strip() else {}
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def _media(data: str) -> str:
    return next((media for head, media in _MAGIC if data.startswith(head)), "image/png")


def _text(d: Mapping[str, Any], i: int) -> tuple[TextBlock, ...]:
    content = d.get("content")
    if content is None or content == "":
        return ()
    if not isinstance(content, str):
        raise InputError("expected a string", field=_where(i, ".content"))
    return (TextBlock(content),)


def _images(d: Mapping[str, Any], i: int) -> tuple[DataBlock, ...]:
    raw = d.get("images")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise InputError("expected a list of base64 strings", field=_where(i, ".images"))
    return tuple(DataBlock(_media(x), x) for x in raw)


def _equal_calls(raw: list[Any]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """Where each call (by name and arguments) is in a body's messages, in order."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, d in enumerate(raw):
        calls = d.get("tool_calls") if isinstance(d, Mapping) else None
        for k, c in enumerate(calls if isinstance(calls, list) else ()):
            fn = c.get("function") if isinstance(c, Mapping) else None
            if isinstance(fn, Mapping) and isinstance(fn.get("name"), str) \
                    and isinstance(fn.get("arguments", {}), Mapping):
                out.setdefault(_args_key(fn["name"], fn.get("arguments", {})), []).append((i, k))
    return out


def _calls(d: Mapping[str, Any], i: int, state: OllamaState, names: dict[str, str],
           equal: Callable[[], dict[tuple[str, str], list[tuple[int, int]]]]
           ) -> list[ToolCallBlock]:
    raw = d.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("expected a list of tool calls", field=_where(i, ".tool_calls"))
    out: list[ToolCallBlock] = []
    for k, c in enumerate(raw):
        at = _where(i, f".tool_calls[{k}]")
        fn = c.get("function") if isinstance(c, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise InputError("a tool call needs a 'function' with a string 'name'", field=at)
        args = fn.get("arguments", {})
        if not isinstance(args, Mapping):
            raise InputError("expected an object (Ollama's arguments are JSON, not text)",
                             field=f"{at}.function.arguments")
        cid = c.get("id")
        if not isinstance(cid, str) or not cid:
            key = _args_key(fn["name"], args)
            where = equal()[key]
            cid = state.id_for(key, where.index((i, k)), len(where))
            if cid is None:  # a call this session never answered (a history made up)
                digest = hashlib.sha256(f"{i}/{k}/{fn['name']}/{json.dumps(args, sort_keys=True)}"
                                        .encode()).hexdigest()
                cid = f"call_{digest[:12]}"
        out.append(ToolCallBlock(cid, fn["name"], json.dumps(args, ensure_ascii=False)))
    names.update((b.id, b.name) for b in out)
    return out


def _result_id(raw: list[Any], i: int, names: dict[str, str]) -> tuple[str, str]:
    """The id and name of the call the tool message ``raw[i]`` answers: its ``tool_call_id``,
    else Ollama's pairing by order (module docstring); ("", name) when no call is open."""
    d = raw[i]
    cid, name = d.get("tool_call_id"), d.get("tool_name")
    name = name if isinstance(name, str) else ""
    if isinstance(cid, str) and cid:
        return cid, names.get(cid, name)
    j = i - 1
    while j >= 0 and isinstance(raw[j], Mapping) and str(raw[j].get("role", "")).lower() == "tool":
        j -= 1
    calls = raw[j].get("tool_calls") if j >= 0 and isinstance(raw[j], Mapping) else None
    if not isinstance(calls, list) or not calls:
        return "", name
    # The calls' ids are the last ones converted (only tool messages came after them).
    open_ = [(x, names[x]) for x in islice(reversed(names), len(calls))][::-1]
    for m in raw[j + 1:i + 1]:
        mid, mname = m.get("tool_call_id"), m.get("tool_name")
        pick = next((c for c in open_ if isinstance(mid, str) and c[0] == mid), None) or \
            next((c for c in open_ if isinstance(mname, str) and c[1] == mname), None) or \
            (open_[0] if open_ else None)
        if pick is None:
            return "", name
        open_.remove(pick)
        if m is d:
            return pick
    return "", name


def request_from_ollama(body: Mapping[str, Any], *, session_id: str = "",
                        state: OllamaState | None = None) -> Request:
    """The bench's request for a ``/api/chat`` body (module docstring). Bad input raises
    :class:`InputError` naming the field. ``state``, the session's, spares converting again
    what a body shares with the last one and gives back the ids of calls sent without them."""
    st = state or OllamaState()
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InputError("expected a non-empty list of messages", field="messages")
    for i, d in enumerate(raw):
        if not isinstance(d, Mapping):
            raise InputError("expected a message object", field=_where(i))

    # Once per body, and only when a call comes without its id.
    equal = functools.cache(lambda: _equal_calls(raw))

    def message(d: Mapping[str, Any], i: int, names: dict[str, str]) -> Message:
        role = str(d.get("role", "")).lower()
        if role == "system":
            return Message("system", _text(d, i))
        if role == "user":
            return Message("user", (*_text(d, i), *_images(d, i)))
        if role == "assistant":
            blocks: list[Block] = []
            if isinstance(d.get("thinking"), str) and d["thinking"]:
                blocks.append(ThinkingBlock(d["thinking"]))
            blocks += _text(d, i)
            return Message("assistant", (*blocks, *_calls(d, i, st, names, equal)))
        if role == "tool":
            content = d.get("content")
            if content is not None and not isinstance(content, str):
                raise InputError("expected a string", field=_where(i, ".content"))
            cid, name = _result_id(raw, i, names)
            return Message("tool", (ToolResultBlock(cid, name, content or ""),))
        raise InputError(f"unknown role {d.get('role')!r}; expected one of system, user, "
                         "assistant, tool", field=_where(i, ".role"))

    system, start = "", 0
    first = raw[0]
    if str(first.get("role", "")).lower() == "system" and isinstance(first.get("content"), str) \
            and not first.get("images"):
        system, start = first["content"], 1
    converted = st.converted.messages(raw, start, message)
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("expected a list of tools", field="tools")
    tools = st.converted.tools(tools_raw)
    if tools is None:
        for k, t in enumerate(tools_raw):
            if not isinstance(t, Mapping):
                raise InputError("expected a tool object", field=f"tools[{k}]")
        tools = tuple(ToolSchema.from_dict(t) for t in tools_raw)
    budget, meta = _options(body)
    request = Request(system=system, messages=tuple(converted), tools=tools,
                      output_budget=budget, session_id=session_id,
                      meta=meta + _format(body.get("format")))
    st.converted.keep(raw, converted, tools_raw, tools)
    return request


def _options(body: Mapping[str, Any]) -> tuple[int | None, tuple[tuple[str, str], ...]]:
    opts = body.get("options")
    opts = {} if opts is None else opts
    if not isinstance(opts, Mapping):
        raise InputError("expected an object", field="options")
    meta: tuple[tuple[str, str], ...] = ()
    budget = None
    predict = opts.get("num_predict")
    if predict is not None:
        if not isinstance(predict, int) or isinstance(predict, bool) or \
                (predict < 1 and predict not in (-1, -2)):
            raise InputError(f"expected a positive integer, -1 or -2, got {predict!r}",
                             field="options.num_predict")
        budget = predict if predict > 0 else None
    if budget is None:
        # Ollama writes until done into what the prompt leaves of its context (num_ctx): no
        # output is reserved ahead, and its truncation keeps only the prompt within the window.
        meta += (("output", "rest"),)
    ctx = opts.get("num_ctx")
    if ctx is not None:
        if not isinstance(ctx, int) or isinstance(ctx, bool) or ctx < 1:
            raise InputError(f"expected a positive integer, got {ctx!r}", field="options.num_ctx")
        meta += (("window", str(ctx)),)
    truncate = body.get("truncate", True)
    if not isinstance(truncate, bool):
        raise InputError(f"expected true or false, got {truncate!r}", field="truncate")
    if truncate:
        meta += (("truncation", "keep_system"),)
    return budget, meta


def _format(fmt: Any) -> tuple[tuple[str, str], ...]:
    if fmt is None or fmt == "":
        return ()
    if fmt == "json":
        spec: dict[str, Any] = {"type": "json_object"}
    elif isinstance(fmt, Mapping):
        spec = {"type": "json_schema", "json_schema": {"name": "format", "schema": dict(fmt)}}
    else:
        raise InputError(f"expected \"json\" or a JSON schema object, got {fmt!r}",
                         field="format")
    return (("response_format", json.dumps(spec, ensure_ascii=False)),)


# --- Response -> Ollama ------------------------------------------------------------------------

def created_at(now: datetime) -> str:
    """The world's time as Ollama writes ``created_at`` (RFC 3339, UTC)."""
    return now.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _tool_calls(resp: Response) -> list[dict[str, Any]]:
    return [{"id": c.id, "function": {"index": k, "name": c.name,
                                      "arguments": _arguments(c) or {}}}
            for k, c in enumerate(resp.tool_calls)]


def _done(resp: Response) -> dict[str, Any]:
    return {"done": True, "done_reason": "stop", "prompt_eval_count": resp.input_tokens,
            "eval_count": resp.output_tokens}


def chat_object(resp: Response, *, model: str, at: str) -> dict[str, Any]:
    """A non-streaming ``/api/chat`` answer for ``resp``."""
    msg: dict[str, Any] = {"role": "assistant", "content": resp.text}
    calls = _tool_calls(resp)
    if calls:
        msg["tool_calls"] = calls
    return {"model": model, "created_at": at, "message": msg, **_done(resp)}


def stream_lines(resp: Response, *, model: str, at: str) -> Iterator[str]:
    """The newline-delimited JSON objects of a streamed answer (module docstring). Joining the
    pieces' contents gives exactly the non-streaming answer's."""
    def line(obj: dict[str, Any]) -> str:
        return json.dumps(obj, ensure_ascii=False) + "\n"

    text = resp.text
    for k in range(0, len(text), PIECE):
        yield line({"model": model, "created_at": at,
                    "message": {"role": "assistant", "content": text[k:k + PIECE]},
                    "done": False})
    calls = _tool_calls(resp)
    if calls:
        yield line({"model": model, "created_at": at,
                    "message": {"role": "assistant", "content": "", "tool_calls": calls},
                    "done": False})
    yield line({"model": model, "created_at": at,
                "message": {"role": "assistant", "content": ""}, **_done(resp)})


def show_object(window: int | None) -> dict[str, Any]:
    """``/api/show``'s answer: the model's details, its capabilities and, when known, its
    context length (the service's true window, as a model server states its model's)."""
    info: dict[str, Any] = {"general.architecture": "harnesslab"}
    if window is not None:
        info["harnesslab.context_length"] = window
    return {"modelfile": "", "parameters": "", "template": "",
            "details": {"format": "gguf", "family": "harnesslab", "families": ["harnesslab"],
                        "parameter_size": "", "quantization_level": ""},
            "model_info": info, "capabilities": ["completion", "tools"]}


def error_body(message: str) -> dict[str, Any]:
    """An error as Ollama writes it."""
    return {"error": message}
