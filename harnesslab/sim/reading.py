"""What the fake model reads in a request: its serialised text with positions, and the ids,
constraints, claims, facts and current time visible in it.

Serialisation (``serialize``): the system prompt, then the summary, then every block of every
message in order, joined with ``"\\n"``. A block contributes the strings AgentScope counts
(``messages.block_texts``): text, thinking, each text part of a hint or a tool result; except
that a tool call is written ``name(input)`` so its name is visible too. Data blocks contribute
nothing. System and summary are always present (possibly empty), so positions never depend on
whether a harness sends an empty summary. Positions are character offsets in this string.
Tool schemas are not serialised: their descriptions hold example ids ("e.g. O-1001") that no
conversation stated.

Everything here is computed from the request and the fixed settings passed in (lexicon, extra
phrases); a ``View`` lives for one call only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, Literal

from harnesslab.messages import Request, TextBlock
from harnesslab.sim.facts import Fact, item_name, result_fact, tag_fact
from harnesslab.sim.intents import (
    CONFLICTS,
    CONSTRAINT_PHRASES,
    FIRST,
    ITEM,
    LAST,
    REF,
    Claim,
    ClaimKind,
    Constraint,
    Intent,
    by_field,
    is_reference,
    tags_in,
)
from harnesslab.sim.notices import removal_notices
from harnesslab.sim.prose import prose_facts
from harnesslab.sim.segments import Reader, Segment
from harnesslab.sim.times import Unread, stated_zones
from harnesslab.sim.vocab import Vocab

__all__ = ["SUMMARY", "SYSTEM", "Fact", "Lang", "Utterance", "View",
           "current_index", "has_cjk", "item_name", "note", "phrase_patterns", "serialize",
           "without_message"]

Lang = Literal["zh", "en"]
SYSTEM, SUMMARY = -2, -1  # message index of the system prompt and summary pieces

_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_TAG_PAIR_RE = re.compile(r"(\w+)=(\S+)")
_CONSTRAINTS = frozenset(c.value for c in Constraint)
_CLAIM_KINDS = frozenset(k.value for k in ClaimKind)


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def phrase_patterns(extra: Mapping[Constraint, Sequence[str]]) -> dict[Constraint, re.Pattern[str]]:
    """One case-insensitive pattern per constraint: the default phrases plus ``extra``.

    IGNORECASE on the original text keeps match offsets exact, which ``str.lower`` may not.
    """
    out = {}
    for c in Constraint:
        words = sorted({w for w in (*CONSTRAINT_PHRASES.get(c, ()), *extra.get(c, ())) if w},
                       key=lambda w: (-len(w), w))
        if words:
            out[c] = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    return out


def serialize(request: Request) -> str:
    """The serialised request whose character offsets are the positions (module docstring)."""
    return View(request, {}, {}).text


def current_index(request: Request) -> int | None:
    """The current turn: the last user message that has a text block."""
    for i in range(len(request.messages) - 1, -1, -1):
        m = request.messages[i]
        if m.role == "user" and any(isinstance(b, TextBlock) for b in m.content):
            return i
    return None


def without_message(request: Request, index: int | None) -> Request:
    if index is None:
        return request
    return replace(request, messages=request.messages[:index] + request.messages[index + 1:])


def _answers(m: Any) -> bool:
    """Whether a message is the model's answer to what came before: an assistant message that
    ends on text (one that ends on a tool call or result is a turn still under way), other than
    a harness's own note in it (a runtime-state hint the wire wrote as text)."""
    return m.role == "assistant" and bool(m.content) and isinstance(m.content[-1], TextBlock) \
        and not m.content[-1].text.lstrip().startswith("<system-")


@dataclass(frozen=True)
class Utterance:
    """A lexicon utterance in a user message: the message's whole text, or found inside it
    (then ``start``/``end`` are the utterance's own)."""

    message: int
    start: int
    end: int
    text: str
    intent: Intent


