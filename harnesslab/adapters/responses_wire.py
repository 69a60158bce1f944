"""The conversion between the OpenAI Responses API (``POST /v1/responses``) and the bench's
:class:`Request` and :class:`Response`: what Codex-style CLIs and the OpenAI Agents SDK send.

Responses -> Request (``request_from_responses``), one bench message per input item, in order:

- ``instructions`` (a string) is ``Request.system``;
- ``input`` as a string is one user message; as a list, each item is one message:
  a ``message`` item (``type`` may be omitted, as the SDK's easy form does) of role ``user``,
  ``assistant``, ``system`` or ``developer`` (the last two are ``system`` messages); its
  content a string (one text block) or parts: ``input_text``/``output_text`` are text
  blocks, ``input_image`` a data block (a ``data:`` URL as ``DataBlock(MEDIA, DATA)``, any
  other URL or a ``file_id`` kept as the source with the media type ``image/url`` or
  ``image/file``), ``refusal`` a text block; a ``function_call`` item is an assistant message
  holding one tool call (``call_id``, ``name``, ``arguments`` verbatim; the item ``id``, when
  given, is the message id); a ``function_call_output`` item is a ``tool`` message holding the
  result for its ``call_id`` (named after that call, as for Chat Completions); a ``reasoning``
  item is an assistant message holding one thinking block per ``summary_text``;
- ``tools``: each function tool's JSON text as sent (its ``name``); a built-in tool without a
  name (``web_search``, ...) is kept under its ``type``; a ``namespace`` tool (a named group of
  function tools, as Codex offers an MCP server's tools: ``{"type": "namespace", "name":
  "mcp__server", "tools": [...]}``) is its function tools, each under its own name with the
  group's name added to its JSON as ``namespace``; ``max_output_tokens`` is the output budget.
  A ``function_call`` item's ``namespace`` is not kept (the call is named by its ``name``).
  A ``tool_choice`` other than ``auto`` is kept as the request's ``("tool_choice", ...)`` meta
  (``adapters.tool_choice``; the fake model obeys it), and ``text.format`` of type
  ``json_schema`` or ``json_object`` (structured outputs) as ``("response_format", ...)`` in
  Chat Completions' spelling (``adapters.output_format``: the fake model answers in the schema).
  ``truncation: "auto"`` is kept as ``("truncation", "auto")``: the service then drops input
  items from the beginning of the conversation until the request fits, as the API documents
  (``sim.service.SimulatedService.fit``), where ``disabled`` (the default) is a 400.

``previous_response_id`` (with ``store``, true unless said false) is the server's business:
the input of the response it names, then that response's output, then this ``input``
(``Conversation`` below); ``instructions`` are not carried over, as the API documents.

Request -> Responses (``request_to_responses``) writes the **normal form**: each message one
item; a message whose content is one text block has string content, anything else parts
(``input_text`` for user and system, ``output_text`` for the assistant); ``system`` messages
are ``developer`` items. ``to(from(x)) == x`` for any ``x`` in normal form (tested). Lossy:
``Request.summary`` (a ``developer`` item after the instructions), hint blocks (text parts), an
item's ``status``, a reasoning item's ``encrypted_content``, a ``system`` role written back as
``developer`` (the API treats them alike), an image's ``detail``.

Response -> Responses (``response_object``, ``stream_events``): one ``message`` item with the
reply's text (when there is any), then one ``function_call`` item per tool call; usage as
``input_tokens``/``output_tokens``. Streaming is the API's event sequence
(``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta``/``.done``,
``response.function_call_arguments.delta``/``.done``, ``response.content_part.done``,
``response.output_item.done``, ``response.completed``), each with a ``sequence_number``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from harnesslab.adapters import server_side
from harnesslab.adapters.openai_wire import PIECE, URL_MEDIA
from harnesslab.adapters.output_format import format_from_responses, format_of
from harnesslab.adapters.tool_choice import choice_from_responses, choice_of
from harnesslab.errors import InputError
from harnesslab.messages import (
    Block,
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

FILE_MEDIA = "image/file"  # an image given by an uploaded file's id
_TEXT_PARTS = ("input_text", "output_text")


def _where(i: int, suffix: str = "") -> str:
    return f"input[{i}]{suffix}"


def _image(p: Mapping[str, Any], at: str) -> DataBlock:
    url = p.get("image_url")
    if isinstance(url, str):
        if url.startswith("data:"):
            head, sep, data = url[5:].partition(",")
            media, _, enc = head.partition(";")
            if sep and enc == "base64" and media:
                return DataBlock(media, data)
        return DataBlock(URL_MEDIA, url)
    if isinstance(p.get("file_id"), str):
        return DataBlock(FILE_MEDIA, p["file_id"])
    raise InputError("an input_image needs an 'image_url' or a 'file_id'", field=at)


def _parts(content: Any, where: str) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (TextBlock(content),)
    if not isinstance(content, list):
        raise InputError("expected a string or a list of content parts", field=where)
    out: list[Part] = []
    for k, p in enumerate(content):
        at = f"{where}[{k}]"
        kind = p.get("type") if isinstance(p, Mapping) else None
        if kind in _TEXT_PARTS and isinstance(p.get("text"), str):
            out.append(TextBlock(p["text"]))
        elif kind == "refusal" and isinstance(p.get("refusal"), str):
            out.append(TextBlock(p["refusal"]))
        elif kind == "input_image":
            out.append(_image(p, at))
        else:
            raise InputError(f"unsupported content part {kind!r}; expected one of input_text, "
                             "output_text, input_image, refusal", field=at)
    return tuple(out)


def _string(d: Mapping[str, Any], key: str, where: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise InputError(f"expected a string {key!r}", field=f"{where}.{key}")
    return v


def _item(d: Any, i: int, names: dict[str, str]) -> Message:
    if not isinstance(d, Mapping):
        raise InputError("expected an input item object", field=_where(i))
    kind = d.get("type", "message")
    raw_id = d.get("id")
    iid = raw_id if isinstance(raw_id, str) else ""
    if kind == "message":
        role = d.get("role")
        parts = _parts(d.get("content"), _where(i, ".content"))
        if role in ("system", "developer"):
            return Message("system", parts, id=iid)
        if role in ("user", "assistant"):
            return Message(role, parts, id=iid)
        raise InputError(f"unknown role {role!r}; expected one of user, assistant, system, "
                         "developer", field=_where(i, ".role"))
    if kind == "function_call":
        cid, name = _string(d, "call_id", _where(i)), _string(d, "name", _where(i))
        args = d.get("arguments", "")
        names[cid] = name
        return Message("assistant", (ToolCallBlock(cid, name, args if isinstance(args, str)
                                                   else json.dumps(args, ensure_ascii=False)),),
                       id=iid)
    if kind == "function_call_output":
        cid = _string(d, "call_id", _where(i))
        out = d.get("output")
        output: str | tuple[Part, ...] = out if isinstance(out, str) else \
            _parts(out, _where(i, ".output"))
        return Message("tool", (ToolResultBlock(cid, names.get(cid, ""), output),), id=iid)
    if kind == "compaction":
        handed = compaction_summary(d.get("encrypted_content"))
        if handed is None:
            raise InputError("The encrypted content could not be decrypted or parsed: not a "
                             "compaction this server made", field=_where(i, ".encrypted_content"))
        return Message("user", (TextBlock(SUMMARY_BRIDGE + handed),), id=iid)
    if kind == "reasoning":
        summary = d.get("summary") or []
        if not isinstance(summary, list) or not all(
                isinstance(s, Mapping) and isinstance(s.get("text"), str) for s in summary):
            raise InputError("expected a list of summary_text parts", field=_where(i, ".summary"))
        return Message("assistant", tuple(ThinkingBlock(s["text"]) for s in summary), id=iid)
    raise InputError(f"unsupported input item type {kind!r}; expected one of message, "
                     "function_call, function_call_output, reasoning, compaction",
                     field=_where(i, ".type"))


def _tools(t: Any, k: int) -> list[ToolSchema]:
    """One tool of the body, or a namespace's function tools (module docstring)."""
    if isinstance(t, Mapping) and t.get("type") == "namespace":
        ns, inner = t.get("name"), t.get("tools")
        if not isinstance(ns, str) or not isinstance(inner, list):
            raise InputError("a namespace tool needs a string 'name' and a list of 'tools'",
                             field=f"tools[{k}]")
        out = []
        for j, f in enumerate(inner):
            if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
                raise InputError("a tool needs a string 'name'", field=f"tools[{k}].tools[{j}]")
            out.append(ToolSchema(f["name"], json.dumps({**f, "namespace": ns},
                                                        ensure_ascii=False)))
        return out
    return [_tool(t, k)]


