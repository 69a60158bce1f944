"""Message, block, tool-schema and request value types shared by every part, with a lossless
JSON round-trip.

The block set follows AgentScope 2.0.x (text, thinking, hint, tool call, tool result, data), so
its estimator can be reproduced exactly and its turn layout (one assistant message per reply
holding hints, calls, results and text) can be expressed as it is.
"""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from harnesslab.errors import InputError

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    thinking: str


@dataclass(frozen=True, slots=True)
class DataBlock:
    """A non-text payload (image, audio, PDF): base64 data or a URL in ``source``."""

    media_type: str
    source: str
    name: str = ""

    @property
    def is_image(self) -> bool:
        return self.media_type.startswith("image/")


Part: TypeAlias = TextBlock | DataBlock


@dataclass(frozen=True, slots=True)
class HintBlock:
    """A harness-written hint (runtime state, reminders); a string or text/data parts."""

    hint: str | tuple[Part, ...]
    source: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    """A tool call; ``input`` is the raw JSON argument string, as the model wrote it."""

    id: str
    name: str
    input: str


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    id: str
    name: str
    output: str | tuple[Part, ...]
    is_error: bool = False


Block: TypeAlias = TextBlock | ThinkingBlock | HintBlock | ToolCallBlock | ToolResultBlock | DataBlock


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...]
    name: str = ""
    id: str = ""

    @classmethod
    def text(cls, role: Role, text: str, *, name: str = "", id: str = "") -> Message:
        return cls(role, (TextBlock(text),), name=name, id=id)

    def plain_text(self) -> str:
        """The message's text blocks joined by newlines (what a reader calls its text)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


class History(tuple[Message, ...]):
    """An immutable message sequence that remembers the sequence it was derived from.

    ``base`` is that sequence and ``shared`` how many leading messages the two have in common
    (the same objects). Counters use it to skip the shared prefix in O(1) instead of
    comparing it, which keeps turn-by-turn counting linear in the conversation's length. Build
    one only through ``of``, ``appended`` and ``replaced``, which guarantee ``shared``.
    """

    base: tuple[Message, ...] | None
    shared: int

    @classmethod
    def _make(cls, items: tuple[Message, ...] | list[Message], base: tuple[Message, ...] | None,
              shared: int) -> History:
        h = super().__new__(cls, items)
        h.base, h.shared = base, shared
        return h

    @classmethod
    def of(cls, items: tuple[Message, ...] | list[Message] = ()) -> History:
        return cls._make(tuple(items), None, 0)

    def appended(self, *messages: Message) -> History:
        return History._make((*self, *messages), self, len(self))

    def replaced(self, index: int, message: Message) -> History:
        """A copy with one message replaced (a reply message that grew, an edit)."""
        i = index % len(self) if self else 0
        items = list(self)
        items[i] = message
        return History._make(items, self, i)

    def truncated(self, start: int) -> History:
        """The messages from ``start`` on (what a compaction keeps); nothing is shared."""
        return History._make(self[start:], self, 0)


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool's schema as the model receives it, kept as its exact JSON text.

    ``json`` is ``json.dumps(schema, ensure_ascii=False)`` with the default separators, which is
    what AgentScope concatenates into its estimate.
    """

    name: str
    json: str

    @classmethod
    def from_dict(cls, schema: Mapping[str, Any]) -> ToolSchema:
        fn = schema.get("function", schema)
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if name is None and schema.get("type") not in (None, "function"):
            # A built-in tool without a name (the Responses API's web_search) is kept under
            # its type, as the Responses wire keeps it.
            name = schema.get("type")
        if not isinstance(name, str):
            raise InputError("a tool schema needs a string 'name' (or 'function.name', or a "
                             "built-in tool's 'type')", field="tools")
        return cls(name, json.dumps(schema, ensure_ascii=False))

    def to_dict(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.json)
        return loaded


def tools_json(tools: tuple[ToolSchema, ...]) -> str:
    """``json.dumps(list_of_schemas, ensure_ascii=False)``, built from the kept texts."""
    return "[" + ", ".join(t.json for t in tools) + "]"


