"""Structured outputs over the three wires: a JSON schema asked for the answer (Chat
Completions' ``response_format``, the Responses API's ``text.format``, Anthropic's
``output_config.format``) is read into the request's meta, written back into a body, refused
when malformed, and answered in the schema by the fake model behind ``harnesslab serve``, so
that the official SDKs' ``parse`` gets its model; the judge finds the answer inside the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from harnesslab.adapters.anthropic_wire import request_from_anthropic, request_to_anthropic
from harnesslab.adapters.openai_wire import request_from_openai, request_to_openai
from harnesslab.adapters.responses_wire import request_from_responses, request_to_responses
from harnesslab.errors import InputError
from harnesslab.judge.checks import answer_call
from harnesslab.messages import Message, Request
from harnesslab.record.format import Record
from tests.wire.support import Q1, serving

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}},
          "required": ["answer"], "additionalProperties": False}
CHAT_FORM = {"type": "json_schema", "json_schema": {"name": "Reply", "schema": SCHEMA,
                                                    "strict": True}}
MSG = [{"role": "user", "content": "hi"}]


class Detail(BaseModel):
    eta: str | None
    late: bool


class Reply(BaseModel):
    """A framework's output type: the answer among fields the model has no words for."""
    mood: Literal["calm", "sorry"]
    detail: Detail
    answer: str
    refs: list[str]


def _format(meta: tuple[tuple[str, str], ...]) -> Any:
    return [(k, json.loads(v)) for k, v in meta]


def test_each_wire_reads_its_own_spelling_into_one_meta() -> None:
    want = [("response_format", CHAT_FORM)]
    assert _format(request_from_openai({"messages": MSG, "response_format": CHAT_FORM}).meta) \
        == want
    flat = {"type": "json_schema", "name": "Reply", "schema": SCHEMA, "strict": True}
    assert _format(request_from_responses({"input": "hi", "text": {"format": flat}}).meta) \
        == want
    native = {"type": "json_schema", "schema": SCHEMA}
    assert _format(request_from_anthropic({"max_tokens": 5, "messages": MSG, "output_config": {
        "format": native}}).meta) == [("response_format", {"type": "json_schema",
                                                             "json_schema": {"schema": SCHEMA}})]
    assert request_from_anthropic({"max_tokens": 5, "messages": MSG, "output_format": native}
                                  ).meta == request_from_anthropic({
                                      "max_tokens": 5, "messages": MSG,
                                      "output_config": {"format": native}}).meta
    # The schema's order is kept (a model writes the fields in it).
    assert list(json.loads(request_from_openai({"messages": MSG, "response_format": CHAT_FORM})
                           .meta[0][1])["json_schema"]["schema"]) == list(SCHEMA)
    # Plain text is no format: the same request as none asked.
    assert request_from_openai({"messages": MSG, "response_format": {"type": "text"}}).meta == ()
    assert request_from_responses({"input": "hi", "text": {"format": {"type": "text"}}}).meta == ()


def test_a_format_round_trips_through_every_wire() -> None:
    r = Request("", (Message.text("user", "hi"),), output_budget=5,
                meta=(("response_format", json.dumps(CHAT_FORM)),))
    assert request_from_openai(request_to_openai(r)).meta == r.meta
    assert _format(request_from_responses(request_to_responses(r)).meta) == _format(r.meta)
    assert request_to_anthropic(r)["output_config"] == {
        "format": {"type": "json_schema", "schema": SCHEMA}}
    assert "output_config" not in request_to_anthropic(Request("", r.messages, output_budget=5))


@pytest.mark.parametrize("body, field", [
    ({"messages": MSG, "response_format": "json"}, "response_format"),
    ({"messages": MSG, "response_format": {"type": "json_schema", "json_schema": []}},
     "response_format.json_schema.schema"),
    ({"input": "hi", "text": {"format": {"type": "json_schema", "name": "R"}}},
     "text.format.schema"),
    ({"input": "hi", "text": "json"}, "text"),
    ({"max_tokens": 5, "messages": MSG, "output_config": {"format": {"type": "json_schema"}}},
     "output_config.format.schema"),
])
def test_a_malformed_format_names_the_field(body: dict[str, Any], field: str) -> None:
    read = request_from_openai if "response_format" in body else \
        request_from_responses if "input" in body else request_from_anthropic
    with pytest.raises(InputError) as e:
        read(body)
    assert e.value.field == field


# --- answered in the schema behind serve, parsed by the official SDKs --------------------------

