"""Facts as the fake model reads them: a tool result or a ``[fact:...]`` tag, what it is about,
when it was true, whether it failed and why, and what it says about orders and their items.

A tool result is read as JSON; one that is not (a harness cut it) is read by its leading
scalar pairs, and marked partial.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from harnesslab.messages import ToolResultBlock, block_texts
from harnesslab.sim.intents import ToolError, parse_time
from harnesslab.sim.vocab import ListShape, Vocab, bundled

# How an error that states no code is read, by its wording (a harness's own refusal has none).
_ERROR_WORDS: tuple[tuple[ToolError, re.Pattern[str]], ...] = (
    (ToolError.UNAVAILABLE, re.compile(r"unavailable|time[sd]? ?out|try again|暂时|稍后", re.I)),
    (ToolError.FORBIDDEN, re.compile(r"not the acting user|does not belong|does not match|"
                                     r"forbidden|not allowed|permission|not accessible|无权", re.I)),
    (ToolError.NOT_FOUND, re.compile(r"\bno (order|policy|such)\b|not found|unknown|"
                                     r"found nothing|不存在|未找到", re.I)),
)

# A truncated tool result is no longer JSON; its leading scalar pairs still are, and our tools
# put tool, as_of and the key first so that head truncation keeps them.
_PAIR_RE = re.compile(r'"([A-Za-z_]\w*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)')
_EVENT_RE = re.compile(r'"at"\s*:')
_TAG_PAIR_RE = re.compile(r"(\w+)=(\S+)")
_ERROR_CODES = frozenset(k.value for k in ToolError)


@dataclass(frozen=True)
class Fact:
    """A visible fact: a tool result, a ``[fact:...]`` tag, or (read by the summarizer only)
    an answer's prose in the fake model's own wording (``harnesslab.sim.prose``).

    ``fields`` are its scalar fields as text; lists become text too: a list of values joined
    by ``+`` (``items``), a list tool's entries as ``O-2001:skateboard+pads,O-2002:headphones``
    (each id with its list field's values: the form a summary's tag carries), a generated
    history (``events``) as its count. A result that is not JSON (cut by a harness) has
    ``truncated=true``: what it shows is only part of what the tool returned. ``entries``: a
    list result's, each (id, its list field's values), in order.
    """

    tool: str
    key: str | None          # order_id / user_id / topic it is about
    asked: str | None        # the key its tool call asked for (tool results only)
    as_of: datetime | None
    fields: Mapping[str, str]
    error: bool
    position: int
    source: Literal["tool_result", "tag", "prose"]
    entries: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def partial(self) -> bool:
        return self.fields.get("truncated") == "true"

    @property
    def error_kind(self) -> ToolError | None:
        """Why the tool failed: its code, else its wording; None for a fact or an error that
        says neither."""
        if not self.error:
            return None
        code = self.fields.get("code", "")
        if code in _ERROR_CODES:
            return ToolError(code)
        text = self.fields.get("error", "")
        return next((kind for kind, pat in _ERROR_WORDS if pat.search(text)), None)

    @property
    def listed(self) -> tuple[str, ...]:
        """A list result's ids, in order."""
        return tuple(i for i, _ in self.entries)

    def rows(self) -> list[dict[str, Any]]:
        """A list result's entries as the tool gave them (none when cut or read from a tag or
        an answer, which keep only the ids)."""
        try:
            rows = json.loads(self.fields.get("rows", "[]"))
        except json.JSONDecodeError:
            return []
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "key": self.key,
                "as_of": self.as_of.isoformat() if self.as_of else None,
                "position": self.position, "error": self.error}


def _scalar(v: Any) -> str | None:
    if v is None or isinstance(v, dict | list):
        return None
    return str(v).lower() if isinstance(v, bool) else str(v)


def item_name(name: str) -> str:
    """An item name as a summary tag writes it and as references compare it."""
    return re.sub(r"\s+", "_", name.strip()).casefold()


def _entries_text(rows: list[Any], shape: ListShape) -> str:
    """A list tool's entries as a summary's tag carries them: each id, with ``:`` and its list
    field's values joined by ``+`` when the entries have one."""
    out = []
    for o in rows:
        if isinstance(o, dict) and isinstance(o.get(shape.id_field), str):
            if shape.list_field is None:
                out.append(o[shape.id_field])
                continue
            items = o.get(shape.list_field)
            items = items if isinstance(items, list) else []
            out.append(o[shape.id_field] + ":" + "+".join(item_name(str(i)) for i in items))
    return ",".join(out)


