"""The event channel from the simulated world and the harness to the run record.

Events are plain JSON-able dicts with a ``type``; the bench writes them to the record. The
harness and the world only emit; nothing they do depends on what a sink does with an event.
"""

from __future__ import annotations

from typing import Any, Protocol


class EventSink(Protocol):
    def emit(self, event: dict[str, Any]) -> None: ...


class ListSink:
    """Keeps events in memory (tests, and the runner before it writes the record)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]
