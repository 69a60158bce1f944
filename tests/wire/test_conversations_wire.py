"""OpenAI's Conversations API on ``harnesslab serve`` (adapters.conversations_wire), through
the official SDK: a conversation continued by ``conversation=`` on Responses requests carries
the history the follow-up needs (without it, it is not there: the control); the item routes a
server-side session uses; the API's refusals; one session's conversations are not another's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.record.format import Record
from tests.wire.support import Q1, run_tool, serving, tool_schemas

openai = pytest.importorskip("openai")

Q2 = "那我明天还要等吗？"


def _turn(client: Any, url: str, text: str, conversation: str | None) -> Any:
    """One user turn on the Responses API, the history on the server (``conversation``) or
    nowhere (None): ask, run the function calls, ask again."""
    tools = [{"type": "function", **s} for s in tool_schemas(url, "k")]
    kw: dict[str, Any] = {"model": "harnesslab", "instructions": "你是客服。", "tools": tools}
    if conversation is not None:
        kw["conversation"] = conversation
    new: Any = text
    for _ in range(4):
        resp = client.responses.create(input=new, **kw)
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            return resp
        new = [{"type": "function_call_output", "call_id": c.call_id,
                "output": run_tool(url, "k", c.name, c.arguments)} for c in calls]
    raise AssertionError("no answer in 4 requests")


def test_a_conversation_on_the_server_carries_the_follow_up(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        conv = client.conversations.create(metadata={"topic": "order"})
        first = _turn(client, url, Q1, conv.id)
        second = _turn(client, url, Q2, conv.id)
        items = list(client.conversations.items.list(conv.id, order="asc", limit=100))
        alone = _turn(client, url, Q2, None)  # the control: no history anywhere
    assert "O-1001" in first.output_text and second.conversation.id == conv.id
    assert "O-1001" in second.output_text and "2026-11-30" in second.output_text
    assert "O-1001" not in alone.output_text
    kinds = [(i.type, getattr(i, "role", None)) for i in items]
    assert kinds == [("message", "user"), ("function_call", None),
                     ("function_call_output", None), ("message", "assistant"),
                     ("message", "user"), ("message", "assistant")]
    assert items[0].content[0].type == "input_text" and items[0].content[0].text == Q1
    assert len({i.id for i in items}) == len(items)
    # What the model saw for the follow-up: the whole conversation, from the server.
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = rec.of_type("model_call")
    assert len(calls) == 4  # the follow-up answered at once, as the control
    assert len(rec.request(calls[2]["request"]).messages) == 5
    assert len(rec.request(calls[3]["request"]).messages) == 1


def test_the_item_routes_a_server_side_session_uses(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        conv = client.conversations.create(items=[{"role": "user", "content": "a"}])
        added = client.conversations.items.create(conv.id, items=[
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}])
        newest = client.conversations.items.list(conv.id, limit=2)  # desc by default
        rest = client.conversations.items.list(conv.id, limit=2, after=newest.last_id)
        one = client.conversations.items.retrieve(added.data[0].id, conversation_id=conv.id)
        client.conversations.items.delete(added.data[1].id, conversation_id=conv.id)
        left = client.conversations.items.list(conv.id, order="asc")
        renamed = client.conversations.update(conv.id, metadata={"k": "v"})
        got = client.conversations.retrieve(conv.id)
        gone = client.conversations.delete(conv.id)
        with pytest.raises(openai.NotFoundError):
            client.conversations.retrieve(conv.id)
    texts = [i.content[0].text for i in newest.data]
    assert texts == ["c", "b"] and newest.has_more and not rest.has_more
    assert [i.content[0].text for i in rest.data] == ["a"]
    assert one.content[0].type == "output_text" and one.content[0].text == "b"
    assert [i.content[0].text for i in left.data] == ["a", "b"]
    assert renamed.metadata == got.metadata == {"k": "v"} and gone.deleted


def test_what_the_api_refuses_and_sessions_apart(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        a = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        b = openai.OpenAI(base_url=url, api_key="other", max_retries=0)
        conv = a.conversations.create()
        first = a.responses.create(model="m", input=Q1)
        with pytest.raises(openai.BadRequestError) as both:
            a.responses.create(model="m", input=Q2, conversation=conv.id,
                               previous_response_id=first.id)
        with pytest.raises(openai.NotFoundError):
            a.responses.create(model="m", input=Q2, conversation="conv_nope")
        with pytest.raises(openai.NotFoundError):
            b.conversations.items.list(conv.id)  # another session's conversation
        with pytest.raises(openai.BadRequestError) as bad_item:
            a.conversations.items.create(conv.id, items=[{"role": "robot", "content": "x"}])
        with pytest.raises(openai.BadRequestError) as too_many:
            a.conversations.items.create(conv.id, items=[{"role": "user", "content": "x"}] * 21)
        with pytest.raises(openai.BadRequestError) as limit:
            a.conversations.items.list(conv.id, limit=101)
        after_refusals = a.conversations.items.list(conv.id)
    assert "Mutually exclusive" in str(both.value)
    assert json.loads(bad_item.value.response.text)["error"]["param"] == "items[0].role"
    assert "at most 20" in str(too_many.value) and "1 to 100" in str(limit.value)
    assert after_refusals.data == []  # nothing of a refused request was kept
