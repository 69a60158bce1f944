"""A team's own domain, declared in data: entity types (ids, fields, which are private and
which are volatile), the tools that read them and the knowledge base, so that scenarios about
tickets, flights or reservations run against the same fake model and checks as the bundled
e-commerce ones.

``DomainFile`` is what a domain file holds (pydantic, exported with the scenario schema);
``Domain`` is its compiled form in memory: the id pattern of each entity type, which tool
reads what, and the words a generic answer is made of. The bundled e-commerce world is not
(yet) one of these: a scenario without ``domain`` runs it as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harnesslab.sim.durations import parse_duration
from harnesslab.sim.filler import SENTENCES

__all__ = ["USER", "Domain", "DomainFile", "EntitySpec", "FieldSpec", "ToolDecl"]

# The acting user's entity type is always named this in intents, checks and tool arguments
# (``user_id``): binding it to the verified session is the harness's job, whatever the domain.
USER = "user"
USER_KEY = "user_id"
# Keys a record or a tool result uses itself; a declared field may not take them.
_RESERVED = frozenset({"tool", "as_of", "error", "code", "owner", "timeline", "entries",
                       "truncated", "rows", "id", "count", USER_KEY})
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
FieldType = Literal["string", "enum", "date", "datetime", "number", "boolean", "list"]
Lang = Literal["zh", "en"]
Loc = tuple[str | int, ...]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _name(v: str, what: str) -> str:
    if not _NAME_RE.match(v):
        raise ValueError(f"{what} {v!r} must be lower case letters, digits and _, starting "
                         f"with a letter")
    return v


class FieldSpec(_Strict):
    """One field of an entity type."""

    type: FieldType = Field(default="string", description="string, enum (with values), date "
                            "(YYYY-MM-DD), datetime (ISO-8601 with offset), number, boolean or "
                            "list (of strings)")
    values: list[str] = Field(default_factory=list, description="The values of an enum field")
    private: bool = Field(default=False, description="Private to the entity's owner: its "
                          "value in another user's session is a leak (no_leak)")
    volatile: bool = Field(default=False, description="Its truth changes over time (a status, "
                           "an assignee): the entity's timeline sets it, and an answer stating "
                           "it needs a result younger than its tool's max_age (fresh_fact)")
    label: dict[Lang, str] = Field(default_factory=dict, description="How an answer names the "
                                   "field, per locale (default: the field's name)")
    initial: Any = Field(default=None, description="Its value before the instance's first "
                         "timeline event states one (e.g. status: created)")
    unset_when: dict[str, list[str]] = Field(
        default_factory=dict, description="It reads as null while another field has one of "
        "these values (an ETA once the order is cancelled: {status: [cancelled]})")
    default_from: str | None = Field(default=None, description="owner.<field>: when the "
                                     "instance leaves it empty, its owner's value (a shipping "
                                     "address defaulting to the user's)")
    value_labels: dict[str, dict[Lang, str]] = Field(
        default_factory=dict, description="Words for some of an enum's values, per locale, "
        "for answers ({cancelled: {zh: 已取消, en: cancelled}})")

    @model_validator(mode="after")
    def _enum(self) -> FieldSpec:
        if self.type == "enum" and not self.values:
            raise ValueError("an enum field lists its values")
        if self.type != "enum" and self.values:
            raise ValueError(f"values are for enum fields, not {self.type}")
        return self

    def check(self, value: Any) -> str | None:
        """Why ``value`` is not one of this field's, or None."""
        if value is None:
            return None
        if self.type == "enum":
            return None if value in self.values else \
                f"{value!r} is not one of {', '.join(self.values)}"
        if self.type == "number":
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            return None if ok else f"{value!r} is not a number"
        if self.type == "boolean":
            return None if isinstance(value, bool) else f"{value!r} is not true or false"
        if self.type == "list":
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
            return None if ok else f"{value!r} is not a list of strings"
        if self.type == "date":
            if isinstance(value, date) and not isinstance(value, datetime):
                return None
            try:
                date.fromisoformat(str(value))
            except ValueError:
                return f"{value!r} is not a date (YYYY-MM-DD)"
            return None
        if self.type == "datetime":
            try:
                t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
            except ValueError:
                return f"{value!r} is not an ISO-8601 time"
            return None if t.tzinfo is not None else f"{value!r} needs a UTC offset"
        return None if isinstance(value, str) else f"{value!r} is not a string"


