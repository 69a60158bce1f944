"""The simulated world: an injectable clock, users with private data, orders (items, shipping
address) whose logistics truth changes over time, a knowledge base of policies, and per tool a
``max_age`` and the failures it is declared to have.

``WorldSpec`` is what a scenario file declares (pydantic, so it is also part of the scenario
JSON Schema); ``World`` is the running state, read by the tools and by the bench's checks,
never by the fake model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from itertools import pairwise
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harnesslab.sim.draws import draw
from harnesslab.sim.intents import ID_PATTERNS, NOT_ARRIVING, Slot

_DURATION_RE = re.compile(r"^(\d+)\s*(s|m|h|d)$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(value: str | int | float | timedelta) -> timedelta:
    """``"6h"``, ``"30m"``, ``"1d"``, ``"45s"`` or a number of seconds."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=value)
    m = _DURATION_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"expected a duration such as 30m, 6h or 1d, got {value!r}")
    return timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


def format_duration(td: timedelta) -> str:
    s = int(td.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s % size == 0 and s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def _require_offset(v: datetime) -> datetime:
    if v.tzinfo is None:
        raise ValueError("needs a UTC offset, e.g. 2026-11-28T10:00:00+08:00")
    return v


# A time in a world file: ISO-8601 with an offset, since the world's truth and the harness's
# hints are compared across timezones.
AwareTime = Annotated[datetime, AfterValidator(_require_offset)]


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


DEFAULT_MAX_AGE: dict[str, str | None] = {
    "track_order": "6h", "get_user_profile": "30d", "search_kb": None,
    "get_logistics_trace": "6h", "list_orders": "6h", "get_order": "6h",
}
# The business tools in the registry's order (``harnesslab.sim.tools.TOOLS``, which checks that
# it defines exactly these): named here so that the world's spec needs nothing of the tools.
TOOL_NAMES = ("track_order", "get_user_profile", "search_kb", "get_logistics_trace", "list_orders",
              "get_order")
# Every world offers these; any other tool is offered when the world lists it under ``tools``.
CORE_TOOLS = ("track_order", "get_user_profile", "search_kb", "get_logistics_trace")


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
        for name in self.tools:
            if name not in TOOL_NAMES:
                raise ValueError(f"unknown tool {name!r}; expected one of {', '.join(TOOL_NAMES)}")
        return self

    def offered(self) -> tuple[str, ...]:
        """The tools this world offers, in the registry's order."""
        return tuple(t for t in TOOL_NAMES if t in CORE_TOOLS or t in self.tools)

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
        spec = self.tools.get(tool)
        raw = spec.max_age if spec is not None else DEFAULT_MAX_AGE.get(tool)
        return parse_duration(raw) if raw is not None else None


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
    """The running world: the spec plus a clock; answers what is true now."""

    def __init__(self, spec: WorldSpec, clock: SimClock | None = None) -> None:
        self.spec = spec
        self.clock = clock or SimClock(spec.now)

    def order_state(self, order_id: str, at: datetime | None = None) -> TimelineEvent | None:
        """The latest timeline event not after ``at`` (default now); None before the first."""
        when = at or self.clock.now()
        order = self.spec.orders.get(order_id)
        if order is None:
            return None
        state = None
        for ev in order.timeline:
            if ev.at <= when:
                state = ev
        return state

    def order_eta(self, order_id: str, at: datetime | None = None) -> date | None:
        """The latest ETA stated so far; None once the order will not arrive (cancelled,
        returned, lost), whatever an earlier event expected."""
        when = at or self.clock.now()
        order = self.spec.orders.get(order_id)
        state = self.order_state(order_id, when)
        if state is not None and state.status in NOT_ARRIVING:
            return None
        eta = None
        for ev in order.timeline if order else []:
            if ev.at <= when and ev.eta is not None:
                eta = ev.eta
        return eta

    def ship_to(self, order_id: str) -> str:
        order = self.spec.orders[order_id]
        return order.ship_to or self.spec.users[order.user].address

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

    def private_values(self, user_id: str) -> tuple[str, ...]:
        """The strings whose appearance outside the user's own session is a leak."""
        u = self.spec.users.get(user_id)
        return (u.phone, u.address) if u else ()

    def max_age(self, tool: str) -> timedelta | None:
        return self.spec.max_age(tool)

    def offered(self) -> tuple[str, ...]:
        """The tools this world offers, in the registry's order."""
        return self.spec.offered()

    def ids(self) -> list[str]:
        """Every id of the world (what entity fidelity compares against)."""
        return sorted([*self.spec.orders, *self.spec.users])

    def users(self) -> list[str]:
        return list(self.spec.users)
