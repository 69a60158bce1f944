"""The run record: one versioned JSONL file per run, enough to rebuild every request byte for
byte. Everything downstream (checks, metrics, reports, ``harnesslab show``) reads it.

Layout: a ``header`` line (version, scenario, variant, seed, settings, declared facts, world
max ages), then events in order. Messages, system prompts, summaries and tool lists are
stored once as ``blob`` lines keyed by content hash; a request refers to them, with the
sha256 of its canonical JSON (``harnesslab.messages.dumps``) so a rebuild can be verified.
Each model call also lists which declared facts (ids, constraints, claims) its request shows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.bench.kinds import script_kind
from harnesslab.errors import InputError
from harnesslab.messages import (
    Message,
    Request,
    ToolSchema,
    block_texts,
    message_from_dict,
)
from harnesslab.sim.intents import ID_PATTERNS

RECORD_VERSION = 1
# The events of a model call: answered, rejected as too long, rejected as a protocol error.
CALL_EVENTS = ("model_call", "overflow", "protocol_error")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def message_text(m: Message) -> str:
    return "\n".join(t for b in m.content for t in block_texts(b))


def serialized_text(system: str, summary: str, message_texts: Iterable[str]) -> str:
    """The counted texts of a request, in order: what presence, leak and containment checks
    search. Built from per-message texts so a writer can reuse the ones it has cached."""
    return "\n".join([system, summary, *message_texts])


@dataclass
class Declared:
    """The facts a scenario declares, whose presence in each request is recorded."""

    ids: list[str] = field(default_factory=list)
    constraints: dict[str, list[str]] = field(default_factory=dict)  # name -> phrases
    claims: dict[str, list[str]] = field(default_factory=dict)       # "identity=U-2" -> texts

    def present(self, text: str) -> dict[str, list[str]]:
        return self.listed(self.found(text))

    def found(self, text: str) -> frozenset[tuple[str, str]]:
        """The declared facts ``text`` shows, as (field, name) pairs. When ``splittable``, the
        facts of texts joined by ``"\n"`` are the union of each one's."""
        low = text.lower()
        # Ids as the fake model reads them (anchored: PO-7731 shows no O-7731; the anchors see
        # a line feed as they see a text's edge).
        ids = {m.group(0) for p in ID_PATTERNS.values() for m in p.finditer(text)}
        return frozenset(
            [("ids", i) for i in self.ids if i in ids]
            + [("constraints", c) for c, ps in self.constraints.items()
               if f"[constraint:{c}]" in text or any(p.lower() in low for p in ps)]
            + [("claims", c) for c, ts in self.claims.items()
               if f"[claim:{c}" in text or any(t in text for t in ts)])

    def listed(self, found: frozenset[tuple[str, str]]) -> dict[str, list[str]]:
        """``found`` as the record lists it: per field, in the declared order."""
        return {"ids": [i for i in self.ids if ("ids", i) in found],
                "constraints": [c for c in self.constraints if ("constraints", c) in found],
                "claims": [c for c in self.claims if ("claims", c) in found]}

    @property
    def splittable(self) -> bool:
        """No phrase or claim text holds a line feed (so none spans two joined texts)."""
        return not any("\n" in t for ts in (*self.constraints.values(), *self.claims.values())
                       for t in ts) and not any("\n" in c for c in (*self.constraints, *self.claims))


def content_kind(text: str) -> str:
    """The request's content kind for estimate-error breakdowns: zh, en or mixed by its script
    (harnesslab.bench.kinds.script_kind), or json when it is mostly JSON punctuation."""
    braces = sum(text.count(c) for c in '{}":')
    return "json" if braces * 8 > len(text) else script_kind(text)


