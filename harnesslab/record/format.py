"""The run record: one versioned JSONL file per run, enough to rebuild every request byte for
byte. Everything downstream (checks, metrics, reports, ``harnesslab show``) reads it.

Layout: a ``header`` line (version, scenario, variant, seed, settings, declared facts, world
max ages), then events in order. Messages, system prompts, summaries and tool lists are
stored once as ``blob`` lines keyed by content hash; a request refers to them, with the
sha256 of its canonical JSON (``harnesslab.messages.dumps``) so a rebuild can be verified.
Each model call also lists which declared facts (ids, constraints, claims) its request shows.

Version 2 is written compactly; in memory (and as ``Record.load`` returns it) it reads as
version 1 with two more request fields. A message is a ``message`` line holding only its data:
its hash is ``"m"`` and the first 20 hex digits of the sha256 of its canonical JSON. Requests
are numbered (``n``, from 1, in record order) and store their messages against the previous
request's: ``keep`` (how many of its leading message hashes stay) and ``add`` (the hashes that
follow), written ``new: N`` when they are the N messages written since the previous request,
in order (the usual case); every ``FULL_EVERY``-th request and any that keeps nothing list
``messages`` in full, as version 1 did for all. Version 1 is still read. A record may be
gzip-compressed (``.jsonl.gz``): it is read the same.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError
from harnesslab.messages import (
    Message,
    Request,
    ToolResultBlock,
    ToolSchema,
    block_texts,
    canonical_json,
    message_from_dict,
    readable,
)
from harnesslab.sim.facts import result_object
from harnesslab.sim.intents import ID_PATTERNS, is_example
from harnesslab.tokens.kinds import script_kind

RECORD_VERSION = 2
READS_VERSIONS = (1, 2)
# Every so many requests a record lists a request's messages in full, so that rebuilding any
# request applies at most this many deltas.
FULL_EVERY = 256
# The events of a model call: answered, rejected as too long, rejected as a protocol error.
CALL_EVENTS = ("model_call", "overflow", "protocol_error")


_dumps = canonical_json


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def message_text(m: Message) -> str:
    return "\n".join(t for b in m.content for t in block_texts(b))


def tool_facts(m: Message) -> tuple[dict[str, Any], ...]:
    """The successful tool results (JSON objects) a message holds, in order: what the checks
    read as the facts a request showed, read as the fake model reads them (a framework's
    wrapper, a Python literal of the object: ``sim.facts.result_object``)."""
    out = []
    for b in m.content:
        if isinstance(b, ToolResultBlock) and isinstance(b.output, str):
            d = result_object(b.output)
            if isinstance(d, dict) and "error" not in d:
                out.append(d)
    return tuple(out)


def serialized_text(system: str, summary: str, message_texts: Iterable[str]) -> str:
    """The counted texts of a request, in order: what presence, leak and containment checks
    search. Built from per-message texts so a writer can reuse the ones it has cached."""
    return "\n".join([system, summary, *message_texts])


_NOTHING: frozenset[tuple[str, str]] = frozenset()


@dataclass
class Declared:
    """The facts a scenario declares, whose presence in each request is recorded."""

    ids: list[str] = field(default_factory=list)
    constraints: dict[str, list[str]] = field(default_factory=dict)  # name -> phrases
    claims: dict[str, list[str]] = field(default_factory=dict)       # "identity=U-2" -> texts
    # A declared domain's id patterns (None: the bundled world's, ID_PATTERNS).
    patterns: tuple[re.Pattern[str], ...] | None = None

    def present(self, text: str) -> dict[str, list[str]]:
        return self.listed(self.found(text))

    def found(self, text: str) -> frozenset[tuple[str, str]]:
        """The declared facts ``text`` shows, as (field, name) pairs. When ``splittable``, the
        facts of texts joined by ``"\n"`` are the union of each one's."""
        low = text.lower()
        # Ids as the fake model reads them (anchored: PO-7731 shows no O-7731; the anchors see
        # a line feed as they see a text's edge). A text holding no declared id as a substring
        # holds none as a match: not searched.
        ids: set[str] = set()
        if any(i in text for i in self.ids):
            pats = self.patterns if self.patterns is not None else ID_PATTERNS.values()
            ids = {m.group(0) for p in pats for m in p.finditer(text)
                   if not is_example(text, m.start())}
        found = [("ids", i) for i in self.ids if i in ids] \
            + [("constraints", c) for c, ps in self.constraints.items()
               if f"[constraint:{c}]" in text or any(p.lower() in low for p in ps)] \
            + [("claims", c) for c, ts in self.claims.items()
               if f"[claim:{c}" in text or any(t in text for t in ts)]
        return frozenset(found) if found else _NOTHING  # most texts: one object for all

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