@dataclass(frozen=True, slots=True)
class Request:
    """What a harness sends to the model: the unit the service bills and the fake model reads."""

    system: str
    messages: tuple[Message, ...]
    summary: str = ""
    tools: tuple[ToolSchema, ...] = ()
    output_budget: int | None = None  # None: the service profile's default max output
    session_id: str = ""
    # e.g. ("purpose", "summary"); none of it is read by the model but "response_format", the
    # output format a wire passed on, and "tool_choice", which an API enforces on the model.
    meta: tuple[tuple[str, str], ...] = field(default=())

    def with_meta(self, *items: tuple[str, str]) -> Request:
        """A copy with more metadata (not read by the model, but ``response_format`` and
        ``tool_choice``)."""
        return replace(self, meta=self.meta + items)

    def stated(self, key: str) -> str | None:
        """The meta's value for ``key``: the last one stated (``with_meta`` appends)."""
        out = None
        for k, v in self.meta:
            if k == key:
                out = v
        return out

    def stated_json(self, key: str) -> dict[str, Any] | None:
        """:meth:`stated` read as a JSON object (None when absent, or no JSON object)."""
        raw = self.stated(key)
        try:
            got = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        return got if isinstance(got, dict) else None


@dataclass(frozen=True, slots=True)
class Response:
    """What a harness gets back from a model call: the reply's blocks and the billed usage, as
    a real chat API returns them (never the fake model's annotations)."""

    blocks: tuple[Block, ...]
    input_tokens: int
    output_tokens: int

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolCallBlock))


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What running a tool gives: the result text the model will see, and whether it failed."""

    text: str
    is_error: bool = False


# --- counted texts -------------------------------------------------------------------------

def _part_texts(parts: str | tuple[Part, ...]) -> Iterator[str]:
    if isinstance(parts, str):
        yield parts
    else:
        for p in parts:
            if isinstance(p, TextBlock):
                yield p.text


def _part_data(parts: str | tuple[Part, ...]) -> int:
    return 0 if isinstance(parts, str) else sum(isinstance(p, DataBlock) for p in parts)


def block_texts(block: Block) -> Iterator[str]:
    """The strings of a block that AgentScope's estimator counts (names and ids are not)."""
    if isinstance(block, TextBlock):
        yield block.text
    elif isinstance(block, ThinkingBlock):
        yield block.thinking
    elif isinstance(block, HintBlock):
        yield from _part_texts(block.hint)
    elif isinstance(block, ToolCallBlock):
        yield block.input
    elif isinstance(block, ToolResultBlock):
        yield from _part_texts(block.output)


def block_data_count(block: Block) -> int:
    """Data blocks at top level, inside a tool-result list or inside a hint list."""
    if isinstance(block, DataBlock):
        return 1
    if isinstance(block, HintBlock):
        return _part_data(block.hint)
    if isinstance(block, ToolResultBlock):
        return _part_data(block.output)
    return 0


def message_images(message: Message) -> Iterator[DataBlock]:
    for b in message.content:
        if isinstance(b, DataBlock):
            if b.is_image:
                yield b
        elif isinstance(b, HintBlock | ToolResultBlock):
            parts = b.hint if isinstance(b, HintBlock) else b.output
            if not isinstance(parts, str):
                yield from (p for p in parts if isinstance(p, DataBlock) and p.is_image)


# --- JSON round-trip -------------------------------------------------------------------------

def _parts_to_json(parts: str | tuple[Part, ...]) -> str | list[dict[str, Any]]:
    return parts if isinstance(parts, str) else [block_to_dict(p) for p in parts]


def block_to_dict(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking}
    if isinstance(block, DataBlock):
        return {"type": "data", "media_type": block.media_type, "source": block.source,
                "name": block.name}
    if isinstance(block, HintBlock):
        return {"type": "hint", "hint": _parts_to_json(block.hint), "source": block.source}
    if isinstance(block, ToolCallBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "input": block.input}
    return {"type": "tool_result", "id": block.id, "name": block.name,
            "output": _parts_to_json(block.output), "is_error": block.is_error}


