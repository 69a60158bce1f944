"""The fake model obeys a request's tool_choice as a real API does: no tool call under
``none``, always one when a tool is forced (the request's ``("tool_choice", ...)`` meta)."""

from __future__ import annotations

import json

from harnesslab.messages import Message, Request, TextBlock, ToolCallBlock, ToolSchema
from harnesslab.sim.choice import AUTO, Choice, tool_choice
from harnesslab.sim.intents import AGENTSCOPE_FIELDS, SUMMARY_TOOL
from harnesslab.sim.model import ModelReply, serialize
from harnesslab.sim.summarizer import REFUSAL, SummarizerProfile

from .test_model import ALL_TOOLS, ASK_1001, CONVERSATION, T10, clock, model, req, summary_tool, track, user

FINAL = ToolSchema.from_dict({"type": "function", "function": {
    "name": "final_result", "parameters": {"type": "object", "properties": {
        "answer": {"type": "string"}, "confidence": {"type": "number"}}}}})


def chose(r: Request, value: str) -> Request:
    return r.with_meta(("tool_choice", value))


def only(r: ModelReply) -> TextBlock | ToolCallBlock:
    (b,) = r.blocks
    assert isinstance(b, TextBlock | ToolCallBlock)
    return b


def test_the_choice_is_read_from_the_meta() -> None:
    r = req(user(ASK_1001))
    assert tool_choice(r) is AUTO
    assert tool_choice(chose(r, "auto")) is AUTO
    assert tool_choice(chose(r, "none")) == Choice("none")
    assert tool_choice(chose(r, "required")) == Choice("required")
    assert tool_choice(chose(r, "any")) == Choice("required")
    assert tool_choice(chose(r, "track_order")) == Choice("named", "track_order")
    assert tool_choice(chose(chose(r, "required"), "none")) == Choice("none")  # the last wins
    # A tool the request does not offer, or no tools at all: nothing to force.
    assert tool_choice(chose(r, "no_such_tool")) is AUTO
    assert tool_choice(chose(req(user(ASK_1001), tools=()), "required")) is AUTO
    assert tool_choice(chose(r, "forced")) == Choice("required")  # several tools, no summary
    one = req(user(ASK_1001), tools=(FINAL,))
    assert tool_choice(chose(one, "forced")) == Choice("named", "final_result")


def test_none_turns_a_needed_call_into_saying_it_cannot_check() -> None:
    r0 = req(user(ASK_1001), clock(T10))
    assert isinstance(only(model().reply(r0)), ToolCallBlock)  # the control: auto calls
    r = model().reply(chose(r0, "none"))
    assert isinstance(only(r), TextBlock)
    assert (r.annotations["kind"], r.annotations["reason"]) == ("answer", "tool_not_offered")


def test_none_still_answers_from_a_visible_fact() -> None:
    r0 = req(user(ASK_1001), clock(T10), track())
    assert model().reply(chose(r0, "none")) == model().reply(r0)


def test_a_structured_summary_under_none_is_written_as_text() -> None:
    prompt = Message("user", (TextBlock("Summarize; keep it short."), TextBlock("<reminder>")))
    r0 = req(*CONVERSATION, prompt, tools=(summary_tool(AGENTSCOPE_FIELDS),))
    forced = model().reply(chose(r0, "forced"))
    assert isinstance(only(forced), ToolCallBlock)
    assert forced == model().reply(r0)  # a structured summary already calls the tool
    r = model().reply(chose(r0, "none"))
    b = only(r)
    assert isinstance(b, TextBlock)
    values = json.loads(only(forced).input).values()  # type: ignore[union-attr]
    assert b.text == "\n".join(v for v in values if v)
    assert r.annotations["tool_choice"] == "none"


def test_a_forced_refusal_is_a_call_that_fills_nothing() -> None:
    prompt = Message("user", (TextBlock("Summarize; keep it short."), TextBlock("<reminder>")))
    r0 = req(*CONVERSATION, prompt, tools=(summary_tool(AGENTSCOPE_FIELDS),))
    failing = SummarizerProfile(profile="failing")
    assert only(model(summarizer=failing).reply(r0)) == TextBlock(REFUSAL)
    r = model(summarizer=failing).reply(chose(r0, "forced"))
    b = only(r)
    assert isinstance(b, ToolCallBlock) and (b.name, b.input) == (SUMMARY_TOOL, "{}")
    assert (r.annotations["kind"], r.annotations["tool_choice"]) == ("summary_refused", "named")


def test_required_puts_the_answer_into_the_output_tool() -> None:
    r0 = req(user(ASK_1001), clock(T10), track(), tools=(*ALL_TOOLS, FINAL))
    answer = only(model().reply(r0))
    assert isinstance(answer, TextBlock)
    r = model().reply(chose(r0, "required"))
    b = only(r)
    assert isinstance(b, ToolCallBlock) and b.name == "final_result"
    assert json.loads(b.input) == {"answer": answer.text, "confidence": 0}
    assert r.annotations["tool_choice"] == "required"
    # Naming the tool gives the same call: the id is the request's text, the name and the input.
    assert model().reply(chose(r0, "final_result")).blocks == r.blocks
    assert serialize(r0) == serialize(chose(r0, "required"))


def test_required_keeps_a_call_the_turn_needs() -> None:
    r0 = req(user(ASK_1001), clock(T10), tools=(*ALL_TOOLS, FINAL))
    assert model().reply(chose(r0, "required")) == model().reply(r0)


def test_a_named_tool_is_the_only_one_the_turn_may_call() -> None:
    r0 = req(user(ASK_1001), clock(T10), tools=(*ALL_TOOLS, FINAL))
    r = model().reply(chose(r0, "final_result"))
    b = only(r)
    # It may not call track_order: it says, through the named tool, that it cannot check.
    assert isinstance(b, ToolCallBlock) and b.name == "final_result"
    said = json.loads(b.input)["answer"]
    assert said == only(model().reply(req(user(ASK_1001), clock(T10), tools=()))).text  # type: ignore[union-attr]
    assert model().reply(chose(r0, "track_order")) == model().reply(r0)
