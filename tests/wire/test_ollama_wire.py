"""Ollama's native chat API (``POST /api/chat``, ``adapters.ollama_wire``): every field read,
calls sent back without ids paired as Ollama pairs them, bad input named by field; and a
session driven by the official ``ollama`` client, streaming and not, with Ollama's own context
behaviour: a request over the window is truncated (oldest first, system messages kept) unless
``truncate`` is false, and ``num_ctx`` is the window the model is loaded with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnesslab.adapters.ollama_wire import (
    OllamaState,
    chat_object,
    request_from_ollama,
    stream_lines,
)
from harnesslab.errors import InputError
from harnesslab.judge.metrics import run_metrics
from harnesslab.messages import (
    DataBlock,
    Message,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from harnesslab.record.format import Record
from tests.markers import needs_tokenizers_extra
from tests.wire.support import Q1, run_tool, serving, tool_schemas

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
JPEG = "/9j/4AAQSkZJRgABAQAAAQABAAD"
TOOL = {"type": "function", "function": {"name": "track_order", "description": "Track",
                                         "parameters": {"type": "object", "properties": {
                                             "order_id": {"type": "string"}}}}}
ARGS = {"order_id": "O-1001"}

BODY: dict[str, Any] = {
    "model": "qwen3",
    "messages": [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "O-1001 到哪了？", "images": [PNG, JPEG]},
        {"role": "assistant", "content": "", "thinking": "look it up",
         "tool_calls": [{"id": "c1", "function": {"name": "track_order", "arguments": ARGS}}]},
        {"role": "tool", "content": "{\"status\": \"in_transit\"}", "tool_call_id": "c1"},
        {"role": "Assistant", "content": "在路上。"},
        {"role": "system", "content": "a later system note"},
    ],
    "tools": [TOOL],
    "options": {"num_predict": 300, "num_ctx": 8192, "temperature": 0},
    "format": "json",
    "stream": False,
}


def test_every_field_is_read() -> None:
    r = request_from_ollama(BODY, session_id="S-1")
    assert r.system == "You are a support agent." and r.session_id == "S-1"
    assert r.output_budget == 300
    assert r.messages[0].content == (TextBlock("O-1001 到哪了？"), DataBlock("image/png", PNG),
                                     DataBlock("image/jpeg", JPEG))
    assert r.messages[1].content == (ThinkingBlock("look it up"),
                                     ToolCallBlock("c1", "track_order", json.dumps(ARGS)))
    assert r.messages[2] == Message("tool", (ToolResultBlock(
        "c1", "track_order", "{\"status\": \"in_transit\"}"),))
    assert r.messages[3] == Message("assistant", (TextBlock("在路上。"),))  # any case
    assert r.messages[4] == Message("system", (TextBlock("a later system note"),))
    assert r.tools == (ToolSchema("track_order", json.dumps(TOOL, ensure_ascii=False)),)
    # Ollama's own context: the window it is loaded with and its truncation (the default),
    # and the format the model is asked to answer in.
    assert r.stated("window") == "8192" and r.stated("truncation") == "keep_system"
    assert r.stated_json("response_format") == {"type": "json_object"}
    off = request_from_ollama({**BODY, "truncate": False, "options": {"num_predict": -1},
                               "format": {"type": "object"}})
    assert off.stated("truncation") is None and off.stated("window") is None
    # -1: until done, into what the prompt leaves of the window (nothing reserved ahead)
    assert off.output_budget is None and off.stated("output") == "rest"
    assert r.stated("output") is None  # the control: num_predict 300 plans 300
    assert off.stated_json("response_format") == {
        "type": "json_schema", "json_schema": {"name": "format", "schema": {"type": "object"}}}


def _ids(r: Request) -> list[str]:
    return [b.id for m in r.messages for b in m.content
            if isinstance(b, ToolCallBlock | ToolResultBlock)]


def _answer(state: OllamaState, *calls: ToolCallBlock) -> None:
    state.answered(Response(calls, 10, 5))


def test_calls_sent_back_without_ids_get_the_ids_they_were_answered_with() -> None:
    # The official Python client keeps no call id: a call comes back as name and arguments,
    # its result as a tool message with (at most) the tool's name.
    state = OllamaState()
    _answer(state, ToolCallBlock("call_a", "track_order", json.dumps(ARGS)),
            ToolCallBlock("call_b", "track_order", '{"order_id": "O-1002"}'))
    body = {"messages": [
        {"role": "user", "content": Q1},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "track_order", "arguments": {"order_id": "O-1002"}}},
            {"function": {"name": "track_order", "arguments": ARGS}}]},
        {"role": "tool", "content": "second", "tool_name": "track_order"},
        {"role": "tool", "content": "first"}]}
    r = request_from_ollama(body, state=state)
    assert [c.id for c in r.messages[1].content if isinstance(c, ToolCallBlock)] == \
        ["call_b", "call_a"]
    # By order, as Ollama pairs them: the first open call, then the next.
    assert [m.content[0] for m in r.messages[2:]] == [
        ToolResultBlock("call_b", "track_order", "second"),
        ToolResultBlock("call_a", "track_order", "first")]
    # A tool name picks the first open call of that name; an id, its call.
    named = {"messages": [
        {"role": "user", "content": Q1},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "a", "arguments": {}}},
            {"function": {"name": "b", "arguments": {}}}]},
        {"role": "tool", "content": "from b", "tool_name": "b"},
        {"role": "tool", "content": "from a"}]}
    r2 = request_from_ollama(named)
    ids = _ids(r2)
    assert r2.messages[2].content[0] == ToolResultBlock(ids[1], "b", "from b")
    assert r2.messages[3].content[0] == ToolResultBlock(ids[0], "a", "from a")
    # The control: a result with no call open is no call's (the service refuses it).
    orphan = request_from_ollama({"messages": [{"role": "user", "content": Q1},
                                               {"role": "tool", "content": "x"}]})
    assert orphan.messages[1].content[0] == ToolResultBlock("", "", "x")


def _twice() -> OllamaState:
    state = OllamaState()
    _answer(state, ToolCallBlock("call_1", "track_order", json.dumps(ARGS)))
    _answer(state, ToolCallBlock("call_2", "track_order", json.dumps(ARGS)))
    return state


def test_equal_calls_get_their_ids_counted_from_the_latest() -> None:
    # The same call made in two turns: with both in the body each has its own id; with the
    # older dropped (a harness cuts its oldest history first), the one left is the latest.

    def turn() -> list[dict[str, Any]]:
        return [{"role": "user", "content": Q1},
                {"role": "assistant", "tool_calls": [{"function": {"name": "track_order",
                                                                   "arguments": ARGS}}]},
                {"role": "tool", "content": "r"}]

    # The control: a session that answered neither makes ids up, distinct and its own.
    made = request_from_ollama({"messages": [*turn(), *turn()]}, state=OllamaState())
    ids = set(_ids(made))
    assert len(ids) == 2 and not ids & {"call_1", "call_2"}
    both = request_from_ollama({"messages": [*turn(), *turn()]}, state=_twice())
    assert _ids(both) == ["call_1", "call_1", "call_2", "call_2"]
    latest = request_from_ollama({"messages": turn()}, state=_twice())
    assert _ids(latest) == ["call_2", "call_2"]


def test_a_body_sent_again_converts_only_what_changed() -> None:
    state = OllamaState()
    first = request_from_ollama(BODY, state=state)
    longer = {**BODY, "messages": [*BODY["messages"], {"role": "user", "content": "谢谢"}]}
    second = request_from_ollama(longer, state=state)
    assert all(a is b for a, b in zip(first.messages, second.messages[:-1], strict=False))
    assert second == request_from_ollama(longer)  # the same as converted alone


@pytest.mark.parametrize(("change", "field"), [
    ({"messages": []}, "messages"),
    ({"messages": [1]}, "messages[0]"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": ["x"]}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x", "images": [1]}]}, "messages[0].images"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "t",
                                                                      "arguments": "{}"}}]}]},
     "messages[0].tool_calls[0].function.arguments"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"name": "t"}]}]},
     "messages[0].tool_calls[0]"),
    ({"options": {"num_ctx": 0}}, "options.num_ctx"),
    ({"options": {"num_predict": 0}}, "options.num_predict"),
    ({"options": []}, "options"),
    ({"truncate": "yes"}, "truncate"),
    ({"format": "xml"}, "format"),
    ({"tools": [1]}, "tools[0]"),
])
def test_bad_input_is_named_by_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        request_from_ollama({**BODY, **change})
    assert e.value.field == field


def test_the_answer_streamed_joins_to_the_answer_whole() -> None:
    resp = Response((TextBlock("订单 O-1001 在途，预计 2026-11-30 送达。" * 3),
                     ToolCallBlock("call_x", "track_order", json.dumps(ARGS))), 120, 30)
    whole = chat_object(resp, model="m", at="2026-11-29T02:00:00Z")
    lines = [json.loads(x) for x in stream_lines(resp, model="m", at="2026-11-29T02:00:00Z")]
    assert all(not x["done"] for x in lines[:-1]) and lines[-1]["done"]
    assert "".join(x["message"]["content"] for x in lines) == whole["message"]["content"]
    assert [c for x in lines for c in x["message"].get("tool_calls", [])] == \
        whole["message"]["tool_calls"] == [
            {"id": "call_x", "function": {"index": 0, "name": "track_order", "arguments": ARGS}}]
    assert (whole["prompt_eval_count"], whole["eval_count"]) == (120, 30)
    assert (lines[-1]["prompt_eval_count"], lines[-1]["done_reason"]) == (120, "stop")


# --- over the wire, with the official client --------------------------------------------------

ollama = pytest.importorskip("ollama")
Q2 = "那我明天还要等吗？"
TIGHT = {"service.window": 400, "service.max_output": 100, "service.default_output": 100}
LONG = "这是一段很长的历史记录，用来填满上下文窗口。" * 6


def _client(url: str, key: str = "k") -> Any:
    return ollama.Client(host=url.removesuffix("/v1"), headers={"Authorization": f"Bearer {key}"})


def _turn(client: Any, url: str, msgs: list[Any], text: str, *, stream: bool) -> tuple[Any, int]:
    """One user turn as a harness on the ollama client writes it: the reply's message object
    appended as the client returns it (no call ids), each call's result as a tool message."""
    tools = [{"type": "function", "function": s} for s in tool_schemas(url, "k")]
    msgs.append({"role": "user", "content": text})
    calls = 0
    for _ in range(4):
        if stream:
            parts = list(client.chat(model="qwen3", messages=msgs, tools=tools, stream=True))
            content = "".join(p.message.content or "" for p in parts)
            got = [c for p in parts for c in (p.message.tool_calls or [])]
            msg = ollama.Message(role="assistant", content=content, tool_calls=got or None)
            final = parts[-1]
        else:
            final = client.chat(model="qwen3", messages=msgs, tools=tools)
            msg = final.message
        msgs.append(msg)
        if not msg.tool_calls:
            return final, calls
        calls += len(msg.tool_calls)
        for c in msg.tool_calls:
            msgs.append({"role": "tool", "tool_name": c.function.name, "content": run_tool(
                url, "k", c.function.name, json.dumps(dict(c.function.arguments)))})
    raise AssertionError("no answer in 4 requests")