def _req(d: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    v = d.get(key)
    if not isinstance(v, kind):
        raise InputError(f"expected {kind.__name__} '{key}', got {type(v).__name__}", field=where)
    return v


def _parts_from_json(v: Any, where: str) -> str | tuple[Part, ...]:
    if isinstance(v, str):
        return v
    if not isinstance(v, list):
        raise InputError("expected a string or a list of text/data blocks", field=where)
    parts: list[Part] = []
    for i, p in enumerate(v):
        b = block_from_dict(p, f"{where}[{i}]")
        if not isinstance(b, TextBlock | DataBlock):
            raise InputError("only text and data blocks may appear here", field=f"{where}[{i}]")
        parts.append(b)
    return tuple(parts)


def block_from_dict(d: Any, where: str = "block") -> Block:
    if not isinstance(d, Mapping):
        raise InputError("expected an object", field=where)
    t = d.get("type")
    if t == "text":
        return TextBlock(_req(d, "text", str, where))
    if t == "thinking":
        return ThinkingBlock(_req(d, "thinking", str, where))
    if t == "data":
        return DataBlock(_req(d, "media_type", str, where), _req(d, "source", str, where),
                         d.get("name", "") or "")
    if t == "hint":
        return HintBlock(_parts_from_json(d.get("hint"), f"{where}.hint"), d.get("source", "") or "")
    if t == "tool_call":
        return ToolCallBlock(_req(d, "id", str, where), _req(d, "name", str, where),
                             _req(d, "input", str, where))
    if t == "tool_result":
        return ToolResultBlock(_req(d, "id", str, where), _req(d, "name", str, where),
                               _parts_from_json(d.get("output"), f"{where}.output"),
                               bool(d.get("is_error", False)))
    raise InputError(f"unknown block type {t!r}; expected one of text, thinking, data, hint, "
                     "tool_call, tool_result", field=f"{where}.type")


def message_to_dict(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": [block_to_dict(b) for b in m.content]}
    if m.name:
        d["name"] = m.name
    if m.id:
        d["id"] = m.id
    return d


def message_from_dict(d: Any, where: str = "message") -> Message:
    if not isinstance(d, Mapping):
        raise InputError("expected an object", field=where)
    role = d.get("role")
    if role not in ROLES:
        raise InputError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}",
                         field=f"{where}.role")
    content = d.get("content")
    if not isinstance(content, list):
        raise InputError("expected a list of blocks", field=f"{where}.content")
    blocks = tuple(block_from_dict(b, f"{where}.content[{i}]") for i, b in enumerate(content))
    return Message(role, blocks, name=d.get("name", "") or "", id=d.get("id", "") or "")


def request_to_dict(r: Request) -> dict[str, Any]:
    return {
        "system": r.system,
        "summary": r.summary,
        "messages": [message_to_dict(m) for m in r.messages],
        "tools": [t.to_dict() for t in r.tools],
        "output_budget": r.output_budget,
        "session_id": r.session_id,
        "meta": [list(kv) for kv in r.meta],
    }


class Decoded:
    """The message dicts of the last request decoded, and what they decoded to: a request that
    resends them (a wire's whole history, call after call) decodes only what is new. The
    previous dicts are found again where they start over (a compaction keeps the end of them,
    a window slides) by comparing dicts, which runs in C."""

    def __init__(self) -> None:
        self._dicts: list[Any] = []
        self._messages: list[Message] = []

    def messages(self, dicts: list[Any]) -> tuple[Message, ...]:
        old, done = self._dicts, self._messages
        start = 0
        if dicts and old and dicts[0] != old[0]:
            # Where the new request's first message was in the last one, if anywhere.
            start = next((j for j, x in enumerate(old) if x == dicts[0]), len(old))
        out = [done[start + i] if start + i < len(old) and d == old[start + i]
               else message_from_dict(d, f"messages[{i}]") for i, d in enumerate(dicts)]
        self._dicts, self._messages = dicts, out
        return tuple(out)


