"""Facts stated in prose: the fake model's own answers read back, in the words it writes them.

A summary written from a transcript keeps the facts the transcript states, whoever stated
them: a harness whose summary call quotes the assistant's answers but not the tool results
(agno's session summary) still shows "订单 O-1001 当前状态：in_transit，预计 2026-11-30 送达。",
and a real model summarising it keeps that. The fake model reads its own phrasing back exactly
(the answer templates of ``harnesslab.sim.model``: an order's status, ETA, tracking events and
destination, an order list), and nothing else in prose: not a paraphrase or another model's
wording; not a policy answer, whose "title：text" form is too plain to tell apart; not a
profile answer, which states one field of a profile and, kept as a fact, would stand for the
whole profile (a later question for another field would find it and not look up).

A fact's ``as_of`` is what the prose states ("以上信息来自 <as_of> 的查询结果。", the sentence a
long answer carries); a brief answer states none, and a fact without ``as_of`` is never fresh
for a tool whose results go stale (``FakeModel._fresh``, ``judge.checks.fresh_at``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from harnesslab.sim.facts import COMMERCE, Fact, Vocab, item_name
from harnesslab.sim.intents import parse_time

__all__ = ["prose_facts"]

_O = r"(?P<o>(?<![A-Za-z0-9_])O-\d{4}(?![0-9]))"
_S = r"(?P<s>[a-z_]+)"
_E = r"(?P<e>\d{4}-\d{2}-\d{2})"
_N = r"(?P<n>\d+)"
# The not-arriving words (model._NOT_ARRIVING), zh then en.
_WORD_ZH = r"(?:已取消|已退回|在运输中丢失)"
_WORD_EN = r"(?:cancelled|returned to the sender|lost in transit)"


@dataclass(frozen=True)
class _Form:
    tool: str
    pattern: re.Pattern[str]
    fixed: tuple[tuple[str, str], ...] = ()  # fields the wording itself states


def _f(tool: str, pattern: str, **fixed: str) -> _Form:
    return _Form(tool, re.compile(pattern), tuple(fixed.items()))


# Each answer template of model._content that states a fact, as a pattern. Order matters only
# where one form's text contains another's; each match is consumed once.
_FORMS: tuple[_Form, ...] = (
    # ask_trace
    _f("get_logistics_trace", rf"订单 {_O} 的物流结果被截断，我只看到其中至少 {_N} 条记录，当前状态：{_S}。",
       truncated="true"),
    _f("get_logistics_trace", rf"Order {_O}: the tracking result was truncated; I can see at "
       rf"least {_N} events\. Current status: {_S}\.", truncated="true"),
    _f("get_logistics_trace", rf"订单 {_O} 共有 {_N} 条物流记录，当前状态：{_S}。"),
    _f("get_logistics_trace", rf"Order {_O} has {_N} tracking events; current status: {_S}\."),
    # an order that will not arrive (order_status, ask_eta, ask_wait)
    _f("track_order", rf"订单 {_O} {_WORD_ZH}（{_S}），不会(?:再配送|送达)。"),
    _f("track_order", rf"No need to wait: order {_O} has been {_WORD_EN} \({_S}\) and will not "
       rf"arrive\."),
    _f("track_order", rf"Order {_O} has been {_WORD_EN} \({_S}\); it will not (?:arrive|be "
       rf"delivered)\."),
    # ask_wait
    _f("track_order", rf"订单 {_O} 已签收，不用再等了。", status="delivered"),
    _f("track_order", rf"Order {_O} has been delivered\.", status="delivered"),
    _f("track_order", rf"要等，订单 {_O} 预计 {_E} 送达（{_S}）。"),
    _f("track_order", rf"Yes, please wait: order {_O} is expected on {_E} \({_S}\)\."),
    _f("track_order", rf"订单 {_O} 明天就能到（预计 {_E}，{_S}）。"),
    _f("track_order", rf"Order {_O} should arrive by tomorrow \({_E}, {_S}\)\."),
    # order_status, ask_eta
    _f("track_order", rf"订单 {_O} 当前状态：{_S}，暂无预计送达日期。"),
    _f("track_order", rf"Order {_O} is {_S}; no delivery date yet\."),
    _f("track_order", rf"订单 {_O} 预计 {_E} 送达（{_S}）。"),
    _f("track_order", rf"Order {_O} should arrive on {_E} \({_S}\)\."),
    _f("track_order", rf"订单 {_O} 当前状态：{_S}，预计 {_E} 送达。"),
    _f("track_order", rf"Order {_O} is {_S}; expected delivery {_E}\."),
    # ask_ship_to
    _f("get_order", rf"订单 {_O} 寄往：(?P<ship_to>[^。\n]+)。"),
    _f("get_order", rf"Order {_O} ships to (?P<ship_to>[^\n]+?)\.(?=\s|$)"),
    # list_orders
    _f("list_orders", r"您共有 \d+ 个订单：(?P<orders>(?:O-\d{4}（[^（）]*），?)+)。"),
    _f("list_orders", r"You have \d+ orders: (?P<orders>(?:O-\d{4} \([^()]*\)(?:, )?)+)\."),
    _f("list_orders", r"您目前没有订单。|You have no orders\.", orders=""),
)
# The lookup time a long answer states right after its fact (model._fit).
_AS_OF_RE = re.compile(r"\s*(?:以上信息来自 (?P<zh>\S+) 的查询结果。|This is based on a lookup "
                       r"made at (?P<en>\S+?)\.(?=\s|$))")
_ENTRY_RE = re.compile(r"(O-\d{4})\s?[（(]([^（）()]*)[）)]")
_NAMED = {"s": "status", "e": "eta", "n": "events", "ship_to": "ship_to"}


def _orders(listed: str) -> str:
    """An order list as ``Fact.fields["orders"]`` writes it (``O-2001:skateboard+pads,...``)."""
    return ",".join(o + ":" + "+".join(item_name(i) for i in re.split(r"、|, ", items) if i)
                    for o, items in _ENTRY_RE.findall(listed))


def _matches(text: str) -> Iterator[tuple[int, int, _Form, re.Match[str]]]:
    taken: list[tuple[int, int]] = []
    for form in _FORMS:
        for m in form.pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append((m.start(), m.end()))
            yield m.start(), m.end(), form, m


def prose_facts(text: str, vocab: Vocab = COMMERCE) -> list[Fact]:
    """Every fact ``text`` states in the fake model's own answer wording, in order of position
    (a character offset in ``text``), each with the ``as_of`` the prose states or none."""
    if vocab is not COMMERCE:
        return _declared_facts(text, vocab)
    out = []
    for start, end, form, m in _matches(text):
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        fields = dict(form.fixed)
        fields.update({_NAMED[k]: v.strip() for k, v in groups.items() if k in _NAMED})
        if "orders" in groups:
            fields["orders"] = _orders(groups["orders"])
        stamp = _AS_OF_RE.match(text, end)
        as_of = stamp.group("zh") or stamp.group("en") if stamp else None
        if as_of and parse_time(as_of) is not None:
            fields["as_of"] = as_of
        out.append(Fact(form.tool, groups.get("o"), None, parse_time(as_of or ""), fields,
                        False, start, "prose"))
    return sorted(out, key=lambda f: f.position)


def _declared_facts(text: str, vocab: Vocab) -> list[Fact]:
    """A declared domain's answers to ``ask`` (``harnesslab.sim.declared.content``) read back:
    one field of one instance each, with the ``as_of`` a long answer states."""
    out = []
    taken: list[tuple[int, int]] = []
    for tool, pattern, name in vocab.prose:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append((m.start(), m.end()))
            fields = {name: m.group("value").strip()}
            stamp = _AS_OF_RE.match(text, m.end())
            as_of = stamp.group("zh") or stamp.group("en") if stamp else None
            if as_of and parse_time(as_of) is not None:
                fields["as_of"] = as_of
            out.append(Fact(tool, m.group("id"), None, parse_time(as_of or ""), fields, False,
                            m.start(), "prose"))
    return sorted(out, key=lambda f: f.position)
