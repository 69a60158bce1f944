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
from typing import IO, Any

from harnesslab.bench.kinds import script_kind
from harnesslab.errors import InputError
from harnesslab.messages import (
    Message,
    Request,
    ToolSchema,
    block_texts,
    block_to_dict,
    message_from_dict,
    message_images,
    message_to_dict,
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
        low = text.lower()
        # Ids as the fake model reads them (anchored: PO-7731 shows no O-7731).
        found = {m.group(0) for p in ID_PATTERNS.values() for m in p.finditer(text)}
        return {
            "ids": [i for i in self.ids if i in found],
            "constraints": [c for c, ps in self.constraints.items()
                            if f"[constraint:{c}]" in text or any(p.lower() in low for p in ps)],
            "claims": [c for c, ts in self.claims.items()
                       if f"[claim:{c}" in text or any(t in text for t in ts)],
        }


class RecordWriter:
    """An event sink that writes the record as it goes and keeps it in memory."""

    def __init__(self, header: dict[str, Any], declared: Declared,
                 path: Path | None = None) -> None:
        self.declared = declared
        self.step = 0
        self.record = Record({"type": "header", "version": RECORD_VERSION, **header}, [], {})
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("w", encoding="utf-8")
            self._file.write(_dumps(self.record.header) + "\n")
        self._msg: dict[int, tuple[Message, str, str, str]] = {}  # id -> (msg, hash, json, text)
        self._str: dict[str, str] = {}                            # text -> hash

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def flush(self) -> None:
        """Push what is written to the file (a live record, e.g. a serve session's)."""
        if self._file is not None:
            self._file.flush()

    def _write(self, line: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(_dumps(line) + "\n")

    def _blob(self, kind: str, h: str, data: Any) -> None:
        self.record.blobs[h] = data
        self._write({"type": "blob", "kind": kind, "hash": h, "data": data})

    def _message(self, m: Message) -> tuple[str, str, str]:
        hit = self._msg.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1], hit[2], hit[3]
        d = message_to_dict(m)
        js = _dumps(d)
        h = "m" + _h(js)
        if h not in self.record.blobs:
            self._blob("message", h, d)
        text = message_text(m)
        self._msg[id(m)] = (m, h, js, text)
        return h, js, text

    def _text(self, kind: str, s: str) -> str:
        h = self._str.get(s)
        if h is None:
            h = self._str[s] = kind[0] + _h(s)
            if h not in self.record.blobs:
                self._blob(kind, h, s)
        return h

    def _tools(self, tools: tuple[ToolSchema, ...]) -> str:
        joined = "\x00".join(t.json for t in tools)
        h = self._str.get(joined)
        if h is None:
            h = self._str[joined] = "t" + _h(joined)
            if h not in self.record.blobs:
                # The exact schema texts: key order is part of what the model and the
                # tokenizer see, and the record's own JSON would sort it.
                self._blob("tools", h, [[t.name, t.json] for t in tools])
        return h

    def request_ref(self, r: Request) -> tuple[dict[str, Any], str]:
        """The stored form of a request, and the serialised text its facts are found in."""
        parts = [self._message(m) for m in r.messages]
        tools = [t.to_dict() for t in r.tools]
        # The canonical JSON of harnesslab.messages.dumps, built from the cached parts.
        canonical = ('{"messages":[' + ",".join(p[1] for p in parts) + '],"meta":'
                     + _dumps([list(kv) for kv in r.meta]) + ',"output_budget":'
                     + _dumps(r.output_budget) + ',"session_id":' + _dumps(r.session_id)
                     + ',"summary":' + _dumps(r.summary) + ',"system":' + _dumps(r.system)
                     + ',"tools":' + _dumps(tools) + "}")
        sha = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        ref = {"system": self._text("system", r.system), "summary": self._text("summary", r.summary),
               "messages": [p[0] for p in parts], "tools": self._tools(r.tools),
               "output_budget": r.output_budget, "session_id": r.session_id,
               "meta": [list(kv) for kv in r.meta], "sha256": sha}
        text = serialized_text(r.system, r.summary, (p[2] for p in parts))
        # The record asks for this text again (leaks, containment): it is already built.
        self.record._texts[sha] = text
        return ref, text

    def emit(self, event: dict[str, Any]) -> None:
        e = dict(event)
        e.setdefault("step", self.step)
        req = e.get("request")
        if isinstance(req, Request):
            ref, text = self.request_ref(req)
            e["request"] = ref
            if e["type"] in CALL_EVENTS:
                e["present"] = self.declared.present(text)
                e["kind"] = content_kind(text)
                e["images"] = sum(1 for m in req.messages for _ in message_images(m))
        if "reply" in e and isinstance(e["reply"], tuple):
            e["reply"] = [block_to_dict(b) for b in e["reply"]]
        self.record.events.append(e)
        self._write(e)


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
        """The counted texts of a stored request (system, summary, every block), built once
        per request: leak, presence and containment questions all read it."""
        text = self._texts.get(ref["sha256"])
        if text is None:
            r = self.request(ref)
            text = self._texts[ref["sha256"]] = serialized_text(
                r.system, r.summary, (message_text(m) for m in r.messages))
        return text

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
