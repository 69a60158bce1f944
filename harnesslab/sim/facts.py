"""Facts as the fake model reads them: a tool result or a ``[fact:...]`` tag, what it is about,
when it was true, whether it failed and why, and what it says about orders and their items.

A tool result is read as JSON; one that is not (a harness cut it) is read by its leading
scalar pairs, and marked partial.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from harnesslab.messages import ToolResultBlock, block_texts
from harnesslab.sim.intents import ID_PATTERNS, Slot, ToolError, parse_time

# The field of a tool result that names what the fact is about.
FACT_KEYS: dict[str, str] = {"track_order": "order_id", "get_logistics_trace": "order_id",
                             "get_user_profile": "user_id", "search_kb": "topic",
                             "list_orders": "user_id", "get_order": "order_id"}


@dataclass(frozen=True)
class Vocab:
    """What a reader recognises of a world: each entity type's id pattern, per tool the
    result field naming what a fact is about, and per such field its entity type. The bundled
    world's is ``COMMERCE``; a declared domain's is ``sim.domain.Domain.vocab``."""

    patterns: Mapping[str, re.Pattern[str]]
    keys: Mapping[str, str]
    key_types: Mapping[str, str]
    lists: frozenset[tuple[str, str]] = frozenset()  # (tool, entity type it lists)
    # Per tool, the fields a summary's fact tag keeps (the bundled world's: summarizer's own).
    tag_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # A declared domain's answers in the fake model's own words, read back as facts (the
    # bundled world's are sim.prose's): (tool, pattern with groups id and value, field).
    prose: tuple[tuple[str, re.Pattern[str], str], ...] = ()


COMMERCE = Vocab(ID_PATTERNS, FACT_KEYS, {"order_id": Slot.ORDER, "user_id": Slot.USER})
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

    ``fields`` are its scalar fields as text; lists become text too: ``items`` joined by ``+``,
    ``orders`` (an order list) as ``O-2001:skateboard+pads,O-2002:headphones`` (the form a
    summary's tag carries), ``events`` as their count. A result that is not JSON (cut by a
    harness) has ``truncated=true``: what it shows is only part of what the tool returned.
    """

    tool: str
    key: str | None          # order_id / user_id / topic it is about
    asked: str | None        # the key its tool call asked for (tool results only)
    as_of: datetime | None
    fields: Mapping[str, str]
    error: bool
    position: int
    source: Literal["tool_result", "tag", "prose"]

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
        """A declared domain's list result: the ids it lists, in order."""
        raw = self.fields.get("entries", "")
        return tuple(p for p in raw.split(",") if p)

    def rows(self) -> list[dict[str, Any]]:
        """A declared domain's list result: its entries as the tool gave them (none when cut
        or read from a tag, which keeps only the ids)."""
        try:
            rows = json.loads(self.fields.get("rows", "[]"))
        except json.JSONDecodeError:
            return []
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    @property
    def entries(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """An order list's entries in order, each (order id, items)."""
        out = []
        for part in self.fields.get("orders", "").split(","):
            oid, _, items = part.partition(":")
            if ID_PATTERNS[Slot.ORDER].fullmatch(oid):
                out.append((oid, tuple(i for i in items.split("+") if i)))
        return tuple(out)

    def items_of(self) -> list[tuple[str, tuple[str, ...]]]:
        """What this fact says orders hold: its list's entries, or its own order's items."""
        if "orders" in self.fields:
            return list(self.entries)
        if self.key and "items" in self.fields:
            return [(self.key, tuple(i for i in self.fields["items"].split("+") if i))]
        return []

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


def _orders_text(orders: list[Any]) -> str:
    out = []
    for o in orders:
        if isinstance(o, dict) and isinstance(o.get("order_id"), str):
            items = o.get("items")
            items = items if isinstance(items, list) else []
            out.append(o["order_id"] + ":" + "+".join(item_name(str(i)) for i in items))
    return ",".join(out)


def _result_fields(text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        fields = {k: s for k, v in data.items() if (s := _scalar(v)) is not None}
        if isinstance(data.get("events"), list):
            fields["events"] = str(len(data["events"]))
        if isinstance(data.get("items"), list):
            fields["items"] = "+".join(item_name(str(i)) for i in data["items"])
        if isinstance(data.get("orders"), list):
            fields["orders"] = _orders_text(data["orders"])
        if isinstance(data.get("entries"), list):
            # A declared domain's list: each entry opens with the key naming it.
            rows = [e for e in data["entries"] if isinstance(e, dict) and e]
            fields["entries"] = ",".join(str(next(iter(e.values()))) for e in rows)
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
    _, sep, tail = text.partition('"events"')
    if sep:
        fields["events"] = str(len(_EVENT_RE.findall(tail)))
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


def result_reading(result: ToolResultBlock) -> tuple[str, dict[str, str]]:
    """A tool result's text and its fields: what does not depend on the call it answers (the
    part a reader can keep while the result is in the context)."""
    text = "\n".join(block_texts(result))
    return text, _result_fields(text)


def result_fact(result: ToolResultBlock, args: Mapping[str, Any], position: int,
                reading: tuple[str, Mapping[str, str]] | None = None,
                vocab: Vocab = COMMERCE) -> Fact:
    """A tool result as a fact; ``args`` are its call's arguments (empty when not visible);
    ``reading`` its ``result_reading`` when already done."""
    text, fields = reading or result_reading(result)
    tool = fields.get("tool") or result.name
    return Fact(tool, _key_of(tool, fields, args, text, vocab), _asked(tool, args, vocab),
                parse_time(fields.get("as_of", "")), fields,
                result.is_error or "error" in fields, position, "tool_result")


def tag_fact(body: str, position: int, vocab: Vocab = COMMERCE) -> Fact:
    """A ``[fact:<tool> k=v ...]`` tag's body as a fact."""
    tool, _, rest = body.strip().partition(" ")
    fields = dict(_TAG_PAIR_RE.findall(rest))
    return Fact(tool, _key_of(tool, fields, {}, "", vocab), None, parse_time(fields.get("as_of", "")),
                fields, "error" in fields, position, "tag")
