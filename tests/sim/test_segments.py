"""The fake model reads message by message (``harnesslab.sim.segments``) and keeps each
message's reading while it stays in the requests: what it finds must be exactly what a search
of the whole serialised request finds, whatever the harness did to the sequence in between."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.messages import Message, Request, TextBlock, ToolCallBlock, ToolResultBlock, block_texts
from harnesslab.sim import intents
from harnesslab.sim.intents import ID_PATTERNS, TAG_RE, Act, Claim, ClaimKind, Constraint, Intent
from harnesslab.sim.reading import View, phrase_patterns
from harnesslab.sim.segments import Reader
from harnesslab.sim.times import stated_times

PHRASES = phrase_patterns({Constraint.BREVITY: ("keep it short",)})
# Pieces chosen to put every pattern at a piece's or a message's edge, and to open a tag or a
# time stamp in one message and close it in the next.
BITS = ["O-1001", "U-2", "xO-1002", "O-10033", "[constraint:brevity]", "[claim:identity=U-2",
        "]", "[fact:track_order as_of=2026-11-28T10:00:00+08:00 status=x]", "<current-time>",
        "2026-11-28 10:00:00 CST+0800", "</current-time>", "Keep it SHORT", "简单一点", " ", "\n",
        "{\"order_id\": \"O-1001\"}", "以后回答都简单一点。"]


def _pieces(block: object) -> Iterator[str]:
    if isinstance(block, ToolCallBlock):
        yield f"{block.name}({block.input})"
    else:
        yield from block_texts(block)  # type: ignore[arg-type]


def whole_text(r: Request) -> str:
    """The serialisation as reading.py documents it, built independently."""
    return "\n".join([r.system, r.summary,
                      *[t for m in r.messages for b in m.content for t in _pieces(b)]])


def result_spans(r: Request) -> list[tuple[int, int]]:
    """Where tool results' texts lie in the whole text (times there are no "now")."""
    pos = len(r.system) + len(r.summary) + 2
    spans = []
    for m in r.messages:
        for b in m.content:
            for t in _pieces(b):
                if isinstance(b, ToolResultBlock):
                    spans.append((pos, pos + len(t)))
                pos += len(t) + 1
    return spans


def assert_reads_as_whole(view: View) -> None:
    text = whole_text(view.request)
    assert view.text == text
    spans = result_spans(view.request)
    times = [t for p, t in stated_times(text, UTC)
             if not any(a <= p < b for a, b in spans)]
    assert view.now == (times[-1] if times else None)
    assert view.ids == {s: [(m.start(), m.group(0)) for m in p.finditer(text)]
                        for s, p in ID_PATTERNS.items()}
    assert view.tags == [(m.start(), m.group(1), m.group(2)) for m in TAG_RE.finditer(text)]
    assert not view.utterances  # an empty lexicon: constraints come from phrases and tags
    found: dict[Constraint, int] = {}
    for c, p in view.phrases.items():
        for m in p.finditer(text):
            found[c] = m.start()
    for m in TAG_RE.finditer(text):
        if m.group(1) == "constraint" and m.group(2) in {c.value for c in Constraint}:
            found[Constraint(m.group(2))] = max(m.start(), found.get(Constraint(m.group(2)), -1))
    assert view.constraint_positions == found


def message(draw: st.DrawFn, n: int) -> Message:
    blocks = []
    for k in range(draw(st.integers(1, 3))):
        text = "".join(draw(st.lists(st.sampled_from(BITS), max_size=4)))
        kind = draw(st.sampled_from(["text", "call", "result"]))
        if kind == "call":
            blocks.append(ToolCallBlock(f"c{n}-{k}", "track_order", text))
        elif kind == "result":
            blocks.append(ToolResultBlock(f"c{n}-{k}", "track_order", text))
        else:
            blocks.append(TextBlock(text))
    return Message(draw(st.sampled_from(["user", "assistant"])), tuple(blocks), id=f"m{n}")


@st.composite
def conversations(draw: st.DrawFn) -> list[Request]:
    """Requests as a harness sends them: appended to, edited, cut, summarised."""
    msgs = [message(draw, 0)]
    out = []
    for n in range(1, draw(st.integers(1, 6)) + 1):
        op = draw(st.sampled_from(["append", "replace", "copy", "cut", "same"]))
        if op == "append":
            msgs = [*msgs, message(draw, n)]
        elif op == "copy":  # an equal message, another object (a wire decodes afresh)
            i = draw(st.integers(0, len(msgs) - 1))
            msgs[i] = Message(msgs[i].role, tuple(replace(b) for b in msgs[i].content),
                              id=msgs[i].id + "'")
        elif op == "replace":
            msgs[draw(st.integers(0, len(msgs) - 1))] = message(draw, n)
        elif op == "cut":
            msgs = msgs[draw(st.integers(0, len(msgs) - 1)):]
        summary = "".join(draw(st.lists(st.sampled_from(BITS), max_size=3)))
        out.append(Request(system="sys O-1009", summary=summary, messages=tuple(msgs)))
    return out


@settings(max_examples=300, deadline=None)
@given(conversations())
def test_a_reader_across_calls_finds_what_the_whole_text_shows(requests: list[Request]) -> None:
    reader = Reader({}, PHRASES)
    for r in requests:
        reader.next_call()
        kept = View(r, {}, PHRASES, reader)
        fresh = View(r, {}, PHRASES)
        assert_reads_as_whole(kept)
        for name in ("text", "starts", "ids", "tags", "now", "constraint_positions",
                     "utterances", "facts", "claims"):
            assert getattr(kept, name) == getattr(fresh, name), name


