""""Now" as harnesses state it: the forms of a current-time statement the fake model reads
(docs/understanding.md lists them), each parsed to an aware time, the scenario's zone when the
statement gives none.

Read: the runtime-state tag ``<current-time>ISO</current-time>`` and its kin
``<current_date>``, ``<current_time>``, ``<current-date>``, ``<current_datetime>`` (Codex CLI's
``<environment_context>`` states ``<current_date>2026-11-29</current_date>``); a labelled statement
(``Current time:``, ``Current date and time is``, ``The current time is``, ``Today is``,
``The current date and time is:`` (BeeAI's),
``Now:``, ``现在是``, ``当前时间``, ``今天是``, ...) followed on the same line by ISO 8601 (with or
without zone, ``T`` or a space), year first with slashes (``2026/11/29 10:00``), RFC 2822
(``Sun, 29 Nov 2026 10:00:00 +0800``), a Chinese date
(``2026年11月29日 10:00``, ``上午/下午``) or an English one (``Sunday, November 29, 2026 10:00
AM``); and a dated prefix: a line that starts with an ISO date and time (``[2026-11-29 10:00]
question``), or such a stamp in square brackets further along the line. A date without a
time is that day's first moment (the earliest "now" the statement allows: a fact is then stale
only if it is stale whenever on that day it is read).

Not read (a documented limit): a bare date or time in running text, relative times ("in two
hours"), other calendars, and times inside tool results (those are facts' times, not "now").
Every pattern stays on one line, so no statement runs across two messages' texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from email.utils import parsedate_to_datetime

__all__ = ["TIME_RE", "ZONE_RE", "parse_stated", "stated_times", "stated_zones"]

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|" \
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_WEEKDAY = r"(?:(?:Mon|Tues?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?\.?,?[ \t]+)"
_ZONE = r"(?:[ \t]*(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}|\(?(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?\)?))"
_ISO = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?" + _ZONE + "?"
_ISO_TIMED = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?" + _ZONE + "?"
# Year first with slashes (``%Y/%m/%d %H:%M``, common in Chinese systems' logs and prompts).
_SLASH = r"\d{4}/\d{1,2}/\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?" + _ZONE + "?"
_RFC = _WEEKDAY + r"?\d{1,2}[ \t]+" + _MONTH + r"[ \t]+\d{4}[ \t]+\d{2}:\d{2}(?::\d{2})?" \
       r"[ \t]+(?:[+-]\d{4}|GMT|UTC)"
_ZH = r"\d{4}年\d{1,2}月\d{1,2}日(?:[ \t]*(?:星期|周)[一二三四五六日天])?" \
      r"(?:[ \t]*(?:上午|下午|晚上|中午|早上)?[ \t]*\d{1,2}(?:[:：]\d{2}|点(?:\d{1,2}分?)?)" \
      r"(?:[:：]\d{2})?)?" + _ZONE + "?"
_EN = _WEEKDAY + r"?(?:" + _MONTH + r"[ \t]+\d{1,2}(?:st|nd|rd|th)?,?[ \t]+\d{4}|\d{1,2}[ \t]+" \
      + _MONTH + r",?[ \t]+\d{4})(?:,?[ \t]+(?:at[ \t]+)?\d{1,2}:\d{2}(?::\d{2})?" \
      r"(?:[ \t]*[AaPp]\.?[Mm]\.?)?)?" + _ZONE + "?"
_LABEL = r"(?:(?:the[ \t]+)?current[ \t]+(?:(?:local|utc|gmt|system)[ \t]+)?" \
         r"(?:date[ \t]*(?:and|&|/)[ \t]*time|date[ \t]*time|datetime|time|date)|" \
         r"today(?:'s[ \t]+date)?|the[ \t]+time|" \
         r"(?:it[ \t]+is[ \t]+)?now|现在(?:时间)?|当前(?:时间|日期)|今天|北京时间)"
# A labelled statement: the label, "is"/":"/"是" (or nothing), then one of the forms.
TIME_RE = re.compile(
    r"(?:<(?P<tagname>current[-_](?:date[-_]?time|time|date))>[ \t]*(?P<tag>[^<\n]+?)[ \t]*"
    r"</(?P=tagname)>)"
    r"|(?:(?<![A-Za-z])" + _LABEL + r"(?![A-Za-z])[ \t]*"
    r"(?:(?:is|was|是|为)[ \t]*[:：]?|=|:|：)?[ \t]*"
    r"(?P<labelled>" + _RFC + "|" + _ISO + "|" + _SLASH + "|" + _ZH + "|" + _EN + r"))"
    r"|(?:^[ \t]*[\[(【<]?[ \t]*(?P<prefix>" + _ISO_TIMED + r"))"
    # A stamp in square brackets further along a line: CAMEL's "Based on the previous
    # CONTEXT_SUMMARY, continue with my current message: [2026-11-29 10:00] ...".
    r"|(?:[\[【][ \t]*(?P<stamp>" + _ISO_TIMED + r")[ \t]*[\]】])",
    re.IGNORECASE | re.MULTILINE)

_ISO_PARTS = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?[ \t]*(.*)")
_SLASH_PARTS = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})(?:[T ](\d{1,2}):(\d{2})"
                          r"(?::(\d{2}(?:\.\d+)?))?)?[ \t]*(.*)")
_ZH_PARTS = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:[ \t]*(?:星期|周).)?[ \t]*"
                       r"(上午|下午|晚上|中午|早上)?[ \t]*(?:(\d{1,2})(?:[:：](\d{2})|点(?:(\d{1,2})分?)?)"
                       r"(?:[:：](\d{2}))?)?[ \t]*(.*)")
_EN_PARTS = re.compile(
    _WEEKDAY + r"?(?:(?P<m1>[A-Za-z]+)[ \t]+(?P<d1>\d{1,2})(?:st|nd|rd|th)?,?[ \t]+(?P<y1>\d{4})"
    r"|(?P<d2>\d{1,2})[ \t]+(?P<m2>[A-Za-z]+),?[ \t]+(?P<y2>\d{4}))"
    r"(?:,?[ \t]+(?:at[ \t]+)?(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?"
    r"(?:[ \t]*(?P<ap>[AaPp])\.?[Mm]\.?)?)?[ \t]*(?P<zone>.*)", re.IGNORECASE)
_OFFSET = re.compile(r"\(?(?:UTC|GMT)?[ \t]*([+-])(\d{1,2}):?(\d{2})?\)?$", re.IGNORECASE)
# Written as an offset, whether or not it is a valid one (``UTC-03:238``, ``UTC+25:00``).
_OFFSET_SHAPED = re.compile(r"\(?(?:UTC|GMT)?[ \t]*[+-]\d+(?::?\d+)?\)?$", re.IGNORECASE)


def _zone(text: str, default: tzinfo) -> tzinfo | None:
    """The zone a suffix states (empty: ``default``); None when it is no zone we read."""
    z = text.strip()
    if not z:
        return default
    if z.upper() in ("Z", "UTC", "GMT"):
        return UTC
    m = _OFFSET.match(z)
    if not m or int(m.group(2)) > 23 or int(m.group(3) or 0) > 59:
        return None  # out of range (``UTC+25:00``, ``-03:60``): no zone, not a wrapped-round one
    delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
    return timezone(-delta if m.group(1) == "-" else delta)


def _at(y: int, mo: int, d: int, h: int, mi: int, s: float, zone: tzinfo | None) -> datetime | None:
    if zone is None:
        return None
    try:
        return datetime(y, mo, d, h, mi, int(s), round((s % 1) * 1e6) % 1000000, zone)
    except ValueError:
        return None


def _iso(text: str, default: tzinfo) -> datetime | None:
    m = _ISO_PARTS.fullmatch(text.strip())
    if not m:
        return None
    y, mo, d = (int(x) for x in m.group(1).split("-"))
    hms = (m.group(2) or "00:00").split(":")
    s = float(hms[2]) if len(hms) > 2 else 0.0
    return _at(y, mo, d, int(hms[0]), int(hms[1]), s, _zone(m.group(3), default))


def parse_stated(text: str, default: tzinfo) -> datetime | None:
    """One statement's time (any form above), aware; None when it is not a valid time."""
    text = text.strip()
    if (t := _iso(text, default)) is not None:
        return t
    m = _SLASH_PARTS.fullmatch(text)
    if m:
        return _at(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4) or 0),
                   int(m.group(5) or 0), float(m.group(6) or 0), _zone(m.group(7), default))
    m = _ZH_PARTS.fullmatch(text)
    if m:
        h = int(m.group(5) or 0)
        if m.group(4) in ("下午", "晚上") and h < 12:
            h += 12
        mi = int(m.group(6) or m.group(7) or 0)
        return _at(int(m.group(1)), int(m.group(2)), int(m.group(3)), h, mi,
                   float(m.group(8) or 0), _zone(m.group(9), default))
    m = _EN_PARTS.fullmatch(text)
    if m:
        name = (m.group("m1") or m.group("m2") or "").lower()
        month = next((i for i, full in enumerate(_MONTHS, 1) if full.startswith(name[:3])), 0)
        h = int(m.group("h") or 0)
        if (ap := (m.group("ap") or "").lower()) == "p" and h < 12:
            h += 12
        elif ap == "a" and h == 12:
            h = 0
        return _at(int(m.group("y1") or m.group("y2")), month,
                   int(m.group("d1") or m.group("d2")), h, int(m.group("mi") or 0),
                   float(m.group("s") or 0), _zone(m.group("zone"), default))
    try:
        t = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=default)


