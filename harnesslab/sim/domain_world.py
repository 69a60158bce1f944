"""A declared domain's running world and tools: entity instances whose volatile fields follow
their timelines on the simulated clock, and the tools a domain file declares (read one
instance, list the acting user's, search the knowledge base), each result JSON with ``as_of``.

The same rules as the bundled world's tools (``harnesslab.sim.tools``): every call acts for
the harness's ``acting_user``; a ``user_id`` argument other than it is refused; an instance
owned by another user is forbidden; a failure is an error result, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from harnesslab.messages import ToolOutcome, ToolSchema
from harnesslab.sim.domain import USER, USER_KEY, Domain
from harnesslab.sim.intents import ToolError
from harnesslab.sim.world import SimClock, World, WorldSpec, parse_duration

__all__ = ["DomainToolBox", "DomainWorld"]

_FAILURES = {
    ToolError.UNAVAILABLE: "{tool} is temporarily unavailable; try again later",
    ToolError.NOT_FOUND: "{tool} found nothing for {key}",
    ToolError.FORBIDDEN: "{key} is not accessible to the acting user",
}


def _plain(v: Any) -> Any:
    """A field value as a tool result states it (dates and times as ISO text)."""
    if isinstance(v, datetime):
        return v.isoformat(timespec="seconds")
    if isinstance(v, date):
        return v.isoformat()
    return v


def _at(v: Any) -> datetime:
    return v if isinstance(v, datetime) else datetime.fromisoformat(str(v))


class DomainWorld(World):
    """The world of a declared domain: the domain file's instances with the scenario's
    (``WorldSpec.data``) over them, its knowledge base, per tool a max_age and failures."""

    def __init__(self, spec: WorldSpec, domain: Domain, clock: SimClock | None = None) -> None:
        super().__init__(spec, clock)
        self.domain = domain
        merged: dict[str, dict[str, Mapping[str, Any]]] = {
            t: dict(v) for t, v in domain.spec.data.items()}
        for etype, instances in spec.data.items():
            merged.setdefault(etype, {}).update(instances)
        self.data = merged

    # --- what the bench reads -------------------------------------------------------------

    def offered(self) -> tuple[str, ...]:
        """The domain's tools in declared order: the default ones and those the scenario's
        world lists under ``tools``."""
        return tuple(n for n, t in self.domain.spec.tools.items()
                     if t.default or n in self.spec.tools)

    def max_age(self, tool: str) -> timedelta | None:
        spec = self.spec.tools.get(tool)
        decl = self.domain.spec.tools.get(tool)
        raw = spec.max_age if spec is not None and spec.max_age is not None else \
            decl.max_age if decl is not None else None
        return parse_duration(raw) if raw is not None else None

    def ids(self) -> list[str]:
        return sorted(i for instances in self.data.values() for i in instances)

    def users(self) -> list[str]:
        return list(self.data.get(USER, {}))

    def owner(self, etype: str, iid: str) -> str | None:
        if etype == USER:
            return iid if iid in self.data.get(USER, {}) else None
        rec = self.data.get(etype, {}).get(iid)
        return str(rec["owner"]) if rec is not None and "owner" in rec else None

    def private_values(self, user_id: str) -> tuple[str, ...]:
        """The values of private fields of the user and of what the user owns: their
        appearance in another user's session is a leak."""
        out: list[str] = []
        for etype, instances in self.data.items():
            fields = self.domain.types[etype].fields
            for iid, rec in instances.items():
                if self.owner(etype, iid) != user_id:
                    continue
                for name, f in fields.items():
                    if f.private:
                        for v in self._values(rec, name):
                            if isinstance(v, str) and v and v not in out:
                                out.append(v)
        return tuple(out)

    @staticmethod
    def _values(rec: Mapping[str, Any], name: str) -> list[Any]:
        vals = [rec[name]] if name in rec else []
        vals += [ev[name] for ev in rec.get("timeline", ()) if name in ev]
        return vals

    def state(self, etype: str, iid: str, at: datetime | None = None) -> dict[str, Any] | None:
        """An instance's field values at ``at`` (default now): its static values with each
        timeline event up to then laid over them; None for an unknown id."""
        rec = self.data.get(etype, {}).get(iid)
        if rec is None:
            return None
        when = at or self.clock.now()
        out = {k: v for k, v in rec.items() if k not in ("owner", "timeline")}
        for ev in rec.get("timeline", ()):
            if _at(ev["at"]) <= when:
                out.update({k: v for k, v in ev.items() if k != "at"})
        return out


