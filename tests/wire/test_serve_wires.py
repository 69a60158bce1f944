"""The Responses and Anthropic Messages wires of ``harnesslab serve``, driven by the official
SDKs (``openai``'s Responses client, ``anthropic``): a two-turn conversation with a tool call,
streaming and not, each API's own over-window error; and the bodies every wire refuses with a
400 before anything is recorded (issue 22)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harnesslab.record.format import Record
from tests.wire.support import Q1, run_tool, serving, tool_schemas

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

Q2 = "那我明天还要等吗？"
TIGHT = {"service.window": 400, "service.max_output": 100, "service.default_output": 100}


def _responses_turn(client: Any, url: str, key: str, text: str, *, stream: bool,
                    previous: str | None, history: list[Any] | None) -> tuple[Any, int]:
    """One user turn on the Responses API: ask, run each function call, ask again, until an
    answer. ``history`` (store: false, as Codex does) is resent whole; otherwise each request
    continues the last response by ``previous_response_id``. Returns the answer and the
    number of tool calls."""
    tools = [{"type": "function", **s} for s in tool_schemas(url, key)]
    new: list[Any] = [{"role": "user", "content": text}]
    calls = 0
    for _ in range(4):
        kw: dict[str, Any] = {"model": "harnesslab", "instructions": "You are a support agent.",
                              "tools": tools}
        if history is not None:
            history += new
            kw.update(input=history, store=False)
        else:
            kw.update(input=new, previous_response_id=previous)
        if stream:
            with client.responses.stream(**kw) as s:
                kinds = {e.type for e in s}
                resp = s.get_final_response()
            assert {"response.created", "response.completed"} <= kinds
        else:
            resp = client.responses.create(**kw)
        previous = resp.id
        fcs = [o for o in resp.output if o.type == "function_call"]
        if history is not None:
            history += [o.model_dump(exclude_none=True) for o in resp.output]
        if not fcs:
            return resp, calls
        calls += len(fcs)
        new = [{"type": "function_call_output", "call_id": c.call_id,
                "output": run_tool(url, key, c.name, c.arguments)} for c in fcs]
    raise AssertionError("no answer in 4 requests")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("store", [True, False])
def test_responses_client_runs_a_conversation_with_tools(tmp_path: Path, stream: bool,
                                                         store: bool) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        history = None if store else []
        first, n1 = _responses_turn(client, url, "k", Q1, stream=stream, previous=None,
                                    history=history)
        second, n2 = _responses_turn(client, url, "k", Q2, stream=stream, previous=first.id,
                                     history=history)
    assert n1 == 1 and "O-1001" in first.output_text and "2026-11-30" in first.output_text
    # The follow-up is answered from the conversation the server stored (or the client
    # resent): the order and its ETA, without a second lookup.
    assert n2 == 0 and "O-1001" in second.output_text and "2026-11-30" in second.output_text
    assert first.usage.input_tokens > 0
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = rec.of_type("model_call")
    assert len(calls) == 3
    last = rec.request(calls[-1]["request"])
    # Whichever way the history came, the bench's request is the whole conversation.
    assert [m.role for m in last.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert last.system == "You are a support agent."
    assert calls[-1]["true_input"] == second.usage.input_tokens


def test_an_unknown_previous_response_is_not_found(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        kept = client.responses.create(model="harnesslab", input=Q1, store=False)
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="harnesslab", input=Q2, previous_response_id=kept.id)
    assert e.value.code == "previous_response_not_found"


def test_responses_over_window_is_context_length_exceeded(tmp_path: Path) -> None:
    with serving(tmp_path, cli_set=TIGHT) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="harnesslab", instructions="支持 " * 300, input=Q1)
        small = client.responses.create(model="harnesslab", input=Q1, max_output_tokens=50)
    assert e.value.status_code == 400 and e.value.code == "context_length_exceeded"
    assert "exceeds the context window" in str(e.value)
    assert "O-1001" in small.output_text  # the control: within the window it is answered


def _anthropic_turn(client: Any, url: str, key: str, msgs: list[Any], text: str, *,
                    stream: bool) -> tuple[Any, int]:
    tools = [{"name": s["name"], "description": s.get("description", ""),
              "input_schema": s["parameters"]} for s in tool_schemas(url, key)]
    msgs.append({"role": "user", "content": text})
    calls = 0
    for _ in range(4):
        kw = {"model": "harnesslab", "max_tokens": 512, "system": "You are a support agent.",
              "messages": msgs, "tools": tools}
        if stream:
            with client.messages.stream(**kw) as s:
                pieces = "".join(s.text_stream)
                msg = s.get_final_message()
            assert pieces == "".join(b.text for b in msg.content if b.type == "text")
        else:
            msg = client.messages.create(**kw)
        msgs.append({"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                      for b in msg.content]})
        uses = [b for b in msg.content if b.type == "tool_use"]
        if msg.stop_reason != "tool_use":
            return msg, calls
        calls += len(uses)
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id,
             "content": run_tool(url, key, b.name, json.dumps(b.input, ensure_ascii=False))}
            for b in uses]})
    raise AssertionError("no answer in 4 requests")


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_client_runs_a_conversation_with_tools(tmp_path: Path, stream: bool) -> None:
    with serving(tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k",
                                     max_retries=0)
        msgs: list[Any] = []
        first, n1 = _anthropic_turn(client, url, "k", msgs, Q1, stream=stream)
        second, n2 = _anthropic_turn(client, url, "k", msgs, Q2, stream=stream)
    text = [" ".join(b.text for b in m.content if b.type == "text") for m in (first, second)]
    assert n1 == 1 and "O-1001" in text[0] and "2026-11-30" in text[0]
    assert n2 == 0 and "O-1001" in text[1] and "2026-11-30" in text[1]
    assert second.stop_reason == "end_turn" and second.usage.input_tokens > 0
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = rec.of_type("model_call")
    assert len(calls) == 3 and calls[-1]["true_input"] == second.usage.input_tokens
    # The tool result stays at the head of a user message, as Anthropic lays it out.
    req = rec.request(calls[1]["request"])
    assert [m.role for m in req.messages] == ["user", "assistant", "user"]


def test_anthropic_over_window_is_its_own_error(tmp_path: Path) -> None:
    with serving(tmp_path, cli_set=TIGHT) as (url, _):
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k",
                                     max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as e:
            client.messages.create(model="harnesslab", max_tokens=50, system="支持 " * 300,
                                   messages=[{"role": "user", "content": Q1}])
        with pytest.raises(anthropic.BadRequestError) as too_many:
            client.messages.create(model="harnesslab", max_tokens=5000,
                                   messages=[{"role": "user", "content": Q1}])
        small = client.messages.create(model="harnesslab", max_tokens=50,
                                       messages=[{"role": "user", "content": Q1}])
        refused = httpx.post(f"{url}/messages", headers={"x-api-key": "k"},
                             json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
        stranger = httpx.post(f"{url}/messages", json={"model": "m", "max_tokens": 5,
                                                       "messages": []})
    body = e.value.body
    assert e.value.status_code == 400 and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("prompt is too long: ")
    assert "> 100, which is the maximum allowed number of output tokens" in str(too_many.value)
    assert "O-1001" in small.content[0].text  # the control
    assert refused.status_code == 400 and refused.json()["error"]["message"] == \
        "max_tokens: Field required"
    assert stranger.status_code == 401 and stranger.json()["error"]["type"] == \
        "authentication_error"


DEEP = "[" * 100_000 + "]" * 100_000
BAD_BODIES = {
    "lone surrogate": '{"model": "m", "max_tokens": 5, "input": "x", "messages": '
                      '[{"role": "user", "content": "O-1001 \\ud800 到哪了"}]}',
    "tools not objects": json.dumps({"model": "m", "max_tokens": 5, "input": "x",
                                     "messages": [{"role": "user", "content": Q1}],
                                     "tools": [1, 2]}),
    "nested 100,000 deep": '{"model": "m", "max_tokens": 5, "input": "x", "messages": '
                           f'[{{"role": "user", "content": "x", "extra": {DEEP}}}]}}',
}


@pytest.mark.parametrize("route", ["chat/completions", "responses", "messages"])
def test_a_body_no_record_can_hold_is_a_400_and_the_record_stays_whole(tmp_path: Path,
                                                                       route: str) -> None:
    """Issue 22: each body is refused with a 400 (never a 500), nothing is recorded for it,
    and the next call is numbered as if it had not come."""
    headers = {"Authorization": "Bearer k", "content-type": "application/json"}
    good = {"model": "m", "max_tokens": 50, "input": Q1,
            "messages": [{"role": "user", "content": Q1}]}
    with serving(tmp_path) as (url, _):
        first = httpx.post(f"{url}/{route}", headers=headers, json=good)
        answers = {name: httpx.post(f"{url}/{route}", headers=headers, content=raw)
                   for name, raw in BAD_BODIES.items()}
        second = httpx.post(f"{url}/{route}", headers=headers, json=good)
    for name, r in answers.items():
        assert r.status_code == 400, (name, r.status_code, r.text[:200])
        error = r.json()["error"]
        assert error["type"] == "invalid_request_error", name
    assert "lone surrogate" in answers["lone surrogate"].json()["error"]["message"]
    assert "nested deeper" in answers["nested 100,000 deep"].json()["error"]["message"]
    assert first.status_code == second.status_code == 200
    ids = [r.json()["id"] for r in (first, second)]
    assert ids[0].endswith("1") and ids[1].endswith("2")  # call numbering intact
    rec = Record.load(tmp_path / "session1.jsonl")  # whole: it loads, and holds the two calls
    assert len(rec.of_type("model_call")) == 2


_JSON = st.recursive(
    st.none() | st.integers() | st.text(max_size=6)
    | st.sampled_from(["\ud800", "\udfff", '"[{', "\\", "\\ud800", "😀"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(max_size=3) | st.sampled_from(["\udc00", "[{\""]), inner, max_size=3),
    max_leaves=12)


@given(body=_JSON, ascii_only=st.booleans(), deep=st.sampled_from([0, 0, 196, 197, 198, 199]))
def test_the_byte_scan_passes_a_body_only_where_the_walk_does(body: Any, ascii_only: bool,
                                                              deep: int) -> None:
    """body_problem's fast path over the raw bytes (serve_app._plain) lets a body through
    only when the walk over its values finds nothing (lone surrogates escaped or encoded,
    brackets inside strings, nesting at and just over MAX_DEPTH), and does let through every
    body the walk passes that holds no surrogate at all (so it is not a walk every time)."""
    from harnesslab.adapters.serve_app import _plain, body_problem

    doc: Any = body
    for _ in range(deep):
        doc = [doc]
    raw = json.dumps({"m": doc}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    parsed = json.loads(raw)
    walked = body_problem(parsed)
    assert body_problem(parsed, raw) == walked
    if walked is not None:
        assert not _plain(raw)
    elif not re.search(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]", raw):
        assert _plain(raw)
