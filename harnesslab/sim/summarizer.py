"""The fake model's summarizer: writes a summary of the visible request in the form the harness
asks for, with published tags, and loses items only as its fidelity profile says.

Summarised content is the whole request except the instruction message (the last user message
that has text: AgentScope's compression prompt, or the message carrying a summary marker).
Items, each kept or lost as a whole:

- goal: each user message that is a lexicon utterance, described (never copied: the
  utterance could carry constraint phrases past a lossy drop), plus ``[goal] ...`` lines of an
  earlier summary, so a rolling summary carries them;
- fact: the latest non-error fact per (tool, key), as a ``[fact:...]`` tag: a tool result, a
  tag of an earlier summary, or an answer's prose in the fake model's own wording
  (``harnesslab.sim.prose``) that no earlier result or tag already states;
- constraint: each constraint in force, as a ``[constraint:...]`` tag;
- claim: each visible claim, as a ``[claim:...]`` tag;
- entity: each distinct id, listed most recent last so that ``@ref`` still resolves to it.

Every loss is a draw keyed by (seed, what, item) and never by anything a harness chose, so
the same item is lost whatever strategy built the request, and runs pair across strategies.

Over 400 lines on purpose: the item extraction and the three summary forms (structured,
free text, pinned board) share the same keep-or-lose draws and must change together.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harnesslab.messages import Block, Message, Request, TextBlock, ToolCallBlock, ToolSchema
from harnesslab.sim.asks import asks_in
from harnesslab.sim.domain import USER
from harnesslab.sim.draws import call_id, draw
from harnesslab.sim.intents import (
    AGENTSCOPE_FIELDS,
    FREEFORM_SUMMARY_MARKER,
    HANDOFF_SUMMARY_MARKER,
    MEMORY_FIELDS,
    MEMORY_JSON_RE,
    PIN_FIELDS,
    REF,
    SEED_FIELDS,
    SUMMARY_TOOL,
    Act,
    Intent,
    Slot,
    claim_tag,
    constraint_tag,
    fact_tag,
)
from harnesslab.sim.prose import prose_facts
from harnesslab.sim.reading import (
    Fact,
    Lang,
    Utterance,
    View,
    current_index,
    note,
    phrase_patterns,
    without_message,
)
from harnesslab.sim.schemas import asked_schema, fill, json_object_schema
from harnesslab.sim.segments import utterances_in
from harnesslab.sim.vocab import Vocab, bundled

__all__ = ["REFUSAL", "SummarizerProfile", "content_of", "draw", "restates", "summarize",
           "summary_form", "summary_request", "swap_id"]

ItemKind = Literal["constraint", "fact", "claim", "goal", "entity"]
SummaryForm = Literal["structured", "freeform", "handoff", "pin", "memory"]
JsonForm = Literal["strict", "trailing_comma", "code_fence", "raw_newlines"]
# An escaped line break (\n) that is not the tail of an escaped backslash (\\n).
_ESCAPED_NEWLINE = re.compile(r"(?<!\\)\\n")
# A non-lexicon message asking in words for a summary (what a real model would follow).
_ASKS_SUMMARY_RE = re.compile(r"\bsummari[sz]e\b|\bsummary\b|总结|摘要", re.IGNORECASE)

REFUSAL = "抱歉，我无法生成摘要。/ Sorry, I cannot produce a summary."
GOAL_PREFIX = "[goal] "
# A goal line ends at a newline or at the next tag, whatever layout a harness template used.
_GOAL_RE = re.compile(r"\[goal\] ([^\n\[]+)")


@functools.lru_cache(maxsize=32)
def _any_id(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every id of a world."""
    return re.compile("|".join(f"(?:{p})" for p in patterns))
_NEXT = {"zh": "根据用户的下一条消息继续处理，需要时重新查询最新状态。",
         "en": "Continue with the user's next message; look up live status again when needed."}
_HANDOFF_HEADS = {"zh": ("用户需求：", "已知事实：", "未核实：", "约束：", "下一步："),
                  "en": ("User wants:", "Facts:", "Unverified:", "Constraints:", "Next step:")}