@needs_tokenizers_extra
@pytest.mark.parametrize("stream", [False, True])
def test_the_ollama_client_runs_a_conversation_with_tools(tmp_path: Path, stream: bool) -> None:
    with serving(tmp_path) as (url, _):
        client = _client(url)
        msgs: list[Any] = [{"role": "system", "content": "You are a support agent."}]
        _, n1 = _turn(client, url, msgs, Q1, stream=stream)
        second, n2 = _turn(client, url, msgs, Q2, stream=stream)
        tags = httpx.get(f"{url.removesuffix('/v1')}/api/tags").json()
    assert n1 == 1 and "O-1001" in msgs[4].content and "2026-11-30" in msgs[4].content
    assert n2 == 0 and "O-1001" in msgs[-1].content
    assert second.done and second.prompt_eval_count > 0 and second.eval_count > 0
    assert tags["models"][0]["name"] == "harnesslab"
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = rec.of_type("model_call")
    assert len(calls) == 3 and calls[-1]["true_input"] == second.prompt_eval_count
    assert not rec.of_type("protocol_error")
    assert "server_truncation_rate" not in run_metrics(rec, [])  # nothing cut: no such metric
    # The call came back without its id and its result without one: both have the id the
    # model gave, so the result answers the call the model made.
    made = calls[0]["reply"][0]["id"]
    req = rec.request(calls[1]["request"])
    call, result = req.messages[1].content[0], req.messages[2].content[0]
    assert isinstance(call, ToolCallBlock) and isinstance(result, ToolResultBlock)
    assert call.id == result.id == made and result.name == "track_order"


