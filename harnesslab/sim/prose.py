"""Facts stated in prose: the fake model's own answers read back, in the words it writes them.

A summary written from a transcript keeps the facts the transcript states, whoever stated
them: a harness whose summary call quotes the assistant's answers but not the tool results
(agno's session summary) still shows "订单 O-1001 当前状态：in_transit，预计 2026-11-30 送达。",
and a real model summarising it keeps that. The fake model reads its own phrasing back exactly
(the answers its domain's acts declare, as ``harnesslab.sim.vocab`` turns them into patterns:
in the bundled world an order's status, ETA, tracking events and destination, an order list),
and nothing else in prose: not a paraphrase or another model's wording; not a policy answer,
whose "title：text" form is too plain to tell apart; not an act the domain marks unread (a
profile answer states one field of a profile and, kept as a fact, would stand for the whole
profile: a later question for another field would find it and not look up).

A fact's ``as_of`` is what the prose states ("以上信息来自 <as_of> 的查询结果。", the sentence a
long answer carries); a brief answer states none, and a fact without ``as_of`` is never fresh
for a tool whose results go stale (``FakeModel._fresh``, ``judge.checks.fresh_at``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from harnesslab.sim.facts import Fact, item_name, listing
from harnesslab.sim.intents import parse_time
from harnesslab.sim.vocab import ProseForm, Vocab, bundled

__all__ = ["prose_facts"]

# The lookup time a long answer states right after its fact (model._fit).
_AS_OF_RE = re.compile(r"\s*(?:以上信息来自 (?P<zh>\S+) 的查询结果。|This is based on a lookup "
                       r"made at (?P<en>\S+?)\.(?=\s|$))")


def _entries(listed: str, form: ProseForm) -> str:
    """A list answer's entries as ``Fact.fields`` writes them (``O-2001:skateboard+pads,...``)."""
    assert form.entry is not None
    out = []
    for m in form.entry.finditer(listed):
        values = m.groupdict().get("values")
        items = "+".join(item_name(i) for i in re.split(r"、|, ", values) if i) \
            if values is not None else None
        out.append(m.group("id") + (f":{items}" if items is not None else ""))
    return ",".join(out)


def _matches(text: str, forms: tuple[ProseForm, ...]) -> Iterator[
        tuple[int, int, ProseForm, re.Match[str]]]:
    taken: list[tuple[int, int]] = []
    for form in forms:
        for m in form.pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append((m.start(), m.end()))
            yield m.start(), m.end(), form, m


def prose_facts(text: str, vocab: Vocab | None = None) -> list[Fact]:
    """Every fact ``text`` states in the fake model's own answer wording (the bundled world's
    unless ``vocab`` says which), in order of position (a character offset in ``text``), each
    with the ``as_of`` the prose states or none."""
    vocab = vocab or bundled()
    out = []
    for start, end, form, m in _matches(text, vocab.prose):
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        fields = dict(form.fixed)
        fields.update({k: v.strip() for k, v in groups.items() if k not in ("id", form.list_key)})
        if form.list_key is not None and form.list_key in groups:
            fields[form.list_key] = _entries(groups[form.list_key], form)
        stamp = _AS_OF_RE.match(text, end)
        as_of = stamp.group("zh") or stamp.group("en") if stamp else None
        if as_of and parse_time(as_of) is not None:
            fields["as_of"] = as_of
        out.append(Fact(form.tool, groups.get("id"), None, parse_time(as_of or ""), fields,
                        False, start, "prose", listing(form.tool, fields, vocab)))
    return sorted(out, key=lambda f: f.position)
