"""The OpenAI Responses <-> Request conversion: every input item, the round trip of the normal
form (a property), stored conversations for previous_response_id, the streamed events joining
to the answer, and bad input named by field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.adapters.responses_wire import (
    Conversation,
    request_from_responses,
    request_to_responses,
    response_object,
    stream_events,
)
from harnesslab.errors import InputError
from harnesslab.messages import (
    DataBlock,
    Message,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TOOL = {"type": "function", "name": "track_order", "description": "Track",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "strict": False}

BODY: dict[str, Any] = {
    "model": "harnesslab",
    "instructions": "You are a support agent.",
    "input": [
        {"type": "message", "role": "developer", "content": "sandbox: read-only"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "这是包裹的照片"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
            {"type": "input_image", "image_url": "https://example.invalid/a.jpg"},
            {"type": "input_image", "file_id": "file-1"},
            {"type": "input_text", "text": "O-1001 到哪了？"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "look it up"}],
         "id": "rs_1"},
        {"type": "function_call", "call_id": "c1", "name": "track_order",
         "arguments": "{\"order_id\": \"O-1001\"}", "id": "fc_1"},
        {"type": "function_call_output", "call_id": "c1",
         "output": "{\"status\": \"in_transit\"}"},
        {"type": "message", "role": "assistant", "content": "在路上。", "id": "msg_1"},
        {"type": "message", "role": "user", "content": "谢谢"},
    ],
    "tools": [TOOL, {"type": "web_search"}],
    "max_output_tokens": 300,
}


def test_every_input_item_is_read() -> None:
    r = request_from_responses(BODY, session_id="S-1")
    assert r.system == "You are a support agent." and r.output_budget == 300
    assert r.session_id == "S-1"
    assert r.messages[0] == Message.text("system", "sandbox: read-only")
    assert r.messages[1].content == (
        TextBlock("这是包裹的照片"), DataBlock("image/png", PNG),
        DataBlock("image/url", "https://example.invalid/a.jpg"), DataBlock("image/file", "file-1"),
        TextBlock("O-1001 到哪了？"))
    assert r.messages[2] == Message("assistant", (ThinkingBlock("look it up"),), id="rs_1")
    assert r.messages[3] == Message("assistant", (ToolCallBlock(
        "c1", "track_order", "{\"order_id\": \"O-1001\"}"),), id="fc_1")
    # The output carries no name: it is the name of the call with its call_id.
    assert r.messages[4] == Message("tool", (ToolResultBlock(
        "c1", "track_order", "{\"status\": \"in_transit\"}"),))
    assert r.messages[5] == Message("assistant", (TextBlock("在路上。"),), id="msg_1")
    # A built-in tool without a name is kept under its type, its JSON text as sent.
    assert r.tools == (ToolSchema("track_order", json.dumps(TOOL, ensure_ascii=False)),
                       ToolSchema("web_search", "{\"type\": \"web_search\"}"))


def test_normal_form_round_trips_exactly() -> None:
    r = request_from_responses(BODY)
    assert request_to_responses(r) == BODY
    assert request_from_responses(request_to_responses(r)) == r


def test_a_string_input_is_one_user_message_and_easy_items_have_no_type() -> None:
    r = request_from_responses({"input": "hi"})
    assert r.messages == (Message.text("user", "hi"),) and r.system == ""
    easy = request_from_responses({"input": [{"role": "system", "content": "s"},
                                             {"role": "user", "content": "q"}]})
    # A system item is read as the developer item it is written as (the API treats them
    # alike): said in the module docstring as lossy.
    assert request_to_responses(easy)["input"] == [
        {"type": "message", "role": "developer", "content": "s"},
        {"type": "message", "role": "user", "content": "q"}]


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_part = st.one_of(
    _text.map(lambda t: {"type": "input_text", "text": t}),
    st.just({"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}),
    st.just({"type": "input_image", "file_id": "file-9"}))
_user = st.one_of(
    _text.map(lambda t: {"type": "message", "role": "user", "content": t}),
    st.lists(_part, min_size=2, max_size=4).map(
        lambda ps: {"type": "message", "role": "user", "content": ps}))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_user, _text, st.booleans(), st.booleans()), min_size=1, max_size=4),
       st.one_of(st.none(), _text))
def test_round_trip_property(turns: list[tuple[dict[str, Any], str, bool, bool]],
                             instructions: str | None) -> None:
    items: list[dict[str, Any]] = []
    for k, (user, answer, tool, think) in enumerate(turns):
        items.append(user)
        if think:
            items.append({"type": "reasoning", "summary": [
                {"type": "summary_text", "text": answer}, {"type": "summary_text", "text": "b"}]})
        if tool:
            items.append({"type": "function_call", "call_id": f"c{k}", "name": "track_order",
                          "arguments": json.dumps({"q": answer})})
            items.append({"type": "function_call_output", "call_id": f"c{k}", "output": answer})
        items.append({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": answer}, {"type": "output_text", "text": "."}]})
    body: dict[str, Any] = {"model": "m", "input": items, "tools": [TOOL]}
    if instructions:
        body["instructions"] = instructions
    assert request_to_responses(request_from_responses(body), model="m") == body


@pytest.mark.parametrize(("body", "field", "match"), [
    ({"input": 3}, "input", "string or a list of input items"),
    ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role", "unknown role"),
    ({"input": [{"type": "computer_call"}]}, "input[0].type", "unsupported input item"),
    ({"input": [{"role": "user", "content": [{"type": "input_file"}]}]}, "input[0].content[0]",
     "unsupported content part 'input_file'"),
    ({"input": [{"type": "function_call", "name": "x"}]}, "input[0].call_id", "call_id"),
    ({"input": "x", "tools": [1, 2]}, "tools[0]", "a tool needs"),
    ({"input": "x", "tools": [{"type": "namespace", "name": "mcp__s"}]}, "tools[0]",
     "a namespace tool needs"),
    ({"input": "x", "tools": [{"type": "namespace", "name": "mcp__s", "tools": [{}]}]},
     "tools[0].tools[0]", "a tool needs"),
    ({"input": "x", "max_output_tokens": 0}, "max_output_tokens", "positive integer"),
])
def test_bad_input_names_the_field(body: dict[str, Any], field: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as e:
        request_from_responses(body)
    assert e.value.field == field


RESP = Response((TextBlock("先查一下，马上告诉你结果。订单 O-1001 正在运输途中，请稍候。"),
                 ToolCallBlock("c9", "track_order", "{\"order_id\":\"O-1001\"}")), 120, 7)


def test_response_object_and_stream_events_agree() -> None:
    body = {"input": "q", "tools": [TOOL]}
    full = response_object(RESP, body, id="S_1", created=5, model="m")
    assert full["status"] == "completed" and full["usage"]["total_tokens"] == 127
    assert [o["type"] for o in full["output"]] == ["message", "function_call"]
    assert full["output"][1]["call_id"] == "c9" and full["output"][1]["id"] == "fc_S_1_0"
    events = list(stream_events(RESP, body, id="S_1", created=5, model="m"))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created" and events[-1]["response"] == full
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    args = "".join(e["delta"] for e in events
                   if e["type"] == "response.function_call_arguments.delta")
    assert text == RESP.text and args == RESP.tool_calls[0].input
    # The pieces are small: a client must join them, as with the real API.
    assert len([e for e in events if e["type"] == "response.output_text.delta"]) > 1
    kinds = [e["type"] for e in events]
    assert kinds.count("response.output_item.added") == kinds.count(
        "response.output_item.done") == 2


def test_a_namespace_tool_is_its_function_tools_and_a_call_names_the_namespace() -> None:
    # Codex 0.171 offers an MCP server's tools as one namespace tool; the model must see each
    # function (a group kept whole under its name offered the model no track_order at all),
    # and a call must come back with the namespace, or Codex cannot route it to the server.
    inner = {k: v for k, v in TOOL.items() if k != "strict"}
    body = {"input": "q", "tools": [{"type": "namespace", "name": "mcp__harnesslab",
                                     "description": "d", "tools": [inner]}, {"type": "web_search"}]}
    tools = request_from_responses(body).tools
    assert [t.name for t in tools] == ["track_order", "web_search"]
    assert json.loads(tools[0].json) == {**inner, "namespace": "mcp__harnesslab"}
    out = response_object(RESP, body, id="S_1", created=5, model="m")["output"][1]
    assert out["name"] == "track_order" and out["namespace"] == "mcp__harnesslab"
    events = list(stream_events(RESP, body, id="S_1", created=5, model="m"))
    assert events[-2]["item"]["namespace"] == "mcp__harnesslab"
    # Control: the same function offered on its own is answered without a namespace.
    plain = response_object(RESP, {"input": "q", "tools": [TOOL]}, id="S_1", created=5,
                            model="m")["output"][1]
    assert "namespace" not in plain


def test_a_stored_response_continues_its_conversation() -> None:
    conv = Conversation()
    first = {"input": "q1"}
    items = conv.items(first)
    conv.store(first, items, RESP, id="S_1")
    follow = {"input": [{"type": "function_call_output", "call_id": "c9", "output": "ok"}],
              "previous_response_id": "resp_S_1"}
    r = request_from_responses(follow, items=conv.items(follow))
    assert [m.role for m in r.messages] == ["user", "assistant", "assistant", "tool"]
    assert r.messages[3].content == (ToolResultBlock("c9", "track_order", "ok"),)
    # store: false keeps nothing; an unknown id is the API's not-found.
    conv.store({"input": "q", "store": False}, items, RESP, id="S_2")
    with pytest.raises(KeyError):
        conv.items({"input": "q", "previous_response_id": "resp_S_2"})