def _conversation(url: str, ask: Any) -> Any:
    """Q1 with the world's tools; its tool call run on the bench's tools endpoint; then the
    answer asked in the schema through ``ask(messages, tools)``."""
    import httpx

    key = {"Authorization": "Bearer k"}
    base = url.removesuffix("/v1")
    tools = httpx.get(f"{base}/harnesslab/tools", headers=key).json()["tools"]
    msgs: list[dict[str, Any]] = [{"role": "user", "content": Q1}]
    first = httpx.post(f"{url}/chat/completions", headers=key, json={
        "model": "m", "messages": msgs, "tools": tools}).json()["choices"][0]["message"]
    call = first["tool_calls"][0]
    res = httpx.post(f"{base}/harnesslab/tools/{call['function']['name']}", headers=key,
                     json={"arguments": call["function"]["arguments"]})
    msgs += [first, {"role": "tool", "tool_call_id": call["id"],
                     "content": res.json()["content"]}]
    return ask(msgs, tools)


def test_chat_completions_parse_gets_its_model(tmp_path: Path) -> None:
    openai = pytest.importorskip("openai")
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        # parse() takes only strict tools (a strict tool's schema the fake model reads alike).
        parsed = _conversation(url, lambda m, t: client.chat.completions.parse(
            model="m", messages=m, response_format=Reply,
            tools=[{**x, "function": {**x["function"], "strict": True}} for x in t],
        )).choices[0].message.parsed
        plain = _conversation(url, lambda m, t: client.chat.completions.create(
            model="m", messages=m, tools=t)).choices[0].message.content
    assert isinstance(parsed, Reply)
    assert parsed.answer == plain  # the answer the model gives unasked, in its place
    assert "O-1001" in parsed.answer and "2026-11-30" in parsed.answer
    assert parsed.mood == "calm" and parsed.detail.eta is None and parsed.refs == []
    with pytest.raises(ValidationError):  # the control: the answer as text is no Reply
        Reply.model_validate_json(plain)
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = [c for c in rec.of_type("model_call") if c["reply"][0]["type"] == "text"]
    # The judge finds the answering call by the answer a harness parsed out of the JSON.
    assert answer_call(calls[:1], parsed.answer) is calls[0]
    assert calls[0]["annotations"].get("response_format") == "json_schema"
    assert "response_format" not in calls[1]["annotations"]


def test_a_structured_answer_asked_after_the_loop_without_its_tools(tmp_path: Path) -> None:
    """LangGraph's ``create_react_agent(..., response_format=...)``: once the loop has
    answered, the structured response is asked over the whole history (its tool calls
    included) with only the schema. The API accepts it, and so does the service; the answer
    is the one the loop gave, in the schema."""
    openai = pytest.importorskip("openai")
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)

        def loop_then_structured(msgs: list[dict[str, Any]], tools: Any) -> Any:
            done = client.chat.completions.create(model="m", messages=msgs, tools=tools)
            answer = done.choices[0].message.content
            history = [*msgs, {"role": "assistant", "content": answer}]
            return answer, client.chat.completions.parse(
                model="m", messages=history, response_format=Reply).choices[0].message.parsed

        answer, parsed = _conversation(url, loop_then_structured)
    assert isinstance(parsed, Reply) and "2026-11-30" in answer
    assert parsed.answer == answer
    rec = Record.load(tmp_path / "session1.jsonl")
    assert not rec.of_type("protocol_error")


def test_json_mode_answers_the_object_the_prompt_describes(tmp_path: Path) -> None:
    """``response_format: json_object`` (LangChain's json_mode, the OpenAI SDK's JSON mode):
    the answer is a JSON object with the keys the system prompt names, the answer in the one
    named like it; the judge still finds the answering call by it."""
    openai = pytest.importorskip("openai")
    system = {"role": "system", "content": "You are a support agent. The JSON object has "
              "the keys `answer` and `follow_up`."}
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        text = _conversation(url, lambda m, t: client.chat.completions.create(
            model="m", messages=[system, *m], tools=t, response_format={"type": "json_object"},
        )).choices[0].message.content
        plain = _conversation(url, lambda m, t: client.chat.completions.create(
            model="m", messages=[system, *m], tools=t)).choices[0].message.content
    got = json.loads(text)
    assert set(got) == {"answer", "follow_up"} and got["follow_up"] == ""
    assert got["answer"] == plain and "2026-11-30" in got["answer"]
    with pytest.raises(ValueError):  # the control: without JSON mode the answer is prose
        json.loads(plain)
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = [c for c in rec.of_type("model_call") if c["reply"][0]["type"] == "text"]
    assert answer_call(calls[:1], got["answer"]) is calls[0]
    assert calls[0]["annotations"].get("response_format") == "json_object"