class View:
    """Everything recognisable in one request. Built per call and thrown away."""

    def __init__(self, request: Request, lexicon: Mapping[str, Intent],
                 phrases: Mapping[Constraint, re.Pattern[str]], reader: Reader | None = None) -> None:
        """``reader`` (the fake model's, reading with the same lexicon and phrases) keeps the
        reading of each message across calls; without one, everything is read afresh."""
        self.request = request
        self.lexicon = lexicon
        self.phrases = phrases  # from phrase_patterns
        self._reader = reader or Reader(lexicon, phrases)
        self._layout = self._reader.layout(request.messages)
        # System and summary are always present, so the messages start after both "\n"s.
        self._heads = (reader_head := self._reader.head)(request.system), reader_head(request.summary)
        # Offsets are in the text as read (segments.readable), the heads' as the messages'.
        self._summary_at = len(self._heads[0].text) + 1
        self._base = base = self._summary_at + len(self._heads[1].text) + 1
        self._end = base + self._layout.end
        # Whether every reading can be taken from the layout's running marks: no phrase that
        # could span two segments, no tag left open at a segment's end.
        self._running = self._reader.exact and not (
            self._layout.last_marks.open_tag or self._heads[0].open_tag
            or self._heads[1].open_tag)

    @cached_property
    def starts(self) -> list[int]:
        """Each message's start."""
        base = self._base
        return [base + s for s in self._layout.starts]

    def start(self, index: int) -> int:
        """Message ``index``'s start."""
        return self._base + self._layout.starts[index]

    @cached_property
    def text(self) -> str:
        return "\n".join([self._heads[0].text, self._heads[1].text,
                          *[s.text for s in self._layout.segs if s.pieces]])

    def _placed(self) -> Iterator[tuple[int, Segment]]:
        """Every segment that shows something, with its offset in the text (the others can
        hold no match)."""
        yield 0, self._heads[0]
        yield self._summary_at, self._heads[1]
        segs, starts, base = self._layout.segs, self._layout.starts, self._base
        for i in self._layout.marked:
            yield base + starts[i], segs[i]

    @property
    def utterance_pattern(self) -> re.Pattern[str] | None:
        """The reader's pattern of every lexicon utterance (``segments.utterance_pattern``)."""
        return self._reader.pattern

    def segment(self, index: int) -> Segment:
        """What message ``index`` shows."""
        return self._layout.segs[index]

    def message_end(self, index: int) -> int:
        starts = self._layout.starts
        return self._base + starts[index + 1] if index + 1 < len(starts) else self._end

    # --- ids --------------------------------------------------------------------------------

    @property
    def vocab(self) -> Vocab:
        """The world's id patterns and fact keys (the bundled world's, or a domain's)."""
        return self._reader.vocab

    @cached_property
    def ids(self) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {s: [] for s in self._reader.vocab.patterns}
        for off, seg in self._placed():
            for s, found in seg.ids.items():
                if found:
                    out[s].extend((off + p, i) for p, i in found)
        return out

    def latest_id(self, slot: str, before: int | None = None) -> str | None:
        found = [i for pos, i in self.ids[slot] if before is None or pos < before]
        return found[-1] if found else None

    def resolve(self, slot: str, value: str, before: int | None = None) -> str | None:
        """A slot value: an explicit id as it is; ``@ref`` the latest visible id of the slot's
        type; ``@first`` / ``@last`` the first / last order of the latest visible order list;
        ``@item:<name>`` the order that the latest visible fact naming that item says holds it
        (None when two orders of that fact hold it). Only what lies before ``before``, if
        given. None: nothing visible resolves it (the model asks which one)."""
        if value == REF:
            return self.latest_id(slot, before)
        if not is_reference(value):
            return value
        facts = sorted((f for f in (*self.facts, *self.spoken_facts)
                        if not f.error and (before is None or f.position < before)),
                       key=lambda f: f.position)
        return _resolve(facts, slot, value, self.vocab)

    @cached_property
    def spoken_facts(self) -> list[Fact]:
        """The facts the model's own earlier answers state, in its wording (``sim.prose``): what
        a reference may resolve from ("耳机那个" from "您共有 2 个订单：O-2001（滑板、护具），
        O-2010（耳机）。", Griptape keeping a run's answer but not its tool results), never
        facts to answer with (their lookup time is the prose's, often none)."""
        if not any(m.role == "assistant" for m in self.request.messages):
            return []
        spans = [(self.start(i), self.message_end(i))
                 for i, m in enumerate(self.request.messages) if m.role == "assistant"]
        return [f for f in prose_facts(self.text, self.vocab)
                if any(a <= f.position < b for a, b in spans)]

    def entities(self) -> list[str]:
        """Distinct ids of every slot, ordered by their last position (most recent last)."""
        last: dict[str, int] = {}
        for found in self.ids.values():
            for pos, i in found:
                last[i] = pos
        return sorted(last, key=lambda i: last[i])

    # --- utterances, constraints, claims ---------------------------------------------------

    @cached_property
    def utterances(self) -> list[Utterance]:
        out = []
        for i in self._layout.marked:
            seg = self._layout.segs[i]
            if seg.utterance is None:
                continue
            text, intent = seg.utterance
            at = self.start(i)
            if len(seg.mentions) == 1 and self.request.messages[i].plain_text() == text:
                out.append(Utterance(i, at, self.message_end(i), text, intent))
                continue
            out += [Utterance(i, at + p, at + p + len(u), u, it) for p, u, it in seg.mentions]
        return out

    def current(self) -> tuple[int | None, tuple[str, Intent] | None]:
        """The current turn: the last user message that has text (``current_index``) and the
        utterance it asks. When it asks none (a reminder or retrieved context sent as a user
        message of its own after the question, or a tool's result handed back as a user
        message), the latest user message since the model last answered that does ask one.
        An assistant text that a user message quoting a tool result follows is a tool call
        written as text (smolagents' ``Calling tools: [...]`` then ``Observation: ...``, a
        ReAct ``Action:``), not an answer: the turn is still under way."""
        index = current_index(self.request)
        if index is None:
            return None, None
        segs = self._layout.segs
        if segs[index].utterance is not None:
            return index, segs[index].utterance
        messages = self.request.messages
        for i in range(index - 1, -1, -1):
            m = messages[i]
            if _answers(m) and not (messages[i + 1].role == "user" and segs[i + 1].results
                                    and segs[i + 1].utterance is None):
                break
            if m.role == "user" and segs[i].utterance is not None:
                return i, segs[i].utterance
        return index, None

    def open_question(self) -> tuple[int | None, tuple[str, Intent] | None]:
        """``current``, unless the request ends on the model's own answer (or on it and then
        instructions: system messages a harness appends after the conversation, as Semantic
        Kernel's summarizer does): then the call asks something else of the conversation (a
        summary, a title, a memory extraction)."""
        index, asked = self.current()
        messages = self.request.messages
        last = len(messages) - 1
        while last >= 0 and messages[last].role == "system":
            last -= 1
        if last >= 0 and _answers(messages[last]):
            return index, None
        return index, asked

    @cached_property
    def tags(self) -> list[tuple[int, str, str]]:
        heads = ((0, self._heads[0]), (self._summary_at, self._heads[1]))
        if not (self._layout.last_marks.open_tag or any(seg.open_tag for _, seg in heads)):
            base = self._base
            return [(off + p, kind, body) for off, seg in heads for p, kind, body in seg.tags] \
                + [(base + p, kind, body) for p, kind, body in self._layout.tags]
        if any(seg.open_tag for _, seg in self._placed()):  # a tag may span two segments
            return tags_in(self.text)
        return [(off + p, kind, body) for off, seg in self._placed() if seg.tags
                for p, kind, body in seg.tags]

    @cached_property
    def constraint_positions(self) -> dict[Constraint, int]:
        """Each visible constraint with its latest position."""
        found: dict[Constraint, int] = {}

        def see(c: Constraint, pos: int) -> None:
            found[c] = max(pos, found.get(c, -1))

        if self._running:
            # As below, read from the layout's running marks: the same positions, seen in the
            # same order (phrases, the system prompt's and summary's first; then utterances;
            # then tags).
            marks, base = self._layout.last_marks, self._base
            for off, seg in ((0, self._heads[0]), (self._summary_at, self._heads[1])):
                for c, p in seg.phrases.items():
                    see(c, off + p)
            for c, p in marks.phrases.items():
                see(c, base + p)
            for c, p in marks.said.items():
                see(c, base + p)
            for off, seg in ((0, self._heads[0]), (self._summary_at, self._heads[1])):
                for p, kind, body in seg.tags:
                    if kind == "constraint" and body in _CONSTRAINTS:
                        see(Constraint(body), off + p)
            for c, p in marks.tagged.items():
                see(c, base + p)
            return found
        if self._reader.exact:
            for off, seg in self._placed():
                for c, p in seg.phrases.items():
                    see(c, off + p)
        else:
            for c, pat in self.phrases.items():
                for m in pat.finditer(self.text):
                    see(c, m.start())
        for u in self.utterances:
            for c in u.intent.constraints:
                see(c, u.start)
        for pos, kind, body in self.tags:
            if kind == "constraint" and body in _CONSTRAINTS:
                see(Constraint(body), pos)
        return found

    @cached_property
    def constraints(self) -> frozenset[Constraint]:
        """The visible constraints in force: of a conflicting pair, the later one wins."""
        pos = self.constraint_positions
        return frozenset(c for c, p in pos.items() if pos.get(CONFLICTS.get(c, c), -1) <= p)

    def language(self, text: str | None) -> Lang:
        """English or Chinese as a visible constraint says, else as ``text`` is written; with
        no text (no question visible, so no utterance either), as the conversation is written:
        the summary and the messages, not the harness's own system prompt."""
        if Constraint.ENGLISH in self.constraints:
            return "en"
        if Constraint.CHINESE in self.constraints:
            return "zh"
        if text is None:
            text = self.text[self._summary_at:]
        return "zh" if has_cjk(text) else "en"

    def ordered_constraints(self) -> list[Constraint]:
        return sorted(self.constraints, key=lambda c: self.constraint_positions[c])

    @cached_property
    def claims(self) -> list[tuple[int, Claim]]:
        base = self._base
        out = [(base + p, c) for p, c in self._layout.claims]
        out += [(pos, c) for pos, c, _ in self._tag_claims]
        return sorted(out, key=lambda pc: pc[0])

    @cached_property
    def _tag_claims(self) -> list[tuple[int, Claim, bool]]:
        """Claims in tags, each with whether it is written as established (no ``unverified``)."""
        out = []
        for pos, kind, body in self.tags:
            if kind != "claim":
                continue
            m = _TAG_PAIR_RE.match(body)
            if m and m.group(1) in _CLAIM_KINDS:
                out.append((pos, Claim(ClaimKind(m.group(1)), m.group(2)),
                            "unverified" not in body.split()))
        return out

    def claimed_user(self) -> str | None:
        users = [c.value for _, c in self.claims if c.kind is ClaimKind.IDENTITY]
        return users[-1] if users else None

    def trusted_user(self) -> str | None:
        """The identity a tag states as established (a promoted claim), if any: the latest."""
        users = [c.value for _, c, trusted in self._tag_claims
                 if trusted and c.kind is ClaimKind.IDENTITY]
        return users[-1] if users else None

    # --- time and facts ------------------------------------------------------------------------

    @cached_property
    def stated(self) -> datetime | Unread | None:
        """The latest statement of the time outside tool results (the messages', else the
        summary's, else the system prompt's): its time, or :class:`Unread` when it reads two
        ways."""
        now = self._layout.last_marks.now
        for seg in (self._heads[1], self._heads[0]):
            if now is None and seg.times:
                now = seg.times[-1][1]
        return now

    @property
    def now(self) -> datetime | None:
        """The latest time stated outside tool results; None when none is, or when the latest
        statement reads two ways (an earlier one is no longer "now")."""
        stated = self.stated
        return stated if isinstance(stated, datetime) else None

    @property
    def now_unread(self) -> Unread | None:
        """The latest statement of the time when it reads two ways, else None."""
        stated = self.stated
        return stated if isinstance(stated, Unread) else None

    def outside_results(self) -> Iterator[tuple[int, str]]:
        """Every segment's text with its offset, tool results cut out (a tool's output is not
        the harness's words), marked or not: for the judge's readings (``zones``, notices)."""
        heads = [(0, self._heads[0]), (self._summary_at, self._heads[1])]
        for off, seg in [*heads, *((self._base + st, sg) for st, sg in
                                   zip(self._layout.starts, self._layout.segs, strict=True))]:
            at = 0
            for r in sorted(seg.results, key=lambda r: r.start):
                yield off + at, seg.text[at:r.start]
                at = r.start + len(r.text)
            yield off + at, seg.text[at:]

    def zones(self, at: datetime) -> list[tuple[int, timedelta | str | None]]:
        """The zones the request names outside tool results (``times.stated_zones``), each
        offset at ``at``, in order. Not a reading the fake model answers from (it answers from
        the times it reads): the judge's."""
        return [(off + p, z) for off, text in self.outside_results()
                for p, z in stated_zones(text, at)]

    def notices(self) -> list[tuple[int, str]]:
        """The notices of removed conversation outside tool results (``notices``), in order."""
        return [(off + p, words) for off, text in self.outside_results()
                for p, words in removal_notices(text)]

    @cached_property
    def facts(self) -> list[Fact]:
        calls: dict[str, Mapping[str, Any]] = {}
        for _, seg in self._placed():
            calls.update(seg.calls)
        # A multi-part result is one fact, at its first piece.
        vocab = self.vocab
        out: list[Fact] = [result_fact(r.block, calls.get(r.block.id, {}), off + r.start,
                                       (r.text, r.fields), vocab)
                           for off, seg in self._placed() for r in seg.results]
        for pos, kind, body in self.tags:
            if kind == "fact" and body.strip():
                out.append(tag_fact(body, pos, vocab))
        return sorted(out, key=lambda f: f.position)