class Converted:
    """One session's last body on a JSON wire (Chat Completions, Anthropic's Messages) as sent
    and as converted: a harness resends its whole history and its tools with every call, and
    only what changed is converted again. Found by comparing the dicts (which runs in C), not
    by object identity, which a wire does not keep. A message's conversion depends only on
    the messages before it (the names of earlier tool calls), so the run equal to the last
    body's from the first message on is reused whole, and nothing after a change is."""

    def __init__(self) -> None:
        self._raw: list[Any] = []
        self._messages: list[Message] = []
        self._tools_raw: list[Any] | None = None
        self._tools: tuple[ToolSchema, ...] = ()

    def messages(self, raw: list[Any], start: int,
                 convert: Callable[[Any, int, dict[str, str]], Message]) -> list[Message]:
        """``raw[start:]`` converted, ``convert(dict, index, names)`` called only past the
        run shared with the last body (``names``: tool-call ids to names so far). ``start``
        depends only on the first message, so a shared run shares it too."""
        old, same = self._raw, 0
        n = min(len(raw), len(old))
        while same < n and raw[same] == old[same]:
            same += 1
        names: dict[str, str] = {}
        out: list[Message] = []
        for i in range(start, len(raw)):
            if i < same:
                m = self._messages[i - start]
                names.update((c.id, c.name) for c in m.content if isinstance(c, ToolCallBlock))
            else:
                m = convert(raw[i], i, names)
            out.append(m)
        return out

    def tools(self, raw: list[Any]) -> tuple[ToolSchema, ...] | None:
        """The last body's tools if ``raw`` equals them, else None (convert them)."""
        return self._tools if raw == self._tools_raw else None

    def keep(self, raw: list[Any], messages: list[Message], tools_raw: list[Any],
             tools: tuple[ToolSchema, ...]) -> None:
        """Remember a body that converted (a refused one leaves the last as it was)."""
        self._raw, self._messages, self._tools_raw, self._tools = raw, messages, tools_raw, tools


class Sent:
    """The messages and tools of the last requests answered on the bench's own wire, by the
    id each was answered with. A request may name a run of one's messages in its own list
    (``{"same": [N, S, K]}``: request N's K messages from index S) and its tools
    (``"tools": {"same": N}``) instead of sending them again: a long history crosses the wire
    once, not with every call, and so does the part of it a compaction keeps. A few are kept,
    since instances of a program alternating over one session each refer to their own; one no
    longer kept is refused, and the program sends the whole request instead."""

    KEPT = 8

    def __init__(self) -> None:
        self._by_id: dict[int, Request] = {}

    def keep(self, n: int, request: Request) -> None:
        self._by_id[n] = request
        if len(self._by_id) > self.KEPT:
            del self._by_id[next(iter(self._by_id))]

    @staticmethod
    def _ints(v: Any, n: int, where: str) -> list[int]:
        if not isinstance(v, list) or len(v) != n or any(
                not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in v):
            raise InputError(f"expected {n} non-negative integers, got {v!r}", field=where)
        return v

    def _request(self, n: int) -> Request:
        r = self._by_id.get(n)
        if r is None:
            raise UnknownRequest(n)
        return r

    def messages(self, items: list[Any]) -> tuple[Message, ...]:
        """The messages of a request's list of message objects and runs of earlier ones."""
        out: list[Message] = []
        for i, d in enumerate(items):
            where = f"messages[{i}]"
            if isinstance(d, Mapping) and "same" in d:
                n, start, k = self._ints(d["same"], 3, where + ".same")
                base = self._request(n).messages
                if start + k > len(base):
                    raise InputError(f"request {n} had {len(base)} messages, fewer than "
                                     f"{start} + {k}", field=where + ".same")
                out += base[start:start + k]
            else:
                out.append(message_from_dict(d, where))
        return tuple(out)

    def tools(self, d: Mapping[str, Any]) -> tuple[ToolSchema, ...]:
        return self._request(self._ints([d["same"]], 1, "request.tools.same")[0]).tools

    @staticmethod
    def refers(d: Mapping[str, Any]) -> bool:
        """Whether a request's dict names anything of an earlier request."""
        msgs, tools = d.get("messages"), d.get("tools")
        return (isinstance(tools, Mapping) and "same" in tools) or (isinstance(msgs, list) and any(
            isinstance(m, Mapping) and "same" in m for m in msgs))