def namespaces(body: Mapping[str, Any]) -> dict[str, str]:
    """Each namespaced function tool's name -> its namespace, from the body's tools: a call to
    one is answered with its ``namespace``, as the API does, so the client routes it."""
    out: dict[str, str] = {}
    tools = body.get("tools")
    for t in tools if isinstance(tools, list) else ():
        if isinstance(t, Mapping) and t.get("type") == "namespace" \
                and isinstance(t.get("name"), str) and isinstance(t.get("tools"), list):
            for f in t["tools"]:
                if isinstance(f, Mapping) and isinstance(f.get("name"), str):
                    out.setdefault(f["name"], t["name"])
    return out


def _tool(t: Any, k: int) -> ToolSchema:
    if not isinstance(t, Mapping) or not isinstance(t.get("name", t.get("type")), str):
        raise InputError("a tool needs a string 'name' (or, built in, a 'type')",
                         field=f"tools[{k}]")
    return ToolSchema(t.get("name", t.get("type")), json.dumps(t, ensure_ascii=False))


def input_items(body: Mapping[str, Any]) -> list[Any]:
    """The body's ``input`` as a list of items (a string is one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise InputError("expected a string or a list of input items", field="input")
    return raw


def request_from_responses(body: Mapping[str, Any], *, items: list[Any] | None = None,
                           session_id: str = "") -> Request:
    """The bench's request for a Responses body (module docstring); ``items`` replaces the
    body's input (the server passes the conversation ``previous_response_id`` continues).
    Bad input raises :class:`InputError` naming the field."""
    raw = input_items(body) if items is None else items
    names: dict[str, str] = {}
    messages = tuple(_item(d, i, names) for i, d in enumerate(raw))
    system = body.get("instructions") or ""
    if not isinstance(system, str):
        raise InputError("expected a string", field="instructions")
    tools_raw = body.get("tools") or []
    if not isinstance(tools_raw, list):
        raise InputError("expected a list of tools", field="tools")
    budget = body.get("max_output_tokens")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool)
                               or budget < 1):
        raise InputError(f"expected a positive integer, got {budget!r}",
                         field="max_output_tokens")
    server_side.refuse_unsimulated(body, server_side.RESPONSES)
    truncation = body.get("truncation")
    if truncation not in (None, "auto", "disabled"):
        raise InputError(f"must be 'auto' or 'disabled', got {truncation!r}", field="truncation")
    tools = tuple(s for k, t in enumerate(tools_raw) for s in _tools(t, k))
    return Request(system=system, messages=messages, tools=tools,
                   output_budget=budget, session_id=session_id,
                   meta=format_from_responses(body)
                   + choice_from_responses(body.get("tool_choice"), [t.name for t in tools])
                   + ((("truncation", "auto"),) if truncation == "auto" else ()))


# --- Request -> Responses ----------------------------------------------------------------------

def _part(b: Block, text_type: str) -> dict[str, Any]:
    if isinstance(b, DataBlock):
        if b.media_type == FILE_MEDIA:
            return {"type": "input_image", "file_id": b.source}
        url = b.source if b.media_type == URL_MEDIA else f"data:{b.media_type};base64,{b.source}"
        return {"type": "input_image", "image_url": url}
    if isinstance(b, HintBlock):
        hint = b.hint if isinstance(b.hint, str) else \
            "\n".join(p.text for p in b.hint if isinstance(p, TextBlock))
        return {"type": text_type, "text": hint}
    assert isinstance(b, TextBlock)
    return {"type": text_type, "text": b.text}


def _content(blocks: list[Block], text_type: str) -> str | list[dict[str, Any]]:
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
        return blocks[0].text
    return [_part(b, text_type) for b in blocks]


def message_to_items(m: Message) -> list[dict[str, Any]]:
    """One message as input items: usually one; an assistant message holding several kinds
    of block (AgentScope's, Chat Completions' layout) gives one item per kind, in order."""
    iid = {"id": m.id} if m.id else {}
    out: list[dict[str, Any]] = []
    role = "developer" if m.role == "system" else m.role
    text_type = "output_text" if m.role == "assistant" else "input_text"
    run: list[Block] = []

    def flush() -> None:
        if run:
            out.append({"type": "message", "role": role, "content": _content(run, text_type),
                        **iid})
            run.clear()

    thinking = [b for b in m.content if isinstance(b, ThinkingBlock)]
    if thinking or (not m.content and m.role == "assistant"):  # a reasoning item, no summary
        out.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": b.thinking}
                                                     for b in thinking], **iid})
    for b in m.content:
        if isinstance(b, ToolCallBlock):
            flush()
            out.append({"type": "function_call", "call_id": b.id, "name": b.name,
                        "arguments": b.input, **iid})
        elif isinstance(b, ToolResultBlock):
            flush()
            output = b.output if isinstance(b.output, str) else \
                [_part(p, "input_text") for p in b.output]
            out.append({"type": "function_call_output", "call_id": b.id, "output": output,
                        **iid})
        elif not isinstance(b, ThinkingBlock):
            run.append(b)
    flush()
    return out


def _flat_format(fmt: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions format as the Responses API writes it (``text.format``)."""
    spec = fmt.get("json_schema")
    if fmt.get("type") != "json_schema" or not isinstance(spec, Mapping):
        return dict(fmt)
    return {"type": "json_schema", **spec}


