""""Now" as harnesses state it: the forms of a current-time statement the fake model reads
(docs/understanding.md lists them), each parsed to an aware time, the scenario's zone when the
statement gives none.

Read: the runtime-state tag ``<current-time>ISO</current-time>`` and its kin
``<current_date>``, ``<current_time>``, ``<current-date>``, ``<current_datetime>`` (Codex CLI's
``<environment_context>`` states ``<current_date>2026-11-29</current_date>``); a labelled statement
(``Current time:``, ``Current date and time is``, ``The current time is``, ``Today is``,
``The current date and time is:`` (BeeAI's), ``Local time:``,
``Now:``, ``现在是``, ``当前时间``, ``今天是``, ...) followed on the same line by ISO 8601 (with or
without zone, ``T`` or a space), year first with slashes or dots, RFC 2822, ``ctime``, a
Chinese date, an English one (JavaScript's ``Date.toString()`` among them), year last
(``11/29/2026``, ``29.11.2026``) or the time first (``10:00 AM on November 29, 2026``), a
12-hour clock after any, then a zone; and a dated prefix: a line that starts with an ISO date
and time (``[2026-11-29 10:00] question``), or such a stamp (after a weekday, at the end of an
envelope) in square brackets further along the line. A date without a time is that day's
first moment (the earliest "now" the statement allows: a fact is then stale only if it is
stale whenever on that day it is read).

Not read (a documented limit): a bare date or time in running text, relative times ("in two
hours"), other calendars, times inside tool results (those are facts' times, not "now"), and
a statement that could mean two times (``03/04/2026``; ``CST`` in a scenario whose zone is
none of China's, US Central's or Cuba's): guessed, "now" could be hours or months off, so it
is an :class:`Unread` that names both readings. Slashes with a 12-hour clock in capitals are
month first (JavaScript's en-US ``toLocaleString()``: ``12/5/2026, 10:00:00 AM``).
Every pattern stays on one line but the Markdown heading's (its value on the line after), and
each message is read on its own, so no statement runs across two messages' texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from email.utils import parsedate_to_datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["TIME_RE", "ZONE_RE", "Unread", "parse_stated", "reading_of", "stated_times",
           "stated_zones"]

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|" \
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_WEEKDAY = r"(?:(?:Mon|Tues?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?\.?,?[ \t]+)"
# Zone abbreviations read beside a time, with the offsets each may mean (standard or
# daylight time as the abbreviation says). One that means several (``CST``: China, US
# Central, Cuba) is the scenario's zone when that zone has one of those offsets at the stated
# time, else the statement is not read: guessing would put "now" hours off.
_H = 3600
ABBREVIATIONS: dict[str, tuple[int, ...]] = {
    "PST": (-8 * _H,), "PDT": (-7 * _H,), "MST": (-7 * _H,), "MDT": (-6 * _H,),
    "CST": (-6 * _H, 8 * _H, -5 * _H), "CDT": (-5 * _H, -4 * _H), "EST": (-5 * _H,),
    "EDT": (-4 * _H,), "AKST": (-9 * _H,), "AKDT": (-8 * _H,), "HST": (-10 * _H,),
    "AST": (-4 * _H, 3 * _H), "ADT": (-3 * _H,), "NST": (-12600,), "NDT": (-9000,),
    "WET": (0,), "WEST": (_H,), "BST": (_H, 6 * _H), "IST": (19800, _H, 2 * _H),
    "CET": (_H,), "CEST": (2 * _H,), "EET": (2 * _H,), "EEST": (3 * _H,), "MSK": (3 * _H,),
    "PKT": (5 * _H,), "ICT": (7 * _H,), "WIB": (7 * _H,), "HKT": (8 * _H,), "SGT": (8 * _H,),
    "AWST": (8 * _H,), "JST": (9 * _H,), "KST": (9 * _H,), "ACST": (34200,), "ACDT": (37800,),
    "AEST": (10 * _H,), "AEDT": (11 * _H,), "NZST": (12 * _H,), "NZDT": (13 * _H,),
}
# Upper case only, as written (``est`` in running text is no zone).
_ABBR = "(?-i:" + "|".join(sorted(ABBREVIATIONS, key=len, reverse=True)) + ")"
# A zone after a time: an offset, bare or after a name (``GMT+0800``, the longer form first so
# it is not read as GMT; Python's ``%Z%z``: ``PST-0800``, ``+08+0800`` for a zone without an
# abbreviation, ``UTC+08:00+0800`` for a fixed offset), the offset saying it; ``Z``, ``UTC``,
# ``GMT`` or an abbreviation above; then, optionally, the zone's name in brackets
# (JavaScript's ``Date.toString()``: ``GMT+0800 (China Standard Time)``); or a zone's IANA name
# in brackets, with its offset or not (Cline's ``(Asia/Shanghai, UTC+8:00)``).
_ZONE = r"(?:[ \t]*(?:\(?(?:(?:UTC|GMT)[+-]\d{2}:\d{2}(?=[+-])|UTC|GMT|(?-i:[A-Z]{2,5})" \
        r"|[+-]\d{2}(?=[+-]))?[ \t]?[+-]\d+(?::?\d+)?\)?|\(?(?:Z|UTC|GMT|" + _ABBR + r")\)?" \
        r"|\([A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+(?:,[ \t]*(?:UTC|GMT)?[ \t]?[+-]\d+(?::?\d+)?)?\))" \
        r"(?![A-Za-z0-9:+-])(?:[ \t]*\([A-Za-z][A-Za-z .'-]*\))?)"
# (An offset's digits are taken whole, so one out of range, ``UTC-03:238``, is no zone and its
# statement is not read, rather than read in part.)
_NAMED = re.compile(r"[ \t]*\([A-Za-z][A-Za-z .'-]*\)$")
_AP = r"(?:[ \t]*[AaPp]\.?[Mm]\.?(?![A-Za-z]))"  # 12-hour clock: ``3:00 PM``, ``3:00 p.m.``
_HM = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
_ISO_DATE = r"\d{4}-\d{2}-\d{2}"
_ISO = _ISO_DATE + r"(?:[T ]" + _HM + _AP + "?)?" + _ZONE + "?"
_ISO_TIMED = _ISO_DATE + r"[T ]" + _HM + _AP + "?" + _ZONE + "?"
# Year first with slashes or dots (``%Y/%m/%d %H:%M``, common in Chinese systems' logs and
# prompts; ``2026.11.29``; JavaScript's zh-CN and ja-JP ``2026/11/29 上午10:00:00``).
_SLASH_DATE = r"\d{4}/\d{1,2}/\d{1,2}|\d{4}\.\d{1,2}\.\d{1,2}"
_SLASH = r"(?:" + _SLASH_DATE + r")(?:[T ](?:上午|下午|午前|午後)?" + _HM + _AP + "?)?" + _ZONE + "?"
# Year last: ``11/29/2026, 10:00:00 AM`` (JavaScript's en-US ``toLocaleString()``),
# ``29/11/2026 10:00`` (en-GB), ``29.11.2026 10:00`` (day first, as every locale that writes
# dots), ``29-11-2026`` (nl-NL). With slashes or dashes the order is read only when one
# number cannot be a month.
_NUM_DATE = r"\d{1,2}/\d{1,2}/\d{4}|\d{1,2}\.\d{1,2}\.\d{4}|\d{1,2}-\d{1,2}-\d{4}"
_NUM = r"(?:" + _NUM_DATE + r")(?:,?[ \t]+(?:at[ \t]+)?" + _HM + _AP + "?)?" + _ZONE + "?"
_RFC = _WEEKDAY + r"?\d{1,2}[ \t]+" + _MONTH + r"[ \t]+\d{4}[ \t]+\d{2}:\d{2}(?::\d{2})?" \
       r"[ \t]+(?:[+-]\d{4}|GMT|UTC)(?![A-Za-z0-9+:-])"  # ``UTC+8`` is the English form's
# C's ``asctime``/Python's ``time.ctime()`` and the ``date`` command:
# ``Sun Nov 29 10:00:00 2026``, ``Sun Nov 29 10:00:00 UTC 2026``.
_CTIME = _WEEKDAY + r"?" + _MONTH + r"[ \t]+\d{1,2}[ \t]+\d{1,2}:\d{2}(?::\d{2})?" \
         r"(?:[ \t]+(?:UTC|GMT|" + _ABBR + r"))?[ \t]+\d{4}(?![\d:])"
_ZH = r"\d{4}年\d{1,2}月\d{1,2}日(?:[ \t]*(?:星期|周)[一二三四五六日天])?" \
      r"(?:[ \t]*(?:上午|下午|晚上|中午|早上)?[ \t]*\d{1,2}(?:[:：]\d{2}|点(?:\d{1,2}分?)?)" \
      r"(?:[:：]\d{2})?)?" + _ZONE + "?"
_EN_DATE = _WEEKDAY + r"?(?:" + _MONTH + r"[ \t]+\d{1,2}(?:st|nd|rd|th)?,?[ \t]+\d{4}" \
           r"|\d{1,2}[ \t]+" + _MONTH + r",?[ \t]+\d{4})"
_EN = _EN_DATE + r"(?:,?[ \t]+(?:at[ \t]+)?\d{1,2}:\d{2}(?::\d{2})?" + _AP + "?)?" + _ZONE + "?"
# The time first: ``10:00 AM on Sunday, November 29, 2026``, ``3:00 PM PST, Nov 29, 2026``.
_TIME_FIRST = _HM + _AP + "?" + _ZONE + r"?(?:,?[ \t]+on|,)?[ \t]+(?:" + _EN_DATE + "|" \
              + _ISO_DATE + "|" + _SLASH_DATE + "|" + _NUM_DATE + ")" + _ZONE + "?"
_LABEL = r"(?:(?:the[ \t]+)?current[ \t]+(?:(?:local|utc|gmt|system)[ \t]+)?" \
         r"(?:date[ \t]*(?:and|&|/)[ \t]*time|date[ \t]*time|datetime|time|date)|" \
         r"(?:local|system)[ \t]+(?:date[ \t]*(?:and|&|/)[ \t]*)?time|" \
         r"today(?:'s[ \t]+date)?|the[ \t]+time|" \
         r"(?:it[ \t]+is[ \t]+)?now|现在(?:时间)?|当前(?:时间|日期)|今天|北京时间)"
_DOW = r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\.?,?[ \t]+)?"  # a weekday before a stamp
_FORMS = "|".join((_RFC, _CTIME, _ISO, _SLASH, _NUM, _ZH, _EN, _TIME_FIRST))
# A labelled statement: the label, the format it is in (Roo Code's "Current time in ISO 8601
# UTC format:") or its zone in brackets ("Current time (UTC+8):", the zone of a time that
# states none), "is"/":"/"是" (or nothing), then one of the forms. Or the label as a Markdown
# heading and the time on the next line (Cline's "# Current Time\n11/29/2026, 10:00:00 AM
# (Asia/Shanghai, UTC+8:00)").
TIME_RE = re.compile(
    r"(?:<(?P<tagname>current[-_](?:date[-_]?time|time|date))>[ \t]*(?P<tag>[^<\n]+?)[ \t]*"
    r"</(?P=tagname)>)"
    r"|(?:(?<![A-Za-z])" + _LABEL + r"(?![A-Za-z])(?:[ \t]+in[ \t]+[^:\n]{0,40}?[ \t]format)?"
    r"(?:[ \t]*\((?P<lzone>[^()\n]{1,40})\))?[ \t]*"
    # (No two runs of blanks side by side: a long one would be split every way, O(n^2).)
    r"(?:(?:is|was|是|为)(?:[ \t]*[:：])?[ \t]*|[=:：][ \t]*)?" + _DOW +  # "Today is Sunday, ..."
    r"(?P<labelled>" + _FORMS + "))"
    r"|(?:^[ \t]*#{1,6}[ \t]*current[ \t]+(?:date[ \t]*(?:and|&|/)[ \t]*)?(?:time|date)[ \t]*\r?\n"
    r"[ \t]*" + _DOW + r"(?P<heading>" + _FORMS + "))"
    # A JSON field: Letta (MemGPT) sends each user message as {"type": "user_message",
    # "message": ..., "time": "2026-11-29 10:00:00 AM CST+0800"}.
    r"|(?:\"(?:(?:current|local)_)?(?:time|date_?time)\"[ \t]*:[ \t]*\"(?P<json>[^\"\n]+)\")"
    r"|(?:^[ \t]*(?:[\[(【<][ \t]*)?" + _DOW + r"(?P<prefix>" + _ISO_TIMED + r"))"
    # A stamp in square brackets further along a line: CAMEL's "Based on the previous
    # CONTEXT_SUMMARY, continue with my current message: [2026-11-29 10:00] ...", and an
    # envelope that ends with one: OpenClaw's "[WhatsApp +1555 +2m Sun 2026-11-29 10:00 PST] hi".
    r"|(?:[\[【][ \t]{0,8}(?:[^\[\]【】\n \t][^\[\]【】\n]{0,80}?[ \t]{1,8})?" + _DOW
    + r"(?P<stamp>" + _ISO_TIMED
    + r")[ \t]*[\]】])",
    re.IGNORECASE | re.MULTILINE)

_AP_PARTS = r"(?:[ \t]*([AaPp])\.?[Mm]\.?(?![A-Za-z]))?"
_ISO_PARTS = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?"
                        + _AP_PARTS + r")?[ \t]*(.*)")
_SLASH_PARTS = re.compile(r"(\d{4})([/.])(\d{1,2})\2(\d{1,2})(?:[T ](上午|下午|午前|午後)?(\d{1,2}):(\d{2})"
                          r"(?::(\d{2}(?:\.\d+)?))?" + _AP_PARTS + r")?[ \t]*(.*)")
_NUM_PARTS = re.compile(r"(\d{1,2})([/.-])(\d{1,2})\2(\d{4})(?:,?[ \t]+(?:at[ \t]+)?(\d{1,2}):(\d{2})"
                        r"(?::(\d{2}(?:\.\d+)?))?" + _AP_PARTS + r")?[ \t]*(.*)", re.IGNORECASE)
_CTIME_PARTS = re.compile(_WEEKDAY + r"?([A-Za-z]+)[ \t]+(\d{1,2})[ \t]+(\d{1,2}):(\d{2})"
                          r"(?::(\d{2}))?(?:[ \t]+([A-Za-z]+))?[ \t]+(\d{4})", re.IGNORECASE)
_ZH_PARTS = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:[ \t]*(?:星期|周).)?[ \t]*"
                       r"(上午|下午|晚上|中午|早上)?[ \t]*(?:(\d{1,2})(?:[:：](\d{2})|点(?:(\d{1,2})分?)?)"
                       r"(?:[:：](\d{2}))?)?[ \t]*(.*)")
_EN_PARTS = re.compile(
    _WEEKDAY + r"?(?:(?P<m1>[A-Za-z]+)[ \t]+(?P<d1>\d{1,2})(?:st|nd|rd|th)?,?[ \t]+(?P<y1>\d{4})"
    r"|(?P<d2>\d{1,2})[ \t]+(?P<m2>[A-Za-z]+),?[ \t]+(?P<y2>\d{4}))"
    r"(?:,?[ \t]+(?:at[ \t]+)?(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?"
    + _AP_PARTS.replace("([AaPp])", "(?P<ap>[AaPp])") + r")?[ \t]*(?P<zone>.*)", re.IGNORECASE)
_TIME_FIRST_PARTS = re.compile(
    r"(?P<time>" + _HM + _AP + r"?)(?P<zone>" + _ZONE + r")?(?:,?[ \t]+on|,)?[ \t]+(?P<date>.*)",
    re.IGNORECASE)
_OFFSET = re.compile(r"\(?(?:(?:UTC|GMT)[+-]\d{2}:\d{2}(?=[+-])|UTC|GMT|[A-Z]{2,5}|[+-]\d{2}(?=[+-]))?"
                     r"[ \t]*([+-])(\d{1,2}):?(\d{2})?\)?$", re.IGNORECASE)
# Written as an offset, whether or not it is a valid one (``UTC-03:238``, ``UTC+25:00``).
_OFFSET_SHAPED = re.compile(r"\(?(?:UTC|GMT)?[ \t]*[+-]\d+(?::?\d+)?\)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Unread:
    """A statement of the time that reads two ways (``03/04/2026``: March or April; ``CST`` in
    a scenario whose zone is none of its three): the fake model takes neither, and says so."""

    raw: str
    why: str


class _TwoReadings(Exception):
    def __init__(self, why: str) -> None:
        self.why = why


def _zone(text: str, default: tzinfo, wall: datetime | None = None) -> tzinfo | None:
    """The zone a suffix states (empty: ``default``); None when it is no zone we read. An
    abbreviation that may mean several, none of them the default's offset at ``wall``, raises
    ``_TwoReadings``."""
    z = text.strip()
    if (named := _NAMED.search(z)) is not None and named.start() > 0:
        z = z[:named.start()]  # the offset before it says it
    if not z:
        return default
    if z[0] == "(" and z[-1] == ")":
        z = z[1:-1].strip()
    if "," in z:  # "Asia/Shanghai, UTC+8:00": the offset says it
        z = z.rsplit(",", 1)[1].strip()
    elif "/" in z:
        try:
            return ZoneInfo(z)
        except (ZoneInfoNotFoundError, ValueError):
            return None
    if z.upper() in ("Z", "UTC", "GMT"):
        return UTC
    if (offsets := ABBREVIATIONS.get(z)) is not None:
        own = default.utcoffset(wall)
        if own is not None and own.total_seconds() in offsets:
            return default
        if len(offsets) == 1:
            return timezone(timedelta(seconds=offsets[0]))
        raise _TwoReadings(f"{z} names {len(offsets)} zones (UTC"
                           + ", UTC".join(_offset_text(o) for o in offsets) + ")")
    m = _OFFSET.match(z)
    if not m or int(m.group(2)) > 23 or int(m.group(3) or 0) > 59:
        return None  # out of range (``UTC+25:00``, ``-03:60``): no zone, not a wrapped-round one
    delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
    return timezone(-delta if m.group(1) == "-" else delta)


def _offset_text(seconds: int) -> str:
    sign, seconds = ("-" if seconds < 0 else "+"), abs(seconds)
    return f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def _hour(h: int, ap: str | None) -> int:
    """The 24-hour clock's hour; -1 (no valid time) for a 12-hour one out of 1-12."""
    if not ap:
        return h
    if not 1 <= h <= 12:
        return -1
    return h % 12 + (12 if ap.lower() == "p" else 0)