class UnknownRequest(Exception):
    """A request names an earlier one the bench no longer keeps (:class:`Sent`)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.n = n


def request_from_dict(d: Any, decoded: Decoded | None = None, sent: Sent | None = None
                      ) -> Request:
    """The request of ``d`` (``request_to_dict``'s form); ``decoded`` keeps the messages of
    the last one, for a caller that decodes a stream of them; ``sent`` resolves what it names
    of earlier requests (raising :class:`UnknownRequest` for one no longer kept)."""
    if not isinstance(d, Mapping):
        raise InputError("expected an object", field="request")
    msgs = d.get("messages", [])
    if not isinstance(msgs, list):
        raise InputError("expected a list", field="request.messages")
    budget = d.get("output_budget")
    tools = d.get("tools", []) or []
    named = sent if sent is not None and Sent.refers(d) else None
    return Request(
        system=d.get("system", "") or "",
        summary=d.get("summary", "") or "",
        messages=named.messages(msgs) if named is not None else
        decoded.messages(msgs) if decoded is not None else
        tuple(message_from_dict(m, f"messages[{i}]") for i, m in enumerate(msgs)),
        tools=named.tools(tools) if named is not None and isinstance(tools, Mapping)
        else tuple(ToolSchema.from_dict(t) for t in tools),
        output_budget=int(budget) if budget is not None else None,
        session_id=d.get("session_id", "") or "",
        meta=tuple((str(k), str(v)) for k, v in d.get("meta", []) or []),
    )


def _canonical_encoder() -> Callable[[Any], str]:
    # ``json.dumps`` with these options builds an encoder on every call (about half of its
    # cost for a message); the C encoder ``JSONEncoder.iterencode`` makes is made once here.
    # No circular check: the bench's JSON data is trees. Where the C encoder is missing or
    # disagrees with ``json.dumps`` on a probe, ``JSONEncoder.encode`` (identical output).
    enc = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return enc.encode
    try:
        c = make(None, enc.default, json.encoder.encode_basestring, None, ":", ",",
                 True, False, True)
    except TypeError:
        return enc.encode

    def encode(obj: Any) -> str:
        return "".join(c(obj, 0))

    probe = {"b": [1, 2.5, -0.0, 1e16, None, True, "é\"\n\u2028"], "a": {"z": "中文", "y": []}}
    return encode if encode(probe) == enc.encode(probe) and encode("x") == '"x"' else enc.encode


canonical_json: Callable[[Any], str] = _canonical_encoder()
"""``json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``: the
record's JSON and every hash made of it."""


def dumps(obj: Message | Request) -> str:
    """Canonical JSON text of a message or request (sorted keys, no ASCII escaping)."""
    d = message_to_dict(obj) if isinstance(obj, Message) else request_to_dict(obj)
    return canonical_json(d)


# JSON's ``\uXXXX`` escapes of non-ASCII text, as ``json.dumps`` writes it by default
# (``ensure_ascii``): a harness that serialises a message or its state as JSON sends
# "\u8ba2\u5355", which a model reads as 订单: the fake model's reading and the leak checks do
# too. Also escaped again
# (JSON in a JSON string). ASCII escapes are left as written, so JSON stays JSON.
_ESCAPE_RE = re.compile(r"\\+u(?:([dD][89abAB][0-9a-fA-F]{2})\\+u([dD][c-fC-F][0-9a-fA-F]{2})"
                        r"|([0-9a-fA-F]{4}))")


def _unescape(m: re.Match[str]) -> str:
    if m.group(1):
        return chr(0x10000 + ((int(m.group(1), 16) - 0xD800) << 10) + int(m.group(2), 16) - 0xDC00)
    cp = int(m.group(3), 16)
    return chr(cp) if cp >= 0x80 and not 0xD800 <= cp < 0xE000 else m.group(0)


# HTML's character references, as a template engine that escapes its variables writes them
# (Semantic Kernel encodes the values it renders into a prompt; Handlebars and autoescaping
# Jinja do the same): "&lt;current-time&gt;", "Where&#x27;s". Read as the characters.
_ENTITY_RE = re.compile(r"&(?:(lt|gt|amp|quot|apos)|#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6}));")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _entity(m: re.Match[str]) -> str:
    if m.group(1):
        return _ENTITIES[m.group(1)]
    cp = int(m.group(2)) if m.group(2) else int(m.group(3), 16)
    return chr(cp) if 0x20 <= cp <= 0x10FFFF and not 0xD800 <= cp < 0xE000 else m.group(0)


def readable(text: str) -> str:
    """``text`` as a model reads it: JSON's escapes of non-ASCII characters and HTML's
    character references decoded."""
    if "\\u" in text:
        text = _ESCAPE_RE.sub(_unescape, text)
    if "&" in text:
        text = _ENTITY_RE.sub(_entity, text)
    return text
