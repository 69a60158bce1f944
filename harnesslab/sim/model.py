"""The fake model: its reply is a pure function of (the exact request, the seed, the lexicon and
its own fixed settings), design 3.3.

No state survives a call: no counters, no clock, no randomness but ``draw`` (a hash of the seed
and an item key). A reply is one of: a summary (or a refusal), when the request asks for one; a
clarifying question, when the current utterance is not in the lexicon or a ``@ref`` has no
visible candidate; a tool call, when the fact the act needs is missing or stale; an answer,
which obeys the visible constraints and states only what a visible fact gives. Whichever it
is, it takes the form the request's ``tool_choice`` allows and an answer the JSON schema its
``response_format`` asks for (``harnesslab.sim.choice``); tools offered in the prompt (a ReAct
or code-action protocol, ``harnesslab.sim.react``) or in the answer's schema
(``harnesslab.sim.schema_tools``) are called in that form.

What counts as visible, and where, is ``harnesslab.sim.reading`` (``serialize`` documents the
positions); the summarizer is ``harnesslab.sim.summarizer``.

Over 400 lines on purpose: the reply rules are one decision (summary, clarification, tool
call or answer, in that order), and reading them in one place is how a change stays consistent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import chain, cycle
from typing import Any

from harnesslab.messages import Block, Request, TextBlock, ToolCallBlock
from harnesslab.sim.aliases import aliases, as_offered, as_world
from harnesslab.sim.asks import asks_in
from harnesslab.sim.choice import AUTO, in_format, obey, offered, tool_choice
from harnesslab.sim.declared import DeclaredNeed, act_content, act_need, act_unable, need_of
from harnesslab.sim.declared import content as declared_content
from harnesslab.sim.declared import unable as declared_unable
from harnesslab.sim.domain import USER, Domain, bundled_domain
from harnesslab.sim.draws import call_id
from harnesslab.sim.intents import (
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
from harnesslab.sim.notes import note_call, tool_parameters
from harnesslab.sim.react import in_protocol, text_protocol, with_listed
from harnesslab.sim.reading import Fact, Lang, View, current_index, note, phrase_patterns, serialize
from harnesslab.sim.schema_tools import SchemaTools, schema_tools
from harnesslab.sim.segments import Reader
from harnesslab.sim.summarizer import (
    NOTHING,
    SummarizerProfile,
    draw,
    summarize,
    summary_request,
)
from harnesslab.sim.vocab import vocab_of

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
}
_FIXED: dict[tuple[str, Lang], str] = {
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
    ``stale`` (the stale fact replaced, or None); summaries add ``form`` and ``items``; a
    request offering the world's tools under other names adds ``tool_names`` (offered name ->
    the world's, sim.aliases), by which the judge reads the reply's calls.
    """

    blocks: tuple[Block, ...]
    annotations: Mapping[str, Any]


@dataclass(frozen=True)
class _Need:
    tool: str
    key: str | None   # None: any result of the tool (the acting user's own profile)
    args: dict[str, str]


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


# The knowledge base's could-not-check sentences (zh, en), by why: a reason not listed is
# "failed", the generic "try again later".
_POLICY_UNABLE: dict[str, tuple[str, str]] = {
    "failed": ("抱歉，暂时无法查询相关政策，请稍后再试。",
               "Sorry, I could not check the policy right now. Please try again later."),
    "not_found": ("抱歉，没有找到相关政策。", "Sorry, I could not find that policy."),
    "not_offered": ("抱歉，我目前没有办法查询相关政策。",
                    "Sorry, I have no way to check the policy right now."),
}


def _policy(fact: Fact, lang: Lang, brief: bool) -> str | None:
    """A policy's answer: its title, then as much of its text as the length rule allows."""
    f = fact.fields
    title, text = f.get("title", ""), f.get("text", "")
    if not title and not text:
        return None
    head = f"{title}：" if lang == "zh" else f"{title}: "
    if brief:
        return head + text[:max(0, BRIEF_MAX_CHARS - len(head))]
    return head + text


def _declared(need: _Need, volatile: bool) -> DeclaredNeed:
    return DeclaredNeed(need.tool, need.key, need.args, volatile)


def _properties(view: View, name: str) -> set[str]:
    """The parameter names of the offered tool ``name`` (empty when it is not offered)."""
    for t in view.request.tools:
        if t.name == name:
            return set(tool_parameters(t)[0])
    return set()


