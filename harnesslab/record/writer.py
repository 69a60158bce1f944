"""The record writer: the run's event sink, writing the record (``harnesslab.record.format``) as
it goes and keeping it in memory for the checks.

A request costs only what it adds to the previous one. Each message is stored (a ``blob``
line) and measured once: its JSON and content hash, the declared facts it shows, its script
counts and images. For the last request the writer keeps, per message, the running sums of
those and the sha256 state of the canonical JSON so far; a request sharing a prefix with it
(compared by identity, as the token counter does) resumes from there. Nothing holds a
request's whole text: what the checks ask later, the record rebuilds from its blobs.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Protocol

from harnesslab.messages import (
    Message,
    Request,
    ToolSchema,
    block_to_dict,
    message_images,
    message_to_dict,
    readable,
)
from harnesslab.record.format import (
    CALL_EVENTS,
    FULL_EVERY,
    RECORD_VERSION,
    Declared,
    Record,
    _dumps,
    _h,
    content_kind,
    message_text,
    private_strings,
    serialized_text,
    tool_facts,
)
from harnesslab.tokens import common_prefix
from harnesslab.tokens.kinds import kind_of, script_counts

_BRACES = '{}":'
_BLOBS_READ_KEPT = 1024
_GENERATION = 4096  # message offsets per generation (FileBlobs)
_TEXTS_KEPT = 1 << 10


class FileBlobs(MutableMapping[str, Any]):
    """The blobs of a record being written to a file: messages are read back from the file
    when asked (their offsets kept, a few recent ones cached), the rest kept in memory. A run
    holds its record's messages on disk, not in memory: they grow with the run.

    Offsets are kept for the messages of the last request and for at least the last
    ``_GENERATION`` messages written, not for every message of the run (that index would grow
    by a few MB per thousand turns): a message that comes back after it was let go is written
    again (the record stays exact, one line longer), and one asked for after that is found by
    reading the file (slow, never wrong)."""

    def __init__(self, writer: RecordWriter) -> None:
        self._writer = writer
        self._at: dict[str, int] = {}          # message hash -> offset of its line
        self._was: dict[str, int] = {}         # the same, for the generation before
        self._full = _GENERATION  # when _at holds this many, a new generation starts
        self._kept: dict[str, Any] = {}        # system, summary, tools
        self._read: dict[str, Any] = {}
        self._reader: IO[bytes] | None = None

    def note(self, h: str, offset: int) -> None:
        self._at[h] = offset
        if len(self._at) >= self._full:
            # A new generation, carrying the last request's messages (any later request may
            # keep them, and checks read the requests of the step under way): full again
            # after as many new messages, however long that request is.
            live = {}
            for p in self._writer.live_hashes():
                o = self._at.get(p)
                if o is None:
                    o = self._was.get(p)
                if o is not None:
                    live[p] = o
            self._was, self._at = self._at, live
            self._full = len(live) + _GENERATION

    def _offset(self, h: str) -> int | None:
        off = self._at.get(h)
        return self._was.get(h) if off is None else off

    def _line(self, offset: int) -> bytes:
        path = self._writer.path
        assert path is not None
        if self._writer.open:
            self._writer.flush()
            if self._reader is None:
                self._reader = path.open("rb")
            self._reader.seek(offset)
            return self._reader.readline()
        with path.open("rb") as f:  # the run is over: no handle is left open behind it
            f.seek(offset)
            return f.readline()

    def _search(self, h: str) -> Any:
        """A message let go of: found by reading the file's message lines."""
        path = self._writer.path
        assert path is not None
        self._writer.flush()
        head, tail = b'{"data":', b',"type":"message"}\n'
        with path.open("rb") as f:
            for line in f:
                if line.startswith(head) and line.endswith(tail):
                    js = line[len(head):-len(tail)].decode("utf-8")
                    if "m" + _h(js) == h:
                        return json.loads(js)
        raise KeyError(h)

    def __getitem__(self, h: str) -> Any:
        if h in self._kept:
            return self._kept[h]
        data = self._read.get(h)
        if data is None:
            offset = self._offset(h)
            data = self._search(h) if offset is None else json.loads(self._line(offset))["data"]
            if len(self._read) >= _BLOBS_READ_KEPT:
                self._read.clear()
            self._read[h] = data
        return data

    def __setitem__(self, h: str, data: Any) -> None:
        self._kept[h] = data

    def __delitem__(self, h: str) -> None:
        raise TypeError("a record's blobs are never removed")

    def __contains__(self, h: object) -> bool:
        """Whether ``h`` is stored and its offset known (a message let go of is written
        again when it comes back)."""
        return h in self._at or h in self._was or h in self._kept

    def __iter__(self) -> Iterator[str]:
        yield from self._at
        yield from (h for h in self._was if h not in self._at)
        yield from self._kept

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