def _at(y: int, mo: int, d: int, h: int, mi: int, s: float, zone_text: str,
        default: tzinfo) -> datetime | None:
    try:
        wall = datetime(y, mo, d, h, mi, int(s), round((s % 1) * 1e6) % 1000000)
    except ValueError:
        return None
    zone = _zone(zone_text, default, wall)
    return None if zone is None else wall.replace(tzinfo=zone)


def _month(name: str) -> int:
    name = name.lower()
    return next((i for i, full in enumerate(_MONTHS, 1) if full.startswith(name[:3])), 0)


def _iso(text: str, default: tzinfo) -> datetime | None:
    m = _ISO_PARTS.fullmatch(text.strip())
    if not m:
        return None
    return _at(int(m.group(1)), int(m.group(2)), int(m.group(3)),
               _hour(int(m.group(4) or 0), m.group(7)), int(m.group(5) or 0),
               float(m.group(6) or 0), m.group(8), default)


def parse_stated(text: str, default: tzinfo) -> datetime | None:
    """One statement's time (any form above), aware; None when it is not a valid time or
    reads two ways."""
    t = reading_of(text, default)
    return t if isinstance(t, datetime) else None


def reading_of(text: str, default: tzinfo) -> datetime | Unread | None:
    """One statement's time as :func:`parse_stated` reads it, or :class:`Unread` (with why)
    when it is a valid time that reads two ways."""
    try:
        return _parse(text, default)
    except _TwoReadings as e:
        return Unread(text.strip(), e.why)


