"""The harness gets the reply as a provider's JSON decodes to: equal strings, never the fake
model's own objects (``sim.endpoint``)."""

from __future__ import annotations

from typing import Any, ClassVar

from harnesslab.messages import Message, Request, TextBlock, ThinkingBlock, ToolCallBlock
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.service import SimulatedService

NAME = "memory_search"  # an interned literal, as a tool name copied from the request would be


class _Model:
    def __init__(self) -> None:
        self.blocks = (ThinkingBlock("hm"), TextBlock("looking it up"),
                       ToolCallBlock("call-1", NAME, '{"query": "O-1001"}'))

    def reply(self, request: Request) -> Any:
        model = self

        class _Reply:
            blocks = model.blocks
            annotations: ClassVar[dict[str, Any]] = {}

        return _Reply()


class _Sink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)


def test_a_tool_name_reaches_the_harness_equal_but_not_the_same_object() -> None:
    model, sink = _Model(), _Sink()
    endpoint = Endpoint(SimulatedService("openai-128k"), model, sink)  # type: ignore[arg-type]
    resp = endpoint.call(Request("sys", (Message.text("user", "hi"),)))
    assert resp.blocks == model.blocks  # the same reply, value for value
    call = resp.blocks[2]
    assert isinstance(call, ToolCallBlock)
    # A harness that compares names with `is` works on the fake model's literal and fails on
    # every real API's decoded JSON: here it fails too.
    assert call.name == NAME and call.name is not NAME
    assert call.id is not model.blocks[2].id  # type: ignore[union-attr]
    assert resp.blocks[1].text is not model.blocks[1].text  # type: ignore[union-attr]
    # The record keeps the model's reply as it was given.
    assert sink.events[-1]["reply"] is model.blocks
