"""The fake model's reading of one message, done once per message instead of once per call.

A request's serialised text (``harnesslab.sim.reading``) is the system prompt, the summary and
every message's pieces joined with ``"\\n"``; a message's *segment* is its own pieces joined the
same way, so the request's text is its segments joined with ``"\\n"`` (a message with no piece
adds nothing). Every pattern the model searches either cannot match across a ``"\\n"`` (ids,
constraint phrases without a line feed) or is checked for a match left open at a segment's end
(tags, the current time): then, and only then, the caller searches the whole text instead. So
the matches found segment by segment, shifted by the segment's offset, are exactly those found
in the whole text, and a segment can be kept while its message lives.

A ``Reader`` keeps the layout of the last message sequence it read: the next request (mostly
the previous one plus new messages) takes over the shared prefix, compared by identity as the
token counter does, and finds any other message it kept by identity. What it keeps is the live
context, not the run's history.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harnesslab.messages import Block, Message, TextBlock, ToolCallBlock, ToolResultBlock, block_texts
from harnesslab.sim.facts import result_reading
from harnesslab.sim.intents import CURRENT_TIME_RE, ID_PATTERNS, TAG_RE, Constraint, Intent, Slot, parse_time
from harnesslab.tokens import common_prefix

# A tag or a time stamp opened and not closed before the segment's end: its match (if any)
# would run into the next segment.
_OPEN_TAG_RE = re.compile(r"\[(?:constraint|claim|fact):[^\]]*\Z")
_OPEN_TIME_RE = re.compile(r"<current-time>[^<]*\Z")


def block_pieces(block: Block) -> tuple[str, ...]:
    """The serialised strings of a block: a tool call as ``name(input)``, else its texts."""
    if isinstance(block, ToolCallBlock):
        return (f"{block.name}({block.input})",)
    return tuple(block_texts(block))


@dataclass(frozen=True)
class Result:
    """A tool result where its first piece starts (relative to its segment), read once."""

    start: int
    block_index: int
    block: ToolResultBlock
    text: str
    fields: Mapping[str, str]


@dataclass(frozen=True)
class Segment:
    """What one message (or the system prompt, or the summary) shows, positions relative to
    its own start. ``pieces`` is 0 for a message that adds nothing to the text."""

    text: str
    pieces: int
    ids: Mapping[Slot, tuple[tuple[int, str], ...]]
    phrases: Mapping[Constraint, int]              # each constraint phrase's latest start
    tags: tuple[tuple[int, str, str], ...]
    times: tuple[tuple[int, datetime], ...]        # parseable current times
    open_tag: bool
    open_time: bool
    utterance: tuple[str, Intent] | None = None    # a user message that is a lexicon utterance
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    results: tuple[Result, ...] = ()

    @property
    def marked(self) -> bool:
        """Whether it shows anything the model looks for (most filler shows nothing)."""
        return bool(any(self.ids.values()) or self.phrases or self.tags or self.times
                    or self.open_tag or self.open_time or self.utterance or self.calls
                    or self.results)


@dataclass(frozen=True)
class Layout:
    """The segments of a message sequence, each message's start relative to the first
    message's, the position just past the last piece, and which segments are ``marked``."""

    messages: tuple[Message, ...]
    segs: list[Segment]
    starts: list[int]
    end: int
    marked: list[int]


_EMPTY = Layout((), [], [], 0, [])


def _read(text: str, pieces: int, phrases: Mapping[Constraint, re.Pattern[str]],
          **more: Any) -> Segment:
    ids = {s: tuple((m.start(), m.group(0)) for m in p.finditer(text)) for s, p in ID_PATTERNS.items()}
    found: dict[Constraint, int] = {}
    for c, pat in phrases.items():
        for m in pat.finditer(text):
            found[c] = m.start()
    tags = tuple((m.start(), m.group(1), m.group(2)) for m in TAG_RE.finditer(text))
    times = tuple((m.start(), t) for m in CURRENT_TIME_RE.finditer(text)
                  if (t := parse_time(m.group(1))))
    return Segment(text, pieces, ids, found, tags, times,
                   _OPEN_TAG_RE.search(text) is not None, _OPEN_TIME_RE.search(text) is not None,
                   **more)


def _call_args(block: ToolCallBlock) -> Mapping[str, Any]:
    try:
        args = json.loads(block.input)
    except json.JSONDecodeError:
        args = None
    return args if isinstance(args, dict) else {}


def read_message(m: Message, lexicon: Mapping[str, Intent],
                 phrases: Mapping[Constraint, re.Pattern[str]]) -> Segment:
    texts: list[str] = []
    results: list[Result] = []
    calls: list[tuple[str, Mapping[str, Any]]] = []
    pos = 0
    for j, b in enumerate(m.content):
        ps = block_pieces(b)
        if isinstance(b, ToolResultBlock) and ps:
            text, fields = result_reading(b)
            results.append(Result(pos, j, b, text, fields))
        elif isinstance(b, ToolCallBlock):
            calls.append((b.id, _call_args(b)))
        for t in ps:
            texts.append(t)
            pos += len(t) + 1
    utterance = None
    if m.role == "user":
        plain = m.plain_text()
        intent = lexicon.get(plain)
        if intent is not None:
            utterance = (plain, intent)
    return _read("\n".join(texts), len(texts), phrases, utterance=utterance,
                 calls=tuple(calls), results=tuple(results))


def has_text_block(m: Message) -> bool:
    return any(isinstance(b, TextBlock) for b in m.content)


class Reader:
    """Segments of messages and head strings, cached by identity for the last two calls.

    ``lexicon`` and ``phrases`` are fixed for the reader's life (one fake model's)."""

    def __init__(self, lexicon: Mapping[str, Intent],
                 phrases: Mapping[Constraint, re.Pattern[str]]) -> None:
        self.lexicon = lexicon
        self.phrases = phrases
        # A phrase with a line feed could match across two segments: read whole texts then.
        self.exact = not any("\n" in p.pattern for p in phrases.values())
        self._heads: dict[str, Segment] = {}
        self._heads_before: dict[str, Segment] = {}
        self._last = _EMPTY

    def next_call(self) -> None:
        """Forget the head strings that neither this call nor the one before showed."""
        self._heads_before, self._heads = self._heads, {}

    def layout(self, messages: tuple[Message, ...]) -> Layout:
        """The layout of ``messages``: the prefix shared with the last sequence laid out is
        taken over (copied, never changed: an earlier view may still read it), the rest read."""
        last = self._last
        k = common_prefix(last.messages, messages)
        segs, starts = last.segs[:k], last.starts[:k]
        marked = last.marked[:bisect.bisect_left(last.marked, k)]
        pos = last.starts[k] if k < len(last.starts) else last.end
        # Messages the last sequence had after the shared prefix (a compaction keeps some of
        # them, shifted): found by identity; the sequence holds them, so ids are not reused.
        rest = {id(m): seg for m, seg in zip(last.messages[k:], last.segs[k:], strict=True)}
        for i in range(k, len(messages)):
            m = messages[i]
            seg = rest.get(id(m)) or read_message(m, self.lexicon, self.phrases)
            segs.append(seg)
            starts.append(pos)
            if seg.pieces:
                pos += len(seg.text) + 1
            if seg.marked:
                marked.append(i)
        self._last = Layout(messages, segs, starts, pos, marked)
        return self._last

    def head(self, text: str) -> Segment:
        seg = self._heads.get(text) or self._heads_before.get(text)
        if seg is None:
            seg = _read(text, 1, self.phrases)
        self._heads[text] = seg
        return seg
