"""The fake model's reading of one message, done once per message instead of once per call.

A request's serialised text (``harnesslab.sim.reading``) is the system prompt, the summary and
every message's pieces joined with ``"\\n"``; a message's *segment* is its own pieces joined the
same way, so the request's text is its segments joined with ``"\\n"`` (a message with no piece
adds nothing). Every pattern the model searches either cannot match across a ``"\\n"`` (ids,
constraint phrases without a line feed, statements of the time) or is checked for a match left
open at a segment's end (tags): then, and only then, the caller searches the whole text instead. So
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
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from harnesslab.messages import (
    Block,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    block_texts,
    readable,
)
from harnesslab.sim.facts import quoted_objects, result_reading
from harnesslab.sim.intents import (
    ID_PATTERNS,
    Claim,
    Constraint,
    Intent,
    is_example,
    open_tag,
    tags_in,
)
from harnesslab.sim.times import Unread, stated_times
from harnesslab.sim.vocab import Vocab, bundled
from harnesslab.tokens import common_prefix

# A tag opened and not closed before the segment's end: its match (if any) would run into the
# next segment. (A statement of the time never spans a line: harnesslab.sim.times.)
_READINGS_KEPT = 1 << 10


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
    ids: Mapping[str, tuple[tuple[int, str], ...]]
    phrases: Mapping[Constraint, int]              # each constraint phrase's latest start
    tags: tuple[tuple[int, str, str], ...]
    times: tuple[tuple[int, datetime | Unread], ...]  # current times (or reading two ways)
    open_tag: bool
    utterance: tuple[str, Intent] | None = None    # the utterance a user message asks
    # Every lexicon utterance a user message holds (start, text, intent): one for a message
    # that is an utterance or wraps one, several for a transcript quoted in one message.
    mentions: tuple[tuple[int, str, Intent], ...] = ()
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    results: tuple[Result, ...] = ()

    @property
    def marked(self) -> bool:
        """Whether it shows anything the model looks for (most filler shows nothing)."""
        return bool(any(self.ids.values()) or self.phrases or self.tags or self.times
                    or self.open_tag or self.utterance or self.calls
                    or self.results)


@dataclass(frozen=True)
class Marks:
    """What the marked segments up to one of them show, positions relative to the first
    message's start: the running readings a request's view needs, so that a request sharing a
    prefix with the last one reads only its new messages (``View`` adds the system prompt and
    summary). Each constraint's latest position by source (phrases, utterances, constraint
    tags; each map in the order constraints first appear), the tags and utterance claims so
    far, the latest stated time, and whether a tag was left open."""

    phrases: Mapping[Constraint, int]
    said: Mapping[Constraint, int]
    tagged: Mapping[Constraint, int]
    tags: int      # how many of Layout.tags are this far
    claims: int    # how many of Layout.claims
    now: datetime | Unread | None  # the latest statement's time (Unread: it reads two ways)
    open_tag: bool


_NO_MARKS = Marks({}, {}, {}, 0, 0, None, False)
_CONSTRAINT_VALUES = frozenset(c.value for c in Constraint)


def _utterance_spots(seg: Segment, m: Message) -> tuple[tuple[int, str, Intent], ...]:
    """The utterances a marked segment holds with their starts in it (``View.utterances``):
    the whole message when it is exactly one, else each mention."""
    if seg.utterance is None:
        return ()
    if len(seg.mentions) == 1 and m.plain_text() == seg.utterance[0]:
        return ((0, *seg.utterance),)
    return seg.mentions


def _marks(before: Marks, seg: Segment, m: Message, at: int,
           tags: list[tuple[int, str, str]], claims: list[tuple[int, Claim]]) -> Marks:
    """``before`` with a marked segment that starts at ``at`` (appending to ``tags`` and
    ``claims``). Later segments lie after earlier ones: a later position replaces."""
    phrases, said, tagged = before.phrases, before.said, before.tagged
    if seg.phrases:
        phrases = {**phrases, **{c: at + p for c, p in seg.phrases.items()}}
    spots = _utterance_spots(seg, m)
    if any(it.constraints for _, _, it in spots):
        said = dict(said)
        for p, _, it in spots:
            for c in it.constraints:
                said[c] = at + p
    claims += [(at + p, c) for p, _, it in spots for c in it.claims]
    if seg.tags:
        tags += [(at + p, kind, body) for p, kind, body in seg.tags]
        found = {Constraint(body): at + p for p, kind, body in seg.tags
                 if kind == "constraint" and body in _CONSTRAINT_VALUES}
        if found:
            tagged = {**tagged, **found}
    return Marks(phrases, said, tagged, len(tags), len(claims),
                 seg.times[-1][1] if seg.times else before.now, before.open_tag or seg.open_tag)


@dataclass(frozen=True)
class Layout:
    """The segments of a message sequence, each message's start relative to the first
    message's, the position just past the last piece, which segments are ``marked``, and
    the running ``Marks`` after each marked one (with the tags and utterance claims they
    count)."""

    messages: tuple[Message, ...]
    segs: list[Segment]
    starts: list[int]
    end: int
    marked: list[int]
    marks: list[Marks] = field(default_factory=list)
    tags: list[tuple[int, str, str]] = field(default_factory=list)
    claims: list[tuple[int, Claim]] = field(default_factory=list)

    @property
    def last_marks(self) -> Marks:
        return self.marks[-1] if self.marks else _NO_MARKS


_EMPTY = Layout((), [], [], 0, [])


def _read(text: str, pieces: int, phrases: Mapping[Constraint, re.Pattern[str]],
          zone: tzinfo, results: tuple[Result, ...] = (),
          patterns: Mapping[str, re.Pattern[str]] = ID_PATTERNS, **more: Any) -> Segment:
    # Most text shows nothing: a pattern is run over it only once a first search finds it.
    ids = {s: tuple((m.start(), m.group(0)) for m in p.finditer(text)
                    if not is_example(text, m.start()))
           if p.search(text) else () for s, p in patterns.items()}
    found: dict[Constraint, int] = {}
    for c, pat in phrases.items():
        for m in pat.finditer(text):
            found[c] = m.start()
    bracket = "[" in text  # every tag, closed or open, starts with one
    tags = tuple(tags_in(text)) if bracket else ()
    # A time inside a tool result is a fact's time, never "now".
    spans = [(r.start, r.start + len(r.text)) for r in results]
    times = tuple((p, t) for p, t in stated_times(text, zone)
                  if not any(a <= p < b for a, b in spans))
    return Segment(text, pieces, ids, found, tags, times,
                   bracket and open_tag(text),
                   results=results, **more)


def _call_args(block: ToolCallBlock) -> Mapping[str, Any]:
    try:
        args = json.loads(block.input)
    except json.JSONDecodeError:
        args = None
    return args if isinstance(args, dict) else {}


def utterance_pattern(lexicon: Mapping[str, Intent]) -> re.Pattern[str] | None:
    """One pattern for every utterance, longest first (of two that overlap, the longer is the
    one said); an utterance that starts or ends with a Latin letter or digit must not run on
    into one ("ok" is not in "okay"). None for an empty lexicon."""
    alts = []
    for u in sorted(lexicon, key=lambda u: (-len(u), u)):
        if not u.strip():
            continue
        head = r"(?<![A-Za-z0-9])" if u[0].isascii() and u[0].isalnum() else ""
        tail = r"(?![A-Za-z0-9])" if u[-1].isascii() and u[-1].isalnum() else ""
        alts.append(head + re.escape(u) + tail)
    return re.compile("|".join(alts)) if alts else None


def utterances_in(text: str, lexicon: Mapping[str, Intent],
                  pattern: re.Pattern[str] | None) -> tuple[tuple[int, str, Intent], ...]:
    """The lexicon utterances ``text`` holds, in order: the whole text when it is one (what
    the reference harness sends), else each one found inside it (a decorated message)."""
    intent = lexicon.get(text)
    if intent is not None:
        return ((0, text, intent),)
    if pattern is None:
        return ()
    return tuple((m.start(), m.group(0), lexicon[m.group(0)]) for m in pattern.finditer(text))


def _quoted_results(text: str, at: int, index: int, vocab: Vocab) -> list[Result]:
    """The tool results ``text`` quotes whole (a cut one is not read), each at its offset
    ``at`` + its start, read as the result block it was; also one whose quotes a JSON string
    escapes, read as the string says it."""
    out: list[Result] = []
    found = quoted_objects(text)
    for start, quoted, data in sorted(found, key=lambda f: f[0]):
        if isinstance(data, dict) and isinstance(data.get("tool"), str):
            block = ToolResultBlock("", data["tool"], quoted)
            out.append(Result(at + start, index, block, *result_reading(block, vocab)))
    return out


def read_message(m: Message, lexicon: Mapping[str, Intent],
                 phrases: Mapping[Constraint, re.Pattern[str]],
                 zone: tzinfo = UTC, pattern: re.Pattern[str] | None = None,
                 vocab: Vocab | None = None) -> Segment:
    vocab = vocab or bundled()
    texts: list[str] = []
    results: list[Result] = []
    calls: list[tuple[str, Mapping[str, Any]]] = []
    pos = 0
    for j, b in enumerate(m.content):
        ps = block_pieces(b)
        if isinstance(b, ToolResultBlock) and ps:
            text, fields = result_reading(b, vocab)
            results.append(Result(pos, j, b, text, fields))
        elif isinstance(b, ToolCallBlock):
            calls.append((b.id, _call_args(b)))
        else:
            ps = tuple(readable(p) for p in ps)
            if isinstance(b, TextBlock) and 'tool' in ps[0] and (
                    '"tool"' in ps[0] or '\\"tool\\"' in ps[0]):
                results += _quoted_results(ps[0], pos, j, vocab)
        for t in ps:
            texts.append(t)
            pos += len(t) + 1
    utterance = None
    mentions: tuple[tuple[int, str, Intent], ...] = ()
    if m.role == "user":
        plain = readable(m.plain_text())
        found = utterances_in(plain, lexicon, pattern)
        if found:
            # Of several, the last is the question: a harness puts the retrieved memory or
            # the earlier exchange before it. Positions are re-found in the segment's text,
            # which also holds the message's non-text pieces.
            utterance = (found[-1][1], found[-1][2])
            whole = "\n".join(texts)
            spots: list[tuple[int, str, Intent]] = []
            at = 0
            for _, u, intent in found:
                p = whole.find(u, at)
                if p >= 0:
                    spots.append((p, u, intent))
                    at = p + len(u)
            mentions = tuple(spots)
    return _read("\n".join(texts), len(texts), phrases, zone, tuple(results), vocab.patterns,
                 utterance=utterance, mentions=mentions, calls=tuple(calls))


def has_text_block(m: Message) -> bool:
    return any(isinstance(b, TextBlock) for b in m.content)


class Reader:
    """Segments of messages and head strings, cached by identity for the last two calls.

    ``lexicon`` and ``phrases`` are fixed for the reader's life (one fake model's)."""

    def __init__(self, lexicon: Mapping[str, Intent],
                 phrases: Mapping[Constraint, re.Pattern[str]],
                 zone: tzinfo = UTC, vocab: Vocab | None = None) -> None:
        self.lexicon = lexicon
        self.phrases = phrases
        self.vocab = vocab or bundled()  # the world's id patterns and fact keys
        self.zone = zone  # the scenario's: a stated time without a zone is in it
        self.pattern = utterance_pattern(lexicon)
        # A phrase with a line feed could match across two segments: read whole texts then.
        self.exact = not any("\n" in p.pattern for p in phrases.values())
        self._heads: dict[str, Segment] = {}
        self._heads_before: dict[str, Segment] = {}
        self._last = _EMPTY
        # Readings by content (role and blocks: all a reading depends on), for a message that
        # is not the object read before: an equal one a wire decoded afresh, or the bench's
        # own filler, made of a few sentences that recur. The oldest let go of when full.
        self._by_content: OrderedDict[tuple[str, tuple[Block, ...]], Segment] = OrderedDict()

    def read(self, m: Message) -> Segment:
        """The reading of one message (``read_message``), kept by content."""
        key = (m.role, m.content)
        seg = self._by_content.get(key)
        if seg is None:
            if len(self._by_content) >= _READINGS_KEPT:
                self._by_content.popitem(last=False)  # the oldest: full, it stays as full
            seg = self._by_content[key] = read_message(m, self.lexicon, self.phrases, self.zone,
                                                       self.pattern, self.vocab)
        return seg

    def next_call(self) -> None:
        """Forget the head strings that neither this call nor the one before showed."""
        self._heads_before, self._heads = self._heads, {}

    def layout(self, messages: tuple[Message, ...]) -> Layout:
        """The layout of ``messages``: the prefix shared with the last sequence laid out is
        taken over (copied, never changed: an earlier view may still read it), the rest read."""
        last = self._last
        k = common_prefix(last.messages, messages)
        segs, starts = last.segs[:k], last.starts[:k]
        j = bisect.bisect_left(last.marked, k)
        marked, marks = last.marked[:j], last.marks[:j]
        kept = marks[-1] if marks else _NO_MARKS
        tags, claims = last.tags[:kept.tags], last.claims[:kept.claims]
        pos = last.starts[k] if k < len(last.starts) else last.end
        # Messages the last sequence had after the shared prefix (a compaction keeps some of
        # them, shifted): found by identity; the sequence holds them, so ids are not reused.
        rest = {id(m): seg for m, seg in zip(last.messages[k:], last.segs[k:], strict=True)}
        for i in range(k, len(messages)):
            m = messages[i]
            seg = rest.get(id(m)) or self.read(m)
            segs.append(seg)
            starts.append(pos)
            if seg.pieces:
                pos += len(seg.text) + 1
            if seg.marked:
                marked.append(i)
                marks.append(_marks(marks[-1] if marks else _NO_MARKS, seg, m, starts[-1],
                                    tags, claims))
        self._last = Layout(messages, segs, starts, pos, marked, marks, tags, claims)
        return self._last

    def head(self, text: str) -> Segment:
        seg = self._heads.get(text) or self._heads_before.get(text)
        if seg is None:
            seg = _read(readable(text), 1, self.phrases, self.zone, (), self.vocab.patterns)
        self._heads[text] = seg
        return seg
