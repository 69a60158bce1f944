"""``tool_choice`` over the three wires: read into the request's meta, written back into a body,
refused as the real APIs refuse it, and obeyed by the fake model behind ``harnesslab serve``
(the official SDKs as clients)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnesslab.adapters.anthropic_wire import request_from_anthropic, request_to_anthropic
from harnesslab.adapters.openai_wire import request_from_openai, request_to_openai
from harnesslab.adapters.responses_wire import request_from_responses, request_to_responses
from harnesslab.errors import InputError
from harnesslab.messages import Message, Request, ToolSchema
from harnesslab.record.format import Record
from tests.wire.support import Q1, serving

FN = {"name": "track_order", "description": "", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}
MSG = [{"role": "user", "content": "hi"}]


def meta_openai(choice: Any, tools: list[Any] | None = None) -> tuple[tuple[str, str], ...]:
    body: dict[str, Any] = {"messages": MSG, "tools": [{"type": "function", "function": FN}]
                            if tools is None else tools}
    if choice is not None:
        body["tool_choice"] = choice
    return request_from_openai(body).meta


def meta_responses(choice: Any) -> tuple[tuple[str, str], ...]:
    return request_from_responses({"input": "hi", "tool_choice": choice,
                                   "tools": [{"type": "function", **FN}]}).meta


def meta_anthropic(choice: Any) -> tuple[tuple[str, str], ...]:
    return request_from_anthropic({"max_tokens": 5, "messages": MSG, "tool_choice": choice,
                                   "tools": [{"name": "track_order", "input_schema":
                                              FN["parameters"]}]}).meta


def test_each_wire_reads_its_own_spelling() -> None:
    named = (("tool_choice", "track_order"),)
    assert meta_openai(None) == meta_openai("auto") == ()
    assert meta_openai("none") == (("tool_choice", "none"),)
    assert meta_openai("required") == (("tool_choice", "required"),)
    assert meta_openai({"type": "function", "function": {"name": "track_order"}}) == named
    assert meta_openai({"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": []}}) == (("tool_choice", "required"),)
    assert meta_responses("auto") == ()
    assert meta_responses("required") == (("tool_choice", "required"),)
    assert meta_responses({"type": "function", "name": "track_order"}) == named
    assert meta_responses({"type": "file_search"}) == ()  # a hosted tool: not the bench's
    assert meta_anthropic({"type": "auto"}) == ()
    assert meta_anthropic({"type": "none"}) == (("tool_choice", "none"),)
    assert meta_anthropic({"type": "any", "disable_parallel_tool_use": True}) == \
        (("tool_choice", "required"),)
    assert meta_anthropic({"type": "tool", "name": "track_order"}) == named


@pytest.mark.parametrize("value", ["none", "required", "track_order"])
def test_a_choice_round_trips_through_every_wire(value: str) -> None:
    r = Request("", (Message.text("user", "hi"),),
                tools=(ToolSchema.from_dict({"type": "function", "function": FN}),),
                output_budget=5, meta=(("tool_choice", value),))
    assert request_from_openai(request_to_openai(r)).meta == r.meta
    flat = Request("", r.messages, tools=(ToolSchema.from_dict({"type": "function", **FN}),),
                   output_budget=5, meta=r.meta)
    assert request_from_responses(request_to_responses(flat)).meta == r.meta
    native = ToolSchema.from_dict({"name": "track_order", "input_schema": FN["parameters"]})
    a = Request("", r.messages, tools=(native,), output_budget=5, meta=r.meta)
    assert request_from_anthropic(request_to_anthropic(a)).meta == r.meta
    # The reference harness's "forced" with its one tool is that tool, by name, on the wire.
    forced = Request("", r.messages, tools=r.tools, meta=(("tool_choice", "forced"),))
    assert request_to_openai(forced)["tool_choice"] == {
        "type": "function", "function": {"name": "track_order"}}
    restated = Request("", r.messages, tools=r.tools, meta=(("tool_choice", "required"),
                                                           ("tool_choice", "none")))
    assert request_to_openai(restated)["tool_choice"] == "none"  # the last stated wins


@pytest.mark.parametrize("choice, field, match", [
    ({"type": "function", "function": {"name": "nope"}}, "tool_choice.function.name",
     "'nope' is not among the tools"),
    ({"type": "function"}, "tool_choice.function.name", "expected the name of a tool"),
    ("sometimes", "tool_choice", "expected 'none', 'auto', 'required' or a tool"),
    (3, "tool_choice", "expected 'none', 'auto', 'required' or a tool"),
    ({"type": "file_search"}, "tool_choice", "expected 'none', 'auto', 'required' or a tool"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "x"}},
     "tool_choice.allowed_tools.mode", "expected 'auto' or 'required'"),
])
def test_a_bad_choice_names_the_field(choice: Any, field: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as e:
        meta_openai(choice)
    assert e.value.field == field


def test_a_forced_choice_without_tools_is_refused_but_none_is_not() -> None:
    with pytest.raises(InputError, match="needs at least one tool") as e:
        meta_openai("required", tools=[])
    assert e.value.field == "tool_choice"
    assert meta_openai("none", tools=[]) == (("tool_choice", "none"),)
    with pytest.raises(InputError) as a:
        meta_anthropic({"type": "tool", "name": "other"})
    assert a.value.field == "tool_choice.name"
    with pytest.raises(InputError) as b:
        meta_anthropic("any")  # Anthropic's choice is an object
    assert b.value.field == "tool_choice.type"


# --- obeyed behind serve, by the official SDKs -------------------------------------------------

def _tools(url: str) -> list[dict[str, Any]]:
    import httpx

    r = httpx.get(f"{url.removesuffix('/v1')}/harnesslab/tools",
                  headers={"Authorization": "Bearer k"})
    out: list[dict[str, Any]] = [t["function"] for t in r.json()["tools"]]
    return out


def test_chat_completions_honours_none_and_a_named_tool(tmp_path: Path) -> None:
    openai = pytest.importorskip("openai")
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        tools = [{"type": "function", "function": f} for f in _tools(url)]
        msgs = [{"role": "user", "content": Q1}]
        auto = client.chat.completions.create(model="m", messages=msgs, tools=tools)
        none = client.chat.completions.create(model="m", messages=msgs, tools=tools,
                                              tool_choice="none")
        other = next(t["function"]["name"] for t in tools
                     if t["function"]["name"] != auto.choices[0].message.tool_calls[0].function.name)
        named = client.chat.completions.create(
            model="m", messages=msgs, tools=tools,
            tool_choice={"type": "function", "function": {"name": other}})
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="m", messages=msgs, tools=tools,
                       tool_choice={"type": "function", "function": {"name": "nope"}})
    assert auto.choices[0].finish_reason == "tool_calls"  # the control: it wants to look up
    assert none.choices[0].finish_reason == "stop" and not none.choices[0].message.tool_calls
    assert [c.function.name for c in named.choices[0].message.tool_calls] == [other]
    assert e.value.status_code == 400 and e.value.param == "tool_choice.function.name"
    rec = Record.load(tmp_path / "session1.jsonl")
    metas = [dict(rec.request(c["request"]).meta).get("tool_choice")
             for c in rec.of_type("model_call")]
    assert metas == [None, "none", other]  # the refused request recorded nothing


def test_anthropic_any_always_calls_a_tool(tmp_path: Path) -> None:
    anthropic = pytest.importorskip("anthropic")
    with serving(tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k",
                                     max_retries=0)
        tools = [{"name": f["name"], "input_schema": f["parameters"]} for f in _tools(url)]
        msgs = [{"role": "user", "content": "谢谢！"}]
        auto = client.messages.create(model="m", max_tokens=200, messages=msgs, tools=tools)
        forced = client.messages.create(model="m", max_tokens=200, messages=msgs, tools=tools,
                                        tool_choice={"type": "any"})
    assert auto.stop_reason == "end_turn"  # the control: small talk needs no tool
    assert forced.stop_reason == "tool_use"
    assert [b.type for b in forced.content] == ["tool_use"]


def test_the_native_wire_keeps_only_the_api_parameters_of_the_meta(tmp_path: Path) -> None:
    import httpx

    def post(url: str, meta: Any) -> httpx.Response:
        return httpx.post(url.removesuffix("/v1") + "/harnesslab/v1/request",
                          headers={"Authorization": "Bearer k"},
                          json={"request": {"system": "", "output_budget": 256,
                                            "messages": [{"role": "user", "content": [
                                                {"type": "text", "text": Q1}]}],
                                            "tools": [{"type": "function", "function": FN}],
                                            "meta": meta}})
    with serving(tmp_path) as (url, _):
        auto = post(url, [["purpose", "summary"]])
        none = post(url, [["purpose", "summary"], ["tool_choice", "none"]])
        bad = post(url, [["tool_choice"]])
    assert [b["type"] for b in auto.json()["blocks"]] == ["tool_call"]  # the control
    assert [b["type"] for b in none.json()["blocks"]] == ["text"]
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "request.meta"
    rec = Record.load(tmp_path / "session1.jsonl")
    assert [rec.request(c["request"]).meta for c in rec.of_type("model_call")] == [
        (), (("tool_choice", "none"),)]