def request_to_responses(r: Request, *, model: str = "harnesslab") -> dict[str, Any]:
    """A Responses body for ``r`` in normal form (module docstring)."""
    items: list[dict[str, Any]] = []
    if r.summary:
        items.append({"type": "message", "role": "developer", "content": r.summary})
    for m in r.messages:
        items += message_to_items(m)
    body: dict[str, Any] = {"model": model, "input": items}
    if r.system:
        body["instructions"] = r.system
    if r.tools:
        body["tools"] = [t.to_dict() for t in r.tools]
    choice = choice_of(r)
    if choice is not None:
        kind, name = choice
        body["tool_choice"] = kind if name is None else {"type": "function", "name": name}
    fmt = format_of(r)
    if fmt is not None:
        body["text"] = {"format": _flat_format(fmt)}
    if r.output_budget is not None:
        body["max_output_tokens"] = r.output_budget
    if r.stated("truncation") == "auto":
        body["truncation"] = "auto"
    return body


# --- server-side compaction (POST /v1/responses/compact) ----------------------------------------

# The server's compaction pass asks the model, over the whole input, in the words of Codex's
# own compaction prompt (codex-rs compact/prompt.md, Apache-2.0), and the summary comes back
# into a later request behind Codex's bridge: the API's productised form of Codex's local
# compaction. The fake model reads both as Codex's (tests/sim/corpus/codex.json).
COMPACTION_PROMPT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another "
    "LLM that will resume the task.\n\nInclude:\n- Current progress and key decisions made\n"
    "- Important context, constraints, or user preferences\n- What remains to be done (clear "
    "next steps)\n- Any critical data, examples, or references needed to continue\n\nBe "
    "concise, structured, and focused on helping the next LLM seamlessly continue the work.\n")
