"""The fake model's words for a declared domain (``harnesslab.sim.domain``): which tool an act
needs, and the answer a fact gives, in one generic form per act (a field of an entity, a
user's list, a could-not-check) built from the domain's labels.

The decision (summary, clarification, tool call or answer) stays ``harnesslab.sim.model``'s;
this module only says what a declared domain's act needs and how its answer reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from harnesslab.sim.domain import USER, USER_KEY, ActDecl, Domain, Lang
from harnesslab.sim.facts import Fact
from harnesslab.sim.intents import Act, Intent
from harnesslab.sim.vocab import tokens

__all__ = ["DeclaredNeed", "act_content", "act_need", "act_unable", "content", "need_of",
           "unable"]


@dataclass(frozen=True)
class DeclaredNeed:
    tool: str
    key: str | None          # the instance (or user, or topic) a fact must be about; None: any
    args: dict[str, str]
    volatile: bool           # whether the answer needs a fresh fact


def need_of(domain: Domain, intent: Intent, target: str | None,
            user: str | None) -> DeclaredNeed | None:
    """What ``intent`` (ask, list or ask_policy) needs looked up: ``target`` is the resolved
    instance of an ask, ``user`` the user named or claimed (None: the acting user). None when
    the domain has no tool for it (the loader refuses such a scenario)."""
    by_user = {USER_KEY: user} if user else {}
    if intent.act is Act.ASK_POLICY:
        tool = domain.kb_tool()
        return None if tool is None else DeclaredNeed(
            tool, intent.topic, {"topic": intent.topic} if intent.topic else {}, False)
    etype = intent.entity or ""
    if intent.act is Act.LIST:
        tool = domain.lister(etype)
        returns = domain.spec.tools[tool].returns if tool else []
        return None if tool is None else DeclaredNeed(
            tool, user, by_user, any(domain.volatile(etype, f) for f in returns))
    tool = domain.reader(etype, intent.field or "")
    if tool is None:
        return None
    volatile = domain.volatile(etype, intent.field or "")
    if etype == USER:
        who = target or user
        return DeclaredNeed(tool, who, {USER_KEY: who} if who else {}, volatile)
    return DeclaredNeed(tool, target, {domain.key(etype): target or "", **by_user}, volatile)


def _what(domain: Domain, intent: Intent, need: DeclaredNeed, zh: bool) -> str:
    lang: Lang = "zh" if zh else "en"
    if intent.act is Act.LIST:
        label = domain.label(intent.entity or "", lang)
        return f"您的{label}列表" if zh else f"your {label} list"
    etype = intent.entity or ""
    label = domain.label(etype, lang)
    if etype == USER and need.key is None:
        return f"您的{label}资料" if zh else f"your {label} profile"
    return f"{label} {need.key}"


_UNABLE: dict[str, tuple[str, str]] = {
    "failed": ("抱歉，暂时无法查询{what}，请稍后再试。",
               "Sorry, I could not check {what} right now. Please try again later."),
    "not_found": ("抱歉，没有找到{what}，请确认编号是否正确。",
                  "Sorry, I could not find {what}. Please check the id."),
    "forbidden": ("抱歉，{what}不在您的账户下，我无法查询。",
                  "Sorry, {what} is not on your account, so I cannot look it up."),
    "not_offered": ("抱歉，我目前没有办法查询{what}。", "Sorry, I have no way to check {what} right "
                    "now."),
}


def unable(domain: Domain, intent: Intent, need: DeclaredNeed, why: str, zh: bool) -> str:
    """The could-not-check answer for an ask or a list (a policy's is the bundled one)."""
    pair = _UNABLE.get(why) or _UNABLE["failed"]
    return pair[0 if zh else 1].format(what=_what(domain, intent, need, zh))


def content(domain: Domain, intent: Intent, need: DeclaredNeed, fact: Fact,
            zh: bool) -> str | None:
    """The answer stating what ``fact`` gives an ask or a list, or None when it does not give
    it (then the model says it could not check, never inventing a value)."""
    lang: Lang = "zh" if zh else "en"
    etype = intent.entity or ""
    label = domain.label(etype, lang)
    if intent.act is Act.LIST:
        if "entries" not in fact.fields:
            return None
        listed = fact.listed
        if not listed:
            return f"您目前没有{label}。" if zh else f"You have no {label}."
        returns = domain.spec.tools[need.tool].returns
        key = domain.key(etype)
        rows = {str(r.get(key)): r for r in fact.rows()}
        parts = []
        for i in listed:
            vals = [str(v) for f in returns if (v := rows.get(i, {}).get(f)) not in (None, "")]
            parts.append(i + (f"（{'，'.join(vals)}）" if zh else f" ({', '.join(vals)})")
                         if vals else i)
        return (f"您共有 {len(listed)} 个{label}：{'，'.join(parts)}。" if zh
                else f"You have {len(listed)} {label} entries: {', '.join(parts)}.")
    name = intent.field or ""
    value = fact.fields.get(name)
    flabel = domain.field_label(etype, name, lang)
    who = fact.key or need.key or ""
    head = label[:1].upper() + label[1:]
    if not value:
        if fact.partial or fact.source != "tool_result":
            return None  # a cut result or a summary's tag may just not show it
        # The tool's whole result has the field empty (null): not set, which is an answer.
        return f"{label} {who} 目前没有{flabel}。" if zh else f"{head} {who} has no {flabel} yet."
    return f"{label} {who} 的{flabel}：{value}。" if zh else f"{head} {who}: {flabel} is {value}."


# --- a domain's named acts (ActDecl): their needs, conditions and words ----------------------

def act_need(domain: Domain, act: ActDecl, resolved: Mapping[str, str]) -> DeclaredNeed:
    """What a named act looks up: its tool, for the instance resolved (a user act: the user
    named or claimed, None for the acting one), with user_id when a user was named or claimed.
    Its answer needs a result younger than the tool's max_age."""
    user = resolved.get(USER)
    if act.entity == USER:
        return DeclaredNeed(act.tool, user, {USER_KEY: user} if user else {}, True)
    iid = resolved.get(act.entity)
    key = domain.key(domain.tool_type(act.tool) or act.entity)
    return DeclaredNeed(act.tool, iid, {key: iid or "", **({USER_KEY: user} if user else {})},
                        True)


def _date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value or "")
    except ValueError:
        return None