# Every form a statement is parsed in holds a digit (the tag's content too, or it parses to
# nothing): a text without one states no time, and is not searched.
_DIGIT = re.compile(r"\d")


def stated_times(text: str, default: tzinfo) -> Iterator[tuple[int, datetime]]:
    """Each parseable statement of "now" in ``text``: its start and its time, in order."""
    if _DIGIT.search(text) is None:
        return
    yield from _stated_times(text, default)


def _stated_times(text: str, default: tzinfo) -> Iterator[tuple[int, datetime]]:
    for m in TIME_RE.finditer(text):
        raw = m.group("tag") or m.group("labelled") or m.group("prefix") or m.group("stamp")
        t = parse_stated(raw, default)
        if t is not None:
            yield m.start(), t


# A zone named on its own, beside a time or in place of one: ``<timezone>UTC+08:00</timezone>``
# (the reference harness and AgentScope), ``Timezone: Asia/Shanghai``, ``Time zone is UTC-03:30``,
# ``时区：UTC+8``; the value an offset, UTC/GMT/Z, or an IANA name.
ZONE_RE = re.compile(
    r"(?:<(?P<tagname>time[-_ ]?zone|tz)>[ \t]*(?P<tag>[^<\n]+?)[ \t]*</(?P=tagname)>)"
    r"|(?:(?<![A-Za-z])(?:(?:the[ \t]+)?(?:user'?s[ \t]+|local[ \t]+)?time[ \t]?zone|时区)"
    r"(?![A-Za-z])[ \t]*(?:(?:is|是|为)[ \t]*[:：]?|=|:|：)[ \t]*(?P<labelled>[A-Za-z_]+/[A-Za-z0-9_/+-]+"
    r"|(?:UTC|GMT)(?:[ \t]*[+-]\d+(?::?\d+)?)?|[+-]\d{2}:?\d+|Z)(?![A-Za-z0-9/]))",
    re.IGNORECASE)


def stated_zones(text: str, at: datetime) -> Iterator[tuple[int, timedelta | str | None]]:
    """Each zone ``text`` names (``ZONE_RE``): its start and its offset at ``at``; the text as
    written when it is an offset no zone has (``UTC-03:238``, ``UTC+25:00``: minutes or hours
    out of range), which names a zone that is not the user's whichever the user's is; None for
    a name that is no offset and that this machine's zone database does not know, read as no
    statement by callers (an unknown word may be a zone we cannot read, not a wrong one)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    for m in ZONE_RE.finditer(text):
        raw = (m.group("tag") or m.group("labelled")).strip()
        zone = _zone(raw, UTC)
        if zone is None and _OFFSET_SHAPED.match(raw):
            yield m.start(), raw
            continue
        if zone is None and "/" in raw:
            try:
                zone = ZoneInfo(raw)
            except (ZoneInfoNotFoundError, ValueError):
                zone = None
        yield m.start(), zone.utcoffset(at) if zone is not None else None
