"""``states_now``: the answering request states the current time in the user's zone, in any
form the fake model reads (docs/understanding.md), not only the reference harness's tags; the
controls are a stale time, another zone, a time only a tool result states, and none at all."""

from __future__ import annotations

from datetime import datetime

import pytest

from harnesslab.judge.checks import stated_now
from harnesslab.messages import Message, Request, ToolCallBlock, ToolResultBlock

NOW = datetime.fromisoformat("2026-11-28T10:50:00-03:30")


def request(system: str, user: str = "And when will it arrive?", *extra: Message) -> Request:
    return Request(system=system, summary="", messages=(*extra, Message.text("user", user)),
                   tools=(), output_budget=512)


@pytest.mark.parametrize("system", [
    # the reference harness and AgentScope
    "<current-time>2026-11-28T10:50:00-03:30</current-time>\n<timezone>UTC-03:30</timezone>",
    # haystack's documented system prompt, agno's additional_context, llama-index's prefix
    "You are a helpful agent.\nCurrent date and time: 2026-11-28T10:50:00-03:30",
    "The current time is 2026-11-28 10:50:12.",
    "Today is Saturday, November 28, 2026 10:50 AM.\nTimezone: America/St_Johns",
    "现在是2026年11月28日 10:50",
    "Current time: Sat, 28 Nov 2026 10:50:00 -0330",
    # "is" and a colon both (BeeAI's ToolCallingAgent prompt), for the time and the zone
    "The current date and time is: 2026-11-28T14:20:00Z\nTime zone is: UTC-03:30",
])
def test_the_time_stated_in_any_read_form_and_zone_passes(system: str) -> None:
    ok, detail = stated_now(request(system), NOW, zone=True)
    assert ok, detail


@pytest.mark.parametrize(("system", "why"), [
    ("Current time: 2026-11-28T10:10:00-03:30", "40 min behind now"),
    ("<current-time>2026-11-28T10:50:00-03:30</current-time>\n<timezone>UTC-03:00</timezone>",
     "names the zone UTC-03:00, not the user's UTC-03:30"),
    ("<current-time>2026-11-28T10:50:00-03:30</current-time>\n<timezone>UTC+03:30</timezone>",
     "names the zone UTC+03:30"),
    ("You are a helpful agent.", "states no current time"),
])
def test_a_stale_time_another_zone_or_none_fails(system: str, why: str) -> None:
    ok, detail = stated_now(request(system), NOW)
    assert not ok and why in detail, detail


def test_the_same_moment_in_another_zone_is_now_but_not_in_the_users_zone() -> None:
    utc = "Current UTC time: 2026-11-28T14:20:00Z"
    assert stated_now(request(utc), NOW)[0]  # the moment is right
    ok, detail = stated_now(request(utc), NOW, zone=True)
    assert not ok and "not in the user's zone UTC-03:30" in detail, detail
    # Named beside it, the user's zone makes it the user's time (the control).
    ok, detail = stated_now(request(utc + "\nTimezone: America/St_Johns"), NOW, zone=True)
    assert ok, detail
    # And a time without a zone is the scenario's, so it is in the user's zone.
    assert stated_now(request("Current time: 2026-11-28 10:50"), NOW, zone=True)[0]


def test_a_time_only_a_tool_result_states_is_not_now() -> None:
    call = ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}')
    result = ToolResultBlock("c1", "track_order",
                             '{"status": "in_transit", "current_time": "2026-11-28T10:50:00-03:30"}')
    tool_round = (Message("assistant", (call,)), Message("tool", (result,)))
    ok, detail = stated_now(request("You are a helpful agent.", "Where is it?", *tool_round), NOW)
    assert not ok, detail
    # The same statement in the user's message is now (the control).
    ok, detail = stated_now(request("", "[2026-11-28 10:50] Where is it?"), NOW)
    assert ok, detail


