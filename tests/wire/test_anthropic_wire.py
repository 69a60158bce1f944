"""The Anthropic Messages <-> Request conversion: every block, the round trip of the normal form
(a property), AgentScope's layout written as Anthropic requires, the streamed events joining to
the answer, and bad input named by field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.adapters.anthropic_wire import (
    message_object,
    request_from_anthropic,
    request_to_anthropic,
    stream_events,
)
from harnesslab.errors import InputError
from harnesslab.messages import (
    Converted,
    DataBlock,
    HintBlock,
    Message,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from tests.wire.support import converts_as_alone

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TOOL = {"name": "track_order", "description": "Track",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}

BODY: dict[str, Any] = {
    "model": "harnesslab",
    "max_tokens": 300,
    "system": "You are a support agent.",
    "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "这是包裹的照片"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.jpg"}},
            {"type": "text", "text": "O-1001 到哪了？"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look it up"},
            {"type": "text", "text": "查一下"},
            {"type": "tool_use", "id": "t1", "name": "track_order",
             "input": {"order_id": "O-1001"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "{\"status\": \"x\"}",
             "is_error": True},
            {"type": "text", "text": "谢谢"}]},
        {"role": "assistant", "content": "不客气"},
    ],
    "tools": [TOOL],
}


def test_every_block_is_read() -> None:
    r = request_from_anthropic(BODY, session_id="S-1")
    assert r.system == "You are a support agent." and r.output_budget == 300
    assert r.messages[0].content == (TextBlock("这是包裹的照片"), DataBlock("image/png", PNG),
                                     DataBlock("image/url", "https://example.invalid/a.jpg"),
                                     TextBlock("O-1001 到哪了？"))
    assert r.messages[1].content == (ThinkingBlock("look it up"), TextBlock("查一下"),
                                     ToolCallBlock("t1", "track_order",
                                                   "{\"order_id\": \"O-1001\"}"))
    # The result keeps its place at the head of the user message, named after its call.
    assert r.messages[2].content == (ToolResultBlock("t1", "track_order", "{\"status\": \"x\"}",
                                                     is_error=True), TextBlock("谢谢"))
    assert r.tools == (ToolSchema("track_order", json.dumps(TOOL, ensure_ascii=False)),)


def test_normal_form_round_trips_exactly() -> None:
    r = request_from_anthropic(BODY)
    assert request_to_anthropic(r) == BODY
    assert request_from_anthropic(request_to_anthropic(r)) == r


def test_system_blocks_join_and_agentscope_layout_moves_results() -> None:
    r = request_from_anthropic({"max_tokens": 5, "system": [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "b"}], "messages": [{"role": "user", "content": "q"}]})
    assert r.system == "a\n\nb"
    agentscope = Request(system="s", messages=(
        Message.text("user", "q"),
        Message("assistant", (HintBlock("now"), ToolCallBlock("c1", "track_order", "{}"),
                              ToolResultBlock("c1", "track_order", "ok"), TextBlock("done")))))
    body = request_to_anthropic(agentscope)
    assert body["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "now"},
                                          {"type": "tool_use", "id": "c1", "name": "track_order",
                                           "input": {}},
                                          {"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": "ok"}]}]


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_block = st.one_of(
    _text.map(lambda t: {"type": "text", "text": t}),
    st.just({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG}}))
_user = st.one_of(_text, st.lists(_block, min_size=2, max_size=4))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_user, _text, st.booleans(), st.booleans()), min_size=1, max_size=4))
def test_round_trip_property(turns: list[tuple[Any, str, bool, bool]]) -> None:
    msgs: list[dict[str, Any]] = []
    for k, (user, answer, tool, error) in enumerate(turns):
        msgs.append({"role": "user", "content": user})
        if tool:
            msgs.append({"role": "assistant", "content": [
                {"type": "text", "text": answer},
                {"type": "tool_use", "id": f"t{k}", "name": "track_order",
                 "input": {"q": answer, "n": k}}]})
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"t{k}",
                                      "content": [{"type": "text", "text": answer}]}
            if error:
                result["is_error"] = True
            msgs.append({"role": "user", "content": [result, {"type": "text", "text": "go"}]})
        msgs.append({"role": "assistant", "content": answer})
    body = {"model": "m", "max_tokens": 9, "messages": msgs, "tools": [TOOL]}
    assert request_to_anthropic(request_from_anthropic(body), model="m") == body


@pytest.mark.parametrize(("body", "field", "match"), [
    ({"messages": [{"role": "user", "content": "x"}]}, "max_tokens", "Field required"),
    ({"max_tokens": 5, "messages": []}, "messages", "non-empty list"),
    ({"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}, "messages[0].role",
     "unknown role"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use"}]}]},
     "messages[0].content[0]", "unsupported content block 'tool_use' in a user message"),
    ({"max_tokens": 5, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "n", "input": "x"}]}]},
     "messages[0].content[0]", "object 'input'"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [1, 2]},
     "tools[0]", "a tool needs"),
    ({"max_tokens": 5, "system": 3, "messages": [{"role": "user", "content": "x"}]}, "system",
     "list of text blocks"),
])
def test_bad_input_names_the_field(body: dict[str, Any], field: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as e:
        request_from_anthropic(body)
    assert e.value.field == field


def test_message_and_stream_events_agree() -> None:
    resp = Response((TextBlock("先查一下，马上告诉你结果。"),
                     ToolCallBlock("c9", "track_order", "{\"order_id\": \"O-1001\"}")), 120, 7)
    m = message_object(resp, id="S_1", model="m")
    assert m["stop_reason"] == "tool_use" and m["usage"] == {"input_tokens": 120,
                                                             "output_tokens": 7}
    assert m["content"][1] == {"type": "tool_use", "id": "c9", "name": "track_order",
                               "input": {"order_id": "O-1001"}}
    events = list(stream_events(resp, id="S_1", model="m"))
    assert [e["type"] for e in events][:2] == ["message_start", "content_block_start"]
    assert events[-2]["delta"]["stop_reason"] == "tool_use" and events[-1]["type"] == "message_stop"
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "text_delta")
    args = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "input_json_delta")
    assert text == resp.text and json.loads(args) == {"order_id": "O-1001"}
    plain = message_object(Response((TextBlock("ok"),), 1, 1), id="x", model="m")
    assert plain["stop_reason"] == "end_turn"


def _use(k: int, name: str = "track_order") -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": f"t{k}", "name": name, "input": {}}]}


def _result(k: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                         "content": "r"}]}


_msg = st.one_of(st.text(max_size=5).map(lambda t: {"role": "user", "content": t}),
                 st.text(max_size=5).map(lambda t: {"role": "assistant", "content": t}),
                 st.integers(0, 2).map(_use), st.integers(0, 2).map(_result),
                 st.just({"role": "system", "content": "not in Messages"}))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(_msg, min_size=1, max_size=5), st.booleans(),
                          st.sampled_from([0, 1, 1, 2])), min_size=1, max_size=6))
def test_a_body_converted_after_the_last_equals_it_converted_alone(
        steps: list[tuple[list[dict[str, Any]], bool, int]]) -> None:
    """A session's bodies grow, lose their head, change and fail; each converted after the
    last one (``messages.Converted``) is what it is alone, and a refused one changes nothing."""
    bodies = [({"max_tokens": 50, "messages": msgs, "tools": [TOOL] if tools else []}, keep)
              for msgs, tools, keep in steps]
    converts_as_alone(request_from_anthropic, bodies, lambda msgs: {"messages": msgs})


def test_a_result_after_a_reused_or_changed_call_takes_the_call_name() -> None:
    """The control for the reuse: a tool result takes its name from the call before it."""
    last = Converted()
    body = {"max_tokens": 50, "messages": [_use(0), _result(0)]}
    assert request_from_anthropic(body, last=last).messages[1].content[0].name == "track_order"  # type: ignore[union-attr]
    changed = {**body, "messages": [_use(0, "cancel_order"), _result(0)]}
    again = request_from_anthropic(changed, last=last)
    assert again.messages[1].content[0].name == "cancel_order"  # type: ignore[union-attr]
    grown = {**body, "messages": [*changed["messages"], _use(1), _result(0)]}
    r = request_from_anthropic(grown, last=last)
    assert r.messages[3].content[0].name == "cancel_order"  # type: ignore[union-attr]
    assert r.messages[1] is again.messages[1]  # the unchanged run is reused