def private_strings(header: Mapping[str, Any]) -> frozenset[str]:
    """Every user's private values in a record's header (what a leak is made of); none with
    a line feed (``Record.shows`` reads those in the whole text)."""
    return frozenset(v for vals in (header.get("private") or {}).values() for v in vals
                     if v and "\n" not in v)


def content_kind(text: str) -> str:
    """The request's content kind for estimate-error breakdowns: zh, en or mixed by its script
    (harnesslab.tokens.kinds.script_kind), or json when it is mostly JSON punctuation."""
    braces = sum(text.count(c) for c in '{}":')
    return "json" if braces * 8 > len(text) else script_kind(text)


TRUNCATED = ("truncated record: the last line is incomplete (the run was stopped while writing "
             "it); every line before it is intact")
# Header keys of live records, written while a client talks and never closed by a result.
LIVE_KEYS = ("wire_session", "mcp_session")


@dataclass
class Record:
    header: dict[str, Any]
    events: list[dict[str, Any]]
    blobs: MutableMapping[str, Any]
    _messages: dict[str, Message] = field(default_factory=dict)
    _texts: dict[str, str] = field(default_factory=dict)
    _shows: dict[tuple[str, ...], dict[str, frozenset[str]]] = field(default_factory=dict)
    _by_step: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    _refs: list[dict[str, Any]] = field(default_factory=list)  # every request, in order
    _expanded: dict[int, list[str]] = field(default_factory=dict)
    # After ``release``: how many requests before ``_refs[0]`` were let go, and the message
    # hashes of ``_refs[0]`` (the request later deltas are rebuilt from).
    _refs_gone: int = 0
    _anchor: list[str] | None = None
    _indexed: int = 0  # how many events _by_step covers (the writer keeps appending)
    # Filled by a writer as it stores each request (its messages' texts measured once): the
    # header's private values its messages show, by request number, for the requests not let
    # go of. ``None``: not known, read the messages (a record loaded from a file).
    _private_shown: dict[int, frozenset[str]] | None = None
    # Filled by a writer as it stores each message: its ``tool_facts``, for the messages that
    # hold any (``None`` as above).
    _facts_in: dict[str, tuple[dict[str, Any], ...]] | None = None

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
            text = serialized_text(r.system, r.summary, (message_text(m) for m in r.messages))
            self.note_text(ref, text)
        return text

    def note_private(self, n: int, shown: frozenset[str]) -> None:
        """Note the private values the messages of request ``n`` show (a writer's)."""
        if self._private_shown is not None:
            self._private_shown[n] = shown

    def note_text(self, ref: Mapping[str, Any], text: str) -> None:
        """Keep ``request_text`` of a stored request (a writer has the request in hand)."""
        if len(self._texts) >= 8:
            self._texts.clear()
        self._texts[ref["sha256"]] = text

    def shows(self, ref: Mapping[str, Any], values: tuple[str, ...]) -> frozenset[str]:
        """Which of ``values`` the counted texts of a stored request contain. Read message by
        message (a value without a line feed cannot span two of them), and remembered per
        message, not per request: leak checks ask this of every call."""
        # A text is searched as a model reads it: a value escaped as JSON is shown all the same.
        if any("\n" in v for v in values):
            text = readable(self.request_text(ref))
            return frozenset(v for v in values if v in text)
        known = self._private_shown
        shown = known.get(ref["n"]) if known is not None and "n" in ref else None
        if shown is not None and set(values) <= self._private_strings:
            # What the writer noted: no message is read back, nothing is kept per message.
            hits = set(shown.intersection(values))
            system, summary = readable(self.blobs[ref["system"]]), readable(self.blobs[ref["summary"]])
            hits.update(v for v in values if v in system or v in summary)
            return frozenset(hits)
        seen = self._shows.setdefault(values, {})
        out: set[str] = set()
        for h in (ref["system"], ref["summary"], *self.message_hashes(ref)):
            f = seen.get(h)
            if f is None:
                data = self.blobs[h]
                text = readable(data if isinstance(data, str)
                                else message_text(message_from_dict(data)))
                f = seen[h] = frozenset(v for v in values if v in text)
            out |= f
        return frozenset(out)

    def facts(self, ref: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The successful tool results (JSON objects) visible in a stored request, in order
        (``tool_facts`` of each message). What a writer noted is read without reading any
        message back: the checks ask this of every call that calls a tool."""
        known = self._facts_in
        if known is not None:
            return [d for h in self.message_hashes(ref) if h in known for d in known[h]]
        return [d for m in self.request(ref).messages for d in tool_facts(m)]

    @functools.cached_property
    def _private_strings(self) -> frozenset[str]:
        return private_strings(self.header)

    def message_hashes(self, ref: Mapping[str, Any]) -> list[str]:
        """The message hashes of a stored request, in order: its own list, or the deltas
        from the last full list before it applied (module docstring)."""
        if "messages" in ref:
            return list(ref["messages"])
        n = ref["n"]
        deltas = []
        i = n
        while True:
            r = self._refs[i - 1 - self._refs_gone]
            base = r["messages"] if "messages" in r else self._expanded.get(i)
            if base is None and i == self._refs_gone + 1:
                base = self._anchor
            if base is not None:
                break
            deltas.append(r)
            i -= 1
        out = list(base)
        for r in reversed(deltas):
            out = out[:r["keep"]] + r["add"]
        if len(self._expanded) >= 8:  # questions come in request order: a few suffice
            self._expanded.clear()
        self._expanded[n] = out
        return out

    def release(self, keep: Callable[[dict[str, Any]], bool]) -> None:
        """Let go of every event so far but those ``keep`` names, and of every request but the
        last (the one the next is stored against): a live judge has read them (judge.live).
        Afterwards only later events, requests and the kept events can be asked about."""
        self.events = [e for e in self.events if keep(e)]
        self._by_step.clear()
        self._indexed = 0
        if len(self._refs) > 1:
            last = self._refs[-1]
            self._anchor = self.message_hashes(last)
            self._refs_gone = last["n"] - 1
            self._refs = [last]
            if self._private_shown:
                self._private_shown = {n: v for n, v in self._private_shown.items()
                                       if n >= last["n"]}
        self._expanded.clear()
        self._texts.clear()

    @property
    def requests(self) -> int:
        """How many requests the record holds (released ones included)."""
        return self._refs_gone + len(self._refs)

    def add_ref(self, ref: dict[str, Any]) -> None:
        """Note a request (in record order), so that later ones can be rebuilt from it."""
        self._refs.append(ref)

    def message(self, h: str) -> Message:
        m = self._messages.get(h)
        if m is None:
            if len(self._messages) >= 4096:  # asked in run order: recent ones are asked again
                self._messages.clear()
            m = self._messages[h] = message_from_dict(self.blobs[h])
        return m

    def request(self, ref: Mapping[str, Any]) -> Request:
        """Rebuild a request exactly as the service saw it."""
        return Request(
            system=self.blobs[ref["system"]], summary=self.blobs[ref["summary"]],
            messages=tuple(self.message(h) for h in self.message_hashes(ref)),
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
    def load(cls, path: str | Path, *, finished: bool = True) -> Record:
        """Read a record file; a bad one gives one line naming the file and line.
        ``finished=False``: a run's record still being written (every line so far whole)."""
        p = Path(path)
        try:
            if p.name.endswith(".gz"):
                with gzip.open(p, "rt", encoding="utf-8") as f:
                    text = f.read()
            else:
                data = p.read_bytes()
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as e:
                    if e.reason == "unexpected end of data":
                        # Cut inside a character: the writer was stopped in mid-line.
                        raise InputError(TRUNCATED, file=str(p),
                                         line=data.count(b"\n") + 1) from None
                    raise
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise InputError(f"not a readable gzip file ({e})", file=str(p)) from None
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=str(p)) from None
        except UnicodeDecodeError:
            raise InputError("not a harnesslab record (not UTF-8 text)", file=str(p)) from None
        lines = text.splitlines()
        last = len(lines)
        header: dict[str, Any] | None = None
        events: list[dict[str, Any]] = []
        blobs: dict[str, Any] = {}
        refs: list[dict[str, Any]] = []
        fresh: list[str] = []  # message hashes since the last request (version 2)
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                if n == last and not text.endswith("\n"):
                    raise InputError(TRUNCATED, file=str(p), line=n) from None
                raise InputError(f"invalid JSON at column {e.colno}: {e.msg}", file=str(p),
                                 line=n) from None
            if not isinstance(obj, dict) or "type" not in obj:
                raise InputError("expected an event object with a 'type'", file=str(p), line=n)
            if header is None:
                if obj["type"] != "header":
                    raise InputError("not a harnesslab record: the first line is not a header",
                                     file=str(p), line=n)
                version = obj.get("version")
                if version not in READS_VERSIONS:
                    raise InputError(f"record version {version!r} is not supported (this "
                                     f"harnesslab reads versions "
                                     f"{', '.join(map(str, READS_VERSIONS))})",
                                     file=str(p), line=n, field="version")
                header = obj
            elif obj["type"] == "blob":
                blobs[obj["hash"]] = obj["data"]
            elif obj["type"] == "message":
                h = "m" + _h(_dumps(obj.get("data")))
                blobs[h] = obj.get("data")
                fresh.append(h)
            else:
                events.append(obj)
                ref = obj.get("request")
                if isinstance(ref, dict):
                    if "new" in ref:
                        if ref["new"] != len(fresh):
                            raise InputError(f"request {len(refs) + 1} adds the {ref['new']} "
                                             f"messages before it, but {len(fresh)} are there",
                                             file=str(p), line=n, field="request.new")
                        ref["add"] = fresh
                        del ref["new"]
                    fresh = []
                    if "messages" not in ref and not (
                            ref.get("n") == len(refs) + 1 and refs and "keep" in ref
                            and isinstance(ref.get("add"), list)):
                        raise InputError(f"request {len(refs) + 1} has neither its messages "
                                         "nor a delta against the request before it",
                                         file=str(p), line=n, field="request")
                    refs.append(ref)
        if header is None:
            raise InputError("empty record", file=str(p))
        if not text.endswith("\n"):
            raise InputError(TRUNCATED, file=str(p), line=last)
        rec = cls(header, events, blobs, _refs=refs)
        if finished and rec.run_record and not rec.finished:
            # Cut at a line end: every line is whole, but the run's verdict never came.
            raise InputError("truncated record: it ends without the run's result or error "
                             "(the run was stopped before it finished); every line is intact",
                             file=str(p), line=last)
        return rec

    @property
    def run_record(self) -> bool:
        """A run's record (it ends with the run's result), not a live session's (serve, mcp)."""
        return not any(k in self.header for k in LIVE_KEYS)

    @property
    def finished(self) -> bool:
        return bool(self.events) and self.events[-1]["type"] in ("result", "run_error")