def _own_failure(fact: Fact, start: int) -> bool:
    """A failed result that names no key and whose call is not visible (a tool call and its
    result written as text, smolagents' "Calling tools:" and "Observation:"): after the
    question starting at ``start``, the turn's own failed lookup of that tool, as a model
    reads its call."""
    return fact.error and fact.key is None and fact.asked is None \
        and fact.source == "tool_result" and fact.position > start


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
        return ToolCallBlock(call_id(view.text, FILE_READ_TOOL, raw), FILE_READ_TOOL, raw)
    lines = [constraint_tag(c) for c in view.ordered_constraints()]
    lines += [claim_tag(c) for _, c in view.claims]
    raw = json.dumps({key: path, "content": "\n".join(dict.fromkeys(lines))},
                     ensure_ascii=False)
    return ToolCallBlock(call_id(view.text, tool, raw), tool, raw)


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
        # The domain's ids, tools and answer words (the bundled world's by default).
        self._domain = domain or bundled_domain("commerce")
        self._reader = Reader(self._lexicon, self._phrases, zone, vocab_of(self._domain))
        self._own_tools = frozenset(self._domain.spec.tools)  # what a forced reply avoids

    def reply(self, request: Request) -> ModelReply:
        union = schema_tools(request) if request.meta and not request.tools else None
        if union is not None and any(t.name in self._own_tools for t in union.tools):
            return self._in_schema(request, union)
        protocol = text_protocol(request, self._own_tools)
        if protocol is not None:
            # Tools offered in the prompt (sim.react): decided on as if offered, written in
            # the prompt's protocol.
            listed = with_listed(request, protocol.tools)
            if protocol.kind == "fields" and request.meta:
                # The fields' JSON object is the protocol's to write, not a schema's to fill.
                listed = replace(listed, meta=tuple(
                    kv for kv in listed.meta if kv[0] != "response_format"))
            got = self._reply(listed, prompted=False)
            return ModelReply(*in_protocol(protocol, got.blocks, got.annotations))
        names = aliases(request.tools, self._own_tools)
        if not names:
            return self._reply(request)
        # The world's tools under a framework's names (sim.aliases): read in the world's,
        # called by the names offered.
        got = self._reply(as_world(request, names))
        return ModelReply(as_offered(got.blocks, names),
                          {**got.annotations, "tool_names": dict(sorted(names.items()))})

    def _in_schema(self, request: Request, union: SchemaTools) -> ModelReply:
        """Tools offered in the answer's schema (sim.schema_tools): decided on as if offered
        with a call required, the call written as the schema's JSON."""
        got = self._reply(replace(request, tools=union.tools).with_meta(
            ("tool_choice", "required")))
        calls = [b for b in got.blocks if isinstance(b, ToolCallBlock)]
        if not calls:  # a refusal under the forced choice: as the model wrote it
            return got
        c = calls[0]
        return ModelReply((TextBlock(union.write(c.name, c.input)),), {
            **got.annotations, "tool_protocol": "schema",
            "text_calls": [{"name": c.name, "input": c.input or "{}"}]})

    def _reply(self, request: Request, prompted: bool = True) -> ModelReply:
        """The reply to ``request``; ``prompted``: whether a schema asked for in words shapes
        it (not under a text protocol, which says how to write it)."""
        self._reader.next_call()
        view = View(request, self._lexicon, self._phrases, self._reader)
        choice = tool_choice(request)
        found = summary_request(view)
        if found is not None:
            form, part = found
            content = View(part, self._lexicon, self._phrases, self._reader)
            got = ModelReply(*summarize(request, form, view, content, seed=self._seed,
                                        profile=self._extractor if form in ("pin", "memory")
                                        else self._summarizer))
        else:
            # The turn decides with only the tools the choice lets it call (a ``none`` round
            # answers that it cannot check); the reply's form is then the choice's.
            if choice is not AUTO:
                view = View(offered(request, choice), self._lexicon, self._phrases,
                            self._reader)
            got = self._auxiliary(view) or self._turn(view)
        if choice is not AUTO:
            got = ModelReply(*obey(request, choice, got.blocks, got.annotations, view.text,
                                   self._own_tools))
        if found is None:
            # An answer asked for in a JSON schema (a summary is written in it by summarize),
            # by the API's response_format or in the instructions' words (not where a text
            # protocol says how to write the reply).
            got = ModelReply(*in_format(request, got.blocks, got.annotations, prompted))
        return got

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
                return ModelReply((ToolCallBlock(call_id(view.text, name, raw), name, raw),),
                                  notes)
            return ModelReply(blocks, notes)
        text = _CLARIFY[("utterance_not_found", lang)]
        return ModelReply((TextBlock(text),), note("unreadable", view, form=kind,
                                                   reason=f"an auxiliary request the fake "
                                                   f"model does not read ({kind})"))

    def _which(self, slot: str, lang: Lang) -> str:
        """The clarifying question for a reference nothing visible resolves."""
        spec = self._domain.types.get(slot)
        if spec is not None and lang in spec.which:
            return spec.which[lang]
        label = self._domain.label(slot, lang) if spec is not None else slot
        return f"请问您指的是哪个{label}？" if lang == "zh" else f"Which {label} do you mean?"

    def _unable(self, intent: Intent, need: _Need, why: str, lang: Lang) -> str:
        act = self._domain.spec.acts.get(str(intent.act))
        if act is not None:
            return act_unable(act, _declared(need, True), why, lang == "zh")
        if intent.act in (Act.ASK, Act.LIST):
            return declared_unable(self._domain, intent, _declared(need, True), why, lang == "zh")
        zh, en = _POLICY_UNABLE.get(why) or _POLICY_UNABLE["failed"]
        return zh if lang == "zh" else en

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
        base: dict[str, Any] = {"utterance": text, "act": str(intent.act)}

        resolved: dict[str, str] = {}
        domain = self._domain
        # A named act the domain declares (the bundled world's order_status, ask_wait, ...),
        # else a generic one: ask and list a domain's entities, a policy, a constraint, chat.
        act = domain.spec.acts.get(str(intent.act))
        generic = intent.act in (Act.ASK, Act.LIST)
        slots: tuple[tuple[str, str | None], ...] = ((Slot.ORDER, intent.order),
                                                     (Slot.USER, intent.user))
        if act is not None and act.entity == USER:
            slots = ((Slot.USER, intent.user),)
        elif act is not None:
            # The instance an act names: id, or the bundled world's short form order:; none
            # named means the one discussed.
            named = intent.id if intent.id is not None else \
                intent.order if act.entity == Slot.ORDER else None
            slots = ((act.entity, REF if named is None else named), (Slot.USER, intent.user))
        elif intent.act is Act.ASK:
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
        if intent.user is None and not (intent.act is Act.ASK and intent.entity == USER
                                        and intent.id is not None) \
                and (claimed := view.claimed_user()) is not None:
            resolved["user"] = claimed  # the naive model trusts a visible identity claim
        user = resolved.get("user")
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
        if act is not None:
            dn = act_need(domain, act, resolved)
            need = _Need(dn.tool, dn.key, dn.args)
        elif generic or (intent.act is Act.ASK_POLICY and domain.kb_tool() is not None):
            target = resolved.get(intent.entity or "") if intent.entity != USER else user
            found = need_of(domain, intent, target, user)
            if found is not None:
                need, volatile = _Need(found.tool, found.key, found.args), found.volatile

        brief = Constraint.BREVITY in view.constraints
        write = _remember(view, index) if need is None and (intent.constraints or
                                                            intent.claims) else None
        if write is not None:
            return ModelReply((write,), note("tool_call", view, **base, reason="remember"))
        if need is None:
            said = _FIXED.get((str(intent.act), lang)) or _FIXED[(Act.CHITCHAT, lang)]
            return ModelReply((TextBlock(_fit(greet + said, brief, lang, None)),),
                              note("answer", view, **base, reason="no_fact_needed"))

        start = view.starts[index]
        matches = [f for f in view.facts if f.tool == need.tool and (
            need.key is None or need.key in (f.key, f.asked) or _own_failure(f, start))]
        if intent.act is Act.ASK:
            # A tag or an answer read back may state other fields of the instance only: it
            # is no fact about this one (a whole tool result is, even with the field empty).
            matches = [f for f in matches
                       if f.source == "tool_result" or f.error or intent.field in f.fields]
        latest = matches[-1] if matches else None
        usable = [f for f in matches if not f.error]
        if latest is not None and latest.source == "tool_result" and latest.position > start:
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
            call = ToolCallBlock(call_id(view.text, need.tool, raw), need.tool, raw)
            return ModelReply((call,), note(
                "tool_call", view, **base, reason="stale_fact" if usable else "no_fact",
                stale=usable[-1].to_json() if usable else None))

        core = None if fact.error else \
            act_content(domain, act, _declared(need, True), fact, lang == "zh", view.now) \
            if act is not None else \
            declared_content(domain, intent, _declared(need, volatile), fact, lang == "zh") \
            if generic else _policy(fact, lang, brief)
        extra: dict[str, Any] = {}
        if core is None:
            # A failed tool, or a result that does not give what the act needs: say why, never
            # invent a value.
            why = fact.error_kind.value if fact.error_kind is not None else "failed"
            core, extra = self._unable(intent, need, why, lang), {"unable": why}
        answer = _fit(greet + core, brief, lang, None if extra else fact)
        return ModelReply((TextBlock(answer),), note("answer", view, **base, cited=fact.to_json(),
                                                     reason=reason, **extra))