def entries_of(encoded: str, pattern: re.Pattern[str] | None) -> tuple[
        tuple[str, tuple[str, ...]], ...]:
    """``_entries_text``'s form read back: (id, values) per entry whose id ``pattern`` matches
    whole."""
    out = []
    for part in encoded.split(","):
        oid, _, items = part.partition(":")
        if oid and (pattern is None or pattern.fullmatch(oid)):
            out.append((oid, tuple(i for i in items.split("+") if i)))
    return tuple(out)


def _scalars(v: list[Any]) -> bool:
    return all(isinstance(i, str | int | float) and not isinstance(i, bool) for i in v)


def _unwrapped(data: Any) -> Any:
    """A result a framework wrapped whole under one key (Google ADK returns a tool's string
    as ``{"result": "<the tool's JSON>"}``): the bench's result inside, as a model reads it."""
    if isinstance(data, dict) and len(data) == 1 and "tool" not in data:
        (inner,) = data.values()
        if isinstance(inner, str) and inner.lstrip().startswith("{"):
            try:
                inner = json.loads(inner)
            except json.JSONDecodeError:
                return data
        if isinstance(inner, dict) and isinstance(inner.get("tool"), str):
            return inner
    return data


def _python_literal(text: str) -> Any:
    """A result a harness wrote with Python's ``str()`` of the parsed object (LlamaIndex's
    ``ToolOutput`` content, a harness that parsed the JSON and formats the dict): single quotes,
    ``True``/``None``. A model reads it as it reads the JSON; ``ast.literal_eval`` evaluates
    literals only. None when it is no such literal."""
    s = text.strip()
    if not s or s[0] not in "{[" or len(s) > _LITERAL_MAX:
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


_LITERAL_MAX = 1 << 20  # longer is no tool result a harness reformatted, and costly to parse


# A tool result quoted as text (a summary prompt that renders the transcript, a memory block):
# the bench's tools write their results as JSON objects that open with "tool".
_QUOTED_RESULT_RE = re.compile(r'\{\s*"tool"\s*:\s*"')
# One quoted inside a JSON string (a framework that serialises its whole trajectory as JSON,
# DSPy's ReAct history; MCP's content parts dumped as JSON): its quotes escaped, the rest of
# the string after it.
_ESCAPED_RESULT_RE = re.compile(r'\{\s*\\"tool\\"\s*:\s*\\"((?:[^"\\]|\\.)*)')
_DECODER = json.JSONDecoder()


def quoted_objects(text: str) -> list[tuple[int, str, Any]]:
    """The JSON objects opening with "tool" that ``text`` quotes whole (a cut one is not
    read), as written or escaped inside a JSON string: each one's start, its JSON text and
    its object."""
    found: list[tuple[int, str, Any]] = []
    if '"tool"' in text:
        for m in _QUOTED_RESULT_RE.finditer(text):
            try:
                data, end = _DECODER.raw_decode(text, m.start())
            except ValueError:
                continue
            found.append((m.start(), text[m.start():end], data))
    if '\\"tool\\"' in text:
        for m in _ESCAPED_RESULT_RE.finditer(text):
            try:
                inner = json.loads('"' + text[m.start():m.end()] + '"')
                data, end = _DECODER.raw_decode(inner)
            except ValueError:
                continue
            found.append((m.start(), inner[:end], data))
    return found


def result_object(text: str) -> Any:
    """A tool result's text as the object a model reads in it: JSON, or the Python literal a
    harness wrote of it, unwrapped from a framework's one-key wrapper; else the bench's result
    the text quotes whole (MCP's content parts or whole ``CallToolResult`` dumped as JSON or
    with ``str()``, a prefix such as ``Observation:``); the object itself when it quotes none,
    None when it is no object (a cut or prose result)."""
    try:
        data = _unwrapped(json.loads(text))
    except json.JSONDecodeError:
        data = _unwrapped(_python_literal(text))
    if isinstance(data, dict) and isinstance(data.get("tool"), str):
        return data
    if isinstance(data, dict) and isinstance(sc := data.get("structuredContent"), dict) \
            and isinstance(sc.get("tool"), str):
        return sc  # MCP's structured content
    quoted = [d for _, _, d in sorted(quoted_objects(text), key=lambda f: f[0])
              if isinstance(d, dict) and isinstance(d.get("tool"), str)]
    return quoted[0] if quoted else data