def _parse(text: str, default: tzinfo) -> datetime | None:
    text = text.strip()
    if (t := _iso(text, default)) is not None:
        return t
    m = _SLASH_PARTS.fullmatch(text)
    if m:
        mark = {"上午": "a", "午前": "a", "下午": "p", "午後": "p"}.get(m.group(5) or "")
        if mark and m.group(9):
            return None  # 上午 and AM both
        return _at(int(m.group(1)), int(m.group(3)), int(m.group(4)),
                   _hour(int(m.group(6) or 0), mark or m.group(9)), int(m.group(7) or 0),
                   float(m.group(8) or 0), m.group(10), default)
    m = _NUM_PARTS.fullmatch(text)
    if m:
        a, b = int(m.group(1)), int(m.group(3))
        # JavaScript's en-US toLocaleString (``12/5/2026, 10:00:00 AM``: Cline, Roo Code) puts
        # the month first, with AM or PM in capitals; day-first locales that use a 12-hour
        # clock write it in lower case (en-AU, en-IN: ``5/12/2026, 10:00:00 am``).
        us = m.group(2) == "/" and m.group(8) is not None \
            and text[m.start(8):m.start(8) + 2] in ("AM", "PM")
        if m.group(2) != "." and a != b and a <= 12 and b <= 12 and not us:
            if a < 1 or b < 1:
                return None
            y = m.group(4)
            raise _TwoReadings(f"{m.group(1)}{m.group(2)}{m.group(3)}{m.group(2)}{y} is "
                               f"{_MONTHS[b - 1].title()} {a} or {_MONTHS[a - 1].title()} {b}, "
                               f"{y}, as the writer's locale has it")
        day, month = (a, b) if m.group(2) == "." or a > 12 else (b, a)
        return _at(int(m.group(4)), month, day, _hour(int(m.group(5) or 0), m.group(8)),
                   int(m.group(6) or 0), float(m.group(7) or 0), m.group(9), default)
    m = _ZH_PARTS.fullmatch(text)
    if m:
        h = int(m.group(5) or 0)
        if m.group(4) in ("下午", "晚上") and h < 12:
            h += 12
        mi = int(m.group(6) or m.group(7) or 0)
        return _at(int(m.group(1)), int(m.group(2)), int(m.group(3)), h, mi,
                   float(m.group(8) or 0), m.group(9), default)
    m = _CTIME_PARTS.fullmatch(text)
    if m:
        return _at(int(m.group(7)), _month(m.group(1)), int(m.group(2)), int(m.group(3)),
                   int(m.group(4)), float(m.group(5) or 0), m.group(6) or "", default)
    m = _EN_PARTS.fullmatch(text)
    if m:
        return _at(int(m.group("y1") or m.group("y2")), _month(m.group("m1") or m.group("m2")),
                   int(m.group("d1") or m.group("d2")), _hour(int(m.group("h") or 0), m.group("ap")),
                   int(m.group("mi") or 0), float(m.group("s") or 0), m.group("zone"), default)
    m = _TIME_FIRST_PARTS.fullmatch(text)
    if m:
        # The same statement, date first: each date form above then reads it (no date form
        # starts with a time, so this recurses once). One zone, after the time or the date.
        date, zone = m.group("date").strip(), (m.group("zone") or "").strip()
        if (after := _ZONE_AT_END.search(date)) is not None:
            if zone:
                return None
            date, zone = date[:after.start()], after.group(0).strip()
        return _parse(f"{date} {m.group('time')} {zone}", default)
    try:
        t = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=default)