SUMMARY_BRIDGE = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:\n")
_SEALED = "harnesslab-compaction-v1:"


def compaction_item(summary: str, *, id: str) -> dict[str, Any]:
    """The ``compaction`` item carrying ``summary``: opaque to the client, as the API's
    encrypted content is, and read back only by this server (:func:`compaction_summary`)."""
    sealed = base64.urlsafe_b64encode((_SEALED + summary).encode("utf-8")).decode("ascii")
    return {"id": id, "type": "compaction", "encrypted_content": sealed}


def compaction_summary(raw: Any) -> str | None:
    """The summary a compaction item of this server carries; None for anything else."""
    if not isinstance(raw, str):
        return None
    try:
        text = base64.urlsafe_b64decode(raw.encode("ascii")).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError):
        return None
    return text[len(_SEALED):] if text.startswith(_SEALED) else None


def compacted_output(items: list[Any], summary: str, *, id: str) -> list[dict[str, Any]]:
    """What the compact endpoint answers: every user message of ``items``, in order and as
    the API returns a kept item (:func:`as_returned`), then one compaction item."""
    out = []
    for k, x in enumerate(items):
        if isinstance(x, Mapping) and x.get("type", "message") == "message" \
                and x.get("role") == "user":
            name = f"msg_{id}_{k}"
            out.append(as_returned(x, lambda _kind: name))  # noqa: B023 (used at once)
    return [*out, compaction_item(summary, id=f"cmp_{id}")]