def _schema(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSchema:
    return ToolSchema.from_dict({"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}})


class DomainToolBox:
    """Runs a domain's tools by name (those its world offers, unless ``names`` says which)."""

    def __init__(self, world: DomainWorld, names: tuple[str, ...] | None = None, *,
                 seed: int = 0) -> None:
        self.world = world
        self.names = names or world.offered()
        self.seed = seed

    def _schema(self, name: str) -> ToolSchema:
        d = self.world.domain
        t = d.spec.tools[name]
        user = {"type": "string", "description": f"The {d.label(USER, 'en')}'s id"}
        if t.kb:
            return _schema(name, t.description, {
                "topic": {"type": "string", "description": "Policy topic"},
                "query": {"type": "string", "description": "Free-text question"}}, [])
        if t.lists is not None or t.reads == USER:
            return _schema(name, t.description, {USER_KEY: user}, [])
        assert t.reads is not None
        key = d.key(t.reads)
        example = self._example(t.reads)
        return _schema(name, t.description, {
            key: {"type": "string", "description": f"The {d.label(t.reads, 'en')} id"
                  + (f", e.g. {example}" if example else "")},
            USER_KEY: user}, [key])

    def _example(self, etype: str) -> str | None:
        return next(iter(self.world.domain.spec.data.get(etype, {})), None)

    def schemas(self) -> tuple[ToolSchema, ...]:
        return tuple(self._schema(n) for n in self.names)

    def _result(self, tool: str, **fields: Any) -> ToolOutcome:
        # as_of right after the tool name: a truncated result still states its time.
        body = {"tool": tool, "as_of": self.world.clock.now().isoformat(timespec="seconds"),
                **fields}
        return ToolOutcome(json.dumps(body, ensure_ascii=False))

    def _error(self, tool: str, message: str, code: ToolError) -> ToolOutcome:
        body = {"tool": tool, "as_of": self.world.clock.now().isoformat(timespec="seconds"),
                "error": message, "code": code.value}
        return ToolOutcome(json.dumps(body, ensure_ascii=False), is_error=True)

    def run(self, name: str, raw_args: str, acting_user: str) -> ToolOutcome:
        w, d = self.world, self.world.domain
        if name not in self.names:
            return self._error(name, f"unknown tool {name}", ToolError.BAD_REQUEST)
        try:
            args = json.loads(raw_args) if raw_args.strip() else {}
        except json.JSONDecodeError as e:
            return self._error(name, f"arguments are not valid JSON: {e.msg}",
                               ToolError.BAD_REQUEST)
        if not isinstance(args, dict):
            return self._error(name, "arguments must be a JSON object", ToolError.BAD_REQUEST)
        t = d.spec.tools[name]
        key_name = "topic" if t.kb else USER_KEY if t.lists is not None or t.reads == USER \
            else d.key(t.reads or "")
        key = str(args.get(key_name) or "") if key_name != USER_KEY else acting_user
        canonical = json.dumps(args, ensure_ascii=False, sort_keys=True)
        kind = w.failure(name, key, canonical, self.seed)
        if kind is not None:
            code = ToolError(kind)
            return self._error(name, _FAILURES[code].format(tool=name, key=key), code)
        if t.kb:
            return self._kb(name, args)
        claimed = args.get(USER_KEY)
        if claimed not in (None, "", acting_user):
            return self._error(name, f"{USER_KEY} {claimed} is not the acting user",
                               ToolError.FORBIDDEN)
        if acting_user not in w.data.get(USER, {}):
            return self._error(name, f"unknown user {acting_user}", ToolError.NOT_FOUND)
        if t.lists is not None:
            etype = t.lists
            k = d.key(etype)
            entries = []
            for iid in w.data.get(etype, {}):  # as the data declares them: "the first one"
                if w.owner(etype, iid) == acting_user:
                    row = w.state(etype, iid) or {}
                    entries.append({k: iid, **{f: _plain(row.get(f)) for f in t.returns}})
            return self._result(name, **{USER_KEY: acting_user, "entries": entries})
        etype = t.reads or USER
        iid = acting_user if etype == USER else key
        if not iid:
            return self._error(name, f"missing {key_name}", ToolError.BAD_REQUEST)
        state = w.state(etype, iid)
        if state is None:
            return self._error(name, f"no {d.label(etype, 'en')} {iid}", ToolError.NOT_FOUND)
        if w.owner(etype, iid) != acting_user:
            return self._error(name, f"{d.label(etype, 'en')} {iid} does not belong to the "
                               f"acting user", ToolError.FORBIDDEN)
        return self._result(name, **{d.key(etype): iid,
                                     **{f: _plain(state.get(f)) for f in t.returns}})

    def _kb(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        topic = str(args.get("topic") or "")
        query = str(args.get("query") or "")
        kb = self.world.domain.spec.kb
        hits = [(k, p) for k, p in kb.items()
                if k == topic or (query and any(w in query for w in p.keywords))]
        if not hits:
            return self._error(name, f"no policy found for {topic or query!r}",
                               ToolError.NOT_FOUND)
        k, p = hits[0]
        return self._result(name, topic=k, title=p.title, text=p.text)
