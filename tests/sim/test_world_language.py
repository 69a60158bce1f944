"""The world a scenario can now declare: statuses that end a delivery, orders with items and a
shipping address, tools offered beyond the core four, error codes, and failing tools (by id, by
time window, by a seeded rate that never depends on call order)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World, WorldSpec, parse_duration

SPEC: dict[str, Any] = {
    "now": "2026-11-28T10:00:00+08:00",
    "users": {"U-1": {"name": "张三", "phone": "138", "address": "上海"},
              "U-2": {"name": "李四", "phone": "139", "address": "北京"}},
    "orders": {
        "O-2001": {"user": "U-1", "items": ["skateboard", "knee pads"], "ship_to": "杭州西湖区",
                   "timeline": [{"at": "2026-11-26T09:00:00+08:00", "status": "in_transit",
                                 "eta": "2026-11-29"},
                                {"at": "2026-11-28T12:00:00+08:00", "status": "cancelled"}]},
        "O-2002": {"user": "U-1", "items": ["headphones"], "timeline": [
            {"at": "2026-11-27T09:00:00+08:00", "status": "shipped", "eta": "2026-12-01"}]},
        "O-3003": {"user": "U-2", "items": ["lamp"], "timeline": [
            {"at": "2026-11-27T09:00:00+08:00", "status": "lost"}]},
    },
    "tools": {"list_orders": {}, "get_order": {}},
}


def world(**tools: Any) -> World:
    spec = json.loads(json.dumps(SPEC))
    spec["tools"].update(tools)
    return World(WorldSpec.model_validate(spec))


def run(box: ToolBox, name: str, args: dict[str, Any], user: str = "U-1") -> dict[str, Any]:
    out = box.run(name, json.dumps(args), user)
    data: dict[str, Any] = json.loads(out.text)
    assert out.is_error == ("error" in data)
    return data


def test_an_order_that_will_not_arrive_has_no_eta() -> None:
    w = world()
    box = ToolBox(w)
    assert run(box, "track_order", {"order_id": "O-2001"})["eta"] == "2026-11-29"
    w.clock.advance(parse_duration("3h"))  # cancelled at 12:00
    r = run(box, "track_order", {"order_id": "O-2001"})
    assert (r["status"], r["eta"]) == ("cancelled", None)
    assert run(box, "track_order", {"order_id": "O-3003"}, "U-2")["eta"] is None


def test_unknown_status_is_rejected() -> None:
    spec = json.loads(json.dumps(SPEC))
    spec["orders"]["O-2002"]["timeline"][0]["status"] = "teleported"
    with pytest.raises(ValidationError, match="cancelled"):
        WorldSpec.model_validate(spec)


def test_list_orders_and_get_order_show_items_and_shipping_address() -> None:
    box = ToolBox(world())
    listing = run(box, "list_orders", {})
    assert listing["orders"] == [
        {"order_id": "O-2001", "items": ["skateboard", "knee pads"], "status": "in_transit"},
        {"order_id": "O-2002", "items": ["headphones"], "status": "shipped"}]
    detail = run(box, "get_order", {"order_id": "O-2002"})
    # no ship_to declared: the owner's address
    assert (detail["items"], detail["ship_to"]) == (["headphones"], "上海")
    assert run(box, "get_order", {"order_id": "O-2001"})["ship_to"] == "杭州西湖区"


def test_tools_beyond_the_core_four_are_offered_only_when_listed() -> None:
    assert world().spec.offered() == ("track_order", "get_user_profile", "search_kb",
                                      "get_logistics_trace", "list_orders", "get_order")
    bare = WorldSpec.model_validate({k: v for k, v in SPEC.items() if k != "tools"})
    box = ToolBox(World(bare))
    assert [s.name for s in box.schemas()] == ["track_order", "get_user_profile", "search_kb",
                                               "get_logistics_trace"]
    assert run(box, "list_orders", {})["code"] == "bad_request"


@pytest.mark.parametrize(("name", "args", "user", "code"), [
    ("track_order", {"order_id": "O-9999"}, "U-1", "not_found"),
    ("track_order", {"order_id": "O-3003"}, "U-1", "forbidden"),
    ("track_order", {"order_id": "O-2001", "user_id": "U-2"}, "U-1", "forbidden"),
    ("track_order", {}, "U-1", "bad_request"),
    ("get_user_profile", {}, "U-9", "not_found"),
    ("search_kb", {"topic": "nothing"}, "U-1", "not_found"),
    ("fly", {}, "U-1", "bad_request"),
])
def test_every_error_result_states_a_code(name: str, args: dict[str, Any], user: str,
                                          code: str) -> None:
    assert run(ToolBox(world()), name, args, user)["code"] == code


def test_a_failure_declared_for_some_ids_and_a_time_window() -> None:
    w = world(track_order={"failures": [{"kind": "unavailable", "ids": ["O-2002"],
                                         "from": "2026-11-28T09:00:00+08:00",
                                         "until": "2026-11-28T11:00:00+08:00"}]})
    box = ToolBox(w)
    down = run(box, "track_order", {"order_id": "O-2002"})
    assert (down["code"], down["error"]) == ("unavailable", "track_order is temporarily "
                                             "unavailable; try again later")
    assert "error" not in run(box, "track_order", {"order_id": "O-2001"})  # another id
    w.clock.advance(parse_duration("1h"))  # 11:00: until is exclusive
    assert run(box, "track_order", {"order_id": "O-2002"})["status"] == "shipped"


@pytest.mark.parametrize("kind", ["not_found", "forbidden"])
def test_failure_kinds_give_their_code(kind: str) -> None:
    box = ToolBox(world(get_order={"failures": [{"kind": kind}]}))
    assert run(box, "get_order", {"order_id": "O-2002"})["code"] == kind


def _outcomes(seed: int, calls: list[str]) -> dict[str, bool]:
    box = ToolBox(world(track_order={"failures": [{"kind": "unavailable", "rate": 0.5}]}),
                  seed=seed)
    return {o: run(box, "track_order", {"order_id": o}).get("code") == "unavailable"
            for o in calls}


def test_a_seeded_failure_rate_depends_on_seed_args_and_time_never_on_call_order() -> None:
    orders = ["O-2001", "O-2002"]
    by_seed = [_outcomes(seed, orders) for seed in range(12)]
    assert by_seed[3] == _outcomes(3, list(reversed(orders)))  # order of calls does not matter
    assert by_seed[3] == _outcomes(3, orders + orders)          # nor how often it is called
    assert len({tuple(o.values()) for o in by_seed}) > 1        # the seed does
    failed = sum(v for o in by_seed for v in o.values())
    assert 0 < failed < 24                                      # a rate strictly inside (0, 1)
    w = world(track_order={"failures": [{"kind": "unavailable", "rate": 0.5}]})
    box = ToolBox(w, seed=0)
    hours = []
    for _ in range(12):
        hours.append(run(box, "track_order", {"order_id": "O-2002"}).get("code"))
        w.clock.advance(parse_duration("1h"))
    assert set(hours) == {None, "unavailable"}                  # and so does the time


@pytest.mark.parametrize(("failure", "message"), [
    ({"kind": "broken"}, "not_found"),
    ({"kind": "unavailable", "rate": 1.5}, "less than or equal to 1"),
    ({"kind": "unavailable", "from": "2026-11-28T11:00:00+08:00",
      "until": "2026-11-28T10:00:00+08:00"}, "until must be later than from"),
    ({"kind": "unavailable", "since": "2026-11-28T11:00:00+08:00"}, "Extra inputs"),
])
def test_bad_failure_declarations_are_rejected(failure: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        world(track_order={"failures": [failure]})


@pytest.mark.parametrize("name", ["", "a+b", "x,y", "k:v", "[x]"])
def test_item_names_that_a_tag_cannot_carry_are_rejected(name: str) -> None:
    spec = json.loads(json.dumps(SPEC))
    spec["orders"]["O-2002"]["items"] = [name]
    with pytest.raises(ValidationError, match="item name"):
        WorldSpec.model_validate(spec)


def test_with_tools_replaces_a_tools_spec_and_validates_it() -> None:
    spec = world().spec
    longer = spec.with_tools({"track_order": {"failures": [{"kind": "unavailable"}]}})
    assert longer.tools["track_order"].failures[0].kind == "unavailable"
    assert "list_orders" in longer.tools and spec.tools.get("track_order") is None
    with pytest.raises(ValidationError):
        spec.with_tools({"track_order": {"failures": [{"kind": "late"}]}})
