"""Compaction seen from outside: for a black-box harness (``harness=cmd:...``) the bench reads
no event of the harness's own, so it finds, from the request stream alone (the record's model
calls, session by session, in order):

- **conversation**: a message holding something the bench produced, and so knows without the
  harness's word: a user's words (a turn's utterance, a filler exchange), what the model said
  or thought, a tool call the model made, a tool result, an image. A message of only
  harness-written blocks (injected memory, a pin board, a runtime hint, a summary instruction
  or a summary kept as a message) is not: it may change or move as its harness likes;
- **auxiliary calls**: a call whose reply the conversation never took up: no later request of
  the session holds its reply (text or thinking) in an assistant message that follows a
  non-system message of the call's own request (the conversation went on from where the call
  answered; a summary kept as an assistant message, Semantic Kernel's or CAMEL's, stands
  where the conversation it replaced was), nor a result for one of its tool calls or the
  call's id quoted as text (smolagents' ``Calling tools: [{'id': ...``), and it is not the
  call whose text, or a string argument of whose tool call (a ``final_answer``), became a
  turn's reply (a request sent again unchanged is a retry: the reply before it was not taken
  up). A later request holding
  the call's whole history is no evidence: a failing summary's request is extended, history
  and all, by the next attempt's. A rejected request is one when its conversation ends at an
  older point of the request before it (a summary request over the part to compress, refused):
  a main-line request carries the conversation up to its newest message;
- **summary calls**: auxiliary calls whose reply (its text, a string value of a JSON answer,
  or a string value of its tool call's arguments, at least ``MIN_SHARED`` characters) shows
  up in a later request of the session, in a message, its summary or its system prompt: the
  harness kept what it asked for (a summary, extracted pins, memory items);
- **compactions**: the points where a main-line request's history is not an extension of the
  previous main-line request's: a message of conversation of the previous one is gone (not
  merely grown in place, as AgentScope's reply message grows), or its summary changed;
  rejected requests count as requests (but not one retried: the next request ends with the
  same message, the same call sent again with less before it). A point where another
  instance took over (a ``resume`` event between the two, or turns served by different
  instances) is resume fidelity's business: there a summary written before the take-over is
  one compaction when the new instance's request shows one (the summary changed, or
  conversation is gone). Auxiliary calls after which no request shows anything removed (a
  summary that failed and was never applied, a memory extraction after the last turn) are no
  compaction. Several compactions between two requests are told apart by the conversation
  their auxiliary calls compress (a pin extraction and a summary of one compaction compress
  the same; a summary retried with its oldest messages dropped, the end of it; a memory
  extraction compresses nothing that was removed and is no compaction's); truncations
  without any call between two requests show as one (the reference harness counts each). A
  window that drops old conversation without a summary is a compaction seen from outside, as a
  truncation is (the reference harness's ``window`` strategy records one at each such request).
  Each is recorded as what was removed and what was added, and its summary is the new
  request's summary (or, when that stayed as it was, the text of the harness-written messages
  it added: a summary kept as a message, Codex's handoff bridge), its source the request of
  the summary call before it (or the previous request).

``observed_compactions`` gives them in the shape of the in-process ``compaction`` events, so
compactions, summary tokens, trigger lateness and summary entity fidelity are one formula for
both (``judge.metrics``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harnesslab.harnesses.registry import program_command
from harnesslab.judge.checks import answer_strings
from harnesslab.messages import (
    Block,
    DataBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from harnesslab.record.format import CALL_EVENTS, Record, message_text
from harnesslab.sim.draws import CALL_ID_RE
from harnesslab.sim.filler import is_filler_text
from harnesslab.sim.react import field_values

MIN_SHARED = 12  # characters a kept reply must share with a later request


def is_black_box(rec: Record) -> bool:
    """A record of a program under the bench (its harness setting is ``cmd:...``)."""
    return program_command(str(rec.header.get("harness", {}).get("harness", ""))) is not None


@dataclass(frozen=True)
class Observed:
    auxiliary: frozenset[int]         # call numbers
    summaries: frozenset[int]         # call numbers (a subset of auxiliary)
    compactions: tuple[dict[str, Any], ...]


def _reply_texts(call: dict[str, Any]) -> list[str]:
    # A reply in a JSON schema (agno's session summary, {"summary": ...}) is kept as its
    # string values too.
    out = [b["text"] for b in call["reply"] if b["type"] == "text" and b.get("text")]
    return [t for t in out + answer_strings(call) if len(t) >= MIN_SHARED]


def observe(rec: Record) -> Observed:
    """The auxiliary calls, summary calls and compactions of ``rec`` (module docstring)."""
    turns = rec.of_type("turn")
    # A turn's answer, and a filler exchange's that a program answered as a turn.
    replies = {t["reply"] for t in turns if t.get("reply")} \
        | {r for f in rec.of_type("filler") for r in f.get("replies", ()) if r}
    # The last call of each turn its harness reported failed, and the turn's words.
    failed_last = {t["last_call"]: t["text"] for t in turns
                   if t.get("harness_failed") and t.get("text")}
    instance = {n: t["instance"] for t in turns if "instance" in t
                for n in range(t["first_call"], t["last_call"] + 1)}
    by_session: dict[str, list[dict[str, Any]]] = {}
    at: dict[int, int] = {}          # call number -> its place in the record
    resumed: list[int] = []          # places of resume events (a fresh instance took over)
    killed: list[int] = []           # those after a kill (the turn in flight was cut)
    for k, e in enumerate(rec.events):
        if e["type"] in CALL_EVENTS:
            # A rejected request is part of the stream too: it shows what the harness sent.
            by_session.setdefault(e["request"]["session_id"], []).append(e)
            at[e["call"]] = k
        elif e["type"] == "resume":
            resumed.append(k)
            if e.get("cause") == "kill":
                killed.append(k)
    is_conversation = _conversation(rec)
    aux: set[int] = set()
    summaries: set[int] = set()
    compactions: list[dict[str, Any]] = []
    for seq in by_session.values():
        hashes = [rec.message_hashes(c["request"]) for c in seq]
        # A rejected request retried (the next request ends with the same message, sent again
        # with less before it) is an attempt of that call: a harness that trims the oldest
        # message per overflow until its summary request fits compacts once, not per attempt.
        keep = [i for i, c in enumerate(seq)
                if c["type"] == "model_call" or i + 1 == len(seq) or not hashes[i]
                or hashes[i][-1:] != hashes[i + 1][-1:]]
        seq, hashes = [seq[i] for i in keep], [hashes[i] for i in keep]
        # Each distinct message and summary once: the last request showing it, and its text.
        last: dict[str, int] = {}
        after: dict[str, set[str]] = {}  # message -> the messages right before it, anywhere
        for j, hs in enumerate(hashes):
            for p, h in enumerate(hs):
                last[h] = j
                if p:
                    after.setdefault(h, set()).add(hs[p - 1])
            last["summary:" + seq[j]["request"]["summary"]] = j
            # The system prompt too: agno and llama-index keep their summary there.
            last["system:" + seq[j]["request"]["system"]] = j
        # (last request, text, for an assistant message the non-system messages before it)
        shown: list[tuple[int, str, frozenset[str] | None]] = []
        results: list[tuple[int, str]] = []  # (last request, call id answered or quoted)
        for h, j in last.items():
            if h.startswith(("summary:", "system:")):
                shown.append((j, rec.blobs[h.partition(":")[2]], None))
                continue
            m = rec.message(h)
            text = message_text(m)
            shown.append((j, text, frozenset(
                x for x in after.get(h, ()) if rec.message(x).role != "system")
                if m.role == "assistant" else None))
            results += [(j, b.id) for b in m.content if isinstance(b, ToolResultBlock)]
            if "call_" in text:
                results += [(j, cid) for cid in CALL_ID_RE.findall(text)]
        def _ran(k: int, names: set[str]) -> bool:
            """Whether a tool of ``names`` ran after event ``k``, before the next call."""
            for n in range(k + 1, len(rec.events)):
                e = rec.events[n]
                if e["type"] in CALL_EVENTS:
                    return False
                if e["type"] == "tool_call" and e["name"] in names:
                    return True
            return False

        def _cut(i: int, seq: list[dict[str, Any]] = seq) -> bool:
            end = at[seq[i + 1]["call"]] if i + 1 < len(seq) else len(rec.events)
            return any(at[seq[i]["call"]] < k < end for k in killed)


        # A rejected request that ends, in conversation, at an older point of the request
        # before it (a summary request over the part to compress, refused as the same belief
        # sized it) was an auxiliary attempt, not the main line's: its break is the one
        # compaction the next request shows, not a compaction of its own.
        prev: int | None = None  # the last request of the main line so far
        for i, c in enumerate(seq):
            if c["type"] != "model_call" and prev is not None:
                newest = _last_conversation(hashes[i], is_conversation)
                if newest is not None and newest in hashes[prev] \
                        and newest != _last_conversation(hashes[prev], is_conversation):
                    aux.add(c["call"])
                    continue
            prev = i
        for i, c in enumerate(seq):
            if c["type"] != "model_call":
                continue  # rejected: nothing came back to take up or leave
            made = {b["id"] for b in c["reply"] if b["type"] == "tool_call"}
            said = "".join(b.get("text", "") for b in c["reply"] if b["type"] == "text").strip()
            thought = "".join(b.get("thinking", "") for b in c["reply"]
                              if b["type"] == "thinking").strip()
            # Taken up only by what shows it: a later request merely holding this one's
            # history is no evidence (a failing summary's request is extended by the next
            # summary request, history and all, and its refusal is taken up by nothing).
            # An assistant message showing the reply takes it up where it follows a message
            # this call's request held (the conversation went on from there); a summary kept
            # as an assistant message stands where the conversation it replaced was.
            held = set(hashes[i])
            # A call written as text (a prompt's ReAct protocol, sim.react) is taken up by the
            # harness running it: the tool run before the next call (a harness re-renders
            # the call's text as it likes, LlamaIndex's arguments as a Python dict).
            ann = c.get("annotations") or {}
            texted = {t["name"] for t in ann.get("text_calls", ())}
            # A step written as output fields (DSPy's ReAct, sim.react) is taken up by a later
            # request showing every one of its values in one message: the harness's trajectory,
            # which it renders back (its ``finish`` step, which runs no tool, among them).
            fields = field_values(said) if ann.get("tool_protocol") == "fields" else []
            taken = any(j > i and cid in made for j, cid in results) \
                or (bool(texted) and _ran(at[c["call"]], texted)) \
                or (bool(said) and said in replies) \
                or (bool(fields) and any(j > i and all(v in t for v in fields)
                                         for j, t, _ in shown)) \
                or any(x in replies for x in answer_strings(c)) \
                or any(j > i and before is not None and not before.isdisjoint(held) and x in t
                       for x in (said, thought) if x for j, t, before in shown) \
                or _cut(i)  # its instance was killed before the conversation could go on
            # The call a turn ended at when its loop ran out (tool calls made, the turn reported
            # failed): the main line's, carrying the turn's words, though when no turn follows
            # no later request takes its results up.
            ran_out = bool(made) and c["call"] in failed_last \
                and failed_last[c["call"]] in rec.request_text(c["request"])
            if taken or ran_out:
                continue
            aux.add(c["call"])
            kept = _reply_texts(c)
            if kept and any(j > i and any(k in t for k in kept) for j, t, _ in shown):
                summaries.add(c["call"])
        main = [i for i, c in enumerate(seq) if c["call"] not in aux]
        source: dict[str, Any] | None = None
        for a, b in itertools.pairwise(main):
            for k in range(a + 1, b):
                if seq[k]["call"] in summaries:
                    source = seq[k]["request"]
            ca, cb = seq[a]["call"], seq[b]["call"]
            ra, rb = seq[a]["request"], seq[b]["request"]
            kept_now = set(hashes[b])
            before = set(hashes[a])
            added = [h for h in hashes[b] if h not in before]
            # Only conversation can be removed: a harness-written message (injected memory, a
            # pin board, a hint, a summary kept as a message) changes as its harness likes. A
            # message that grew in place (AgentScope's reply message gaining a call, its
            # result, the answer) is an extension, not a removal.
            grown = _grown_into(rec, added)
            removed = [h for h in hashes[a] if h not in kept_now and is_conversation(h)
                       and not grown(h)]
            # What the model answered to ``a`` is conversation too, though no main-line
            # request has shown it yet: a harness that compacts right after each answer or
            # tool call (Codex, whenever its own prompt is over its limit) summarises it away
            # before any request carries it. Gone, with a summary or extraction call between,
            # it was removed.
            if any(seq[k]["call"] in aux for k in range(a + 1, b)) \
                    and not _answer_shown(rec, seq[a], hashes[b]):
                removed.append("reply:" + str(ca))
            changed = ra["summary"] != rb["summary"]
            if any(at[ca] < k < at[cb] for k in resumed) \
                    or instance.get(ca, 0) != instance.get(cb, 0):
                # Another instance took over: what it lost is resume fidelity's; a summary
                # written before it did is a compaction all the same, where the new
                # instance's request shows one (a failed one that was never applied is none).
                if removed or changed:
                    compactions += _unseen(seq[a + 1:b], aux)
                source = None
                continue
            if not removed and not changed:
                continue
            # What the harness wrote at that point (a summary kept as a message, Codex's
            # handoff bridge) is the summary when the summary field stayed as it was.
            summary = rec.blobs[rb["summary"]] if changed else "\n".join(
                message_text(rec.message(h)) for h in added if not is_conversation(h))
            # Two compactions between two requests (during one filler) show as one break;
            # the auxiliary calls tell them apart: the calls of one compaction (a pin
            # extraction and a summary, a summary retried with its oldest messages dropped)
            # compress the same conversation, or the end of it; a second one compresses
            # another. Calls that compress nothing removed (a memory extraction over the
            # turn's words) are no compaction's.
            gone = set(removed)
            bases = _distinct([tuple(h for h in hashes[k] if is_conversation(h))
                               for k in range(a + 1, b) if seq[k]["call"] in aux
                               and gone.intersection(hashes[k])])
            for _ in range(max(1, len(bases))):
                compactions.append({"type": "compaction", "observed": True, "applied": True,
                                    "request": source if source is not None else ra,
                                    "at_call": seq[b]["call"], "removed": len(removed),
                                    "added": len(added), "kept": len(hashes[b]) - len(added),
                                    "summary": summary})
            source = None
        # Auxiliary calls after the last request that answered are no compaction seen: no
        # request shows anything removed (a memory extraction after the last turn, a summary
        # that failed and was never applied).
    return Observed(frozenset(aux), frozenset(summaries), tuple(compactions))


def _last_conversation(hashes: list[str], is_conversation: Callable[[str], bool]) -> str | None:
    """The newest message of conversation in a request (by hash), if any."""
    return next((h for h in reversed(hashes) if is_conversation(h)), None)


def _answer_shown(rec: Record, call: dict[str, Any], shown: list[str]) -> bool:
    """Whether a request (its message hashes) carries what ``call`` answered: its text or
    thinking in an assistant message, one of its tool calls, or a result for one. A call that
    answered nothing (an empty reply) is shown trivially."""
    reply = call.get("reply") or []  # a rejected request: nothing came back
    made = {b["id"] for b in reply if b["type"] == "tool_call"}
    # A program may label the calls itself: the same tool with the same arguments is the call.
    wrote = {(b["name"], b["input"]) for b in reply if b["type"] == "tool_call"}
    said = [x.strip() for b in reply if b["type"] in ("text", "thinking")
            for x in (b.get("text") if b["type"] == "text" else b.get("thinking"),)
            if isinstance(x, str) and x.strip()]
    if not made and not said:
        return True
    for h in shown:
        m = rec.message(h)
        for b in m.content:
            if (isinstance(b, ToolCallBlock | ToolResultBlock) and b.id in made) \
                    or (isinstance(b, ToolCallBlock) and (b.name, b.input) in wrote):
                return True
        if m.role == "assistant" and said:
            text = message_text(m)
            if any(x in text for x in said):
                return True
    return False


def _distinct(bases: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The histories compressed, one per compaction: a base that is the end of another (the
    same history with its oldest messages dropped until the request fits) is the same one."""
    out: list[tuple[str, ...]] = []
    for x in sorted(set(bases), key=len, reverse=True):
        if not any(y[len(y) - len(x):] == x for y in out):
            out.append(x)
    return out


