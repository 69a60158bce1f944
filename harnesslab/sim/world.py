"""The simulated world: an injectable clock, users with private data, orders (items, shipping
address) whose logistics truth changes over time, a knowledge base of policies, and per tool a
``max_age`` and the failures it is declared to have.

``WorldSpec`` is what a scenario file declares (pydantic, so it is also part of the scenario
JSON Schema); ``World`` is the running state, read by the tools and by the bench's checks,
never by the fake model.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from itertools import pairwise
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harnesslab.sim.domain import USER, Domain, bundled_domain
from harnesslab.sim.draws import draw
from harnesslab.sim.durations import AwareTime, format_duration, parse_duration
from harnesslab.sim.intents import ID_PATTERNS, Slot

__all__ = ["AwareTime", "SimClock", "World", "WorldSpec", "format_duration", "parse_duration"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UserSpec(_Strict):
    name: str = Field(description="Display name, e.g. 张三")
    phone: str = Field(description="Private: a phone number")
    address: str = Field(description="Private: the delivery address")


OrderStatus = Literal["created", "paid", "shipped", "in_transit", "delayed", "out_for_delivery",
                      "delivered", "cancelled", "returned", "lost"]


class TimelineEvent(_Strict):
    at: AwareTime = Field(description="When this becomes the truth (ISO-8601 with offset)")
    status: OrderStatus = Field(description="cancelled, returned and lost orders never arrive "
                                "(and have no ETA from then on)")
    eta: date | None = Field(default=None, description="Expected delivery date, if known")
    location: str = Field(default="", description="Where the parcel is")


class OrderSpec(_Strict):
    user: str = Field(description="Owner user id")
    items: list[str] = Field(default_factory=list, description="What was ordered, by name (what "
                             "an @item:<name> reference finds), as list_orders and get_order "
                             "show them")
    ship_to: str = Field(default="", description="The shipping address, as get_order shows it; "
                         "empty: the owner's address")
    timeline: list[TimelineEvent] = Field(min_length=1, description="Logistics events in time "
                                          "order; the latest one not in the future is the truth")

    @field_validator("items")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for name in v:
            # A summary lists an order's items in one tag value, joined by "+".
            if not name.strip() or any(c in name for c in "+,:[]"):
                raise ValueError(f"item name {name!r} must be non-empty, without + , : [ ]")
        return v

    @field_validator("timeline")
    @classmethod
    def _sorted(cls, v: list[TimelineEvent]) -> list[TimelineEvent]:
        if any(b.at < a.at for a, b in pairwise(v)):
            raise ValueError("timeline events must be in time order")
        return v


class PolicySpec(_Strict):
    title: str
    text: str
    keywords: list[str] = Field(default_factory=list, description="Words that find this policy")


class FailureSpec(_Strict):
    """When a tool fails: every condition given must hold (none given: always)."""

    kind: Literal["not_found", "forbidden", "unavailable"] = Field(
        description="The error the tool returns (its result's code)")
    ids: list[str] = Field(default_factory=list, description="Only for these keys: the order id "
                           "(order tools), the acting user (user tools) or the topic (search_kb)")
    since: AwareTime | None = Field(default=None, alias="from", description="From this simulated "
                                    "time on (ISO-8601 with offset)")
    until: AwareTime | None = Field(default=None, description="Before this simulated time")
    rate: float = Field(default=1.0, ge=0.0, le=1.0, description="Fails at this seeded rate: a "
                        "draw keyed by seed, tool, arguments and time, never by call order")

    @model_validator(mode="after")
    def _window(self) -> FailureSpec:
        if self.since is not None and self.until is not None and self.until <= self.since:
            raise ValueError("until must be later than from")
        return self


class ToolSpec(_Strict):
    max_age: str | None = Field(default=None, description="How long a result stays true, e.g. "
                                "6h; null: never stale")
    failures: list[FailureSpec] = Field(default_factory=list, description="When the tool fails; "
                                        "the first failure that applies wins")

    @field_validator("max_age")
    @classmethod
    def _duration(cls, v: str | None) -> str | None:
        if v is not None:
            parse_duration(v)
        return v


def _commerce_tools() -> tuple[str, ...]:
    """The bundled world's tools (its domain file's), in declared order."""
    return tuple(bundled_domain("commerce").spec.tools)


class WorldSpec(_Strict):
    """The world a scenario runs in."""

    now: AwareTime = Field(description="The clock's start (ISO-8601 with offset)")
    users: dict[str, UserSpec] = Field(default_factory=dict)
    orders: dict[str, OrderSpec] = Field(default_factory=dict)
    kb: dict[str, PolicySpec] = Field(default_factory=dict, description="Policies by topic")
    tools: dict[str, ToolSpec] = Field(default_factory=dict, description="Per tool: max_age, "
                                       "failures; a tool beyond the core four (track_order, "
                                       "get_user_profile, search_kb, get_logistics_trace) is "
                                       "offered when listed here, e.g. list_orders: {}")
    trace_events: int = Field(default=400, ge=1, description="Events in a logistics trace")
    data: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict, description="With a declared domain (the scenario's domain): "
        "instances per entity type, by id, laid over the domain file's own (its data section's "
        "form); tools then names the domain's tools")

    @model_validator(mode="after")
    def _ids(self, info: ValidationInfo) -> WorldSpec:
        for uid in self.users:
            if not ID_PATTERNS[Slot.USER].fullmatch(uid):
                raise ValueError(f"user id {uid!r} must look like U-1")
        for oid, o in self.orders.items():
            if not ID_PATTERNS[Slot.ORDER].fullmatch(oid):
                raise ValueError(f"order id {oid!r} must look like O-1001")
            if o.user not in self.users:
                raise ValueError(f"order {oid} belongs to unknown user {o.user!r}")
        if self.data or (info.context or {}).get("domain"):
            return self  # the domain's tools and ids: checked with the domain (scenario.loader)
        names = _commerce_tools()
        for name in self.tools:
            if name not in names:
                raise ValueError(f"unknown tool {name!r}; expected one of {', '.join(names)}")
        return self

    def offered(self) -> tuple[str, ...]:
        """The tools the bundled world offers (``World.offered`` for any domain's)."""
        return World(self).offered()

    def with_tools(self, overrides: Mapping[str, Mapping[str, Any]], *,
                   domain: bool = False) -> WorldSpec:
        """A copy whose per-tool specs are replaced by ``overrides`` (a variant's ``tools.<name>``
        settings), validated like the file's own (``domain``: a declared domain's world)."""
        if not overrides:
            return self
        data = self.model_dump(by_alias=True)
        data["tools"] = {**data["tools"], **{k: dict(v) for k, v in overrides.items()}}
        return WorldSpec.model_validate(data, context={"domain": domain})

    def max_age(self, tool: str) -> timedelta | None:
        """A bundled world's tool's (``World.max_age`` for any domain's)."""
        return World(self).max_age(tool)


class SimClock:
    """The simulated clock: starts at the world's ``now`` and moves only when told."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        if delta < timedelta(0):
            raise ValueError("the clock does not go back")
        self._now += delta


class World:
    """The running world: its domain's instances (a declared domain's data with the
    scenario's over it; the bundled world's users and orders in their short form), a clock,
    the knowledge base, per tool a max_age and failures. Answers what is true now."""

    def __init__(self, spec: WorldSpec, clock: SimClock | None = None,
                 domain: Domain | None = None) -> None:
        self.spec = spec
        self.clock = clock or SimClock(spec.now)
        self.domain = domain or bundled_domain("commerce")
        merged: dict[str, dict[str, Mapping[str, Any]]] = {
            t: dict(v) for t, v in self.domain.spec.data.items()}
        for etype, instances in [*_short_form(spec).items(), *spec.data.items()]:
            merged.setdefault(etype, {}).update(instances)
        self.data = merged
        self.kb = {**{k: (p.title, p.text, tuple(p.keywords))
                      for k, p in self.domain.spec.kb.items()},
                   **{k: (p.title, p.text, tuple(p.keywords)) for k, p in spec.kb.items()}}
        # The bundled world's trace_events sets every generated history's length.
        self.history_count = spec.trace_events if "trace_events" in spec.model_fields_set \
            else None

    # --- what the bench reads -------------------------------------------------------------

    def offered(self) -> tuple[str, ...]:
        """The domain's tools in declared order: the default ones and those the scenario's
        world lists under ``tools``."""
        return tuple(n for n, t in self.domain.spec.tools.items()
                     if t.default or n in self.spec.tools)

    def max_age(self, tool: str) -> timedelta | None:
        """A tool the scenario lists takes the max_age it states there (none: never stale);
        else the domain's."""
        spec = self.spec.tools.get(tool)
        decl = self.domain.spec.tools.get(tool)
        raw = spec.max_age if spec is not None else decl.max_age if decl is not None else None
        return parse_duration(raw) if raw is not None else None

    def ids(self) -> list[str]:
        """Every id of the world (what entity fidelity compares against)."""
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
                        vals = [rec[name]] if name in rec else []
                        vals += [ev[name] for ev in rec.get("timeline", ()) if name in ev]
                        out += [v for v in vals if isinstance(v, str) and v and v not in out]
        return tuple(out)

    def state(self, etype: str, iid: str, at: datetime | None = None) -> dict[str, Any] | None:
        """An instance's field values at ``at`` (default now): each field's initial value,
        its static value over it, each timeline event up to then laid over those; then a
        field unset by another's value, and an empty one taken from its owner's field. None
        for an unknown id."""
        rec = self.data.get(etype, {}).get(iid)
        if rec is None:
            return None
        when = at or self.clock.now()
        fields = self.domain.types[etype].fields
        out = {k: f.initial for k, f in fields.items() if f.initial is not None}
        out.update({k: v for k, v in rec.items() if k not in ("owner", "timeline")})
        for ev in rec.get("timeline", ()):
            if _aware(ev["at"]) <= when:
                out.update({k: v for k, v in ev.items() if k != "at"})
        for k, f in fields.items():
            if any(out.get(other) in values for other, values in f.unset_when.items()):
                out[k] = None
            if f.default_from and not out.get(k):
                owner = self.owner(etype, iid)
                theirs = self.state(USER, owner, when) if owner else None
                out[k] = (theirs or {}).get(f.default_from.removeprefix("owner."))
        return out

    def started(self, etype: str, iid: str) -> datetime:
        """When an instance's history starts: its first timeline event (else the world's
        start)."""
        rec = self.data.get(etype, {}).get(iid) or {}
        timeline = rec.get("timeline") or ()
        return _aware(timeline[0]["at"]) if timeline else self.spec.now

    def failure(self, tool: str, key: str, args_json: str, seed: int) -> str | None:
        """The error kind a declared failure gives this call now, or None: the first failure of
        the tool whose ids, time window and seeded rate all admit it."""
        spec = self.spec.tools.get(tool)
        now = self.clock.now()
        for f in spec.failures if spec is not None else ():
            if f.ids and key not in f.ids:
                continue
            if (f.since is not None and now < f.since) or (f.until is not None and now >= f.until):
                continue
            if f.rate < 1.0 and draw(seed, "tool_failure", tool, args_json,
                                     now.isoformat()) >= f.rate:
                continue
            return f.kind
        return None


def _aware(v: Any) -> datetime:
    return v if isinstance(v, datetime) else datetime.fromisoformat(str(v))


def _short_form(spec: WorldSpec) -> dict[str, dict[str, dict[str, Any]]]:
    """The bundled world's users and orders (``world.users``, ``world.orders``) as the data of
    its domain's types user and order."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if spec.users:
        out[USER] = {u: {"name": v.name, "phone": v.phone, "address": v.address}
                     for u, v in spec.users.items()}
    if spec.orders:
        out["order"] = {o: {"owner": v.user, "items": list(v.items), "ship_to": v.ship_to,
                            "timeline": [{"at": ev.at, "status": ev.status,
                                          "location": ev.location,
                                          **({"eta": ev.eta} if ev.eta is not None else {})}
                                         for ev in v.timeline]}
                        for o, v in spec.orders.items()}
    return out