def as_returned(item: Mapping[str, Any], new_id: Callable[[str], str]) -> dict[str, Any]:
    """An input item as the API returns it once kept (a conversation's item, a compaction's
    user message): typed, a message's string content as one ``input_text`` part
    (``output_text`` with ``annotations`` for the assistant's), completed, and an id:
    ``new_id(type)`` where it had none."""
    kind = item.get("type", "message")
    out: dict[str, Any] = {**item, "type": kind}
    if kind == "message" and isinstance(out.get("content"), str):
        part = "output_text" if out.get("role") == "assistant" else "input_text"
        out["content"] = [{"type": part, "text": out["content"],
                           **({"annotations": []} if part == "output_text" else {})}]
    out["id"] = out.get("id") or new_id(kind)
    out["status"] = "completed"
    return out


def conversation_id(raw: Any) -> str:
    """The id a Responses body's ``conversation`` names (a string or ``{"id": ...}``)."""
    if isinstance(raw, Mapping):
        raw = raw.get("id")
    if not isinstance(raw, str) or not raw:
        raise InputError("expected a conversation id or {\"id\": ...}", field="conversation")
    return raw


def _normal(item: Any) -> Any:
    """An input item as ``request_to_responses`` writes it (the easy form's missing
    ``type``), so stored conversations compare and resend in one form."""
    if isinstance(item, Mapping) and "type" not in item and "role" in item:
        return {"type": "message", **item}
    return item


# --- Response -> Responses ---------------------------------------------------------------------

