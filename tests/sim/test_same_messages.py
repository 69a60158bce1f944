"""Equal messages reach the bench as one object (``sim.endpoint.SameMessages``): a request decoded
afresh from a wire, history and all, costs the bench's identity-keyed caches only its new
messages."""

from __future__ import annotations

from typing import Any, ClassVar

from harnesslab.messages import (
    Message,
    Request,
    TextBlock,
    ToolSchema,
    message_from_dict,
    message_to_dict,
)
from harnesslab.sim.endpoint import Endpoint, SameMessages
from harnesslab.sim.service import SimulatedService


class _Echo:
    class _Reply:
        blocks = (TextBlock("ok"),)
        annotations: ClassVar[dict[str, Any]] = {}

    def reply(self, request: Request) -> Any:
        return self._Reply()


class _Sink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)


def _copy(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """What a wire hands the bench: equal messages, none of them the same object."""
    return tuple(message_from_dict(message_to_dict(m)) for m in messages)


def _history(n: int) -> tuple[Message, ...]:
    return tuple(Message.text("user" if i % 2 == 0 else "assistant", f"message {i} " * 20)
                 for i in range(n))


def test_equal_messages_become_the_first_seen_and_the_same_pass_through() -> None:
    same = SameMessages()
    h = _history(6)
    first = same.request(Request("sys", h))
    assert first.messages is h  # nothing seen before: as sent
    again = same.request(Request("sys", _copy(h) + _copy(_history(8)[6:])))
    assert all(a is b for a, b in zip(again.messages, h, strict=False))
    assert again.messages[6:] == _history(8)[6:]
    # The very objects of the last request pass without a copy of the request.
    r = Request("sys", again.messages)
    assert same.request(r) is r


def test_a_compacted_history_resent_costs_the_service_only_its_new_messages() -> None:
    # The counter shares an equal prefix already; after a compaction (the oldest messages
    # gone) only identity finds the counts of the rest.
    def measured(wire: bool) -> int:
        service = SimulatedService("openai-128k")
        endpoint = Endpoint(service, _Echo(), _Sink())  # type: ignore[arg-type]
        h = _history(40)
        endpoint.call(Request("sys", h[:38]))
        before = service._counter.measured
        endpoint.call(Request("sys", _copy(h[2:]) if wire else h[2:]))
        return service._counter.measured - before

    assert measured(wire=False) == 2
    assert measured(wire=True) == 2  # the 36 resent copies are the first objects again


def test_the_control_without_it_measures_every_copy() -> None:
    service = SimulatedService("openai-128k")
    h = _history(40)
    service.count_input(Request("sys", h[:38]))
    before = service._counter.measured
    service.count_input(Request("sys", _copy(h[2:])))
    assert service._counter.measured - before == 38


def test_equal_tool_schemas_become_the_last_ones() -> None:
    same = SameMessages()
    tools = (ToolSchema("a", '{"name": "a"}'),)
    same.request(Request("sys", (), tools=tools))
    r = same.request(Request("sys", (), tools=(ToolSchema("a", '{"name": "a"}'),)))
    assert r.tools is tools


def test_a_filler_counted_aside_is_known_when_the_harness_sends_its_own_copy() -> None:
    service = SimulatedService("openai-128k")
    endpoint = Endpoint(service, _Echo(), _Sink())  # type: ignore[arg-type]
    filler = _history(10)
    endpoint.count_aside(Request("", filler))
    before = service._counter.measured
    endpoint.call(Request("sys", _copy(filler)))
    assert service._counter.measured == before