class IdSpec(_Strict):
    pattern: str | None = Field(default=None, description="A regular expression every id of "
                                "the type matches whole (e.g. INC-\\d{4}, #W\\d{7}); the fake "
                                "model finds ids of the type in a request by it")
    ids: list[str] = Field(default_factory=list, description="Instead of a pattern: the ids, "
                           "listed (a pattern is built from them)")
    search: str | None = Field(default=None, description="Instead: the regular expression that "
                               "finds an id in text, anchored as you choose (a pattern is "
                               "anchored at word edges: no letter, digit or _ on either side)")

    @model_validator(mode="after")
    def _one(self) -> IdSpec:
        if sum((self.pattern is not None, bool(self.ids), self.search is not None)) != 1:
            raise ValueError("an id states exactly one of pattern, ids or search")
        for what in (self.pattern, self.search):
            if what is not None:
                try:
                    re.compile(what)
                except re.error as e:
                    raise ValueError(f"{what!r} is not a regular expression: {e}") from None
        return self

    def source(self) -> str:
        if self.search is not None:
            return self.search
        return self.pattern if self.pattern is not None else \
            "|".join(re.escape(i) for i in sorted(self.ids, key=lambda i: (-len(i), i)))

    def finder(self) -> str:
        """The expression that finds an id in text."""
        if self.search is not None:
            return self.search
        return rf"(?<![A-Za-z0-9_])(?:{self.source()})(?![A-Za-z0-9_])"


class EntitySpec(_Strict):
    """An entity type: how its ids look, its fields, who owns its instances."""

    label: dict[Lang, str] = Field(description="How an answer names the type, per locale, "
                                   "e.g. {zh: 工单, en: ticket}")
    id: IdSpec
    key: str | None = Field(default=None, description="The argument and result field that names "
                            "an instance (default <type>_id; the user type's is user_id)")
    fields: dict[str, FieldSpec] = Field(default_factory=dict)
    which: dict[Lang, str] = Field(default_factory=dict, description="The question asking "
                                   "which one is meant (default: from the label)")
    some: dict[Lang, str] = Field(default_factory=dict, description="A summary's words for one "
                                  "not named (default: from the label)")
    paraphrase: dict[Lang, str] = Field(default_factory=dict, description="What a lossy "
                                        "summary writes instead of an id (default: from the "
                                        "label)")

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: dict[str, FieldSpec]) -> dict[str, FieldSpec]:
        for name in v:
            _name(name, "field")
            if name in _RESERVED:
                raise ValueError(f"field {name!r} is reserved ({', '.join(sorted(_RESERVED))})")
        return v


class HistoryDecl(_Strict):
    """A long generated history a tool returns (a parcel's scan events): ``count`` items spread
    evenly from the instance's first timeline event to now, at least a minute apart."""

    field: str = Field(description="The result field holding it (listed in returns)")
    count: int = Field(default=400, ge=1, description="How many items")
    item: dict[str, str] = Field(description="Each item's fields after its time (at), as "
                                 "templates: {i} its number, {cycle} the next of cycle")
    cycle: list[str] = Field(default_factory=lambda: [""], min_length=1)


class ToolDecl(_Strict):
    """A tool of the domain: what it reads and which fields its result shows."""

    description: str = Field(description="The tool's description, as the model is offered it")
    reads: str | None = Field(default=None, description="The entity type (or user) it looks up "
                              "by its key argument; the acting user's own when user")
    lists: str | None = Field(default=None, description="The entity type whose instances owned "
                              "by the acting user it lists, in the order the data declares them")
    kb: bool = Field(default=False, description="It searches the knowledge base by topic")
    returns: list[str] = Field(default_factory=list, description="The fields its result shows "
                               "(of the type it reads or lists)")
    max_age: str | None = Field(default=None, description="How long a result stays true (e.g. "
                                "2h); null: never stale. Only volatile fields go stale")
    default: bool = Field(default=True, description="Offered in every scenario of the domain "
                          "unless a scenario's world.tools says otherwise")
    parameters: dict[str, Any] | None = Field(
        default=None, description="The JSON Schema of its arguments as the model is offered "
        "it (default: the key argument and user_id, described from the labels)")
    list_key: str = Field(default="entries", description="A list tool's result field holding "
                          "the entries")
    history: HistoryDecl | None = None

    @model_validator(mode="after")
    def _one(self) -> ToolDecl:
        if sum((self.reads is not None, self.lists is not None, self.kb)) != 1:
            raise ValueError("a tool states exactly one of reads, lists or kb")
        if self.kb and self.returns:
            raise ValueError("a knowledge-base tool returns a policy's title and text; "
                             "returns is for entity tools")
        return self