def output_items(resp: Response, *, id: str,
                 body: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The output items of ``resp`` (completed): its text as one message, then its calls (a
    call to a tool of a namespace in ``body``'s tools names the namespace)."""
    out: list[dict[str, Any]] = []
    grouped = namespaces(body) if body is not None else {}
    if resp.text:
        out.append({"id": f"msg_{id}", "type": "message", "status": "completed",
                    "role": "assistant", "content": [
                        {"type": "output_text", "text": resp.text, "annotations": []}]})
    for k, c in enumerate(resp.tool_calls):
        item = {"id": f"fc_{id}_{k}", "type": "function_call", "status": "completed",
                "call_id": c.id, "name": c.name, "arguments": c.input}
        if c.name in grouped:
            item["namespace"] = grouped[c.name]
        out.append(item)
    return out


def usage_object(resp: Response) -> dict[str, Any]:
    return {"input_tokens": resp.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": resp.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": resp.input_tokens + resp.output_tokens}


def response_object(resp: Response | None, body: Mapping[str, Any], *, id: str, created: int,
                    model: str) -> dict[str, Any]:
    """The ``response`` object for ``resp`` (``None``: in progress, no output yet), echoing
    the request's settings as the API does."""
    return {
        "id": f"resp_{id}", "object": "response", "created_at": created,
        "status": "completed" if resp is not None else "in_progress",
        "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": model,
        "output": output_items(resp, id=id, body=body) if resp is not None else [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "conversation": {"id": conversation_id(body["conversation"])}
        if body.get("conversation") is not None else None,
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True) is not False,
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") if isinstance(body.get("text"), Mapping)
        and isinstance(body["text"].get("format"), Mapping) else {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage_object(resp) if resp is not None else None,
        "user": None, "metadata": body.get("metadata") or {},
    }


def _pieces(text: str) -> Iterator[str]:
    for i in range(0, len(text), PIECE):
        yield text[i:i + PIECE]


def stream_events(resp: Response, body: Mapping[str, Any], *, id: str, created: int,
                  model: str) -> Iterator[dict[str, Any]]:
    """The server-sent events of a streamed answer, in the API's order (module docstring).
    Joining the deltas gives exactly the non-streaming answer."""
    n = 0

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal n
        n += 1
        return {"type": kind, "sequence_number": n - 1, **fields}

    yield event("response.created", response=response_object(None, body, id=id,
                                                             created=created, model=model))
    yield event("response.in_progress", response=response_object(None, body, id=id,
                                                                 created=created, model=model))
    for k, item in enumerate(output_items(resp, id=id, body=body)):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event("response.output_item.added", output_index=k,
                        item={**item, "status": "in_progress", "content": []})
            empty = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", item_id=item["id"], output_index=k,
                        content_index=0, part=empty)
            for piece in _pieces(text):
                yield event("response.output_text.delta", item_id=item["id"], output_index=k,
                            content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", item_id=item["id"], output_index=k,
                        content_index=0, text=text, logprobs=[])
            yield event("response.content_part.done", item_id=item["id"], output_index=k,
                        content_index=0, part=item["content"][0])
        else:
            yield event("response.output_item.added", output_index=k,
                        item={**item, "status": "in_progress", "arguments": ""})
            for piece in _pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", item_id=item["id"],
                            output_index=k, delta=piece)
            yield event("response.function_call_arguments.done", item_id=item["id"],
                        output_index=k, arguments=item["arguments"], name=item["name"])
        yield event("response.output_item.done", output_index=k, item=item)
    yield event("response.completed", response=response_object(resp, body, id=id,
                                                               created=created, model=model))


class Conversation:
    """One session's stored responses (``store``), for ``previous_response_id``: the full
    input each stored response answered and its output, as input items."""

    def __init__(self, limit: int = 10_000) -> None:
        self._items: dict[str, list[Any]] = {}
        self._limit = limit

    def items(self, body: Mapping[str, Any]) -> list[Any]:
        """The input this body continues: the named response's conversation, then its input.
        An unknown id raises :class:`KeyError` (the API's ``previous_response_not_found``)."""
        new = [_normal(x) for x in input_items(body)]
        prev = body.get("previous_response_id")
        if prev is None:
            return new
        if not isinstance(prev, str) or prev not in self._items:
            raise KeyError(prev)
        return [*self._items[prev], *new]

    def store(self, body: Mapping[str, Any], items: list[Any], resp: Response, *,
              id: str) -> None:
        if body.get("store", True) is False:
            return
        if len(self._items) >= self._limit:  # a bound on memory; the oldest goes first
            self._items.pop(next(iter(self._items)))
        out = [{k: v for k, v in x.items() if k != "status"} for x in output_items(resp, id=id)]
        self._items[f"resp_{id}"] = [*items, *out]