@dataclass(frozen=True, slots=True)
class _Sums:
    """Running totals over a text or a prefix of messages: what ``content_kind`` and the
    ``present`` and ``images`` fields of a call are computed from."""

    braces: int = 0
    cjk: int = 0
    latin: int = 0
    chars: int = 0
    images: int = 0
    found: frozenset[tuple[str, str]] = frozenset()
    private: frozenset[str] = frozenset()  # the header's private values shown

    def __add__(self, o: _Sums) -> _Sums:
        found = self.found if o.found <= self.found else self.found | o.found
        private = self.private if o.private <= self.private else self.private | o.private
        return _Sums(self.braces + o.braces, self.cjk + o.cjk, self.latin + o.latin,
                     self.chars + o.chars, self.images + o.images, found, private)


def _measure(text: str, declared: Declared, images: int = 0, seen: str | None = None) -> _Sums:
    # The script counts are of the text as sent (what an estimate counts); the declared facts
    # of the text as a model reads it, ``seen`` (JSON's escapes decoded, as the fake model
    # reads them; made here when the caller has not made it).
    return _Sums(sum(text.count(c) for c in _BRACES), *script_counts(text), len(text), images,
                 declared.found(readable(text) if seen is None else seen))


@dataclass(frozen=True, slots=True)
class _Part:
    """One message as stored: its blob hash, canonical JSON and measures."""

    hash: str
    json: str
    sums: _Sums


class StepJudge(Protocol):
    def step_ended(self) -> None: ...