class RuleDecl(_Strict):
    """One answer of an act: its words, when every condition holds. Conditions: <field>:
    [values] (the fact's value is one of them); missing / present: [fields] (a date field
    is present when it is a date); partial: true|false (the result was cut); dated: true (the
    request states now, or the fact its as_of); after: {<date field>: days} (later than that
    many days after now, or the fact's as_of)."""

    when: dict[str, Any] = Field(default_factory=dict)
    zh: str
    en: str
    read: bool = Field(default=True, description="A summary reads this answer back as a fact")


Why = Literal["failed", "not_found", "forbidden", "not_offered"]


class ActDecl(_Strict):
    """A named act of the domain: what a user turn asks, which tool looks it up, and the
    answer's words. Templates name {id} (the instance), the fact's {<field>}, an enum's
    {<field>.label}; a list act's {count} and {entries} ({id} and fields in entry)."""

    entity: str = Field(description="The type of what the turn names (user: a user, the "
                        "acting one unless named)")
    tool: str = Field(description="The tool that looks it up")
    requires: list[str] = Field(default_factory=list, description="Fields the fact must give; "
                                "else the model says it could not check")
    answers: list[RuleDecl] = Field(min_length=1, description="The first whose conditions "
                                    "hold answers; none: could not check")
    entry: dict[Lang, str] = Field(default_factory=dict, description="A list act's one entry")
    empty: dict[Lang, str] = Field(default_factory=dict, description="A list act's answer when "
                                   "it lists nothing")
    goal: dict[Lang, str] = Field(description="How a summary states the user's request: {id} "
                                  "(or the type's some), {who} (the user named, or their own)")
    unable: dict[Why, dict[Lang, str]] = Field(
        default_factory=dict, description="The could-not-check answer per reason, {id} the "
        "instance (failed stands for a reason not listed)")
    read: bool = Field(default=True, description="Its answers are read back as facts (false: "
                       "one field of a profile would stand for the whole profile)")


class PolicyDecl(_Strict):
    title: str
    text: str
    keywords: list[str] = Field(default_factory=list)


class DomainFile(_Strict):
    """A domain file (``*.domain.yaml``): the vocabulary of a team's own product."""

    name: str = Field(description="The domain's name, e.g. helpdesk")
    title: str = Field(default="", description="One line saying what it is")
    source: str = Field(default="", description="Where its data comes from, with its license "
                        "(kept in every file generated from it)")
    user: EntitySpec = Field(description="The users: who acts, whose session is verified")
    entities: dict[str, EntitySpec] = Field(default_factory=dict, description="The other "
                                            "entity types, by name (e.g. ticket)")
    tools: dict[str, ToolDecl] = Field(min_length=1)
    kb: dict[str, PolicyDecl] = Field(default_factory=dict, description="Policies by topic")
    data: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict, description="Instances per entity type (user for the users), by "
        "id: field values; an instance of another type names its owner (a user id); volatile "
        "fields may change over a timeline: [{at: ISO time, <field>: value}]")
    acts: dict[str, ActDecl] = Field(
        default_factory=dict, description="Named acts beyond the generic ones (ask, list, "
        "ask_policy, set_constraint, chitchat), with their own answers")
    tags: list[str] | None = Field(
        default=None, description="The fields a summary's fact tag keeps, in this order "
        "(default: every tool's returns)")

    @field_validator("name")
    @classmethod
    def _nm(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_-]*", v):
            raise ValueError(f"domain name {v!r} must be lower case letters, digits, _ and -, "
                             f"starting with a letter")
        return v

    @field_validator("entities")
    @classmethod
    def _types(cls, v: dict[str, EntitySpec]) -> dict[str, EntitySpec]:
        for name in v:
            _name(name, "entity type")
            if name == USER:
                raise ValueError("the users are declared under user, not entities")
        return v

    def types(self) -> dict[str, EntitySpec]:
        return {USER: self.user, **self.entities}

    def problems(self, data: Mapping[str, Mapping[str, Any]] | None = None,
                 where: tuple[str | int, ...] = ("data",)) -> list[tuple[Loc, str]]:
        """What a schema cannot see, each with where it is: tools naming unknown types or
        fields, ids their type's pattern does not match, instances with unknown fields or
        values of the wrong type, owners that are no user, timelines out of order.
        ``data`` (default the file's own) is checked at ``where``."""
        out: list[tuple[Loc, str]] = []
        types = self.types()
        for name, spec in types.items():
            # Filler must show no id: it would become a referent the scenario never declared.
            found = _in_filler(spec.id.finder())
            if found is not None:
                where_ = ("user",) if name == USER else ("entities", name)
                out.append(((*where_, "id"), f"the id pattern matches {found[0]!r} in the "
                            f"filler text ({found[1]!r}); make it match only ids"))
        for tname, t in self.tools.items():
            if not _NAME_RE.match(tname):
                out.append((("tools", tname), f"tool name {tname!r} must be lower case letters, "
                            f"digits and _"))
            target = t.reads or t.lists
            if target is None:
                continue
            field = "reads" if t.reads is not None else "lists"
            if target not in types:
                out.append((("tools", tname, field), f"unknown entity type {target!r}; the "
                            f"domain's: {', '.join(types)}"))
                continue
            for i, f in enumerate(t.returns):
                if f not in types[target].fields and not (t.history and f == t.history.field):
                    out.append((("tools", tname, "returns", i),
                                f"{target} has no field {f!r}; its fields: "
                                f"{', '.join(types[target].fields) or 'none'}"))
            if t.max_age is not None:
                try:
                    parse_duration(t.max_age)
                except ValueError as e:
                    out.append((("tools", tname, "max_age"), str(e)))
        given = self.data if data is None else data
        users = set(given.get(USER, {})) | (set(self.data.get(USER, {})) if data is not None
                                           else set())
        for etype, instances in given.items():
            if etype not in types:
                out.append(((*where, etype), f"unknown entity type {etype!r}; the domain's: "
                            f"{', '.join(types)}"))
                continue
            out += _instance_problems(etype, types[etype], instances, users, (*where, etype))
        return out