def test_a_tag_left_open_in_one_message_closes_in_the_next() -> None:
    r = Request(system="", messages=(Message.text("user", "a [claim:identity=U-2"),
                                     Message.text("assistant", "unverified] b")))
    view = View(r, {}, PHRASES)
    assert view.tags == [(4, "claim", "identity=U-2\nunverified")]  # after "\n\na "
    assert_reads_as_whole(view)


def test_a_phrase_with_a_line_feed_is_searched_in_the_whole_text() -> None:
    phrases = phrase_patterns({Constraint.BREVITY: ("short\nplease",)})
    r = Request(system="", messages=(Message.text("user", "short"), Message.text("user", "please")))
    assert View(r, {}, phrases).constraints == frozenset({Constraint.BREVITY})


@pytest.mark.parametrize("cut", [0, 1, 2])
def test_kept_messages_are_found_again_after_a_cut(cut: int) -> None:
    msgs = tuple(Message.text("user", f"O-100{i}") for i in range(3))
    reader = Reader({}, PHRASES)
    before = View(Request(system="", messages=msgs), {}, PHRASES, reader)._layout
    after = View(Request(system="", summary="O-1009", messages=msgs[cut:]), {}, PHRASES, reader)
    assert_reads_as_whole(after)
    # The reading was kept, not redone, and the earlier layout was left as it was.
    assert after._layout.segs[0] is before.segs[cut]
    assert before.messages == msgs and len(before.segs) == 3


# Utterances that state constraints and claims, said whole or inside a longer message.
LEXICON = {
    "帮我查订单 O-1001，简单一点": Intent(Act.ORDER_STATUS, order="O-1001",
                                  constraints=(Constraint.BREVITY,)),
    "请用英文回答，我是 U-2": Intent(Act.CHITCHAT, constraints=(Constraint.ENGLISH,
                                                          Constraint.BREVITY),
                             claims=(Claim(ClaimKind.IDENTITY, "U-2"),)),
    "I own O-1002": Intent(Act.CHITCHAT, claims=(Claim(ClaimKind.OWNERSHIP, "O-1002"),)),
    "回答详细些吧": Intent(Act.CHITCHAT, constraints=(Constraint.DETAILED,)),  # no phrase of it
}
SAID = [*LEXICON, *BITS]


@st.composite
def said(draw: st.DrawFn) -> list[Request]:
    """Requests whose user messages say lexicon utterances, alone or among other pieces."""
    msgs: list[Message] = []
    out = []
    for n in range(draw(st.integers(1, 6))):
        if draw(st.booleans()) or not msgs:
            whole = draw(st.booleans())
            text = draw(st.sampled_from(list(LEXICON))) if whole else \
                "".join(draw(st.lists(st.sampled_from(SAID), max_size=4)))
            msgs = [*msgs, Message.text(draw(st.sampled_from(["user", "assistant"])), text,
                                        id=f"m{n}")]
        else:
            msgs = msgs[draw(st.integers(0, len(msgs) - 1)):]
        summary = "".join(draw(st.lists(st.sampled_from(SAID), max_size=2)))
        system = draw(st.sampled_from(["sys", "sys 简单一点"]))
        out.append(Request(system=system, summary=summary, messages=tuple(msgs)))
    return out


@settings(max_examples=300, deadline=None)
@given(said())
def test_running_marks_read_as_every_marked_segment_does(requests: list[Request]) -> None:
    """A request's constraints, claims, tags and time, taken from the layout's running marks,
    are what reading every marked segment (and the system prompt and summary) gives, positions
    and the order constraints are first seen in alike."""
    reader = Reader(LEXICON, PHRASES)
    for r in requests:
        reader.next_call()
        view = View(r, LEXICON, PHRASES, reader)
        slow = View(r, LEXICON, PHRASES)
        slow._running = False  # the segment-by-segment reading
        assert list(view.constraint_positions.items()) == \
            list(slow.constraint_positions.items())
        placed = list(slow._placed())
        if not any(seg.open_tag for _, seg in placed):
            assert view.tags == [(off + p, k, b) for off, seg in placed for p, k, b in seg.tags]
        claims = [(u.start, c) for u in slow.utterances for c in u.intent.claims]
        claims += [(pos, c) for pos, c, _ in slow._tag_claims]
        assert view.claims == sorted(claims, key=lambda pc: pc[0])
        times = [seg.times[-1][1] for _, seg in placed if seg.times]
        assert view.now == (times[-1] if times else None)


# --- tags in linear time ----------------------------------------------------------------------

_TAG_BITS = st.lists(st.sampled_from(["[", "]", "[fact:", "[constraint:", "[claim:", "x", " ",
                                      "\n", "k=v", "brevity", "[fac", "]]"]), max_size=30)


@given(_TAG_BITS)
def test_tags_are_found_as_the_tag_pattern_finds_them(bits: list[str]) -> None:
    text = "".join(bits)
    assert intents.tags_in(text) == [(m.start(), m.group(1), m.group(2)) for m in TAG_RE.finditer(text)]
    assert intents.open_tag(text) == (re.search(r"\[(?:constraint|claim|fact):[^\]]*\Z", text) is not None)


def test_many_tag_openers_without_a_close_are_read_in_linear_time() -> None:
    text = "[constraint:" * 20000 + "]" + "[fact:" * 20000
    start = time.process_time()
    assert len(intents.tags_in(text)) == 1 and intents.open_tag(text)
    assert time.process_time() - start < 1.0  # a few ms; the regex's scan from each opener, minutes