class SummarizerProfile(BaseModel):
    """How faithfully the fake model summarizes (design 3.3: faithful, lossy, failing)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: Literal["faithful", "lossy", "failing"] = Field(
        default="faithful", description="faithful: no loss; lossy: the rates below apply; "
        "failing: refuses at rate `refuse` (1.0 when unset), other rates apply as for lossy")
    drop: dict[ItemKind, float] = Field(
        default_factory=dict, description="Per item kind, the rate at which an item is dropped")
    paraphrase: float = Field(default=0.0, ge=0.0, le=1.0, description="Rate at which an id is "
                              "paraphrased away (那笔订单 / the order)")
    swap: float = Field(default=0.0, ge=0.0, le=1.0, description="Rate at which an id is "
                        "replaced by a similar one (O-1001 -> O-1010)")
    refuse: float = Field(default=0.0, ge=0.0, le=1.0,
                          description="Rate of refusing to summarize at all")
    keep_superseded: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Rate at which a constraint the user replaced "
        "(brevity, later detailed) is kept anyway, listed after the one that replaced it: the "
        "summary then states the old one last, so it reads as the one in force")
    promote_claims: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Rate at which a claim loses its 'unverified' "
        "([claim:identity=U-2]): written as established, the fake model trusts it")
    json_form: JsonForm = Field(
        default="strict", description="How it writes the arguments of a structured-output "
        "call: strict JSON, or one of the slips real models make that a lenient parser "
        "(AgentScope's json_repair) still reads: trailing_comma (a comma before the closing "
        "brace), code_fence (the object inside a json code fence), raw_newlines (line breaks "
        "inside strings left unescaped). Not a loss: every item is still there")

    @field_validator("drop")
    @classmethod
    def _rates(cls, v: dict[ItemKind, float]) -> dict[ItemKind, float]:
        for kind, rate in v.items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"drop rate for {kind} must be in [0, 1], got {rate}")
        return v

    @model_validator(mode="after")
    def _faithful_has_no_rates(self) -> SummarizerProfile:
        if self.profile == "faithful" and (any(self.drop.values()) or self.paraphrase
                                           or self.swap or self.refuse or self.keep_superseded
                                           or self.promote_claims):
            raise ValueError("a faithful summarizer takes no loss rates; use profile: lossy")
        return self

    @property
    def refusal_rate(self) -> float:
        if self.profile == "failing" and "refuse" not in self.model_fields_set:
            return 1.0
        return self.refuse


def swap_id(i: str) -> str:
    """A similar id: the last two digits swapped; if equal, the last digit plus one mod 10
    (O-1001 -> O-1010; #W4386313 -> #W4386331). An id with no digits is kept."""
    head, _, digits = i.rpartition("-")
    if not head and not digits.isdigit():  # a declared domain's id: its trailing digits
        stem = digits.rstrip("0123456789")
        head, digits = stem, digits[len(stem):]
        if not digits:
            return i
        return head + _swapped(digits)
    return f"{head}-{_swapped(digits)}"


def _swapped(digits: str) -> str:
    if len(digits) >= 2 and digits[-1] != digits[-2]:
        return digits[:-2] + digits[-1] + digits[-2]
    if digits:
        return digits[:-1] + str((int(digits[-1]) + 1) % 10)
    return digits


def _outside(view: View, index: int) -> str:
    """A user message's text without the utterances it holds: the harness's own words."""
    text = view.request.messages[index].plain_text()
    for _, u, _ in view.segment(index).mentions:
        text = text.replace(u, " ")
    return text


def _unquoted(view: View, content: Request) -> Request:
    """``content`` with a system prompt that quotes the conversation (an utterance, a tool
    result) read as the quoted conversation it is: as a leading user message."""
    system = content.system
    if not system or not (utterances_in(system, view.lexicon, view.utterance_pattern)
                          or '{"tool"' in system):
        return content
    return replace(content, system="",
                   messages=(Message.text("user", system), *content.messages))


def summary_request(view: View) -> tuple[SummaryForm, Request] | None:
    found = _summary_request(view)
    return (found[0], _unquoted(view, found[1])) if found else None


def _summary_request(view: View) -> tuple[SummaryForm, Request] | None:
    """Which summary the request asks for, if it is a summary request at all, and the part of
    it to summarise.

    Structured: the request offers exactly the structured-output tool; its schema's property
    names say what is asked: PIN_FIELDS ask for the standing instructions and entities only
    (``pin``), MEMORY_FIELDS a memory extraction, anything else a summary. Freeform and
    handoff: the last user message carries a summary marker or, in the harness's own words
    (outside any utterance it quotes), asks for a summary; or the system prompt or a later
    system message asks for one and no user message is plainly a question (a separate call
    whose instructions say "Summarize this conversation" over the old messages, or over a
    transcript quoted in one user message).

    What is summarised is the request without its instruction: without the instruction
    message, unless that message quotes the conversation itself (it holds utterances, tool
    results or tags).
    """
    request = view.request
    i = current_index(request)
    if len(request.tools) == 1 and request.tools[0].name == SUMMARY_TOOL:
        props = _properties(request.tools[0])
        form: SummaryForm = "memory" if props and set(props) <= set(MEMORY_FIELDS) else \
            "pin" if props and set(props) <= set(PIN_FIELDS) else "structured"
        return form, without_message(request, i)
    if i is not None:
        text = request.messages[i].plain_text()
        seg = view.segment(i)
        # A prompt that quotes the conversation (an utterance, a tool result, a tag or a goal
        # line of an earlier summary: BeeAI's quotes its last summary and the new messages,
        # which may be small talk only) is itself what is summarised; one that only names an
        # id is not.
        quoted = bool(seg.mentions or seg.tags or seg.results or _GOAL_RE.search(text))
        content = request if quoted else without_message(request, i)
        if FREEFORM_SUMMARY_MARKER in text:
            return "freeform", content
        if HANDOFF_SUMMARY_MARKER in text:
            return "handoff", content
        own = _outside(view, i) if quoted else text
        if own.strip() and (asks_in(own) == "summary" or (
                not quoted and text not in view.lexicon and _ASKS_SUMMARY_RE.search(text))):
            return "freeform", content
    at, asked = view.open_question()
    # A system instruction to summarise is followed unless a user message plainly asks a
    # question (then it is an agent's prompt that mentions summaries): a transcript quoted in
    # one user message is no question to answer.
    if asked is None or (at is not None and request.messages[at].plain_text() != asked[0]):
        heads = [(None, request.system)] + [(n, m.plain_text()) for n, m in
                                            enumerate(request.messages) if m.role == "system"]
        for n, text in heads:
            if asks_in(text) == "summary":
                content = replace(request, system="") if n is None else \
                    without_message(request, n)
                return "freeform", content
    return None


def summary_form(request: Request, lexicon: Mapping[str, Intent] | None = None) -> SummaryForm | None:
    """Which summary ``request`` asks for (:func:`summary_request`), read afresh."""
    found = summary_request(View(request, dict(lexicon or {}), phrase_patterns({})))
    return found[0] if found else None


@dataclass(frozen=True)
class Item:
    kind: ItemKind
    key: str   # what the drop draw is keyed by: the utterance, tag or id, never a position
    text: str  # as written into the summary
    tag: bool  # inside a tag a paraphrase must not contain spaces


def _goal(u: Utterance, view: View, lang: Lang) -> str:
    it: Intent = u.intent

    def ref(slot: str, value: str | None) -> str | None:
        if value is None:
            return None
        return view.resolve(slot, value, before=u.end)  # what it referred to when it was said

    zh = lang == "zh"
    if it.act in (Act.ASK, Act.LIST):  # a declared domain's: named by its types and fields
        etype = it.entity or ""
        if it.act is Act.LIST:
            return f"用户查看了自己的 {etype} 列表" if zh else f"user asked for their {etype} list"
        target = ref(etype, it.id) if etype != USER else ref(Slot.USER, it.id or it.user)
        what = target or (f"某个 {etype}" if zh else f"a {etype}")
        return f"用户询问 {what} 的 {it.field}" if zh else f"user asked for the {it.field} of {what}"
    act = view.vocab.domain.spec.acts.get(str(it.act))
    if act is not None:  # a domain's named act: its own words
        user = ref(Slot.USER, it.user)
        who = (f"{user} " if user else "自己") if zh else (f"{user}'s" if user else "their own")
        if act.entity == USER:
            what = ""
        else:  # as in answering: an act that names no instance means the one discussed
            named = it.id if it.id is not None else it.order if act.entity == Slot.ORDER \
                else None
            what = ref(act.entity, REF if named is None else named) or \
                _some(view.vocab, act.entity, lang)
        return act.goal[lang].replace("{id}", what).replace("{who}", who)
    generic: dict[str, tuple[str, str]] = {
        Act.ASK_POLICY: (f"用户咨询政策 {it.topic or ''}".rstrip(),
                         f"user asked about the policy {it.topic or ''}".rstrip()),
        Act.SET_CONSTRAINT: ("用户提出了回答要求", "user set a preference for answers"),
        Act.CHITCHAT: ("用户闲聊", "user made small talk"),
    }
    text = generic.get(str(it.act)) or ("用户提出了请求", "user made a request")
    return text[0] if zh else text[1]


def _some(vocab: Vocab, etype: str, lang: Lang) -> str:
    """A summary's words for an instance of ``etype`` it cannot name."""
    spec = vocab.domain.types.get(etype)
    if spec is not None and lang in spec.some:
        return spec.some[lang]
    return f"某个 {etype}" if lang == "zh" else f"a {etype}"


def _paraphrase(vocab: Vocab, etype: str, lang: Lang) -> str:
    """What a lossy summary writes instead of an id of ``etype``."""
    spec = vocab.domain.types.get(etype)
    if spec is not None and lang in spec.paraphrase:
        return spec.paraphrase[lang]
    return f"那个 {etype}" if lang == "zh" else f"the {etype}"


def _clean(v: str) -> str:
    return re.sub(r"\s+", "_", v.strip()).replace("]", ")")


def _fact_text(f: Fact, vocab: Vocab) -> str:
    fields: dict[str, str] = {}
    key_field = vocab.keys.get(f.tool)
    if key_field and f.key:
        fields[key_field] = _clean(f.key)
    for name in (*vocab.tag_order, "as_of"):
        if f.fields.get(name):
            fields[name] = _clean(f.fields[name])
    return fact_tag(_clean(f.tool), fields)


def restates(prose: Fact, earlier: Fact) -> bool:
    """Whether ``prose`` says nothing ``earlier`` (a tool result or tag about the same thing)
    does not: then the earlier fact, with its own ``as_of``, is the one kept."""
    return prose.tool == earlier.tool and (prose.key is None or prose.key == earlier.key) \
        and all(earlier.fields.get(k) == v for k, v in prose.fields.items())


def _with_prose(view: View) -> list[Fact]:
    """The visible facts plus those the answers' prose states (``sim.prose``), in order of
    position. An answer restating the latest earlier fact about the same thing adds nothing
    (a summary of a full transcript keeps the tool result, with its time); one stating what no
    visible result or tag shows (the result was left out of the summarised part, as agno's
    summary prompt leaves out tool messages) is a fact of its own."""
    facts = [f for f in view.facts if not f.error]
    out = list(facts)
    for p in prose_facts(view.text, view.vocab):
        before = [f for f in facts if f.position < p.position and f.tool == p.tool
                  and (p.key is None or f.key == p.key)]
        if not (before and restates(p, before[-1])):
            out.append(p)
    return sorted(out, key=lambda f: f.position)


def extract(view: View, lang: Lang) -> list[Item]:
    """Every item visible in ``view``, grouped by kind, each group in order of position."""
    goals = sorted([(u.start, u.text, _goal(u, view, lang)) for u in view.utterances]
                   + [(m.start(), t, t) for m in _GOAL_RE.finditer(view.text)
                      if (t := m.group(1).strip())])
    items: list[Item] = []
    for _, key, text in goals:
        if all(i.text != GOAL_PREFIX + text for i in items):
            items.append(Item("goal", key, GOAL_PREFIX + text, False))
    latest: dict[tuple[str, str | None], Fact] = {}
    for f in _with_prose(view):
        if not f.error:
            latest[(f.tool, f.key)] = f
    for f in sorted(latest.values(), key=lambda f: f.position):
        text = _fact_text(f, view.vocab)
        items.append(Item("fact", text, text, True))
    for c in view.ordered_constraints():
        items.append(Item("constraint", constraint_tag(c), constraint_tag(c), True))
    claims = {claim_tag(c): pos for pos, c in view.claims}
    for text in sorted(claims, key=lambda t: claims[t]):
        items.append(Item("claim", text, text, True))
    items.extend(Item("entity", i, i, False) for i in view.entities())
    return items


def superseded(view: View) -> list[Item]:
    """Visible constraints that a later one replaced, in order of position: a faithful summary
    leaves them out; ``keep_superseded`` keeps them."""
    pos = view.constraint_positions
    return [Item("constraint", constraint_tag(c), constraint_tag(c), True)
            for c in sorted(pos, key=lambda c: pos[c]) if c not in view.constraints]


@dataclass
class _Loss:
    kept: list[Item]
    dropped: list[Item]
    paraphrased: set[str]
    swapped: dict[str, str]
    superseded: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)


