"""The call that gave a turn's answer: a harness may call the model again after answering
(LangGraph's summarising node does), and that later call is not the answer."""

from __future__ import annotations

from typing import Any

from harnesslab.judge.checks import answer_call, turn_answer
from harnesslab.record.format import Record


def call(n: int, text: str, kind: str) -> dict[str, Any]:
    return {"type": "model_call", "step": 1, "call": n, "purpose": "reply",
            "reply": [{"type": "text", "text": text}], "annotations": {"kind": kind}}


def test_the_answer_is_the_call_whose_text_was_returned_not_a_later_summary() -> None:
    events = [call(1, "", "tool_call"), call(2, "O-1001 arrives 2026-11-30.", "answer"),
              call(3, "[goal] the user asked about O-1001", "summary")]
    turn = {"type": "turn", "step": 1, "reply": "O-1001 arrives 2026-11-30.", "first_call": 1,
            "last_call": 3}
    rec = Record({}, [*events, turn], {})
    assert (turn_answer(rec, turn) or {})["call"] == 2
    # The control: a reply no call gave (a harness that rewrote it) falls back to the last.
    assert (answer_call(events, "rewritten by the harness") or {})["call"] == 3
    assert answer_call([], "x") is None


def test_an_answer_given_through_a_final_answer_tool_is_that_call() -> None:
    """smolagents and BeeAI answer by calling a ``final_answer`` tool, and BeeAI's memory then
    summarises the run: the answer is the final_answer call, not the summary after it."""
    final = {**call(2, "", "answer"), "reply": [
        {"type": "tool_call", "id": "call_1", "name": "final_answer",
         "input": '{"response": "O-1001 arrives 2026-11-30."}'}]}
    events = [call(1, "", "tool_call"), final, call(3, "[goal] the user asked", "summary")]
    assert (answer_call(events, "O-1001 arrives 2026-11-30.") or {})["call"] == 2
    # A text that is the answer still wins over a tool argument that merely repeats it.
    repeat = [call(1, "O-1001 arrives 2026-11-30.", "answer"), final]
    assert (answer_call(repeat, "O-1001 arrives 2026-11-30.") or {})["call"] == 1
