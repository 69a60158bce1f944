from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pydantic import ValidationError

from harnesslab.sim.tools import TOOLS, ToolBox
from harnesslab.sim.world import World, WorldSpec, format_duration, parse_duration

SPEC = {
    "now": "2026-11-28T10:00:00+08:00",
    "users": {"U-1": {"name": "张三", "phone": "138", "address": "上海"},
              "U-2": {"name": "李四", "phone": "139", "address": "北京"}},
    "orders": {"O-1001": {"user": "U-1", "timeline": [
        {"at": "2026-11-26T09:00:00+08:00", "status": "shipped"},
        {"at": "2026-11-27T20:00:00+08:00", "status": "in_transit", "eta": "2026-11-29"},
        {"at": "2026-11-28T23:00:00+08:00", "status": "delayed", "eta": "2026-11-30"}]},
        "O-2002": {"user": "U-2", "timeline": [
            {"at": "2026-11-27T08:00:00+08:00", "status": "delivered", "eta": "2026-11-27"}]}},
    "kb": {"return_policy": {"title": "退货政策", "text": "七天无理由退货。", "keywords": ["退货"]}},
    "trace_events": 50,
}


def world() -> World:
    return World(WorldSpec.model_validate(SPEC))


def run(w: World, name: str, args: dict[str, object], user: str = "U-1") -> dict[str, object]:
    out = ToolBox(w).run(name, json.dumps(args), user)
    data: dict[str, object] = json.loads(out.text)
    data["_error"] = out.is_error
    return data


def test_truth_changes_over_time() -> None:
    w = world()
    r = run(w, "track_order", {"order_id": "O-1001"})
    assert (r["status"], r["eta"], r["as_of"]) == ("in_transit", "2026-11-29",
                                                   "2026-11-28T10:00:00+08:00")
    w.clock.advance(parse_duration("1d"))
    r = run(w, "track_order", {"order_id": "O-1001"})
    assert (r["status"], r["eta"], r["as_of"]) == ("delayed", "2026-11-30",
                                                   "2026-11-29T10:00:00+08:00")


def test_every_result_carries_as_of_first() -> None:
    w = world()
    for name, args in [("track_order", {"order_id": "O-1001"}), ("get_user_profile", {}),
                       ("search_kb", {"topic": "return_policy"}),
                       ("get_logistics_trace", {"order_id": "O-1001"}),
                       ("track_order", {"order_id": "O-9999"})]:
        text = ToolBox(w).run(name, json.dumps(args), "U-1").text
        assert list(json.loads(text))[:2] == ["tool", "as_of"], name


def test_acting_user_is_the_authority() -> None:
    w = world()
    assert run(w, "get_user_profile", {"user_id": "U-1"})["address"] == "上海"
    denied = run(w, "get_user_profile", {"user_id": "U-2"})
    assert denied["_error"] and denied["error"] == "user_id U-2 is not the acting user"
    assert run(w, "get_user_profile", {"user_id": "U-2"}, user="U-2")["address"] == "北京"
    other = run(w, "track_order", {"order_id": "O-2002"})
    assert other["error"] == "order O-2002 does not belong to the acting user"


def test_tool_errors_are_results() -> None:
    w = world()
    tb = ToolBox(w)
    assert tb.run("nope", "{}", "U-1").is_error
    assert json.loads(tb.run("track_order", "{oops", "U-1").text)["error"].startswith(
        "arguments are not valid JSON")
    assert json.loads(tb.run("track_order", "[1]", "U-1").text)["error"] == \
        "arguments must be a JSON object"
    assert run(w, "search_kb", {"query": "怎么退货"})["title"] == "退货政策"
    assert run(w, "search_kb", {"query": "发票"})["_error"]


def test_trace_is_large_and_sized_by_the_world() -> None:
    r = run(world(), "get_logistics_trace", {"order_id": "O-1001"})
    assert len(r["events"]) == 50  # type: ignore[arg-type]


def test_schemas_expose_user_id() -> None:
    for name in ("track_order", "get_user_profile", "get_logistics_trace"):
        params = TOOLS[name].schema.to_dict()["function"]["parameters"]
        assert "user_id" in params["properties"]


def test_max_age_defaults_and_overrides() -> None:
    spec = WorldSpec.model_validate({**SPEC, "tools": {"track_order": {"max_age": "2h"}}})
    assert spec.max_age("track_order") == timedelta(hours=2)
    assert spec.max_age("get_logistics_trace") == timedelta(hours=6)
    assert spec.max_age("search_kb") is None


@pytest.mark.parametrize(("text", "td"), [("45s", timedelta(seconds=45)),
                                         ("30m", timedelta(minutes=30)),
                                         ("6h", timedelta(hours=6)), ("1d", timedelta(days=1))])
def test_durations_round_trip(text: str, td: timedelta) -> None:
    assert parse_duration(text) == td and format_duration(td) == text


@pytest.mark.parametrize(("patch", "message"), [
    ({"now": "2026-11-28T10:00:00"}, "needs a UTC offset"),
    ({"users": {"X-1": {"name": "a", "phone": "1", "address": "b"}}}, "must look like U-1"),
    ({"orders": {"O-1": {"user": "U-1", "timeline": [
        {"at": "2026-11-26T09:00:00+08:00", "status": "shipped"}]}}}, "must look like O-1001"),
    ({"orders": {"O-1234": {"user": "U-9", "timeline": [
        {"at": "2026-11-26T09:00:00+08:00", "status": "shipped"}]}}}, "unknown user 'U-9'"),
    ({"tools": {"fly": {"max_age": "1h"}}}, "unknown tool 'fly'"),
    ({"tools": {"track_order": {"max_age": "soon"}}}, "expected a duration"),
])
def test_bad_worlds_are_rejected(patch: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WorldSpec.model_validate({**SPEC, **patch})


def test_clock_never_goes_back() -> None:
    with pytest.raises(ValueError, match="does not go back"):
        world().clock.advance(timedelta(seconds=-1))