def _lose(items: list[Item], profile: SummarizerProfile, seed: int, lang: Lang,
          salt: str = "", old: list[Item] | None = None, vocab: Vocab | None = None) -> _Loss:
    vocab = vocab or bundled()
    patterns = vocab.patterns
    loss = _Loss([], [], set(), {})
    if profile.profile == "faithful":
        loss.kept = items
        return loss
    # A replaced constraint kept goes after every constraint in force: listed last, it reads as
    # the one in force (the wrong order a careless summary writes).
    kept_old = [it for it in old or ()
                if draw(seed, salt + "keep_superseded", it.key) < profile.keep_superseded]
    loss.superseded = [it.key for it in kept_old]
    last_constraint = max((n for n, it in enumerate(items) if it.kind == "constraint"),
                          default=None)
    if kept_old:
        at = last_constraint + 1 if last_constraint is not None else \
            next((n for n, it in enumerate(items) if it.kind in ("claim", "entity")), len(items))
        items = [*items[:at], *kept_old, *items[at:]]
    for it in items:
        if draw(seed, salt + "drop", it.kind, it.key) < profile.drop.get(it.kind, 0.0):
            loss.dropped.append(it)
            continue
        if it.kind == "claim" and draw(seed, salt + "promote", it.key) < profile.promote_claims:
            it = replace(it, text=it.text.replace(" unverified]", "]"))
            loss.promoted.append(it.key)
        gone = False

        def change(m: re.Match[str], it: Item = it) -> str:
            nonlocal gone
            i = m.group(0)
            if draw(seed, salt + "paraphrase", i) < profile.paraphrase:
                loss.paraphrased.add(i)
                gone = True
                etype = next((t for t, p in patterns.items() if p.fullmatch(i)), "")
                words = _paraphrase(vocab, etype, lang)
                return words.replace(" ", "_") if it.tag else words
            if draw(seed, salt + "swap", i) < profile.swap:
                loss.swapped[i] = swap_id(i)
                return loss.swapped[i]
            return i

        text = _any_id(tuple(p.pattern for p in patterns.values())).sub(change, it.text)
        if not (it.kind == "entity" and gone):  # an entity paraphrased away is no longer listed
            loss.kept.append(replace(it, text=text))
    return loss


