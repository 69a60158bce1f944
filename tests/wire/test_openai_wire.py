"""The OpenAI <-> Request conversion: round trips, multi-part content and images, the lossy
parts said out loud, and bad input named by field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.adapters.openai_wire import (
    completion,
    request_from_openai,
    request_to_openai,
    stream_chunks,
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
TOOL = {"type": "function", "function": {"name": "track_order", "description": "Track",
                                         "parameters": {"type": "object", "properties": {
                                             "order_id": {"type": "string"}}}}}

BODY: dict[str, Any] = {
    "model": "harnesslab",
    "messages": [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": [
            {"type": "text", "text": "这是包裹的照片"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/a.jpg"}},
            {"type": "text", "text": "O-1001 到哪了？"}]},
        {"role": "assistant", "reasoning_content": "look it up", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "track_order", "arguments": "{\"order_id\": \"O-1001\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"status\": \"in_transit\"}"},
        {"role": "assistant", "content": "在路上。"},
        {"role": "user", "content": "谢谢", "name": "alice"},
        {"role": "system", "content": "a later system note"},
    ],
    "tools": [TOOL],
    "max_completion_tokens": 300,
}


def test_openai_to_request_reads_every_part() -> None:
    r = request_from_openai(BODY, session_id="S-1")
    assert r.system == "You are a support agent."
    assert r.session_id == "S-1" and r.output_budget == 300
    user = r.messages[0]
    assert user.content == (TextBlock("这是包裹的照片"), DataBlock("image/png", PNG),
                            DataBlock("image/url", "https://example.invalid/a.jpg"),
                            TextBlock("O-1001 到哪了？"))
    call = r.messages[1]
    assert call.content == (ThinkingBlock("look it up"),
                            ToolCallBlock("c1", "track_order", "{\"order_id\": \"O-1001\"}"))
    # The tool message carries no name: it is the name of the call with its id.
    assert r.messages[2] == Message("tool", (ToolResultBlock("c1", "track_order",
                                                             "{\"status\": \"in_transit\"}"),))
    assert r.messages[4] == Message("user", (TextBlock("谢谢"),), name="alice")
    assert r.messages[5] == Message("system", (TextBlock("a later system note"),))
    # The schema's JSON text is kept as sent (key order included): what the tokenizer sees.
    assert r.tools == (ToolSchema("track_order", json.dumps(TOOL, ensure_ascii=False)),)


def test_normal_form_round_trips_exactly() -> None:
    r = request_from_openai(BODY)
    assert request_to_openai(r) == BODY
    assert request_from_openai(request_to_openai(r)) == r


def test_a_single_text_part_comes_back_as_a_string_and_means_the_same() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    r = request_from_openai(body)
    assert request_to_openai(r)["messages"] == [{"role": "user", "content": "hi"}]
    assert request_from_openai(request_to_openai(r)) == r


def test_request_in_agentscope_layout_becomes_tool_messages() -> None:
    # AgentScope keeps a call, its result and the answer in one assistant message.
    r = Request(system="sys", summary="earlier: O-1001", messages=(
        Message.text("user", "q"),
        Message("assistant", (HintBlock("<current-time>2026-11-30</current-time>"),
                              ToolCallBlock("c1", "track_order", "{}"),
                              ToolResultBlock("c1", "track_order", "ok", is_error=True),
                              TextBlock("done"))),
    ))
    msgs = request_to_openai(r)["messages"]
    assert msgs == [
        {"role": "system", "content": "sys"},
        {"role": "system", "content": "earlier: O-1001"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "<current-time>2026-11-30</current-time>"},
            {"type": "text", "text": "done"}],
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "track_order", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    back = request_from_openai({"messages": msgs})
    # What OpenAI has no place for is lost, and only that: the summary is a system message,
    # the hint a text, is_error gone.
    assert back.summary == "" and back.messages[0] == Message.text("system", "earlier: O-1001")
    assert back.messages[-1].content == (ToolResultBlock("c1", "track_order", "ok"),)


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_part = st.one_of(
    _text.map(lambda t: {"type": "text", "text": t}),
    st.sampled_from(["image/png", "image/jpeg"]).map(
        lambda m: {"type": "image_url", "image_url": {"url": f"data:{m};base64,{PNG}"}}),
)
_user = st.one_of(
    _text.map(lambda t: {"role": "user", "content": t}),
    st.lists(_part, min_size=2, max_size=4).map(lambda ps: {"role": "user", "content": ps}),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_user, _text, st.booleans()), min_size=1, max_size=4))
def test_round_trip_property(turns: list[tuple[dict[str, Any], str, bool]]) -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for k, (user, answer, tool) in enumerate(turns):
        msgs.append(user)
        if tool:
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function",
                 "function": {"name": "track_order", "arguments": json.dumps({"q": answer})}}]})
            msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": answer})
        msgs.append({"role": "assistant", "content": answer})
    body = {"model": "m", "messages": msgs, "tools": [TOOL]}
    assert request_to_openai(request_from_openai(body), model="m") == body


def _call(k: int, name: str = "track_order") -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": "{}"}}]}


_history = st.lists(st.one_of(
    _user, _text.map(lambda t: {"role": "assistant", "content": t}),
    st.integers(0, 2).map(_call),
    st.integers(0, 2).map(lambda k: {"role": "tool", "tool_call_id": f"c{k}", "content": "r"}),
    st.just({"role": "robot", "content": "bad"})), max_size=6)
_body = st.tuples(st.booleans(), _history, st.booleans()).map(lambda x: {
    "messages": [*([{"role": "system", "content": "s"}] if x[0] else []), *x[1]],
    "tools": [TOOL] if x[2] else []})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_body, st.sampled_from([0, 1, 1, 1, 2, 3])), min_size=1, max_size=6))
def test_a_body_converted_after_the_last_equals_it_converted_alone(
        steps: list[tuple[dict[str, Any], int]]) -> None:
    """A session's bodies grow, lose their head, change and fail; each converted after the
    last one is what it is alone, and a refused body leaves the last one as it was."""
    converts_as_alone(request_from_openai, steps, lambda msgs: {"messages": msgs})


def test_a_tool_result_after_a_changed_call_is_converted_again() -> None:
    """The control for the reuse: a tool message takes its name from the call before it, so an
    unchanged tool message after a changed call is not reused (per-message reuse would keep
    the old name)."""
    last = Converted()
    result = {"role": "tool", "tool_call_id": "c0", "content": "r"}
    first = request_from_openai({"messages": [_call(0), result]}, last=last)
    again = request_from_openai({"messages": [_call(0, "cancel_order"), result]}, last=last)
    assert first.messages[1].content[0].name == "track_order"  # type: ignore[union-attr]
    assert again.messages[1].content[0].name == "cancel_order"  # type: ignore[union-attr]
    # A new result after a reused call still finds the call's name.
    grown = request_from_openai({"messages": [_call(0, "cancel_order"), result, _call(1),
                                              {**result, "tool_call_id": "c0"}]}, last=last)
    assert grown.messages[3].content[0].name == "cancel_order"  # type: ignore[union-attr]
    # And what is unchanged is the same object: the converted message is reused.
    same = request_from_openai({"messages": [_call(0, "cancel_order"), result]}, last=last)
    assert same.messages[1] is again.messages[1]


@pytest.mark.parametrize(("body", "field", "match"), [
    ({"messages": []}, "messages", "non-empty list"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "unknown role"),
    ({"messages": [{"role": "user", "content": [{"type": "file"}]}]}, "messages[0].content[0]",
     "unsupported content part 'file'"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id", "tool_call_id"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_completion_tokens",
     "positive integer"),
])
def test_bad_input_names_the_field(body: dict[str, Any], field: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as e:
        request_from_openai(body)
    assert e.value.field == field


def test_completion_and_chunks() -> None:
    resp = Response((TextBlock("先查一下"), ToolCallBlock("c9", "track_order", "{\"order_id\":\"O-1\"}")),
                    120, 7)
    c = completion(resp, id="x", created=5, model="m")
    assert c["choices"][0]["finish_reason"] == "tool_calls"
    assert c["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == \
        "{\"order_id\":\"O-1\"}"
    assert c["usage"] == {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}
    chunks = list(stream_chunks(resp, id="x", created=5, model="m", include_usage=True))
    deltas = [ch["choices"][0]["delta"] for ch in chunks if ch["choices"]]
    text = "".join(d.get("content", "") for d in deltas)
    assert text == "先查一下"
    # The arguments come in pieces after a delta naming the call, as OpenAI streams them.
    parts = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert parts[0] == {"index": 0, "id": "c9", "type": "function",
                        "function": {"name": "track_order", "arguments": ""}}
    assert len(parts) == 3 and "".join(p["function"]["arguments"] for p in parts) == \
        "{\"order_id\":\"O-1\"}"
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 127
    plain = completion(Response((TextBlock("ok"),), 1, 1), id="x", created=5, model="m")
    assert plain["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in plain["choices"][0]["message"]