def _resolve(facts: list[Fact], etype: str, value: str, vocab: Vocab) -> str | None:
    """A reference to an instance of ``etype``: ``@first`` / ``@last`` of the latest visible
    list of the type; ``@<field>:<value>`` the instance the latest visible fact giving that
    value names (a list field: holding it; ``@item:`` is the bundled world's ``@items:``),
    None when that fact gives it of two."""
    listers = {t for t, shape in vocab.lists.items() if shape.etype == etype}
    if value in (FIRST, LAST):
        lists = [f.entries for f in facts if f.tool in listers and f.entries]
        return (lists[-1][0] if value == FIRST else lists[-1][-1])[0] if lists else None
    ref = ("items", value[len(ITEM):]) if value.startswith(ITEM) else by_field(value)
    if ref is None:
        return None
    name, wanted = ref[0], item_name(ref[1])
    readers = {t for t, k in vocab.keys.items()
               if vocab.key_types.get(k) == etype and t not in vocab.lists}
    for f in reversed(facts):
        if f.entries and any(s.list_field == name for t, s in vocab.lists.items()
                             if t == f.tool):
            holders = list(dict.fromkeys(o for o, items in f.entries if wanted in items))
        elif f.tool in listers:
            key = vocab.lists[f.tool].id_field
            holders = list(dict.fromkeys(str(r.get(key, "")) for r in f.rows()
                                         if item_name(str(r.get(name, ""))) == wanted))
        elif f.tool in readers and f.key and name in f.fields:
            values = f.fields[name].split("+")
            holders = [f.key] if wanted in values or item_name(f.fields[name]) == wanted else []
        else:
            continue
        if holders:
            return holders[0] if len(holders) == 1 else None
    return None


def note(kind: str, view: View, **extra: Any) -> dict[str, Any]:
    """The annotations of a reply (for the bench only): one shape for every kind."""
    return {"kind": kind, "utterance": None, "act": None, "resolved": {},
            "constraints": sorted(c.value for c in view.constraints),
            "now": view.now.isoformat() if view.now else None, "cited": None, "reason": None,
            **({"now_unread": f"{u.raw} ({u.why})"} if (u := view.now_unread) else {}),
            **extra}