_ZONE_AT_END = re.compile(r"[ \t]" + _ZONE + "$", re.IGNORECASE)  # "2026-11-29": no zone "-29"


# Every form a statement is parsed in holds a digit (the tag's content too, or it parses to
# nothing): a text without one states no time, and is not searched.
_DIGIT = re.compile(r"\d")
_ELSEWHERE = timezone(timedelta(hours=1))


def stated_times(text: str, default: tzinfo) -> Iterator[tuple[int, datetime | Unread]]:
    """Each statement of "now" in ``text`` that is a valid time: its start and its time, or
    :class:`Unread` when it reads two ways; in order."""
    if _DIGIT.search(text) is None:
        return
    yield from _stated_times(text, default)


def _stated_times(text: str, default: tzinfo) -> Iterator[tuple[int, datetime | Unread]]:
    for m in TIME_RE.finditer(text):
        raw = m.group("tag") or m.group("labelled") or m.group("json") or m.group("heading") \
            or m.group("prefix") or m.group("stamp")
        zone: tzinfo = default
        if m.group("lzone"):  # the label's zone, for a time that states none
            try:
                zone = _zone(m.group("lzone"), default) or default
            except _TwoReadings as e:
                # Only a time that states no zone of its own is in the label's.
                t, other = reading_of(raw, UTC), reading_of(raw, _ELSEWHERE)
                yield m.start(), t if t is not None and t == other else Unread(raw.strip(), e.why)
                continue
        t = reading_of(raw, zone)
        if t is not None:
            yield m.start(), t