@needs_tokenizers_extra
def test_over_the_window_ollama_truncates_unless_told_not_to(tmp_path: Path) -> None:
    history = [{"role": "system", "content": "You are a support agent."},
               {"role": "system", "content": "回答简单一点。"},
               {"role": "user", "content": LONG * 2},
               {"role": "assistant", "content": LONG * 2},
               {"role": "user", "content": Q1}]
    with serving(tmp_path, cli_set=TIGHT) as (url, _):
        client = _client(url)
        kept = client.chat(model="m", messages=history, stream=False)
        refused = httpx.post(f"{url.removesuffix('/v1')}/api/chat",
                             headers={"Authorization": "Bearer k"},
                             json={"model": "m", "messages": history, "truncate": False,
                                   "stream": False})
        # num_ctx loads the model with less: a request that fits the service's window does
        # not fit 100 tokens (the control: the same without it is answered whole).
        short = [{"role": "user", "content": LONG}, {"role": "user", "content": Q1}]
        whole = client.chat(model="m", messages=short, stream=False)
        cut = client.chat(model="m", messages=short, options={"num_ctx": 100}, stream=False)
    assert "O-1001" in kept.message.content
    rec = Record.load(tmp_path / "session1.jsonl")
    first, second, third = rec.of_type("model_call")
    assert first["truncated"] == 1 and first["true_input"] + first["planned_output"] <= 400
    seen = rec.request(first["request"])  # the oldest went; the system note before it stayed
    assert [m.role for m in seen.messages] == ["system", "assistant", "user"]
    assert seen.messages[0].plain_text() == "回答简单一点。"
    assert seen.system == "You are a support agent."
    overflow, = rec.of_type("overflow")
    assert "truncated" not in overflow and overflow["limit"] == 400
    assert "truncated" not in second and second["true_input"] == whole.prompt_eval_count
    assert third["truncated"] == 1 and third["true_input"] + third["planned_output"] <= 100
    assert cut.prompt_eval_count < whole.prompt_eval_count
    assert refused.status_code == 400 and refused.json() == {
        "error": "the input length exceeds the context length"}
    # The metrics say what the server hid: two of three answered calls cut, two messages gone
    # (the refused call is an overflow, not a cut).
    metrics = run_metrics(rec, [])
    assert metrics["server_truncation_rate"] == {"num": 2, "den": 3, "value": 2 / 3}
    assert metrics["server_dropped_messages"] == 2 and metrics["overflow_rate"]["num"] == 1