def _properties(schema: ToolSchema) -> list[str]:
    d = schema.to_dict()
    fn = d.get("function", d)
    params = fn.get("parameters") if isinstance(fn, Mapping) else None
    props = params.get("properties") if isinstance(params, Mapping) else None
    return [str(k) for k in props] if isinstance(props, Mapping) else []


def _render(form: SummaryForm, kept: list[Item], lang: Lang,
            props: list[str]) -> str | dict[str, str]:
    def join(*kinds: ItemKind, sep: str = "\n") -> str:
        parts = []
        for k in kinds:
            texts = [i.text for i in kept if i.kind == k]
            if k == "entity" and texts:
                texts = ["entities: " + " ".join(texts)]
            parts.extend(texts)
        return sep.join(parts)

    goals, facts, claims = join("goal"), join("fact"), join("claim")
    constraints, entities = join("constraint", sep=" "), join("entity")
    both = "\n".join(s for s in (constraints, entities) if s)  # entities last: the latest ids
    if form == "structured":
        sections = {
            AGENTSCOPE_FIELDS: ("\n".join(s for s in (goals, constraints) if s), facts, claims,
                                _NEXT[lang], both),
            SEED_FIELDS: (goals, facts, claims, _NEXT[lang], both),
        }
        for names, values in sections.items():
            if props and set(props) <= set(names):
                by_name = dict(zip(names, values, strict=True))
                return {p: by_name[p] for p in props}
        everything = "\n".join(s for s in (goals, facts, claims, _NEXT[lang], both) if s)
        return {p: (everything if n == 0 else "") for n, p in enumerate(props)}
    if form == "memory":
        remembered = {"preferences": join("constraint"), "user_claims": claims,
                      "facts": facts}
        return {p: remembered[p] for p in props}
    if form == "pin":
        pinned = dict(zip(PIN_FIELDS, (constraints, " ".join(
            i.text for i in kept if i.kind == "entity")), strict=True))
        return {p: pinned[p] for p in props}
    if form == "freeform":
        return "\n".join(s for s in ("[summary]", goals, facts, claims, both) if s)
    heads = _HANDOFF_HEADS[lang]
    lines = ["[handoff]"]
    for head, body in zip(heads, (goals, facts, claims, both, _NEXT[lang]), strict=True):
        if body:
            lines += [head, body]
    return "\n".join(lines)