# A zone named on its own, beside a time or in place of one: ``<timezone>UTC+08:00</timezone>``
# (the reference harness and AgentScope), ``Timezone: Asia/Shanghai``, ``Time zone is UTC-03:30``,
# ``时区：UTC+8``; the value an offset, UTC/GMT/Z, or an IANA name.
ZONE_RE = re.compile(
    r"(?:<(?P<tagname>time[-_ ]?zone|tz)>[ \t]*(?P<tag>[^<\n]+?)[ \t]*</(?P=tagname)>)"
    r"|(?:(?<![A-Za-z])(?:(?:the[ \t]+)?(?:user(?:'?s)?[ \t]+|local[ \t]+)?time[ \t]?zone|时区)"
    r"(?![A-Za-z])[ \t]*(?:(?:is|是|为)(?:[ \t]*[:：])?|[=:：])[ \t]*(?P<labelled>[A-Za-z_]+/[A-Za-z0-9_/+-]+"
    r"|(?:UTC|GMT)(?:[ \t]*[+-]\d+(?::?\d+)?)?|[+-]\d{2}:?\d+|Z)(?![A-Za-z0-9/]))",
    re.IGNORECASE)


def stated_zones(text: str, at: datetime) -> Iterator[tuple[int, timedelta | str | None]]:
    """Each zone ``text`` names (``ZONE_RE``): its start and its offset at ``at``; the text as
    written when it is an offset no zone has (``UTC-03:238``, ``UTC+25:00``: minutes or hours
    out of range), which names a zone that is not the user's whichever the user's is; None for
    a name that is no offset and that this machine's zone database does not know, read as no
    statement by callers (an unknown word may be a zone we cannot read, not a wrong one)."""
    for m in ZONE_RE.finditer(text):
        raw = (m.group("tag") or m.group("labelled")).strip()
        try:
            zone = _zone(raw, UTC)
        except _TwoReadings:
            zone = None
        if zone is None and _OFFSET_SHAPED.match(raw):
            yield m.start(), raw
            continue
        yield m.start(), zone.utcoffset(at) if zone is not None else None
