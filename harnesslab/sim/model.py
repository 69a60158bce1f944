"""The fake model: its reply is a pure function of (the exact request, the seed, the lexicon and
its own fixed settings), design 3.3.

No state survives a call: no counters, no clock, no randomness but ``draw`` (a hash of the seed
and an item key). A reply is one of: a summary (or a refusal), when the request asks for one; a
clarifying question, when the current utterance is not in the lexicon or a ``@ref`` has no
visible candidate; a tool call, when the fact the act needs is missing or stale; an answer,
which obeys the visible constraints and states only what a visible fact gives.

What counts as visible, and where, is ``harnesslab.sim.reading`` (``serialize`` documents the
positions); the summarizer is ``harnesslab.sim.summarizer``.

Over 400 lines on purpose: the reply rules are one decision (summary, clarification, tool
call or answer, in that order), and reading them in one place is how a change stays consistent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from itertools import chain, cycle
from typing import Any

from harnesslab.messages import Block, Request, TextBlock, ToolCallBlock
from harnesslab.sim.asks import asks_in
from harnesslab.sim.declared import DeclaredNeed, need_of
from harnesslab.sim.declared import content as declared_content
from harnesslab.sim.declared import unable as declared_unable
from harnesslab.sim.domain import USER, Domain
from harnesslab.sim.facts import COMMERCE
from harnesslab.sim.intents import (
    ACT_NEEDS,
    FILE_READ_TOOL,
    FILE_WRITE_TOOL,
    MEMORY_DIR_RE,
    MEMORY_WRITE_TOOL,
    REF,
    Act,
    Constraint,
    Intent,
    Slot,
    claim_tag,
    constraint_tag,
)
from harnesslab.sim.notes import note_call
from harnesslab.sim.reading import Fact, Lang, View, current_index, note, phrase_patterns, serialize
from harnesslab.sim.segments import Reader
from harnesslab.sim.summarizer import (
    NOTHING,
    SummarizerProfile,
    draw,
    summarize,
    summary_request,
)

__all__ = ["BRIEF_MAX_CHARS", "LONG_MIN_CHARS", "FakeModel", "ModelReply", "SummarizerProfile",
           "draw", "serialize"]

BRIEF_MAX_CHARS = 60   # an answer under brevity is at most this many characters
LONG_MIN_CHARS = 120   # an answer without brevity is at least this many characters

# Padding for long answers. None of it may contain a constraint phrase, an id or a tag, or the
# model's own answers would change what later requests show.
_POLITE: dict[Lang, tuple[str, ...]] = {
    "zh": ("如果还有其他问题，欢迎随时告诉我。", "我会继续关注后续进展并及时告知您。",
           "感谢您的耐心等待，祝您生活愉快！"),
    "en": ("If you have any other questions, feel free to ask.",
           "I will keep an eye on further updates for you.",
           "Thank you for your patience, and have a nice day!"),
}
_CLARIFY: dict[tuple[str, Lang], str] = {
    ("utterance_not_found", "zh"): "抱歉，我没有理解您的意思，能再说一遍吗？",
    ("utterance_not_found", "en"): "Sorry, I did not understand. Could you say that again?",
    ("order", "zh"): "请问您指的是哪个订单？",
    ("order", "en"): "Which order do you mean?",
    ("user", "zh"): "请问您指的是哪位用户？",
    ("user", "en"): "Which user do you mean?",
}
_FIXED: dict[tuple[Act, Lang], str] = {
    (Act.SET_CONSTRAINT, "zh"): "好的，我记下了，之后会照此回复。",
    (Act.SET_CONSTRAINT, "en"): "Noted, I will answer that way from now on.",
    (Act.CHITCHAT, "zh"): "不客气，还有什么可以帮您？",
    (Act.CHITCHAT, "en"): "You're welcome. Anything else I can help with?",
}


@dataclass(frozen=True)
class ModelReply:
    """What the harness gets (``blocks``) and what only the bench reads (``annotations``).

    Annotations (JSON-able): kind (answer, tool_call, clarify, summary, summary_refused),
    utterance, act, resolved ({"order": id, "user": id}), constraints (sorted, in force),
    now (ISO or None), cited (the fact an answer used, or None), reason; tool calls add
    ``stale`` (the stale fact replaced, or None); summaries add ``form`` and ``items``.
    """

    blocks: tuple[Block, ...]
    annotations: Mapping[str, Any]


@dataclass(frozen=True)
class _Need:
    tool: str
    key: str | None   # None: any result of the tool (the acting user's own profile)
    args: dict[str, str]


def _call_id(serialized: str, name: str, args: str) -> str:
    return "call_" + hashlib.sha256((serialized + name + args).encode("utf-8")).hexdigest()[:12]


def _fit(core: str, brief: bool, lang: Lang, fact: Fact | None) -> str:
    """Apply the length rule: at most BRIEF_MAX_CHARS under brevity, else at least
    LONG_MIN_CHARS, padded with the lookup time and then fixed polite sentences."""
    if brief:
        return core if len(core) <= BRIEF_MAX_CHARS else core[:BRIEF_MAX_CHARS - 1] + "…"
    sep = "" if lang == "zh" else " "
    extra: list[str] = []
    as_of = fact.fields.get("as_of") if fact is not None else None
    if as_of:
        extra.append(f"以上信息来自 {as_of} 的查询结果。" if lang == "zh"
                     else f"This is based on a lookup made at {as_of}.")
    text = core
    for sentence in chain(extra, cycle(_POLITE[lang])):  # ends: every sentence is non-empty
        if len(text) >= LONG_MIN_CHARS:
            break
        text += sep + sentence
    return text


def _eta(fact: Fact) -> date | None:
    try:
        return date.fromisoformat(fact.fields.get("eta", ""))
    except ValueError:
        return None


_ORDER_TOOLS = ("track_order", "get_logistics_trace", "get_order")
# Per (why, what), the could-not-check sentence in zh and en; "{key}" is the order id. "failed"
# is an error that says neither code nor a known wording, and a tool that failed for a reason
# to come back later: the generic "try again later".
_UNABLE: dict[tuple[str, str], tuple[str, str]] = {
    ("failed", "order"): ("抱歉，暂时无法查询订单 {key}，请稍后再试。",
                          "Sorry, I could not check order {key} right now. Please try again later."),
    ("failed", "profile"): ("抱歉，暂时无法查询用户资料，请稍后再试。",
                            "Sorry, I could not check the user profile right now. Please try again "
                            "later."),
    ("failed", "list"): ("抱歉，暂时无法查询您的订单列表，请稍后再试。",
                         "Sorry, I could not check your orders right now. Please try again later."),
    ("failed", "policy"): ("抱歉，暂时无法查询相关政策，请稍后再试。",
                           "Sorry, I could not check the policy right now. Please try again later."),
    ("not_found", "order"): ("抱歉，没有找到订单 {key}，请确认订单号是否正确。",
                             "Sorry, I could not find order {key}. Please check the order number."),
    ("not_found", "profile"): ("抱歉，没有找到该用户的资料。",
                               "Sorry, I could not find that user's profile."),
    ("not_found", "list"): ("抱歉，没有找到您的订单记录。", "Sorry, I could not find any orders for you."),
    ("not_found", "policy"): ("抱歉，没有找到相关政策。", "Sorry, I could not find that policy."),
    ("forbidden", "order"): ("抱歉，订单 {key} 不在您的账户下，我无法查询。",
                             "Sorry, order {key} is not on your account, so I cannot look it up."),
    ("forbidden", "profile"): ("抱歉，我只能查询您本人账户的资料。",
                               "Sorry, I can only look up your own account."),
    ("forbidden", "list"): ("抱歉，我只能查询您本人账户的订单。",
                            "Sorry, I can only look up the orders on your own account."),
    ("not_offered", "order"): ("抱歉，我目前没有办法查询订单 {key}。",
                               "Sorry, I have no way to check order {key} right now."),
    ("not_offered", "profile"): ("抱歉，我目前没有办法查询用户资料。",
                                 "Sorry, I have no way to check the user profile right now."),
    ("not_offered", "list"): ("抱歉，我目前没有办法查询您的订单列表。",
                              "Sorry, I have no way to check your orders right now."),
    ("not_offered", "policy"): ("抱歉，我目前没有办法查询相关政策。",
                                "Sorry, I have no way to check the policy right now."),
}
# How an order that will not arrive is described: (zh, en).
_NOT_ARRIVING: dict[str, tuple[str, str]] = {
    "cancelled": ("已取消", "cancelled"), "returned": ("已退回", "returned to the sender"),
    "lost": ("在运输中丢失", "lost in transit"),
}


def _unable(need: _Need, why: str, lang: Lang) -> str:
    """The could-not-check answer: why (not_found, forbidden, unavailable, not_offered or a
    failure of unknown cause) for the kind of thing the act needed."""
    what = "order" if need.tool in _ORDER_TOOLS else "profile" if need.tool == \
        "get_user_profile" else "list" if need.tool == "list_orders" else "policy"
    zh, en = _UNABLE.get((why, what)) or _UNABLE[("failed", what)]
    return (zh if lang == "zh" else en).format(key=need.key)


def _order_content(act: Act, o: str | None, fact: Fact, zh: bool,
                   now: datetime | None) -> str | None:
    f = fact.fields
    status = f.get("status")
    if not status:
        return None
    eta = _eta(fact)
    if act is Act.ASK_TRACE:
        n = f.get("events")
        if n is None:
            return f"订单 {o} 当前状态：{status}。" if zh else f"Order {o} is {status}."
        if fact.partial:
            # A cut result shows only some events: say so rather than give a wrong count.
            return (f"订单 {o} 的物流结果被截断，我只看到其中至少 {n} 条记录，当前状态：{status}。"
                    if zh else f"Order {o}: the tracking result was truncated; I can see at "
                    f"least {n} events. Current status: {status}.")
        return (f"订单 {o} 共有 {n} 条物流记录，当前状态：{status}。" if zh
                else f"Order {o} has {n} tracking events; current status: {status}.")
    if status in _NOT_ARRIVING:
        word = _NOT_ARRIVING[status][0 if zh else 1]
        if act is Act.ASK_WAIT:
            return (f"不用等了：订单 {o} {word}（{status}），不会送达。" if zh else
                    f"No need to wait: order {o} has been {word} ({status}) and will not arrive.")
        if act is Act.ASK_ETA:
            return (f"订单 {o} {word}（{status}），不会送达。" if zh
                    else f"Order {o} has been {word} ({status}); it will not arrive.")
        return (f"订单 {o} {word}（{status}），不会再配送。" if zh
                else f"Order {o} has been {word} ({status}); it will not be delivered.")
    if act is Act.ASK_WAIT:
        base = now or fact.as_of
        if status == "delivered":
            return f"订单 {o} 已签收，不用再等了。" if zh else f"Order {o} has been delivered."
        if eta is not None and base is not None:
            if eta > base.date() + timedelta(days=1):
                return (f"要等，订单 {o} 预计 {eta} 送达（{status}）。" if zh
                        else f"Yes, please wait: order {o} is expected on {eta} ({status}).")
            return (f"订单 {o} 明天就能到（预计 {eta}，{status}）。" if zh
                    else f"Order {o} should arrive by tomorrow ({eta}, {status}).")
    if eta is None:
        return (f"订单 {o} 当前状态：{status}，暂无预计送达日期。" if zh
                else f"Order {o} is {status}; no delivery date yet.")
    if act is Act.ASK_ETA:
        return (f"订单 {o} 预计 {eta} 送达（{status}）。" if zh
                else f"Order {o} should arrive on {eta} ({status}).")
    return (f"订单 {o} 当前状态：{status}，预计 {eta} 送达。" if zh
            else f"Order {o} is {status}; expected delivery {eta}.")


def _content(act: Act, need: _Need, fact: Fact, lang: Lang, now: datetime | None,
             brief: bool) -> str | None:
    """The answer stating what ``fact`` gives, or None when it does not give what the act
    needs (then the model says it could not check rather than invent a value)."""
    f = fact.fields
    zh = lang == "zh"
    if act in (Act.ORDER_STATUS, Act.ASK_ETA, Act.ASK_WAIT, Act.ASK_TRACE):
        return _order_content(act, need.key, fact, zh, now)
    if act is Act.LIST_ORDERS:
        if "orders" not in f:
            return None
        entries = fact.entries
        if not entries:
            return "您目前没有订单。" if zh else "You have no orders."
        listed = [f"{o}（{'、'.join(i.replace('_', ' ') for i in items)}）" if zh else
                  f"{o} ({', '.join(i.replace('_', ' ') for i in items)})" for o, items in entries]
        return (f"您共有 {len(entries)} 个订单：{'，'.join(listed)}。" if zh
                else f"You have {len(entries)} orders: {', '.join(listed)}.")
    if act is Act.ASK_SHIP_TO:
        ship_to = f.get("ship_to")
        if not ship_to:
            return None
        return f"订单 {need.key} 寄往：{ship_to}。" if zh else f"Order {need.key} ships to {ship_to}."
    if act in (Act.ASK_ADDRESS, Act.ASK_PHONE):
        field = "address" if act is Act.ASK_ADDRESS else "phone"
        name, value = f.get("name"), f.get(field)
        if not name or not value:
            return None
        what = ("收货地址" if field == "address" else "联系电话") if zh else \
            ("delivery address" if field == "address" else "phone number")
        return f"{name}的{what}：{value}。" if zh else f"{name}'s {what}: {value}."
    # ask_policy: the title, then as much of the text as the length rule allows
    title, text = f.get("title", ""), f.get("text", "")
    if not title and not text:
        return None
    head = f"{title}：" if zh else f"{title}: "
    if brief:
        return head + text[:max(0, BRIEF_MAX_CHARS - len(head))]
    return head + text


def _declared(need: _Need, volatile: bool) -> DeclaredNeed:
    return DeclaredNeed(need.tool, need.key, need.args, volatile)


def _properties(view: View, name: str) -> set[str]:
    """The parameter names of the offered tool ``name`` (empty when it is not offered)."""
    for t in view.request.tools:
        if t.name == name:
            fn = t.to_dict().get("function", t.to_dict())
            params = fn.get("parameters") or fn.get("input_schema") or {}
            props = params.get("properties") if isinstance(params, dict) else None
            return set(props) if isinstance(props, dict) else set()
    return set()


def _memory_file(view: View) -> tuple[str, str, str] | None:
    """How this request lets the model keep its memory file: (writing tool, its path
    parameter, the path), or None (intents.MEMORY_WRITE_TOOL and FILE_WRITE_TOOL)."""
    if MEMORY_WRITE_TOOL in {t.name for t in view.request.tools}:
        return MEMORY_WRITE_TOOL, "path", "MEMORY.md"
    if {"file_path", "content"} <= _properties(view, FILE_WRITE_TOOL):
        m = MEMORY_DIR_RE.search(view.request.system)
        if m:
            return FILE_WRITE_TOOL, "file_path", m.group(1).rstrip("/") + "/MEMORY.md"
    return None


def _remember(view: View, index: int) -> ToolCallBlock | None:
    """Offered a memory-writing tool, the model keeps MEMORY.md itself: when the user states a
    preference or a claim, it rewrites the file, once per turn, with the preferences in force
    and the claims it sees (as unverified claims); offered a reading tool beside a file-writing
    one, it reads the file first."""
    target = _memory_file(view)
    if target is None:
        return None
    tool, key, path = target
    calls = [b for m in view.request.messages[index + 1:] for b in m.content
             if isinstance(b, ToolCallBlock)]

    def called(name: str) -> bool:
        for b in calls:
            try:
                args = json.loads(b.input or "{}")
            except json.JSONDecodeError:
                continue
            if b.name == name and isinstance(args, dict) and args.get(key) == path:
                return True
        return False

    if tool == MEMORY_WRITE_TOOL:
        if any(b.name == MEMORY_WRITE_TOOL for b in calls):
            return None
    elif called(tool):
        return None
    elif "file_path" in _properties(view, FILE_READ_TOOL) and not called(FILE_READ_TOOL):
        raw = json.dumps({"file_path": path}, ensure_ascii=False)
        return ToolCallBlock(_call_id(view.text, FILE_READ_TOOL, raw), FILE_READ_TOOL, raw)
    lines = [constraint_tag(c) for c in view.ordered_constraints()]
    lines += [claim_tag(c) for _, c in view.claims]
    raw = json.dumps({key: path, "content": "\n".join(dict.fromkeys(lines))},
                     ensure_ascii=False)
    return ToolCallBlock(_call_id(view.text, tool, raw), tool, raw)


class FakeModel:
    """The fake model. ``reply`` is a pure function of the request and the constructor's
    arguments, which are copied so that later changes by the caller cannot leak in."""

    def __init__(self, lexicon: Mapping[str, Intent], *, seed: int = 0,
                 summarizer: SummarizerProfile | None = None,
                 extractor: SummarizerProfile | None = None,
                 max_ages: Mapping[str, timedelta | None] | None = None,
                 phrases: Mapping[Constraint, Sequence[str]] | None = None,
                 zone: tzinfo = UTC, domain: Domain | None = None) -> None:
        self._lexicon: dict[str, Intent] = dict(lexicon)
        self._seed = seed
        self._summarizer = summarizer or SummarizerProfile()
        # How faithfully it answers a pin or memory extraction (narrower than a summary).
        self._extractor = extractor or SummarizerProfile()
        self._max_ages: dict[str, timedelta | None] = dict(max_ages or {})
        self._phrases = phrase_patterns({c: tuple(ws) for c, ws in (phrases or {}).items()})
        # Each message is read once while it stays in the requests (a cache, not a memory:
        # what it holds is a function of the message alone).
        # The scenario's zone: a time stated without one is read in it.
        # A declared domain's ids, tools and answer words (None: the bundled world's).
        self._domain = domain
        self._reader = Reader(self._lexicon, self._phrases, zone,
                              domain.vocab if domain is not None else COMMERCE)

    def reply(self, request: Request) -> ModelReply:
        self._reader.next_call()
        view = View(request, self._lexicon, self._phrases, self._reader)
        found = summary_request(view)
        if found is not None:
            form, part = found
            content = View(part, self._lexicon, self._phrases, self._reader)
            blocks, notes = summarize(request, form, view, content, seed=self._seed,
                                      profile=self._extractor if form in ("pin", "memory")
                                      else self._summarizer)
            return ModelReply(blocks, notes)
        return self._auxiliary(view) or self._turn(view)

    def _auxiliary(self, view: View) -> ModelReply | None:
        """A call that asks no question but, in its instructions, for something else: a title
        (answered with a short fixed title), a memory extraction in words (answered with the
        preferences, claims and facts it sees, one tag a line), or a task the fake model
        cannot do (classification): then it says it could not read the request."""
        request = view.request
        at_q, asked = view.open_question()
        # An utterance quoted in a transcript (the user message is more than the utterance)
        # under a system prompt asking for a memory extraction is no question to answer: the
        # rule summary_request follows for a system instruction to summarise (mem0's
        # extraction call quotes the exchange in its user message).
        if asked is not None and not (at_q is not None and asks_in(request.system) == "memory"
                                      and request.messages[at_q].plain_text() != asked[0]):
            return None
        index = current_index(request)
        texts: list[tuple[int | None, str]] = [(None, request.system)]
        texts += [(n, m.plain_text()) for n, m in enumerate(request.messages) if m.role == "system"]
        if index is not None:
            texts.append((index, request.messages[index].plain_text()))
        kind, at = next(((k, n) for n, t in texts if (k := asks_in(t)) is not None), (None, None))
        if kind is None:
            return None
        lang = view.language(None)
        if kind == "title":
            title = "客服咨询" if lang == "zh" else "Customer service chat"
            return ModelReply((TextBlock(title),), note("auxiliary", view, form="title",
                                                        reason="title"))
        if kind == "memory":
            # What is read is all but the instruction (the system prompt holds no fact).
            part = View(replace(request, system="") if at is None else
                        replace(request, messages=request.messages[:at]
                                + request.messages[at + 1:]),
                        self._lexicon, self._phrases, self._reader)
            blocks, notes = summarize(request, "memory", view, part, seed=self._seed,
                                      profile=self._extractor, as_text=True)
            body = "".join(b.text for b in blocks if isinstance(b, TextBlock))
            instructions = "\n".join(t for _, t in texts)
            call = None if body in NOTHING.values() or notes.get("kind") != "summary" else \
                note_call(request, instructions, index, body)
            if call is not None:  # offered a tool to write the note with (sim.notes)
                name, raw = call
                return ModelReply((ToolCallBlock(_call_id(view.text, name, raw), name, raw),),
                                  notes)
            return ModelReply(blocks, notes)
        text = _CLARIFY[("utterance_not_found", lang)]
        return ModelReply((TextBlock(text),), note("unreadable", view, form=kind,
                                                   reason=f"an auxiliary request the fake "
                                                   f"model does not read ({kind})"))

    def _which(self, slot: str, lang: Lang) -> str:
        """The clarifying question for a reference nothing visible resolves."""
        if self._domain is None or slot == Slot.ORDER:
            return _CLARIFY[(str(slot), lang)]
        label = self._domain.label(slot, lang)
        return f"请问您指的是哪个{label}？" if lang == "zh" else f"Which {label} do you mean?"

    def _unable(self, intent: Intent, need: _Need, why: str, lang: Lang) -> str:
        if self._domain is not None and intent.act in (Act.ASK, Act.LIST):
            return declared_unable(self._domain, intent, _declared(need, True), why, lang == "zh")
        return _unable(need, why, lang)

    def _fresh(self, fact: Fact, now: datetime | None, volatile: bool = True) -> bool:
        max_age = self._max_ages.get(fact.tool) if volatile else None
        if max_age is None or now is None:
            return True  # never stale, or no "now" stated: every visible fact is current
        return fact.as_of is not None and now - fact.as_of <= max_age

    def _turn(self, view: View) -> ModelReply:
        index, asked = view.current()
        text = view.request.messages[index].plain_text() if index is not None else None
        intent = None
        if asked is not None:
            text, intent = asked
        lang = view.language(text)
        if index is None or text is None or intent is None:
            return ModelReply((TextBlock(_CLARIFY[("utterance_not_found", lang)]),),
                              note("clarify", view, utterance=text, reason="utterance_not_found"))
        base: dict[str, Any] = {"utterance": text, "act": intent.act.value}

        resolved: dict[str, str] = {}
        needs = ACT_NEEDS[intent.act]
        domain = self._domain
        declared = domain is not None and intent.act in (Act.ASK, Act.LIST, Act.ASK_POLICY)
        order_slot = intent.order
        if order_slot is None and needs is not None and needs[0] is Slot.ORDER:
            order_slot = REF  # an act that needs an order but names none means the one discussed
        slots: tuple[tuple[str, str | None], ...] = ((Slot.ORDER, order_slot),
                                                     (Slot.USER, intent.user))
        if declared and intent.act is Act.ASK:
            etype = intent.entity or ""
            slots = ((Slot.USER, intent.id or intent.user),) if etype == USER else \
                ((etype, intent.id), (Slot.USER, intent.user))
        for slot, value in slots:
            if value is None:
                continue
            got = view.resolve(slot, value)
            if got is None:
                return ModelReply((TextBlock(self._which(slot, lang)),),
                                  note("clarify", view, **base, resolved=resolved, slot=str(slot),
                                       reason="unresolved_ref"))
            resolved[str(slot)] = got
        if intent.user is None and not (declared and intent.act is Act.ASK and
                                        intent.entity == USER and intent.id is not None) \
                and (claimed := view.claimed_user()) is not None:
            resolved["user"] = claimed  # the naive model trusts a visible identity claim
        order, user = resolved.get("order"), resolved.get("user")
        base["resolved"] = resolved
        # A claim a tag states as established is believed: the model addresses the user as
        # that identity in every answer, whatever the tools return.
        trusted = view.trusted_user()
        if trusted is not None:
            base["trusted"] = trusted
        greet = "" if trusted is None else \
            (f"{trusted} 您好，" if lang == "zh" else f"Hello {trusted}, ")

        need: _Need | None = None
        volatile = True
        if declared:
            assert domain is not None
            target = resolved.get(intent.entity or "") if intent.entity != USER else user
            dn = need_of(domain, intent, target, user)
            if dn is not None:
                need, volatile = _Need(dn.tool, dn.key, dn.args), dn.volatile
        elif needs is not None and needs[0] is Slot.ORDER:
            args = {"order_id": order or "", **({"user_id": user} if user else {})}
            need = _Need(needs[1], order, args)
        elif needs is not None:
            need = _Need(needs[1], user, {"user_id": user} if user else {})
        elif intent.act is Act.ASK_POLICY:
            need = _Need("search_kb", intent.topic, {"topic": intent.topic} if intent.topic else {})

        brief = Constraint.BREVITY in view.constraints
        write = _remember(view, index) if need is None and (intent.constraints or
                                                            intent.claims) else None
        if write is not None:
            return ModelReply((write,), note("tool_call", view, **base, reason="remember"))
        if need is None:
            return ModelReply((TextBlock(_fit(greet + _FIXED[(intent.act, lang)], brief, lang,
                                              None)),),
                              note("answer", view, **base, reason="no_fact_needed"))

        matches = [f for f in view.facts
                   if f.tool == need.tool and (need.key is None or need.key in (f.key, f.asked))]
        if declared and intent.act is Act.ASK:
            # A tag or an answer read back may state other fields of the instance only: it
            # is no fact about this one (a whole tool result is, even with the field empty).
            matches = [f for f in matches
                       if f.source == "tool_result" or f.error or intent.field in f.fields]
        latest = matches[-1] if matches else None
        usable = [f for f in matches if not f.error]
        if latest is not None and latest.source == "tool_result" \
                and latest.position > view.starts[index]:
            # The result of this turn's own call: answer with it even if stale or failed, so
            # that a harness returning a result never sees the same call again.
            fact, reason = latest, "fact_after_turn"
        elif usable and self._fresh(usable[-1], view.now, volatile):
            # An earlier error is not a fact: it does not stop a later turn from asking again.
            fact, reason = usable[-1], "fresh_fact"
        elif need.tool not in {t.name for t in view.request.tools}:
            # Never a call to a tool the request does not offer: say it cannot check.
            answer = _fit(greet + self._unable(intent, need, "not_offered", lang), brief, lang,
                          None)
            return ModelReply((TextBlock(answer),), note(
                "answer", view, **base, reason="tool_not_offered", unable="not_offered"))
        else:
            raw = json.dumps(need.args, ensure_ascii=False)
            call = ToolCallBlock(_call_id(view.text, need.tool, raw), need.tool, raw)
            return ModelReply((call,), note(
                "tool_call", view, **base, reason="stale_fact" if usable else "no_fact",
                stale=usable[-1].to_json() if usable else None))

        own = self._domain is not None and intent.act in (Act.ASK, Act.LIST)
        core = None if fact.error else \
            declared_content(self._domain, intent, _declared(need, volatile), fact, lang == "zh") \
            if own and self._domain is not None else \
            _content(intent.act, need, fact, lang, view.now, brief)
        extra: dict[str, Any] = {}
        if core is None:
            # A failed tool, or a result that does not give what the act needs: say why, never
            # invent a value.
            why = fact.error_kind.value if fact.error_kind is not None else "failed"
            core, extra = self._unable(intent, need, why, lang), {"unable": why}
        answer = _fit(greet + core, brief, lang, None if extra else fact)
        return ModelReply((TextBlock(answer),), note("answer", view, **base, cited=fact.to_json(),
                                                     reason=reason, **extra))
