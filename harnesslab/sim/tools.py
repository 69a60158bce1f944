"""The world's tools, as its domain file declares them: read one instance, list the acting
user's, search the knowledge base. Each result is JSON text carrying ``as_of``; a failure is
an error result the model sees, never an exception.

Every tool runs on behalf of ``acting_user``, which the harness supplies (the tool context):
a ``user_id`` argument that differs from it is refused, and an instance is visible only to
its owner. Binding ``acting_user`` to the verified session is the harness's job; a harness
that sets it from what the model passed (a claimed identity) lets another user's data through.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from harnesslab.messages import ToolOutcome, ToolSchema
from harnesslab.sim.domain import USER, USER_KEY, Domain, ToolDecl, bundled_domain
from harnesslab.sim.intents import ToolError
from harnesslab.sim.world import World

__all__ = ["TOOLS", "ToolBox", "Tools", "tool_schema", "toolbox_for"]

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
    if isinstance(v, tuple):
        return list(v)
    return v


def _function(name: str, description: str, parameters: Mapping[str, Any]) -> ToolSchema:
    return ToolSchema.from_dict({"type": "function", "function": {
        "name": name, "description": description, "parameters": dict(parameters)}})


def tool_schema(domain: Domain, name: str, example: str | None = None) -> ToolSchema:
    """A domain tool's schema as the model is offered it: the parameters it declares, else its
    key argument (with ``example``) and user_id, described from the labels."""
    t = domain.spec.tools[name]
    if t.parameters is not None:
        return _function(name, t.description, t.parameters)
    user = {"type": "string", "description": f"The {domain.label(USER, 'en')}'s id"}
    if t.kb:
        return _function(name, t.description, {"type": "object", "properties": {
            "topic": {"type": "string", "description": "Policy topic"},
            "query": {"type": "string", "description": "Free-text question"}}, "required": []})
    if t.lists is not None or t.reads == USER:
        return _function(name, t.description, {"type": "object", "properties": {
            USER_KEY: user}, "required": []})
    assert t.reads is not None
    key = domain.key(t.reads)
    return _function(name, t.description, {"type": "object", "properties": {
        key: {"type": "string", "description": f"The {domain.label(t.reads, 'en')} id"
              + (f", e.g. {example}" if example else "")},
        USER_KEY: user}, "required": [key]})


class ToolBox:
    """Runs the world's tools by name (those its world offers, unless ``names`` says which).
    Bad arguments, unknown tools and the world's declared failures are error results; a
    declared failure's seeded rate draws on ``seed``."""

    def __init__(self, world: World, names: tuple[str, ...] | None = None, *,
                 seed: int = 0) -> None:
        self.world = world
        self.names = names or world.offered()
        self.seed = seed

    def schemas(self) -> tuple[ToolSchema, ...]:
        d = self.world.domain
        out = []
        for n in self.names:
            t = d.spec.tools[n]
            etype = t.reads if t.reads not in (None, USER) else None
            example = next(iter(self.world.data.get(etype, {})), None) if etype else None
            out.append(tool_schema(d, n, example))
        return tuple(out)

    def _result(self, tool: str, **fields: Any) -> ToolOutcome:
        # as_of right after the tool name: a truncated result still states its time.
        body = {"tool": tool, "as_of": self.world.clock.now().isoformat(timespec="seconds"),
                **fields}
        return ToolOutcome(json.dumps(body, ensure_ascii=False))

    def _error(self, tool: str, message: str, code: ToolError) -> ToolOutcome:
        # The code says why in a word, as a real API's error type does; the message in full.
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
            return self._list(name, t, acting_user)
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
        return self._result(name, **{d.key(etype): iid, **{
            f: self._history(t, etype, iid) if t.history and f == t.history.field
            else _plain(state.get(f)) for f in t.returns}})

    def _list(self, name: str, t: ToolDecl, acting_user: str) -> ToolOutcome:
        w, etype = self.world, t.lists or ""
        k = w.domain.key(etype)
        entries = []
        for iid in w.data.get(etype, {}):  # as the data declares them: "the first one"
            if w.owner(etype, iid) == acting_user:
                row = w.state(etype, iid) or {}
                entries.append({k: iid, **{f: _plain(row.get(f)) for f in t.returns}})
        return self._result(name, **{USER_KEY: acting_user, t.list_key: entries})

    def _history(self, t: ToolDecl, etype: str, iid: str) -> list[dict[str, Any]]:
        """A generated history: items spread evenly from the instance's start to now."""
        h = t.history
        assert h is not None
        w = self.world
        n = w.history_count or h.count
        start, now = w.started(etype, iid), w.clock.now()
        step = max((now - start) / n, timedelta(minutes=1))
        return [{"at": (start + step * i).isoformat(timespec="minutes"),
                 **{k: v.format(i=i, cycle=h.cycle[i % len(h.cycle)]) for k, v in h.item.items()}}
                for i in range(n)]

    def _kb(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        topic = str(args.get("topic") or "")
        query = str(args.get("query") or "")
        hits = [(k, p) for k, p in self.world.kb.items()
                if k == topic or (query and any(w in query for w in p[2]))]
        if not hits:
            return self._error(name, f"no policy found for {topic or query!r}",
                               ToolError.NOT_FOUND)
        k, (title, text, _) = hits[0]
        return self._result(name, topic=k, title=title, text=text)


# The tools a harness is handed (one interface: names, schemas(), run(name, raw_args,
# acting_user)), for any domain.
Tools = ToolBox


def toolbox_for(world: World, seed: int = 0) -> ToolBox:
    """The tools of ``world``, run for the harness."""
    return ToolBox(world, seed=seed)


@dataclass(frozen=True)
class ToolDef:
    schema: ToolSchema


def _bundled() -> dict[str, ToolDef]:
    d = bundled_domain("commerce")
    return {n: ToolDef(tool_schema(d, n)) for n in d.spec.tools}


# The bundled world's tools by name, in its domain file's order.
TOOLS: dict[str, ToolDef] = _bundled()
