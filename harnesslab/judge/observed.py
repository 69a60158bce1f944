"""Compaction seen from outside: for a black-box harness (``harness=cmd:...``) the bench reads
no event of the harness's own, so it finds, from the request stream alone (the record's model
calls, session by session, in order):

- **auxiliary calls**: a call whose reply the conversation never took up: no later request of
  the session holds its reply as a message nor a result for one of its tool calls, and it is
  not the call whose text became a turn's reply (a request sent again unchanged is a retry:
  the reply before it was not taken up);
- **summary calls**: auxiliary calls whose reply (its text, or a string value of its tool
  call's arguments, at least ``MIN_SHARED`` characters) shows up in a later request of the
  session: the harness kept what it asked for (a summary, extracted pins);
- **compactions**: the points where a main-line request's history is not an extension of the
  previous main-line request's: a message of the previous one is gone (not merely grown in
  place, as AgentScope's reply message grows), or its summary changed; rejected requests
  count as requests (but not one retried: the next request ends with the same message, the
  same call sent again with less before it), and a point where another instance took over
  (a ``resume`` event between the two, or turns served by different instances) is resume
  fidelity's business, not a compaction. Where no later request of the instance can show it
  (another took over, or the run ended), auxiliary calls in between are one compaction.
  Several compactions between two requests are told apart by the histories their auxiliary
  calls compress (a pin extraction and a summary of one compaction compress the same one);
  truncations without any call between two requests show as one. A window that drops old
  messages without a summary is a compaction seen from outside, though the reference
  harness's ``window`` strategy records none.
  Each is recorded as what was removed and what was added, and its summary is the new
  request's summary (or the text of the messages it added when the harness keeps its summary
  as a message), its source the request of the summary call before it (or the previous
  request).

``observed_compactions`` gives them in the shape of the in-process ``compaction`` events, so
compactions, summary tokens, trigger lateness and summary entity fidelity are one formula for
both (``judge.metrics``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harnesslab.messages import DataBlock, ToolResultBlock
from harnesslab.record.format import CALL_EVENTS, Record, message_text

MIN_SHARED = 12  # characters a kept reply must share with a later request


def is_black_box(rec: Record) -> bool:
    """A record of a program under the bench (its harness setting is ``cmd:...``)."""
    return str(rec.header.get("harness", {}).get("harness", "")).startswith("cmd:")


@dataclass(frozen=True)
class Observed:
    auxiliary: frozenset[int]         # call numbers
    summaries: frozenset[int]         # call numbers (a subset of auxiliary)
    compactions: tuple[dict[str, Any], ...]


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def _reply_texts(call: dict[str, Any]) -> list[str]:
    out = []
    for b in call["reply"]:
        if b["type"] == "text" and b.get("text"):
            out.append(b["text"])
        elif b["type"] == "tool_call":
            try:
                out += list(_strings(json.loads(b["input"])))
            except ValueError:
                out.append(b["input"])
    return [t for t in out if len(t) >= MIN_SHARED]


def observe(rec: Record) -> Observed:
    """The auxiliary calls, summary calls and compactions of ``rec`` (module docstring)."""
    replies = {t["reply"] for t in rec.of_type("turn") if t.get("reply")}
    instance = {n: t["instance"] for t in rec.of_type("turn") if "instance" in t
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
        for j, hs in enumerate(hashes):
            for h in hs:
                last[h] = j
            last["summary:" + seq[j]["request"]["summary"]] = j
        shown: list[tuple[int, str, bool]] = []  # (last request, text, an assistant message)
        results: list[tuple[int, str]] = []      # (last request, call id answered)
        for h, j in last.items():
            if h.startswith("summary:"):
                shown.append((j, rec.blobs[h[8:]], False))
                continue
            m = rec.message(h)
            shown.append((j, message_text(m), m.role == "assistant"))
            results += [(j, b.id) for b in m.content if isinstance(b, ToolResultBlock)]
        def _cut(i: int, seq: list[dict[str, Any]] = seq) -> bool:
            end = at[seq[i + 1]["call"]] if i + 1 < len(seq) else len(rec.events)
            return any(at[seq[i]["call"]] < k < end for k in killed)


        for i, c in enumerate(seq):
            if c["type"] != "model_call":
                continue  # rejected: nothing came back to take up or leave
            made = {b["id"] for b in c["reply"] if b["type"] == "tool_call"}
            said = "".join(b.get("text", "") for b in c["reply"] if b["type"] == "text")
            taken = any(j > i and cid in made for j, cid in results) \
                or (bool(said) and said in replies) \
                or (bool(said) and any(j > i and mine and said in t for j, t, mine in shown)) \
                or any(hashes[j] != hashes[i] and _extends(rec, hashes[i], hashes[j])
                       for j in range(i + 1, min(i + 4, len(seq))))\
                or _cut(i)  # its instance was killed before the conversation could go on
            if taken:
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
            if any(at[ca] < k < at[cb] for k in resumed) \
                    or instance.get(ca, 0) != instance.get(cb, 0):
                # Another instance took over: what it lost is resume fidelity's; a summary
                # written before it did is a compaction all the same.
                compactions += _unseen(seq[a + 1:b], aux)
                source = None
                continue
            ra, rb = seq[a]["request"], seq[b]["request"]
            kept_now = set(hashes[b])
            before = set(hashes[a])
            added = [h for h in hashes[b] if h not in before]
            # A message that grew in place (AgentScope's reply message gaining a call, its
            # result, the answer) is an extension, not a removal.
            removed = [h for h in hashes[a] if h not in kept_now
                       and not any(_grew(rec, h, x) for x in added)]
            changed = ra["summary"] != rb["summary"]
            if not removed and not changed:
                continue
            summary = rec.blobs[rb["summary"]] if changed else "\n".join(
                message_text(rec.message(h)) for h in added if rec.message(h).role != "user")
            # Two compactions between two requests (during one filler) show as one break;
            # the auxiliary calls tell them apart: the calls of one compaction (a pin
            # extraction and a summary) compress the same history, a second one another.
            bases = {tuple(hashes[k][:-1]) for k in range(a + 1, b) if seq[k]["call"] in aux}
            for _ in range(max(1, len(bases))):
                compactions.append({"type": "compaction", "observed": True, "applied": True,
                                    "request": source if source is not None else ra,
                                    "at_call": seq[b]["call"], "removed": len(removed),
                                    "added": len(added), "kept": len(hashes[b]) - len(added),
                                    "summary": summary})
            source = None
        if main:
            # Auxiliary calls after the last request that answered (a compaction at the end).
            compactions += _unseen(seq[main[-1] + 1:], aux)
    return Observed(frozenset(aux), frozenset(summaries), tuple(compactions))


def _unseen(calls: list[dict[str, Any]], aux: set[int]) -> list[dict[str, Any]]:
    """A compaction no later request of the same instance shows (another took over, or none
    came): one, when auxiliary calls (a summary being written) came in between."""
    made = [c for c in calls if c["call"] in aux]
    if not made:
        return []
    return [{"type": "compaction", "observed": True, "applied": True,
             "request": made[0]["request"], "at_call": made[-1]["call"], "summary": ""}]


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


def _extends(rec: Record, old: list[str], new: list[str]) -> bool:
    """The request ``new`` holds every message of ``old`` (or grown in place): the
    conversation went on from it."""
    have = set(new)
    fresh = [x for x in new if x not in set(old)]
    return all(h in have or any(_grew(rec, h, x) for x in fresh) for h in old)