@dataclass
class Record:
    header: dict[str, Any]
    events: list[dict[str, Any]]
    blobs: dict[str, Any]
    _messages: dict[str, Message] = field(default_factory=dict)
    _texts: dict[str, str] = field(default_factory=dict)
    _shows: dict[tuple[str, ...], dict[str, frozenset[str]]] = field(default_factory=dict)
    _by_step: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    _indexed: int = 0  # how many events _by_step covers (the writer keeps appending)

    def of_type(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] in kinds]

    def in_step(self, step: int, *kinds: str) -> list[dict[str, Any]]:
        """The events of one step, of the given types: checks and metrics ask this per turn,
        so the events are indexed by step once instead of scanned for every question."""
        for e in self.events[self._indexed:]:
            self._by_step.setdefault(e.get("step", 0), []).append(e)
        self._indexed = len(self.events)
        return [e for e in self._by_step.get(step, []) if e["type"] in kinds]

    def request_text(self, ref: Mapping[str, Any]) -> str:
        """The counted texts of a stored request (system, summary, every block). The last few
        are kept (a turn's leak and containment checks ask for the same ones), not every
        request's: that would grow with the run."""
        text = self._texts.get(ref["sha256"])
        if text is None:
            r = self.request(ref)
            if len(self._texts) >= 8:
                self._texts.clear()
            text = self._texts[ref["sha256"]] = serialized_text(
                r.system, r.summary, (message_text(m) for m in r.messages))
        return text

    def shows(self, ref: Mapping[str, Any], values: tuple[str, ...]) -> frozenset[str]:
        """Which of ``values`` the counted texts of a stored request contain. Read message by
        message (a value without a line feed cannot span two of them), and remembered per
        message, not per request: leak checks ask this of every call."""
        if any("\n" in v for v in values):
            text = self.request_text(ref)
            return frozenset(v for v in values if v in text)
        seen = self._shows.setdefault(values, {})
        out: set[str] = set()
        for h in (ref["system"], ref["summary"], *ref["messages"]):
            f = seen.get(h)
            if f is None:
                data = self.blobs[h]
                text = data if isinstance(data, str) else message_text(message_from_dict(data))
                f = seen[h] = frozenset(v for v in values if v in text)
            out |= f
        return frozenset(out)

    def message(self, h: str) -> Message:
        m = self._messages.get(h)
        if m is None:
            m = self._messages[h] = message_from_dict(self.blobs[h])
        return m

    def request(self, ref: Mapping[str, Any]) -> Request:
        """Rebuild a request exactly as the service saw it."""
        return Request(
            system=self.blobs[ref["system"]], summary=self.blobs[ref["summary"]],
            messages=tuple(self.message(h) for h in ref["messages"]),
            tools=tuple(ToolSchema(name, text) for name, text in self.blobs[ref["tools"]]),
            output_budget=ref["output_budget"], session_id=ref["session_id"],
            meta=tuple((str(k), str(v)) for k, v in ref["meta"]))

    def call(self, n: int) -> dict[str, Any]:
        for e in self.events:
            if e["type"] in CALL_EVENTS and e.get("call") == n:
                return e
        raise InputError(f"no model call {n} in this record (it has "
                         f"{len(self.of_type(*CALL_EVENTS))})", field="--call")

    @classmethod
    def load(cls, path: str | Path) -> Record:
        """Read a record file; a bad one gives one line naming the file and line."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=str(p)) from None
        except UnicodeDecodeError:
            raise InputError("not a harnesslab record (not UTF-8 text)", file=str(p)) from None
        lines = text.splitlines()
        last = len(lines)
        header: dict[str, Any] | None = None
        events: list[dict[str, Any]] = []
        blobs: dict[str, Any] = {}
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                if n == last and not text.endswith("\n"):
                    raise InputError("truncated record: the last line is incomplete (the run was "
                                     "stopped while writing it); every line before it is intact",
                                     file=str(p), line=n) from None
                raise InputError(f"invalid JSON at column {e.colno}: {e.msg}", file=str(p),
                                 line=n) from None
            if not isinstance(obj, dict) or "type" not in obj:
                raise InputError("expected an event object with a 'type'", file=str(p), line=n)
            if header is None:
                if obj["type"] != "header":
                    raise InputError("not a harnesslab record: the first line is not a header",
                                     file=str(p), line=n)
                version = obj.get("version")
                if version != RECORD_VERSION:
                    raise InputError(f"record version {version!r} is not supported (this "
                                     f"harnesslab reads version {RECORD_VERSION})",
                                     file=str(p), line=n, field="version")
                header = obj
            elif obj["type"] == "blob":
                blobs[obj["hash"]] = obj["data"]
            else:
                events.append(obj)
        if header is None:
            raise InputError("empty record", file=str(p))
        return cls(header, events, blobs)