def _unseen(calls: list[dict[str, Any]], aux: set[int]) -> list[dict[str, Any]]:
    """A compaction no later request of the same instance shows (another took over, or none
    came): one, when auxiliary calls (a summary being written) came in between."""
    made = [c for c in calls if c["call"] in aux]
    if not made:
        return []
    return [{"type": "compaction", "observed": True, "applied": True,
             "request": made[0]["request"], "at_call": made[-1]["call"], "summary": ""}]


def _conversation(rec: Record) -> Callable[[str], bool]:
    """Whether a message (by hash) is conversation: it holds something the bench produced, so
    the bench knows it without the harness's word: a user's words (a turn's utterance, a
    filler exchange), what the model said or thought, a tool call the model made, a tool
    result, an image. A message of only harness-written blocks (a hint, an injected memory,
    a pin board, a summary instruction or a summary kept as a message) is not."""
    said = {t["text"].strip() for t in rec.of_type("turn")}
    for e in rec.of_type("model_call"):
        for b in e["reply"]:
            x = b.get("text") if b["type"] == "text" else b.get("thinking")
            if isinstance(x, str) and x.strip():
                said.add(x.strip())
    known: dict[str, bool] = {}

    def block(b: object) -> bool:
        if isinstance(b, ToolCallBlock | ToolResultBlock | DataBlock):
            return True
        x = b.text if isinstance(b, TextBlock) else b.thinking \
            if isinstance(b, ThinkingBlock) else None
        return x is not None and (x.strip() in said or is_filler_text(x))

    def conversation(h: str) -> bool:
        if h not in known:
            known[h] = any(block(b) for b in rec.message(h).content)
        return known[h]

    return conversation