# An extraction in words that found nothing to remember says so (and writes no note: sim.notes).
NOTHING = {"zh": "没有需要记住的内容。", "en": "Nothing to remember."}


def summarize(request: Request, form: SummaryForm, view: View, content: View, *,
              seed: int, profile: SummarizerProfile,
              as_text: bool = False) -> tuple[tuple[Block, ...], dict[str, Any]]:
    """The reply to a summary request: blocks and annotations.

    ``view`` reads the whole request, ``content`` the request without its instruction message.
    ``as_text``: a memory extraction asked in words, answered with its lines as text.
    """
    serialized = view.text
    # A pin extraction draws its losses apart from summaries: the same item can survive one
    # and not the other, as two different requests to a real model would.
    salt = f"{form}:" if form in ("pin", "memory") else ""
    if draw(seed, salt + "refuse", hashlib.sha256(serialized.encode("utf-8")).hexdigest()) \
            < profile.refusal_rate:
        return (TextBlock(REFUSAL),), note("summary_refused", content, form=form,
                                           reason="refused")
    basis = " ".join(u.text for u in content.utterances) or content.text
    lang = content.language(basis)
    loss = _lose(extract(content, lang), profile, seed, lang, salt, superseded(content),
                 content.vocab)
    asked_json = asked_schema(request) or json_object_schema(request)
    props = list(MEMORY_FIELDS) if as_text else \
        _properties(request.tools[0]) if request.tools else []
    body = _render(form, loss.kept, lang, props)
    if as_text and isinstance(body, dict) and MEMORY_JSON_RE.search(request.system):
        lines = [ln for v in body.values() if v for ln in v.splitlines() if ln.strip()]
        body = json.dumps({"memory": [{"id": str(n), "text": t} for n, t in enumerate(lines)]},
                          ensure_ascii=False)
    elif as_text and isinstance(body, dict):
        body = "\n".join(v for v in body.values() if v) or NOTHING[lang]
    if asked_json is not None and isinstance(body, str):
        # Asked to answer in a JSON schema (response_format), or in JSON mode: the text in
        # its answer's string field, every other field empty of its type, as a model filling
        # the schema would.
        body = json.dumps(fill(asked_json, body), ensure_ascii=False)
    blocks: tuple[Block, ...]
    if isinstance(body, dict):
        args = written_json(json.dumps(body, ensure_ascii=False), profile.json_form)
        blocks = (ToolCallBlock(call_id(serialized, SUMMARY_TOOL, args), SUMMARY_TOOL, args),)
    else:
        blocks = (TextBlock(body),)
    items = {
        "kept": [{"kind": i.kind, "key": i.key, "text": i.text} for i in loss.kept],
        "dropped": [{"kind": i.kind, "key": i.key, "text": i.text} for i in loss.dropped],
        "paraphrased": sorted(loss.paraphrased),
        "swapped": dict(sorted(loss.swapped.items())),
        # Only when it happened, so that records of profiles without these stay as they were.
        **({"superseded": loss.superseded} if loss.superseded else {}),
        **({"promoted": loss.promoted} if loss.promoted else {}),
    }
    return blocks, note("summary", content, form=form, items=items)


def written_json(strict: str, form: JsonForm) -> str:
    """A JSON object's text as the model writes it in ``form`` (SummarizerProfile.json_form):
    the same keys and values, with one slip of syntax a strict ``json.loads`` rejects."""
    if form == "trailing_comma":
        return strict[:-1] + ",}" if strict.endswith("}") and strict != "{}" else strict
    if form == "code_fence":
        return f"```json\n{strict}\n```"
    if form == "raw_newlines":
        # json.dumps escapes a line break inside a string; a careless model writes it raw (an
        # object with no multi-line value stays strict).
        return _ESCAPED_NEWLINE.sub("\n", strict)
    return strict


def content_of(request: Request) -> Request:
    """The summarised part of a structured summary request: all but its instruction message
    (:func:`summary_request` gives it for every form)."""
    return without_message(request, current_index(request))