def _result_fields(text: str, vocab: Vocab) -> dict[str, str]:
    data = result_object(text)
    if isinstance(data, dict):
        fields = {k: s for k, v in data.items() if (s := _scalar(v)) is not None}
        for k, v in data.items():
            if isinstance(v, list) and k in vocab.histories:
                fields[k] = str(len(v))
        for k, v in data.items():
            if isinstance(v, list) and k not in vocab.histories and v and _scalars(v):
                fields[k] = "+".join(item_name(str(i)) for i in v)
            elif isinstance(v, list) and k not in vocab.histories and not v:
                fields.setdefault(k, "")
        for shape in vocab.lists.values():
            rows = data.get(shape.key)
            if isinstance(rows, list):
                fields[shape.key] = _entries_text(rows, shape)
                fields["rows"] = json.dumps(rows, ensure_ascii=False)
        return fields
    fields = {"truncated": "true"}
    for m in _PAIR_RE.finditer(text):
        if m.group(1) in fields:  # the first occurrence is the top-level one (or our mark)
            continue
        try:
            s = _scalar(json.loads(m.group(2)))
        except json.JSONDecodeError:  # a bad escape cut in half
            continue
        if s is not None:
            fields[m.group(1)] = s
    for h in sorted(vocab.histories):
        _, sep, tail = text.partition(f'"{h}"')
        if sep:
            fields[h] = str(len(_EVENT_RE.findall(tail)))
    return fields


def _key_names(tool: str, vocab: Vocab) -> tuple[str, ...]:
    name = vocab.keys.get(tool)
    return (name,) if name else tuple(dict.fromkeys(vocab.keys.values()))


def _asked(tool: str, args: Mapping[str, Any], vocab: Vocab) -> str | None:
    for n in _key_names(tool, vocab):
        if isinstance(args.get(n), str) and args[n]:
            return str(args[n])
    return None


def _key_of(tool: str, fields: Mapping[str, str], args: Mapping[str, Any], text: str,
            vocab: Vocab) -> str | None:
    for n in _key_names(tool, vocab):
        if fields.get(n):
            return fields[n]
    if (asked := _asked(tool, args, vocab)) is not None:
        return asked
    name = vocab.keys.get(tool)
    # An error result names no key field; its message usually names the id.
    slot = vocab.key_types.get(name or "")
    m = vocab.patterns[slot].search(text) if slot else None
    return m.group(0) if m else None


def result_reading(result: ToolResultBlock, vocab: Vocab | None = None
                   ) -> tuple[str, dict[str, str]]:
    """A tool result's text and its fields: what does not depend on the call it answers (the
    part a reader can keep while the result is in the context). ``vocab``: the world's (the
    bundled one's by default)."""
    text = "\n".join(block_texts(result))
    return text, _result_fields(text, vocab or bundled())


def listing(tool: str, fields: Mapping[str, str], vocab: Vocab) -> tuple[
        tuple[str, tuple[str, ...]], ...]:
    """The entries a list tool's fact states (none for another tool's)."""
    shape = vocab.lists.get(tool)
    if shape is None or shape.key not in fields:
        return ()
    return entries_of(fields[shape.key], vocab.patterns.get(shape.etype))


def result_fact(result: ToolResultBlock, args: Mapping[str, Any], position: int,
                reading: tuple[str, Mapping[str, str]] | None = None,
                vocab: Vocab | None = None) -> Fact:
    """A tool result as a fact; ``args`` are its call's arguments (empty when not visible);
    ``reading`` its ``result_reading`` when already done."""
    vocab = vocab or bundled()
    text, fields = reading or result_reading(result, vocab)
    tool = fields.get("tool") or result.name
    return Fact(tool, _key_of(tool, fields, args, text, vocab), _asked(tool, args, vocab),
                parse_time(fields.get("as_of", "")), fields,
                result.is_error or "error" in fields, position, "tool_result",
                listing(tool, fields, vocab))


def tag_fact(body: str, position: int, vocab: Vocab | None = None) -> Fact:
    """A ``[fact:<tool> k=v ...]`` tag's body as a fact."""
    vocab = vocab or bundled()
    tool, _, rest = body.strip().partition(" ")
    fields = dict(_TAG_PAIR_RE.findall(rest))
    return Fact(tool, _key_of(tool, fields, {}, "", vocab), None,
                parse_time(fields.get("as_of", "")), fields, "error" in fields, position, "tag",
                listing(tool, fields, vocab))