def _first_text(m: Message) -> Block | None:
    return next((b for b in m.content if not isinstance(b, DataBlock)), None)


def _grown_into(rec: Record, added: list[str]) -> Callable[[str], bool]:
    """Whether a message grew into one of ``added`` (:func:`_grew`). Tried only against those
    that could be it, found by content: one grown in place begins with the old one's first
    block, one edited in its data blocks with its first other block (a removal tried against
    every added message cost a quadratic share of a black-box run's judging)."""
    by_start: dict[tuple[str, Block], list[str]] = {}
    roles = set()
    for x in added:
        n = rec.message(x)
        roles.add(n.role)
        for b in {n.content[0] if n.content else None, _first_text(n)} - {None}:
            by_start.setdefault((n.role, b), []).append(x)  # type: ignore[arg-type]

    def grown(h: str) -> bool:
        o = rec.message(h)
        if not o.content:  # an empty message is the start of any of its role
            return o.role in roles
        tried = {*by_start.get((o.role, o.content[0]), ())}
        first = _first_text(o)
        if first is not None:
            tried.update(by_start.get((o.role, first), ()))
        return any(_grew(rec, h, x) for x in tried)

    return grown


def _grew(rec: Record, old: str, new: str) -> bool:
    """``new`` is ``old`` grown in place, or edited only in its data blocks (an image limit
    drops old images): the same message, not a removal."""
    o, n = rec.message(old), rec.message(new)
    if o.role != n.role:
        return False
    if n.content[:len(o.content)] == o.content:
        return True
    ot = [b for b in o.content if not isinstance(b, DataBlock)]
    nt = [b for b in n.content if not isinstance(b, DataBlock)]
    return bool(ot) and nt[:len(ot)] == ot