def _instance_problems(etype: str, spec: EntitySpec, instances: Mapping[str, Any],
                       users: set[str], where: Loc) -> list[tuple[Loc, str]]:
    out: list[tuple[Loc, str]] = []
    pattern = re.compile(spec.id.source())
    for iid, rec in instances.items():
        at = (*where, iid)
        if not pattern.fullmatch(str(iid)):
            # Quoted as written in the file (a repr would double every backslash of it).
            how = f"the pattern '{spec.id.pattern}'" if spec.id.pattern is not None else \
                "the listed ids"
            out.append((at, f"id {iid!r} does not match {how} of {etype}"))
        if not isinstance(rec, Mapping):
            out.append((at, f"an instance is a mapping of field values, got {rec!r}"))
            continue
        for k, v in rec.items():
            if k == "owner":
                if etype == USER:
                    out.append(((*at, k), "a user owns nothing but itself: no owner"))
                elif v not in users:
                    out.append(((*at, k), f"owner {v!r} is no user of the domain"))
            elif k == "timeline":
                out += _timeline_problems(spec, v, (*at, k))
            elif k not in spec.fields:
                out.append(((*at, k), f"{etype} has no field {k!r}; its fields: "
                            f"{', '.join(spec.fields) or 'none'}"))
            elif (why := spec.fields[k].check(v)) is not None:
                out.append(((*at, k), why))
        if etype != USER and "owner" not in rec:
            out.append((at, f"a {etype} names its owner (a user id)"))
    return out


def _timeline_problems(spec: EntitySpec, events: Any, at: Loc) -> list[tuple[Loc, str]]:
    if not isinstance(events, list):
        return [(at, "a timeline is a list of {at: time, <field>: value}")]
    out: list[tuple[Loc, str]] = []
    last: datetime | None = None
    for n, ev in enumerate(events):
        here = (*at, n)
        if not isinstance(ev, Mapping) or "at" not in ev:
            out.append((here, "a timeline event states at (ISO-8601 with offset)"))
            continue
        t = _time(ev["at"])
        if t is None:
            out.append(((*here, "at"), f"{ev['at']!r} is not an ISO-8601 time with offset"))
        elif last is not None and t < last:
            out.append(((*here, "at"), "timeline events must be in time order"))
        last = t or last
        for k, v in ev.items():
            if k == "at":
                continue
            f = spec.fields.get(k)
            if f is None:
                out.append(((*here, k), f"no field {k!r}; the fields: "
                            f"{', '.join(spec.fields) or 'none'}"))
            elif not f.volatile:
                out.append(((*here, k), f"{k} is not volatile: only volatile fields change "
                            f"over a timeline"))
            elif (why := f.check(v)) is not None:
                out.append(((*here, k), why))
    return out


