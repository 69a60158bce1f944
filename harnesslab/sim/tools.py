"""The world's business tools. Each result is JSON text carrying ``as_of``; a failure is an
error result the model sees, never an exception.

Every tool runs on behalf of ``acting_user``, which the harness supplies (the tool context):
a ``user_id`` argument that differs from it is refused, and orders are visible only to their
owner. Binding ``acting_user`` to the verified session is the harness's job; a harness that
sets it from what the model passed (a claimed identity) lets another user's data through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from harnesslab.messages import ToolOutcome, ToolSchema
from harnesslab.sim.domain_world import DomainToolBox, DomainWorld
from harnesslab.sim.intents import ToolError
from harnesslab.sim.world import TOOL_NAMES, World


def _schema(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSchema:
    return ToolSchema.from_dict({"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}})


_USER_ID = {"type": "string", "description": "The user's id, e.g. U-1"}
_ORDER_ID = {"type": "string", "description": "The order id, e.g. O-1001"}


def _result(tool: str, world: World, **fields: Any) -> ToolOutcome:
    # as_of comes right after the tool name so that a truncated result still states its time.
    body = {"tool": tool, "as_of": world.clock.now().isoformat(timespec="seconds"), **fields}
    return ToolOutcome(json.dumps(body, ensure_ascii=False))


def _error(tool: str, world: World, message: str, code: ToolError) -> ToolOutcome:
    # The code says why in a word, as a real API's error type does; the message says it in full.
    body = {"tool": tool, "as_of": world.clock.now().isoformat(timespec="seconds"),
            "error": message, "code": code.value}
    return ToolOutcome(json.dumps(body, ensure_ascii=False), is_error=True)


def _check_user(tool: str, world: World, args: Mapping[str, Any],
                acting_user: str) -> ToolOutcome | None:
    claimed = args.get("user_id")
    if claimed not in (None, "", acting_user):
        return _error(tool, world, f"user_id {claimed} is not the acting user", ToolError.FORBIDDEN)
    if acting_user not in world.spec.users:
        return _error(tool, world, f"unknown user {acting_user}", ToolError.NOT_FOUND)
    return None


def _order(tool: str, world: World, args: Mapping[str, Any],
           acting_user: str) -> tuple[str, ToolOutcome | None]:
    oid = str(args.get("order_id") or "")
    bad = _check_user(tool, world, args, acting_user)
    if bad is not None:
        return oid, bad
    if not oid:
        return oid, _error(tool, world, "missing order_id", ToolError.BAD_REQUEST)
    order = world.spec.orders.get(oid)
    if order is None:
        return oid, _error(tool, world, f"no order {oid}", ToolError.NOT_FOUND)
    if order.user != acting_user:
        return oid, _error(tool, world, f"order {oid} does not belong to the acting user",
                           ToolError.FORBIDDEN)
    return oid, None


def track_order(world: World, args: Mapping[str, Any], acting_user: str) -> ToolOutcome:
    oid, bad = _order("track_order", world, args, acting_user)
    if bad is not None:
        return bad
    ev = world.order_state(oid)
    eta = world.order_eta(oid)
    return _result("track_order", world, order_id=oid,
                   status=ev.status if ev else "created",
                   eta=eta.isoformat() if eta else None,
                   location=ev.location if ev else "")


def get_user_profile(world: World, args: Mapping[str, Any], acting_user: str) -> ToolOutcome:
    bad = _check_user("get_user_profile", world, args, acting_user)
    if bad is not None:
        return bad
    u = world.spec.users[acting_user]
    return _result("get_user_profile", world, user_id=acting_user, name=u.name, phone=u.phone,
                   address=u.address)


def search_kb(world: World, args: Mapping[str, Any], acting_user: str) -> ToolOutcome:
    topic = str(args.get("topic") or "")
    query = str(args.get("query") or "")
    hits = [(k, p) for k, p in world.spec.kb.items()
            if k == topic or (query and any(w in query for w in p.keywords))]
    if not hits:
        return _error("search_kb", world, f"no policy found for {topic or query!r}",
                      ToolError.NOT_FOUND)
    k, p = hits[0]
    return _result("search_kb", world, topic=k, title=p.title, text=p.text)


def get_logistics_trace(world: World, args: Mapping[str, Any], acting_user: str) -> ToolOutcome:
    oid, bad = _order("get_logistics_trace", world, args, acting_user)
    if bad is not None:
        return bad
    order = world.spec.orders[oid]
    now = world.clock.now()
    start = order.timeline[0].at
    n = world.spec.trace_events
    step = max((now - start) / n, timedelta(minutes=1))
    hubs = ["分拣中心", "转运中心", "干线运输", "网点", "sorting hub", "line haul"]
    events = [{"at": (start + step * i).isoformat(timespec="minutes"),
               "scan": f"{hubs[i % len(hubs)]} #{i:04d}",
               "note": "包裹已扫描，正在发往下一站 / parcel scanned, forwarded to next stop"}
              for i in range(n)]
    ev = world.order_state(oid)
    return _result("get_logistics_trace", world, order_id=oid,
                   status=ev.status if ev else "created", events=events)


def list_orders(world: World, args: Mapping[str, Any], acting_user: str) -> ToolOutcome:
    bad = _check_user("list_orders", world, args, acting_user)
    if bad is not None:
        return bad
    orders = []
    for oid, o in world.spec.orders.items():  # as the world declares them: "the first one"
        if o.user == acting_user:
            ev = world.order_state(oid)
            orders.append({"order_id": oid, "items": list(o.items),
                           "status": ev.status if ev else "created"})
    return _result("list_orders", world, user_id=acting_user, orders=orders)


def get_order(world: World, args: Mapping[str, Any], acting_user: str) -> ToolOutcome:
    oid, bad = _order("get_order", world, args, acting_user)
    if bad is not None:
        return bad
    ev = world.order_state(oid)
    return _result("get_order", world, order_id=oid, status=ev.status if ev else "created",
                   items=list(world.spec.orders[oid].items), ship_to=world.ship_to(oid))


ToolFn = Callable[[World, Mapping[str, Any], str], ToolOutcome]


@dataclass(frozen=True)
class ToolDef:
    schema: ToolSchema
    fn: ToolFn
    needs_user: bool = True


TOOLS: dict[str, ToolDef] = {
    "track_order": ToolDef(_schema(
        "track_order", "Look up an order's current logistics status and ETA.",
        {"order_id": _ORDER_ID, "user_id": _USER_ID}, ["order_id"]), track_order),
    "get_user_profile": ToolDef(_schema(
        "get_user_profile", "Get a user's profile: name, phone and delivery address.",
        {"user_id": _USER_ID}, []), get_user_profile),
    "search_kb": ToolDef(_schema(
        "search_kb", "Search the store's policies (returns, refunds, delivery).",
        {"topic": {"type": "string", "description": "Policy topic, e.g. return_policy"},
         "query": {"type": "string", "description": "Free-text question"}}, []),
        search_kb, needs_user=False),
    "get_logistics_trace": ToolDef(_schema(
        "get_logistics_trace", "Get every scan event of an order's parcel (long).",
        {"order_id": _ORDER_ID, "user_id": _USER_ID}, ["order_id"]), get_logistics_trace),
    "list_orders": ToolDef(_schema(
        "list_orders", "List the user's orders: ids, items and status.",
        {"user_id": _USER_ID}, []), list_orders),
    "get_order": ToolDef(_schema(
        "get_order", "Get an order's details: items, shipping address and status.",
        {"order_id": _ORDER_ID, "user_id": _USER_ID}, ["order_id"]), get_order),
}

if tuple(TOOLS) != TOOL_NAMES:  # one list of names for the world's spec and the registry
    raise RuntimeError(f"sim.world.TOOL_NAMES {TOOL_NAMES} differs from the tools {tuple(TOOLS)}")

_ORDER_TOOLS = ("track_order", "get_logistics_trace", "get_order")
_FAILURES = {
    ToolError.UNAVAILABLE: "{tool} is temporarily unavailable; try again later",
    ToolError.NOT_FOUND: "{tool} found nothing for {key}",
    ToolError.FORBIDDEN: "{key} is not accessible to the acting user",
}


class ToolBox:
    """Runs the world's tools by name (those the world offers, unless ``names`` says which).
    Bad arguments, unknown tools and the world's declared failures are error results; a
    declared failure's seeded rate draws on ``seed``."""

    def __init__(self, world: World, names: tuple[str, ...] | None = None, *,
                 seed: int = 0) -> None:
        self.world = world
        self.names = names or world.spec.offered()
        self.seed = seed

    def schemas(self) -> tuple[ToolSchema, ...]:
        return tuple(TOOLS[n].schema for n in self.names)

    def run(self, name: str, raw_args: str, acting_user: str) -> ToolOutcome:
        if name not in self.names:
            return _error(name, self.world, f"unknown tool {name}", ToolError.BAD_REQUEST)
        try:
            args = json.loads(raw_args) if raw_args.strip() else {}
        except json.JSONDecodeError as e:
            return _error(name, self.world, f"arguments are not valid JSON: {e.msg}",
                          ToolError.BAD_REQUEST)
        if not isinstance(args, dict):
            return _error(name, self.world, "arguments must be a JSON object",
                          ToolError.BAD_REQUEST)
        key = str(args.get("order_id") or "") if name in _ORDER_TOOLS else \
            str(args.get("topic") or "") if name == "search_kb" else acting_user
        canonical = json.dumps(args, ensure_ascii=False, sort_keys=True)
        kind = self.world.failure(name, key, canonical, self.seed)
        if kind is not None:
            code = ToolError(kind)
            return _error(name, self.world, _FAILURES[code].format(tool=name, key=key), code)
        return TOOLS[name].fn(self.world, args, acting_user)


# The tools a harness is handed: the bundled world's or a declared domain's (one interface:
# names, schemas(), run(name, raw_args, acting_user)).
Tools = ToolBox | DomainToolBox


def toolbox_for(world: World, seed: int = 0) -> Tools:
    """The tools of ``world``, run for the harness: a declared domain's or the bundled ones."""
    if isinstance(world, DomainWorld):
        return DomainToolBox(world, seed=seed)
    return ToolBox(world, seed=seed)
