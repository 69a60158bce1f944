"""Durations and times as world and domain files write them: ``6h``, ``30m``, ``1d``; ISO-8601
times with a UTC offset."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator

__all__ = ["AwareTime", "format_duration", "parse_duration"]

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