def test_responses_parse_gets_its_model(tmp_path: Path) -> None:
    openai = pytest.importorskip("openai")
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        got = client.responses.parse(model="m", input=[{"role": "user", "content": "谢谢！"}],
                                     text_format=Reply)
        raw = client.responses.create(model="m", input=[{"role": "user", "content": "谢谢！"}])
    assert isinstance(got.output_parsed, Reply) and got.output_parsed.answer == raw.output_text
    assert got.text.format.type == "json_schema"  # the request's format, echoed
    with pytest.raises(ValidationError):
        Reply.model_validate_json(raw.output_text)


def test_anthropic_parse_gets_its_model(tmp_path: Path) -> None:
    anthropic = pytest.importorskip("anthropic")
    with serving(tmp_path) as (url, _):
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k",
                                     max_retries=0)
        msgs = [{"role": "user", "content": "谢谢！"}]
        got = client.messages.parse(model="m", max_tokens=300, messages=msgs,
                                    output_format=Reply)
        raw = client.messages.create(model="m", max_tokens=300, messages=msgs)
    assert isinstance(got.parsed_output, Reply)
    assert got.parsed_output.answer == raw.content[0].text


def test_without_the_format_rule_the_sdk_cannot_parse(tmp_path: Path, monkeypatch: Any) -> None:
    """The control: a fake model that ignores the format fails the SDK's parse, as a harness
    would fail on it (what the bench must not blame the harness for)."""
    openai = pytest.importorskip("openai")
    monkeypatch.setattr("harnesslab.sim.model.in_format", lambda r, b, a, *p: (b, a))
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(ValidationError):
            client.chat.completions.parse(model="m", messages=[{"role": "user",
                                                                 "content": "谢谢！"}],
                                          response_format=Reply)


# --- a typed black-box agent over scenarios ----------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
TYPED_SCENARIOS = ("followup-o1001-zh", "stale-logistics-zh", "followup-after-filler-en")


def _verdicts(tmp: Path, scenario: str, *flags: str) -> tuple[dict[str, bool], Record]:
    import sys

    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.loader import bundled_dir, load_scenario

    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    spec = f"cmd:{sys.executable} {ROOT / 'examples' / 'plain_openai_agent.py'} {' '.join(flags)}"
    r = run_variant(sc, v, source=path, out_dir=tmp / "-".join((scenario, *flags)),
                    cli_set={"harness": spec, "turn_timeout": 60})
    assert r.error is None and r.record is not None, r.error
    return {c.id: c.passed for c in r.checks}, Record.load(r.record)


_PLAIN: dict[str, dict[str, bool]] = {}


@pytest.mark.parametrize("scenario", TYPED_SCENARIOS)
@pytest.mark.parametrize(("flag", "form"), [("--typed", "json_schema"),
                                            ("--after", "json_schema"),
                                            ("--json-mode", "json_object")])
def test_a_typed_agent_is_judged_as_the_same_agent_untyped(tmp_path: Path, scenario: str,
                                                           flag: str, form: str) -> None:
    """The same agent asking its answers in a schema (with every call; or once the loop has
    answered, over the same messages without tools, as LangGraph's ``response_format``), or
    in JSON mode with the keys named in its prompt, gets the same verdicts: the bench reads
    the answer it parsed, its model answered in the form asked, and the service took every
    request a real API takes."""
    pytest.importorskip("openai")
    if scenario not in _PLAIN:  # the untyped agent's verdicts, run once for the three forms
        _PLAIN[scenario] = _verdicts(tmp_path, scenario)[0]
    plain = _PLAIN[scenario]
    typed, rec = _verdicts(tmp_path, scenario, flag)
    assert typed == plain and any(plain.values())
    texts = [c for c in rec.of_type("model_call") if c["reply"][0]["type"] == "text"]
    formatted = [c for c in texts if c["request"]["meta"]]  # the calls asking a format
    assert formatted and all(c["annotations"].get("response_format") == form
                             for c in formatted)
    # --after asks it in a call of its own after each answer in words; the others in every call.
    assert len(formatted) == (len(texts) // 2 if flag == "--after" else len(texts))
    assert not rec.of_type("protocol_error")


def test_a_typed_agent_fails_where_the_model_ignores_the_schema(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: with the format rule taken out, the typed agent cannot parse an answer and
    reports its turns failed (what the bench would have blamed on it)."""
    pytest.importorskip("openai")
    monkeypatch.setattr("harnesslab.sim.model.in_format", lambda r, b, a, *p: (b, a))
    typed, rec = _verdicts(tmp_path, "followup-o1001-zh", "--typed")
    assert not all(typed.values())
    assert {t.get("reason") for t in rec.of_type("turn")} == {"not a Reply"}