def _given(domain: Domain, etype: str, fact: Fact, name: str) -> bool:
    """Whether the fact gives a field (a date field: a date)."""
    spec = domain.types.get(etype, None)
    f = spec.fields.get(name) if spec is not None else None
    if f is not None and f.type == "date":
        return _date(fact.fields.get(name)) is not None
    return bool(fact.fields.get(name))


def _holds(domain: Domain, etype: str, when: Mapping[str, Any], fact: Fact,
           now: datetime | None) -> bool:
    base = now or fact.as_of
    for k, v in when.items():
        if k == "missing":
            if any(_given(domain, etype, fact, n) for n in v):
                return False
        elif k == "present":
            if not all(_given(domain, etype, fact, n) for n in v):
                return False
        elif k == "partial":
            if fact.partial != bool(v):
                return False
        elif k == "dated":
            if (base is not None) != bool(v):
                return False
        elif k == "after":
            for name, days in v.items():
                d = _date(fact.fields.get(name))
                if d is None or base is None or not d > base.date() + timedelta(days=days):
                    return False
        elif fact.fields.get(k) not in v:
            return False
    return True


def _fill(domain: Domain, etype: str, template: str, fact: Fact, key: str | None,
          lang: Lang, extra: Mapping[str, str] | None = None) -> str:
    out = ""
    for text, name, label in tokens(template):
        out += text
        if name is None:
            continue
        if name == "id":
            out += key or ""
        elif extra is not None and name in extra:
            out += extra[name]
        elif label:
            value = fact.fields.get(name, "")
            words = domain.types[etype].fields[name].value_labels.get(value, {})
            out += words.get(lang, value)
        else:
            spec = domain.types[etype].fields.get(name) if etype in domain.types else None
            d = _date(fact.fields.get(name)) if spec is not None and spec.type == "date" \
                else None
            out += d.isoformat() if d is not None else fact.fields.get(name, "")
    return out


def act_content(domain: Domain, act: ActDecl, need: DeclaredNeed, fact: Fact, zh: bool,
                now: datetime | None) -> str | None:
    """A named act's answer from ``fact``: the first rule whose conditions hold, or None (the
    fact does not give what the act needs: the model says it could not check)."""
    lang: Lang = "zh" if zh else "en"
    tool = domain.spec.tools[act.tool]
    etype = tool.reads or tool.lists or act.entity
    if tool.lists is not None:
        if tool.list_key not in fact.fields:
            return None
        if not fact.entries:
            return act.empty.get(lang) or ("您目前没有记录。" if zh else "You have none.")
        list_field = next((f for f in tool.returns
                           if domain.types[etype].fields.get(f, None) is not None
                           and domain.types[etype].fields[f].type == "list"), None)
        parts = []
        for iid, values in fact.entries:
            shown = ("、" if zh else ", ").join(v.replace("_", " ") for v in values)
            parts.append(_fill(domain, etype, act.entry.get(lang, "{id}"), fact, iid, lang,
                               {list_field: shown} if list_field else {}))
        extra = {"count": str(len(fact.entries)), "entries": ("，" if zh else ", ").join(parts)}
        rule = next((r for r in act.answers if _holds(domain, etype, r.when, fact, now)), None)
        return None if rule is None else \
            _fill(domain, etype, rule.zh if zh else rule.en, fact, need.key, lang, extra)
    if not all(fact.fields.get(n) for n in act.requires):
        return None
    rule = next((r for r in act.answers if _holds(domain, etype, r.when, fact, now)), None)
    return None if rule is None else \
        _fill(domain, etype, rule.zh if zh else rule.en, fact, need.key, lang)


def act_unable(act: ActDecl, need: DeclaredNeed, why: str, zh: bool) -> str:
    """A named act's could-not-check answer (a reason it does not list: its failed one)."""
    listed = {str(k): v for k, v in act.unable.items()}
    words = listed.get(why) or listed.get("failed") or {
        "zh": "抱歉，暂时无法查询，请稍后再试。", "en": "Sorry, I could not check that right now."}
    return words["zh" if zh else "en"].replace("{id}", need.key or "")
