"""Server-side context management the bench simulates, and what it refuses instead of
ignoring (adapters.server_side): Anthropic's ``clear_thinking_20251015`` edit (Claude Code
sends it with ``keep: "all"``) is done as the API does it; its other edits, the MCP
connector, Responses' server-side compaction and stored prompts are a 400 naming the
parameter, never a request answered as if the server had done them."""

from __future__ import annotations

from typing import Any

import pytest

from harnesslab.adapters.anthropic_wire import request_from_anthropic
from harnesslab.adapters.responses_wire import request_from_responses
from harnesslab.errors import InputError
from harnesslab.messages import ThinkingBlock

THINKING = {"type": "enabled", "budget_tokens": 1024}


def _body(**extra: Any) -> dict[str, Any]:
    turn = [{"type": "thinking", "thinking": "想一想", "signature": "s"},
            {"type": "text", "text": "好的"}]
    return {"model": "m", "max_tokens": 100, "thinking": THINKING, "messages": [
        {"role": "user", "content": "一"}, {"role": "assistant", "content": turn},
        {"role": "user", "content": "二"}, {"role": "assistant", "content": turn},
        {"role": "user", "content": "三"}, {"role": "assistant", "content": [turn[0]]},
        {"role": "user", "content": "四"}], **extra}


def _thinking(body: dict[str, Any]) -> list[int]:
    r = request_from_anthropic(body)
    return [i for i, m in enumerate(r.messages)
            if any(isinstance(b, ThinkingBlock) for b in m.content)]


def test_clear_thinking_keeps_the_latest_turns_thinking_and_all_keeps_everything() -> None:
    edit = {"type": "clear_thinking_20251015"}
    assert _thinking(_body(thinking=None)) == [1, 3, 5]  # thinking off: nothing cleared
    assert _thinking(_body()) == [5]  # the API's default with thinking on: the last turn's
    assert _thinking(_body(context_management={"edits": [{**edit, "keep": "all"}]})) == [1, 3, 5]
    two = _body(context_management={"edits": [
        {**edit, "keep": {"type": "thinking_turns", "value": 2}}]})
    assert _thinking(two) == [3, 5]
    assert _thinking(_body(context_management={"edits": [edit]})) == [5]  # keep: 1 turn
    # An earlier turn that held nothing but thinking goes with it; text stays.
    body = _body(context_management={"edits": [edit]})
    body["messages"][1], body["messages"][5] = body["messages"][5], body["messages"][1]
    roles = [m.role for m in request_from_anthropic(body).messages]
    assert roles == ["user", "user", "assistant", "user", "assistant", "user"]


def test_a_turn_runs_through_its_tool_rounds() -> None:
    think = {"type": "thinking", "thinking": "查一下", "signature": "s"}
    use = {"type": "tool_use", "id": "t1", "name": "track_order", "input": {"order_id": "O-1"}}
    body = _body()
    body["messages"][-1:] = [
        {"role": "user", "content": "四"},
        {"role": "assistant", "content": [think, use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "in transit"}]},
        {"role": "assistant", "content": [think, {"type": "text", "text": "在路上"}]},
        {"role": "user", "content": "好"}]
    # The last turn with thinking is the tool round's, both its messages, kept; the earlier
    # turns' go (the message of thinking only with them, so the indices move down by one).
    assert _thinking(body) == [6, 8]


@pytest.mark.parametrize("extra, field, words", [
    ({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
     "context_management.edits[0].type", "does not simulate"),
    ({"context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
      "thinking": None}, "context_management.edits[0]", "requires `thinking`"),
    ({"context_management": {"enabled": True, "edits": []}},
     "context_management.enabled", "Extra inputs are not permitted"),
    ({"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": 0}]}},
     "context_management.edits[0].keep", "thinking_turns"),
    ({"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]}, "mcp_servers",
     "does not simulate"),
])
def test_anthropic_refuses_what_it_cannot_simulate(extra: dict[str, Any], field: str,
                                                   words: str) -> None:
    with pytest.raises(InputError) as e:
        request_from_anthropic(_body(**extra))
    assert e.value.field == field and words in e.value.problem


@pytest.mark.parametrize("extra, field", [
    ({"context_management": [{"type": "compaction", "compact_threshold": 1000}]},
     "context_management"),
    ({"prompt": {"id": "pmpt_1"}}, "prompt"),
])
def test_responses_refuses_what_it_cannot_simulate(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        request_from_responses({"model": "m", "input": "hi", **extra})
    assert e.value.field == field and "does not simulate" in e.value.problem
    # The controls: left out, or null, the same body is read.
    assert request_from_responses({"model": "m", "input": "hi", **{field: None}}).messages