def test_the_latest_statement_counts() -> None:
    old = Message.text("user", "Current time: 2026-11-28T10:00:00-03:30\nWhere is my order O-1001?")
    ok, _ = stated_now(request("Current time: 2026-11-28T10:50:00-03:30", "Hi", old), NOW)
    assert not ok  # the system prompt comes first; the user message's older time is the latest
    ok, detail = stated_now(request("Current time: 2026-11-28T10:00:00-03:30", "Hi",
                                    Message.text("user", "Current time: 2026-11-28T10:50:00-03:30")),
                            NOW)
    assert ok, detail
    assert stated_now(None, NOW) == (False, "no request in this turn")


@pytest.mark.parametrize("zone", [
    "<timezone>UTC-03:238</timezone>",   # minutes out of range (a `% 60` written `^ 60`)
    "<timezone>UTC+25:00</timezone>",    # hours out of range
    "<timezone>UTC-03:60</timezone>",    # not UTC-04:00 by carrying the minutes over
    "Time zone: UTC-03:238",             # a labelled zone, read whole, not as UTC-03
])
def test_an_offset_no_zone_has_names_another_zone(zone: str) -> None:
    time = "<current-time>2026-11-28T10:50:00-03:30</current-time>\n"
    ok, detail = stated_now(request(time + zone), NOW, zone=True)
    written = zone.split(">")[1].split("<")[0] if zone.startswith("<") else zone.split(": ")[1]
    assert not ok and f"names the zone {written}, no valid UTC offset" in detail, detail
    # The control: the same statement with the user's own offset passes.
    ok, detail = stated_now(request(time + "<timezone>UTC-03:30</timezone>"), NOW, zone=True)
    assert ok, detail


@pytest.mark.parametrize("zone", ["<timezone>Newfoundland-ish</timezone>",
                                  "<timezone>Mars/Olympus_Mons</timezone>", "Timezone: local"])
def test_an_unknown_word_in_place_of_a_zone_is_left_unread(zone: str) -> None:
    # A word that is no offset and no IANA zone may name a zone the bench cannot read: it is
    # not read as another zone (the time's own offset decides), as before.
    ok, detail = stated_now(request("<current-time>2026-11-28T10:50:00-03:30</current-time>\n"
                                    + zone), NOW, zone=True)
    assert ok, detail
    # The negative: the same word beside a time in another zone does not make it the user's.
    ok, detail = stated_now(request("Current time: 2026-11-28T14:20:00Z\n" + zone), NOW, zone=True)
    assert not ok and "not in the user's zone UTC-03:30" in detail, detail


def test_an_out_of_range_offset_in_a_time_is_no_time_not_a_crash() -> None:
    # timezone() refuses 25 hours; the statement is no time rather than a traceback.
    ok, detail = stated_now(request("<current-time>2026-11-28T10:50:00+25:00</current-time>"), NOW)
    assert not ok and "states no current time" in detail, detail


def test_a_time_that_reads_two_ways_fails_saying_so_and_hides_an_earlier_one() -> None:
    # The latest statement is the one a model goes by: read two ways, "now" is not known, and
    # an earlier statement (right, here) no longer says it; the reason names the statement.
    ambiguous = Message.text("user", "Current time: 11/12/2026 10:50\nWhere is my order O-1001?")
    ok, detail = stated_now(request("Current time: 2026-11-28T10:50:00-03:30", "Hi", ambiguous),
                            NOW)
    assert not ok and detail == ("states the time as '11/12/2026 10:50', which reads two ways: "
                                 "11/12/2026 is December 11 or November 12, 2026, as the "
                                 "writer's locale has it"), detail
    # Controls: the same date in en-US's 12-hour form reads one way (November 12: behind
    # now), and a later right statement is now again.
    ok, detail = stated_now(request("", "Current time: 11/12/2026, 10:50:00 AM"), NOW)
    assert not ok and "states 2026-11-12T10:50:00-03:30" in detail, detail
    ok, detail = stated_now(request("", "Current time: 2026-11-28 10:50", ambiguous), NOW)
    assert ok, detail
