"""Statements of "now" in the forms programs write them (harnesslab/sim/times.py): each is
read as the time it states, in the zone it states; one that could mean two times is not read,
and says why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harnesslab.sim.times import Unread, parse_stated, stated_times

PLUS8 = timezone(timedelta(hours=8))
CHICAGO_WINTER = timezone(timedelta(hours=-6))


def now_in(text: str, default: timezone = PLUS8) -> datetime | Unread | None:
    found = [t for _, t in stated_times(text, default)]
    assert len(found) <= 1, found
    return found[0] if found else None


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


@pytest.mark.parametrize(("text", "expected"), [
    # An offset after GMT/UTC is the offset, not GMT: JavaScript's Date.toString().
    ("Current time: Sun Nov 29 2026 10:00:00 GMT+0800 (China Standard Time)",
     "2026-11-29T10:00:00+08:00"),
    ("Current time: 2026-11-29 10:00 GMT+8", "2026-11-29T10:00:00+08:00"),
    ("Current time: November 29, 2026 10:00 GMT-03:30", "2026-11-29T10:00:00-03:30"),
    # A 12-hour clock after a year-first date: 3 PM, not 3 AM.
    ("Current time: 2026-11-29 03:00 PM", "2026-11-29T15:00:00+08:00"),
    ("Current time: 2026/11/29 3:05 p.m.", "2026-11-29T15:05:00+08:00"),
    ("Current time: 2026-11-29 12:30 AM", "2026-11-29T00:30:00+08:00"),
    ("Current time: 2026-11-29 12:30 PM", "2026-11-29T12:30:00+08:00"),
    # ctime and the date command.
    ("Current time: Sun Nov 29 10:00:00 2026", "2026-11-29T10:00:00+08:00"),
    ("Current time: Sun Nov  9 10:00:00 UTC 2026", "2026-11-09T10:00:00+00:00"),
    # Year last: the order read where one number cannot be a month.
    ("Current time: 11/29/2026, 10:00:00 AM", "2026-11-29T10:00:00+08:00"),
    ("Current time: 29/11/2026 10:00", "2026-11-29T10:00:00+08:00"),
    ("Current date: 04/04/2026", "2026-04-04T00:00:00+08:00"),
    ("Local time: 29.11.2026 10:00", "2026-11-29T10:00:00+08:00"),
    ("Today is 2026.11.29", "2026-11-29T00:00:00+08:00"),
    # The time first, its zone after the time or after the date.
    ("Now: 10:00 AM on Sunday, November 29, 2026", "2026-11-29T10:00:00+08:00"),
    ("Now: 3:00 PM PST, Nov 29, 2026", "2026-11-29T15:00:00-08:00"),
    ("Now: 3:00 PM on 29 November 2026 (UTC+1)", "2026-11-29T15:00:00+01:00"),
    ("Current time: 10:00 on 2026-11-29", "2026-11-29T10:00:00+08:00"),
    # Abbreviations that mean one offset; CST where the scenario's zone is one of its.
    ("Current time: 2026-11-28 18:00 PST", "2026-11-28T18:00:00-08:00"),
    ("Current time: 2026-11-29 10:00 JST", "2026-11-29T10:00:00+09:00"),
    ("Current time: 2026-11-29 10:00 CST", "2026-11-29T10:00:00+08:00"),
    # Python's %Z%z: the offset says it, whatever the name before it.
    ("Current time: 2026-11-29 10:00 PST-0800", "2026-11-29T10:00:00-08:00"),
    ("Current time: 2026-11-29 10:00 CST+0800", "2026-11-29T10:00:00+08:00"),
    ("Current time: 2026-11-29 10:00 +08+0800", "2026-11-29T10:00:00+08:00"),
    ("Current time: 2026-11-29 10:00 UTC+08:00+0800", "2026-11-29T10:00:00+08:00"),
    # A JSON field: Letta's packaged user message, and its kin.
    ('{"type": "user_message", "message": "hi", "time": "2026-11-29 10:00:00 AM UTC+0800"}',
     "2026-11-29T10:00:00+08:00"),
    ('{"current_time": "2026-11-29T02:00:00Z"}', "2026-11-29T02:00:00+00:00"),
    # Cline's environment details: a Markdown heading, the time on the next line, JavaScript's
    # en-US (or zh-CN) format, the zone's name and offset in brackets.
    ("<environment_details>\n# Current Time\n11/29/2026, 10:00:00 AM (America/Los_Angeles, "
     "UTC-8:00)\n</environment_details>", "2026-11-29T10:00:00-08:00"),
    ("# Current Time\n2026/11/29 下午3:00:00 (Asia/Shanghai, UTC+8:00)", "2026-11-29T15:00:00+08:00"),
    # Roo Code's: the format named after the label.
    ("# Current Time\nCurrent time in ISO 8601 UTC format: 2026-11-29T02:00:00.000Z\n"
     "User time zone: Asia/Shanghai, UTC+8:00", "2026-11-29T02:00:00+00:00"),
    # The zone in the label, for a time that states none; an IANA name after the time.
    ("Current time (UTC): 2026-11-29 02:00:00", "2026-11-29T02:00:00+00:00"),
    ("Current time (UTC-5): 2026-11-29 10:00", "2026-11-29T10:00:00-05:00"),
    ("It is now 2026/11/29 10:00 (Europe/Berlin).", "2026-11-29T10:00:00+01:00"),
    # OpenClaw's message envelope: the channel, the sender, the time elapsed, then the stamp.
    ("[WhatsApp +1555 +2m Sun 2026-11-29 10:00 PST] hello", "2026-11-29T10:00:00-08:00"),
    ("[Telegram Alice id:12 2026-11-29T02:26Z] 那我明天还要等吗？", "2026-11-29T02:26:00+00:00"),
    ("Sun 2026-11-29 10:00 hello", "2026-11-29T10:00:00+08:00"),
    # A weekday before a numeric date; day first with dashes (nl-NL).
    ("Today is Sunday, 2026-11-29.", "2026-11-29T00:00:00+08:00"),
    ("Current date: Sun 29.11.2026", "2026-11-29T00:00:00+08:00"),
    ("Current date: 29-11-2026", "2026-11-29T00:00:00+08:00"),
    # Lower case is a word, not a zone: the scenario's zone.
    ("Current time: 2026-11-29 10:00 est. delivery soon", "2026-11-29T10:00:00+08:00"),
    ("Current time: 2026-11-29 10:00 (UTC)", "2026-11-29T10:00:00+00:00"),
])
def test_a_form_is_read_as_the_time_it_states(text: str, expected: str) -> None:
    got = now_in(text)
    assert got is not None, text
    assert got == at(expected) and got.utcoffset() == at(expected).utcoffset()


def test_a_zone_named_in_the_label_does_not_override_the_times_own() -> None:
    assert now_in("Current time (UTC): 2026-11-29T10:00:00+08:00") == at("2026-11-29T10:00:00+08:00")
    # A bracket that names no zone leaves the scenario's.
    assert now_in("Current time (approx.): 2026-11-29 10:00") == at("2026-11-29T10:00:00+08:00")


def test_the_users_time_zone_label_of_roo_code_names_the_zone() -> None:
    from harnesslab.sim.times import stated_zones

    found = list(stated_zones("User time zone: Asia/Shanghai, UTC+8:00", at("2026-11-29T00:00:00+00:00")))
    assert found == [(0, timedelta(hours=8))]


def test_cst_is_the_scenarios_zone_when_it_can_be_and_unread_when_it_cannot() -> None:
    text = "Current time: 2026-11-29 10:00 CST"
    assert now_in(text, CHICAGO_WINTER) == at("2026-11-29T10:00:00-06:00")
    assert now_in(text, PLUS8) == at("2026-11-29T10:00:00+08:00")
    # China, US Central or Cuba: a scenario at UTC cannot tell which, and says so.
    assert now_in(text, UTC) == Unread("2026-11-29 10:00 CST",
                                       "CST names 3 zones (UTC-06:00, UTC+08:00, UTC-05:00)")
    assert isinstance(now_in("Current time: 2026-11-29 10:00 IST", UTC), Unread)
    # In the label: only a time without a zone of its own is in it.
    assert isinstance(now_in("Current time (CST): 2026-11-29 10:00", UTC), Unread)
    assert now_in("Current time (CST): 2026-11-29 10:00Z", UTC) == at("2026-11-29T10:00:00+00:00")
    assert now_in("Current time: 2026-11-29 10:00 IST", timezone(timedelta(hours=5, minutes=30))) \
        == at("2026-11-29T10:00:00+05:30")


@pytest.mark.parametrize(("text", "why"), [
    ("Current date: 03/04/2026", "03/04/2026 is April 3 or March 4, 2026"),
    ("Current date: 03-04-2026", "03-04-2026 is April 3 or March 4, 2026"),
    # A 12-hour clock in lower case is how day-first locales write one (en-AU, en-IN).
    ("Current time: 12/5/2026, 10:00:00 am", "12/5/2026 is May 12 or December 5, 2026"),
])
def test_a_statement_that_reads_two_ways_is_not_read_and_says_why(text: str, why: str) -> None:
    got = now_in(text)
    assert isinstance(got, Unread) and got.why.startswith(why), got
    assert parse_stated(got.raw, PLUS8) is None


@pytest.mark.parametrize("text", [
    "Current time: 2026-11-29 13:00 PM",  # no such 12-hour time
    "Current time: 2026-11-29 00:30 AM",
    "Now: 3:00 PM UTC on Sunday, November 29, 2026 (UTC+8)",  # two zones
    "Current time: 31/31/2026",
    "Current time: 2026-11-29 10:00 UTC-03:238",  # an offset out of range is no zone
    "Current time: 2026-11-29 10:00 UTC+25:00",
    '{"last_modified": "2026-11-29 10:00"}',  # a field that is not the time now
    "Current time: 2026-11-29 10:00 (Mars/Olympus)",  # a zone this machine does not know
    "Current time: 2026/11/29 下午3:00 PM",  # two 12-hour marks
    "see [the note] and 2026-11-29 10:00]",  # a bracket that a stamp does not end
])
def test_a_statement_that_could_mean_two_times_or_none_is_not_read(text: str) -> None:
    assert now_in(text) is None


# strftime formats programs use for "now", each with what it keeps of the time.
FORMATS = [
    ("%Y-%m-%d %H:%M:%S%z", "s"), ("%Y-%m-%d %I:%M:%S %p %z", "s"), ("%Y-%m-%dT%H:%M:%S", "s"),
    ("%a %b %d %H:%M:%S %Y", "s"), ("%a %b %d %Y %H:%M:%S GMT%z (Some Standard Time)", "s"),
    ("%A, %B %d, %Y at %I:%M %p", "m"), ("%I:%M %p on %A, %B %d, %Y", "m"),
    ("%d %B %Y %H:%M UTC%z", "m"), ("%d.%m.%Y %H:%M", "m"), ("%Y/%m/%d %H:%M", "m"),
    ("%Y年%m月%d日 %H:%M", "m"), ("%a, %d %b %Y %H:%M:%S %z", "s"),
    ("%Y-%m-%d %I:%M:%S %p %Z%z", "s"), ("%A, %Y-%m-%d %H:%M", "m"),
]


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),
       st.integers(-12 * 4, 14 * 4), st.sampled_from(FORMATS))
def test_now_written_by_strftime_is_read_back(wall: datetime, quarters: int,
                                              fmt: tuple[str, str]) -> None:
    zone = timezone(timedelta(minutes=15 * quarters))
    t = wall.replace(microsecond=0, tzinfo=zone)
    if fmt[1] == "m":
        t = t.replace(second=0)
    got = now_in("Current time: " + t.strftime(fmt[0]), default=zone)
    assert got == t, (t.strftime(fmt[0]), got)
    # Another zone as the scenario's: a form that states its zone keeps it, one that does
    # not moves with the scenario's.
    other = timezone(timedelta(minutes=15 * quarters + 60))
    moved = now_in("Current time: " + t.strftime(fmt[0]), default=other)
    assert moved == (t if "%z" in fmt[0] else t.replace(tzinfo=other))


def test_en_us_numeric_date_is_read_back_on_every_day() -> None:
    # JavaScript's en-US toLocaleString (Cline's "# Current Time"): month first, AM/PM in
    # capitals, read so on every day; without the 12-hour clock, only when one reading exists.
    for month in (1, 12):
        for day in range(1, 32 if month == 1 else 13):
            t = datetime(2026, month, day, 9, 30, tzinfo=PLUS8)
            assert now_in(t.strftime("Current time: %m/%d/%Y, %I:%M:%S %p")) == t, (month, day)
            plain = now_in(t.strftime("Current time: %m/%d/%Y %H:%M"))
            assert plain == t if day > 12 or day == month else isinstance(plain, Unread), day


@pytest.mark.parametrize("text", [
    "now" + "\t" * 20000 + "1",  # was 156 s: two runs of blanks side by side split every way
    "Current time is" + " " * 20000 + "1",
    "# Current Time\n" + " " * 20000 + "1",  # the next line's blanks, a dated prefix's
    "[" + " " * 20000 + "2026",
    "[a" + " " * 20000 + "1",
    "Time zone is" + " " * 20000 + "x",
])
def test_a_long_run_of_blanks_is_read_in_linear_time(text: str) -> None:
    import time

    from harnesslab.sim.times import stated_zones

    start = time.process_time()
    list(stated_times(text, UTC))
    list(stated_zones(text, at("2026-11-29T00:00:00+00:00")))
    assert time.process_time() - start < 2.0  # about 0.02 s; quadratic, minutes