def test_refusals_are_ollamas_error_shape(tmp_path: Path) -> None:
    with serving(tmp_path, cli_set=TIGHT) as (url, _):
        base = url.removesuffix("/v1")
        key = {"Authorization": "Bearer k"}
        over = httpx.post(f"{base}/api/chat", headers=key, json={
            "model": "m", "stream": False, "truncate": False,
            "messages": [{"role": "user", "content": LONG * 6}]})
        bad = httpx.post(f"{base}/api/chat", headers=key, json={
            "model": "m", "messages": [{"role": "robot", "content": "x"}]})
        stranger = httpx.post(f"{base}/api/chat", json={
            "model": "m", "messages": [{"role": "user", "content": "x"}]})
        not_json = httpx.post(f"{base}/api/chat", headers=key, content=b"{")
    assert over.status_code == 400 and over.json() == {
        "error": "the input length exceeds the context length"}
    assert bad.status_code == 400 and bad.json()["error"].startswith("messages[0].role: ")
    assert stranger.status_code == 401 and set(stranger.json()) == {"error"}
    assert not_json.status_code == 400 and set(not_json.json()) == {"error"}


@needs_tokenizers_extra
def test_show_states_the_services_window_as_the_context_length(tmp_path: Path) -> None:
    # LlamaIndex's Ollama asks /api/show for the context length and sends it as num_ctx: the
    # service's true window, as a model server states its model's (the control: another
    # window, another length).
    lengths = []
    for window in (400, 6000):
        with serving(tmp_path / str(window), cli_set={**TIGHT, "service.window": window}) \
                as (url, _):
            shown = _client(url).show("qwen3")
        lengths.append({k: v for k, v in (shown.modelinfo or {}).items()
                        if k.endswith("context_length")})
        assert "tools" in (shown.capabilities or [])
    assert lengths == [{"harnesslab.context_length": 400}, {"harnesslab.context_length": 6000}]
