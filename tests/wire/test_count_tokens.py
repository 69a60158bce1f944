"""The APIs' token counting endpoints on ``harnesslab serve``, through the official SDKs:
Anthropic's ``messages.count_tokens`` (``/v1/messages/count_tokens``, which Claude Code calls
to manage its context) and OpenAI's ``responses.input_tokens.count``
(``/v1/responses/input_tokens``). The count is what the same body is billed as input; it is
answered over the window too, and nothing is recorded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnesslab.record.format import Record
from tests.wire.support import Q1, serving

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

TIGHT = {"service.window": 400, "service.max_output": 100, "service.default_output": 100}
TOOLS = [{"name": "track_order", "description": "查询订单物流",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


def _anthropic(url: str) -> Any:
    return anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k", max_retries=0)


def test_anthropic_count_is_the_billed_input_and_nothing_is_recorded(tmp_path: Path) -> None:
    kw: dict[str, Any] = {"model": "harnesslab", "system": "你是电商客服助手。", "tools": TOOLS,
                          "messages": [{"role": "user", "content": Q1}]}
    with serving(tmp_path) as (url, _):
        client = _anthropic(url)
        counted = client.messages.count_tokens(**kw)
        beta = client.beta.messages.count_tokens(**kw)  # ?beta=true, as Claude Code sends it
        shorter = client.messages.count_tokens(**{**kw, "tools": []})
        billed = client.messages.create(max_tokens=200, **kw)
    assert counted.input_tokens == beta.input_tokens == billed.usage.input_tokens > 0
    assert shorter.input_tokens < counted.input_tokens  # the control: the tools count
    calls = Record.load(tmp_path / "session1.jsonl").of_type("model_call")
    assert len(calls) == 1 and billed.id.endswith("_1")


def test_a_count_over_the_window_is_answered_where_the_call_is_refused(tmp_path: Path) -> None:
    kw: dict[str, Any] = {"model": "harnesslab", "system": "支持 " * 300,
                          "messages": [{"role": "user", "content": Q1}]}
    with serving(tmp_path, cli_set=TIGHT) as (url, _):
        client = _anthropic(url)
        counted = client.messages.count_tokens(**kw)
        with pytest.raises(anthropic.BadRequestError) as e:
            client.messages.create(max_tokens=50, **kw)
        bad = httpx.post(f"{url}/messages/count_tokens", headers={"x-api-key": "k"},
                         json={"model": "m", "messages": "x"})
        stranger = httpx.post(f"{url}/messages/count_tokens", json={"model": "m", "messages": []})
    assert f"prompt is too long: {counted.input_tokens} tokens > " in str(e.value)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert stranger.status_code == 401


def test_responses_input_tokens_is_the_billed_input_of_a_continuation(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        first = client.responses.create(model="harnesslab", instructions="你是客服。", input=Q1)
        follow: dict[str, Any] = {"model": "harnesslab", "instructions": "你是客服。",
                                  "input": "那我明天还要等吗？", "previous_response_id": first.id}
        counted = client.responses.input_tokens.count(**follow)
        alone = client.responses.input_tokens.count(**{**follow, "previous_response_id": None})
        no_input = client.responses.input_tokens.count(instructions="你是客服。")
        second = client.responses.create(**follow)
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.input_tokens.count(input="x", previous_response_id="resp_nope")
    assert counted.object == "response.input_tokens"
    assert counted.input_tokens == second.usage.input_tokens
    assert no_input.input_tokens < alone.input_tokens < counted.input_tokens  # the history counts
    assert e.value.code == "previous_response_not_found"
    calls = Record.load(tmp_path / "session1.jsonl").of_type("model_call")
    assert len(calls) == 2


class _CallOnly:
    """A model endpoint with no token count (a harness's own stand-in)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def call(self, request: Any, **kw: Any) -> Any:
        return self._inner.call(request, **kw)


def test_an_endpoint_without_a_count_is_a_404_not_a_crash(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, serve):
        client = _anthropic(url)
        client.messages.create(model="m", max_tokens=50, messages=[{"role": "user", "content": Q1}])
        s = serve.sessions.known("k")
        assert s is not None
        s.context = replace(s.context, endpoint=_CallOnly(s.context.endpoint))
        with pytest.raises(anthropic.NotFoundError):
            client.messages.count_tokens(model="m", messages=[{"role": "user", "content": Q1}])
        again = client.messages.create(model="m", max_tokens=50,
                                       messages=[{"role": "user", "content": Q1}])
    assert "O-1001" in again.content[0].text  # the session still serves calls


COUNTING_PROGRAM = """import json, os, sys
import anthropic
client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL and _API_KEY from the bench
msgs = []
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "user":
        print(json.dumps({"type": "ok"} if msg["type"] == "preload" else {}), flush=True)
        continue
    msgs.append({"role": "user", "content": msg["text"]})
    n = client.messages.count_tokens(model="m", messages=msgs).input_tokens
    out = client.messages.create(model="m", max_tokens=200, messages=msgs)
    text = "".join(b.text for b in out.content if b.type == "text")
    msgs.append({"role": "assistant", "content": text})
    print(json.dumps({"type": "reply", "text": f"counted {n} billed {out.usage.input_tokens}"}),
          flush=True)
"""


def test_a_program_counts_through_the_black_box_route(tmp_path: Path) -> None:
    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.loader import bundled_dir, load_scenario

    prog = tmp_path / "counting.py"
    prog.write_text(COUNTING_PROGRAM, encoding="utf-8")
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    r = run_variant(sc, sc.variants[0], source=path, out_dir=tmp_path / "runs",
                    cli_set={"harness": f"cmd:python {prog}", "turn_timeout": 20})
    assert r.error is None and r.record is not None
    rec = Record.load(r.record)
    replies = [t["reply"].split() for t in rec.of_type("turn")]
    assert len(replies) >= 2
    assert all(w[1] == w[3] and int(w[1]) > 0 for w in replies)
    # One recorded call per turn: the counts are not calls.
    assert len(rec.of_type("model_call")) == len(replies)