class RecordWriter:
    """An event sink that writes the record as it goes and keeps it in memory: all of it, or,
    with a ``judge`` (judge.live), what is still to be judged."""

    def __init__(self, header: dict[str, Any], declared: Declared,
                 path: Path | None = None) -> None:
        self.declared = declared
        self._split = declared.splittable
        self._step = 0
        # Told when a step's events are all in (the next step starts): judge.live.
        self.judge: StepJudge | None = None
        self.record = Record({"type": "header", "version": RECORD_VERSION, **header}, [], {})
        self.path = path
        self._file: IO[bytes] | None = None
        self._blobs: FileBlobs | None = None
        self._offset = 0
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("wb")
            self._blobs = FileBlobs(self)
            self.record.blobs = self._blobs
            self._write(self.record.header)
        self._str: dict[str, str] = {}             # system / summary / tools text -> hash
        self._heads: dict[str, _Sums] = {}         # system / summary text -> measures
        self._json_of: dict[str, str] = {}         # system / summary text -> its JSON
        self._last_tools: tuple[tuple[ToolSchema, ...], str, str] | None = None
        # The last request's messages: their parts, the running sums after each, and the
        # sha256 state after each one's JSON (index 0: before the first).
        self._seq: tuple[Message, ...] = ()
        self._parts: list[_Part] = []
        self._cum: list[_Sums] = [_Sums()]
        self._sha: list[Any] = [hashlib.sha256(b'{"messages":[')]
        self._fresh: list[str] = []  # message blobs written since the last request
        # Leak checks ask which private values each request shows: noted per message here,
        # where its text is at hand, instead of reading every message back at the end.
        self._private = sorted(private_strings(self.record.header))
        # A message's text measured (``_measure``, private values shown), by text: the bench's
        # filler is made of a few sentences that recur. The oldest let go of when full.
        self._by_text: OrderedDict[str, _Sums] = OrderedDict()
        self.record._private_shown = {}
        self.record._facts_in = {}
        # The true count of each applied compaction's request, counted while its messages
        # are the service's own (``count_compactions``): trigger lateness without a recount.
        self._true_count: Callable[[Request], int] | None = None
        self.compaction_true: list[int] = []

    def live_hashes(self) -> list[str]:
        """The message hashes of the last request."""
        return [p.hash for p in self._parts]

    @property
    def step(self) -> int:
        """The step the events emitted now belong to (0 before the first)."""
        return self._step

    @step.setter
    def step(self, step: int) -> None:
        if step != self._step and self.judge is not None:
            self.judge.step_ended()
        self._step = step

    def count_compactions(self, true_count: Callable[[Request], int]) -> None:
        """Count every applied compaction's request with ``true_count`` as it is recorded."""
        self._true_count = true_count

    def close(self) -> None:
        """Close the file; the record in memory stays readable (its messages are read back
        from the file, which is complete now)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._blobs is not None:
            self._blobs.close()

    @property
    def open(self) -> bool:
        return self._file is not None

    def flush(self) -> None:
        """Push what is written to the file (a live record, e.g. a serve session's)."""
        if self._file is not None:
            self._file.flush()

    def _write(self, line: dict[str, Any]) -> None:
        if self._file is not None:
            data = (_dumps(line) + "\n").encode("utf-8")
            self._file.write(data)
            self._offset += len(data)

    def _blob(self, kind: str, h: str, data: Any) -> None:
        self.record.blobs[h] = data
        self._write({"type": "blob", "kind": kind, "hash": h, "data": data})

    def _message_blob(self, h: str, data: Any, js: str) -> None:
        # Its hash is that of its canonical JSON: the reader computes it (module docstring).
        if self._blobs is not None:
            self._blobs.note(h, self._offset)
        else:
            self.record.blobs[h] = data
        if self._file is not None:
            # _dumps({"type": "message", "data": data}) without encoding ``data`` again:
            # sorted keys put "data" first.
            line = ('{"data":' + js + ',"type":"message"}\n').encode("utf-8")
            self._file.write(line)
            self._offset += len(line)
        self._fresh.append(h)

    def _message(self, m: Message) -> _Part:
        d = message_to_dict(m)
        js = _dumps(d)
        h = "m" + _h(js)
        if h not in self.record.blobs:
            self._message_blob(h, d, js)
        images = sum(1 for _ in message_images(m))
        text = message_text(m)
        sums = self._by_text.get(text)
        if sums is None:
            if len(self._by_text) >= _TEXTS_KEPT:
                self._by_text.popitem(last=False)  # the oldest: full, it stays as full
            # Escaped as JSON (``\u4e0a\u6d77...``) a value is shown all the same.
            seen = readable(text)
            sums = _measure(text, self.declared, seen=seen)
            if self._private:
                shown = frozenset(v for v in self._private if v in seen)
                if shown:
                    sums = replace(sums, private=shown)
            self._by_text[text] = sums
        if images:
            sums = replace(sums, images=images)
        facts = tool_facts(m)
        if facts:
            assert self.record._facts_in is not None
            self.record._facts_in[h] = facts
        return _Part(h, js, sums)

    def _text(self, kind: str, s: str) -> str:
        h = self._str.get(s)
        if h is None:
            h = self._str[s] = kind[0] + _h(s)
            if h not in self.record.blobs:
                self._blob(kind, h, s)
        return h

    def _head(self, s: str) -> _Sums:
        sums = self._heads.get(s)
        if sums is None:
            if len(self._heads) > 64:  # summaries change with every compaction
                self._heads.clear()
            sums = self._heads[s] = _measure(s, self.declared)
        return sums

    def _tools(self, tools: tuple[ToolSchema, ...]) -> tuple[str, str]:
        """The blob hash of a request's tool schemas, and their part of the request's JSON.
        A harness sends the same schemas call after call: the last ones are kept."""
        last = self._last_tools
        if last is not None and (last[0] is tools or last[0] == tools):
            return last[1], last[2]
        joined = "\x00".join(t.json for t in tools)
        h = self._str.get(joined)
        if h is None:
            h = self._str[joined] = "t" + _h(joined)
            if h not in self.record.blobs:
                # The exact schema texts: key order is part of what the model and the
                # tokenizer see, and the record's own JSON would sort it.
                self._blob("tools", h, [[t.name, t.json] for t in tools])
        js = _dumps([t.to_dict() for t in tools])
        self._last_tools = (tools, h, js)
        return h, js

    def _json(self, s: str) -> str:
        """The JSON of a system prompt or summary, kept while it is sent."""
        js = self._json_of.get(s)
        if js is None:
            if len(self._json_of) > 64:  # summaries change with every compaction
                self._json_of.clear()
            js = self._json_of[s] = _dumps(s)
        return js

    def _extend(self, messages: tuple[Message, ...]) -> int:
        """Make the kept parts, sums and hash states those of ``messages``; how many leading
        ones it shares with the previous request."""
        k = common_prefix(self._seq, messages)
        old = {id(m): p for m, p in zip(self._seq[k:], self._parts[k:], strict=True)}
        del self._parts[k:], self._cum[k + 1:], self._sha[k + 1:]
        for m in messages[k:]:
            part = old.get(id(m)) or self._message(m)
            sha = self._sha[-1].copy()
            sha.update((b"," if self._parts else b"") + part.json.encode("utf-8"))
            self._parts.append(part)
            self._cum.append(self._cum[-1] + part.sums)
            self._sha.append(sha)
        self._seq = messages
        return k

    def request_ref(self, r: Request) -> tuple[dict[str, Any], _Sums]:
        """The stored form of a request, and the measures of its serialised text."""
        keep = self._extend(r.messages)
        n = self.record.requests + 1
        # Blobs in the order records have always had them (a tools blob of no schemas and an
        # empty summary share their text, so the first to be stored names both).
        system_hash, summary_hash = self._text("system", r.system), self._text("summary", r.summary)
        tools_hash, tools_json = self._tools(r.tools)
        # The canonical JSON of harnesslab.messages.dumps: the messages' part is hashed
        # already, the rest follows.
        sha = self._sha[-1].copy()
        sha.update(('],"meta":' + _dumps([list(kv) for kv in r.meta]) + ',"output_budget":'
                    + _dumps(r.output_budget) + ',"session_id":' + _dumps(r.session_id)
                    + ',"summary":' + self._json(r.summary) + ',"system":' + self._json(r.system)
                    + ',"tools":' + tools_json + "}").encode("utf-8"))
        # The messages as a delta against the previous request's (record module docstring).
        messages: dict[str, Any] = {"messages": [p.hash for p in self._parts]} \
            if keep == 0 or n % FULL_EVERY == 1 else \
            {"keep": keep, "add": [p.hash for p in self._parts[keep:]]}
        ref = {"n": n, "system": system_hash, "summary": summary_hash, **messages,
               "tools": tools_hash, "output_budget": r.output_budget,
               "session_id": r.session_id, "meta": [list(kv) for kv in r.meta],
               "sha256": sha.hexdigest()}
        self.record.add_ref(ref)
        # What the leak checks ask of every call, from the running sums (no message read).
        self.record.note_private(n, self._cum[-1].private)
        return ref, self._head(r.system) + self._head(r.summary) + self._cum[-1]

    def emit(self, event: dict[str, Any]) -> None:
        e = dict(event)
        e.setdefault("step", self.step)
        req = e.get("request")
        fresh = 0
        if isinstance(req, Request) and e["type"] == "compaction" and e.get("applied") \
                and self._true_count is not None:
            self.compaction_true.append(self._true_count(req))
        if isinstance(req, Request):
            ref, sums = self.request_ref(req)
            e["request"] = ref
            if e["type"] == "compaction" and e.get("summary"):
                # The judge reads a summary's source text (summary entity fidelity): made here,
                # from the messages in hand, instead of from every message read back.
                self.record.note_text(ref, serialized_text(
                    req.system, req.summary, (message_text(m) for m in req.messages)))
            if ref.get("add") and ref["add"] == self._fresh:
                fresh = len(self._fresh)  # the usual case: the messages just written, in order
            self._fresh = []
            if e["type"] in CALL_EVENTS:
                if self._split:
                    e["present"] = self.declared.listed(sums.found)
                    # serialized_text joins system, summary and every message with "\n".
                    chars = sums.chars + len(req.messages) + 1
                    e["kind"] = "json" if sums.braces * 8 > chars else kind_of(sums.cjk, sums.latin)
                else:  # a declared phrase with a line feed: search the whole text
                    text = serialized_text(req.system, req.summary,
                                           (message_text(m) for m in req.messages))
                    e["present"] = self.declared.present(readable(text))
                    e["kind"] = content_kind(text)
                e["images"] = sums.images
        if "reply" in e and isinstance(e["reply"], tuple):
            e["reply"] = [block_to_dict(b) for b in e["reply"]]
        self.record.events.append(e)
        if fresh:
            ref = {k: v for k, v in e["request"].items() if k != "add"}
            self._write({**e, "request": {**ref, "new": fresh}})
        else:
            self._write(e)
