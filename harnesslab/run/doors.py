"""The doors through which a harness under test reaches the simulated world: each offers only
what the harness interface promises (design 2), and records what goes through it.

A door holds its target in a private slot and exposes no attribute that leads to the world, the
fake model, the record or the scenario. (Python cannot forbid reflection; the interface simply
offers nothing to reach them.)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from harnesslab.events import EventSink
from harnesslab.harness.base import HarnessContext, Session
from harnesslab.messages import Request, Response, ToolOutcome, ToolSchema
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.tools import Tools
from harnesslab.sim.world import SimClock
from harnesslab.tokens import TokenCache


class ModelDoor:
    """``call``: the service admits and bills, the fake model answers, the record keeps it;
    and ``count_tokens``, the API's token counting endpoint."""

    __slots__ = ("__endpoint",)

    def __init__(self, endpoint: Endpoint) -> None:
        self.__endpoint = endpoint

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        return self.__endpoint.call(request, purpose=purpose, estimate=estimate)

    def count_tokens(self, request: Request) -> int:
        """The API's token count (``harness.base.TokenCounting``): nothing recorded."""
        return self.__endpoint.count_tokens(request)

    def context_window(self) -> int:
        """The model's window, as a model server states it (``harness.base.ModelInfo``)."""
        return self.__endpoint.context_window()


class ToolDoor:
    """``schemas`` and ``run``; every run is recorded with the acting user the harness named."""

    __slots__ = ("__session_user", "__sink", "__tools")

    def __init__(self, tools: Tools, sink: EventSink, session_user: str) -> None:
        self.__tools = tools
        self.__sink = sink
        self.__session_user = session_user

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self.__tools.schemas()

    def run(self, name: str, arguments: str, acting_user: str) -> ToolOutcome:
        out = self.__tools.run(name, arguments, acting_user)
        self.__sink.emit({"type": "tool_call", "name": name, "args": arguments,
                          "acting_user": acting_user, "session_user": self.__session_user,
                          "is_error": out.is_error, "result": out.text})
        return out


class ClockDoor:
    """``now`` only: the harness reads the world's time and cannot move it. ``offset`` is a
    host clock that is off (``clock_offset_hours``), for a harness that does not apply the
    setting itself: the time it is handed is wrong as a skewed host's would be."""

    __slots__ = ("__clock", "__offset")

    def __init__(self, clock: SimClock, offset: timedelta | None = None) -> None:
        self.__clock = clock
        self.__offset = offset

    def now(self) -> datetime:
        if self.__offset is None:
            return self.__clock.now()
        return self.__clock.now() + self.__offset


class SinkDoor:
    """``emit`` only: a harness's own events go into the record; it cannot read the record."""

    __slots__ = ("__sink",)

    def __init__(self, sink: EventSink) -> None:
        self.__sink = sink

    def emit(self, event: dict[str, Any]) -> None:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise TypeError("a harness event is a dict with a string 'type'")
        self.__sink.emit(event)


def harness_context(endpoint: Endpoint, tools: Tools, clock: SimClock, sink: EventSink, *,
                    session_id: str, user_id: str, workdir: Path | None = None,
                    cache: TokenCache | None = None,
                    clock_offset: timedelta | None = None) -> HarnessContext:
    """What a harness is handed, wired to the simulated world and recording into ``sink``."""
    return HarnessContext(ModelDoor(endpoint), ToolDoor(tools, sink, user_id),
                          ClockDoor(clock, clock_offset),
                          SinkDoor(sink), Session(session_id, user_id), workdir, cache)