def _in_filler(finder: str) -> tuple[str, str] | None:
    """What an id pattern finds in the filler's sentences (the match and its sentence)."""
    pattern = re.compile(finder)
    for sentence in SENTENCES:
        m = pattern.search(sentence)
        if m is not None and m.group(0):
            return m.group(0), sentence
    return None


def _time(v: Any) -> datetime | None:
    try:
        t = v if isinstance(v, datetime) else datetime.fromisoformat(str(v))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


@dataclass(frozen=True, eq=False)  # one compiled domain is one thing: hashed by identity
class Domain:
    """A compiled domain: what the fake model, the tools and the checks read of it."""

    spec: DomainFile
    path: str = ""     # the file it was loaded from, as named
    sha256: str = ""   # of the file's bytes: a sweep resumes only runs of the same domain

    @property
    def name(self) -> str:
        return self.spec.name

    @cached_property
    def types(self) -> dict[str, EntitySpec]:
        return self.spec.types()

    @cached_property
    def patterns(self) -> dict[str, re.Pattern[str]]:
        """Per entity type, its id pattern anchored so that an id inside a longer token is not
        one (as the bundled world's O-\\d{4})."""
        return {name: re.compile(t.id.finder()) for name, t in self.types.items()}

    def key(self, etype: str) -> str:
        if etype == USER:
            return USER_KEY
        return self.types[etype].key or f"{etype}_id"

    @cached_property
    def fact_keys(self) -> dict[str, str]:
        """Per tool, the field of its result that names what the fact is about."""
        out = {}
        for name, t in self.spec.tools.items():
            if t.kb:
                out[name] = "topic"
            elif t.lists is not None:
                out[name] = USER_KEY
            elif t.reads is not None:
                out[name] = self.key(t.reads)
        return out

    def reader(self, etype: str, field: str) -> str | None:
        """The first declared tool that reads ``etype`` and returns ``field``."""
        return next((n for n, t in self.spec.tools.items()
                     if t.reads == etype and field in t.returns), None)

    def lister(self, etype: str) -> str | None:
        return next((n for n, t in self.spec.tools.items() if t.lists == etype), None)

    def kb_tool(self) -> str | None:
        return next((n for n, t in self.spec.tools.items() if t.kb), None)

    def label(self, etype: str, lang: Lang) -> str:
        t = self.types[etype]
        return t.label.get(lang) or t.label.get("en") or etype

    def field_label(self, etype: str, field: str, lang: Lang) -> str:
        f = self.types[etype].fields[field]
        return f.label.get(lang) or f.label.get("en") or field

    def tool_type(self, tool: str) -> str | None:
        t = self.spec.tools.get(tool)
        return None if t is None else t.reads or t.lists

    def volatile(self, etype: str, field: str) -> bool:
        f = self.types.get(etype, None)
        return bool(f is not None and field in f.fields and f.fields[field].volatile)

    def id_type(self, value: str) -> str | None:
        """The entity type whose pattern ``value`` matches whole (the first declared)."""
        return next((n for n, p in self.patterns.items() if p.fullmatch(value)), None)

    def header(self) -> dict[str, Any]:
        """What a run record states of the domain (its judges read ids by these patterns)."""
        return {"name": self.name, "sha256": self.sha256,
                "id_patterns": {n: p.pattern for n, p in self.patterns.items()}}


def compile_domain(spec: DomainFile, path: str = "", sha256: str = "") -> Domain:
    return Domain(spec, path, sha256)


BUNDLED = Path(__file__).resolve().parents[1] / "domains"


@functools.lru_cache(maxsize=8)
def bundled_domain(name: str) -> Domain:
    """A bundled domain file, compiled (``commerce``: the bundled world's). A problem in it is
    a defect of harnesslab, not bad input: it raises."""
    import hashlib

    import yaml

    path = BUNDLED / f"{name}.domain.yaml"
    raw = path.read_bytes()
    spec = DomainFile.model_validate(yaml.safe_load(raw.decode("utf-8")))
    if problems := spec.problems():
        raise RuntimeError(f"{path}: {problems[0]}")
    return compile_domain(spec, str(path), hashlib.sha256(raw).hexdigest())
