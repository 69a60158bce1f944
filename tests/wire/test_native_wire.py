"""The bench's own wire (``POST /harnesslab/v1/request``) names what a request shares with an
earlier one instead of sending it again (``messages.Sent``): runs of its messages and its
tools. Such a request is recorded exactly as the same request sent whole; a name the bench no
longer keeps is a 409 the reference program answers by sending the whole request; a bad name
is a 400 naming the field, and nothing is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from harnesslab.messages import Message, Request, ToolSchema, message_to_dict
from harnesslab.record.format import Record
from tests.wire.support import Q1, serving

pytest.importorskip("starlette")

PATH = "/harnesslab/v1/request"
TOOL = ToolSchema.from_dict({"type": "function", "function": {
    "name": "track_order", "description": "Track an order.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}})
HISTORY = [Message.text("user", Q1), Message.text("assistant", "好的，我查一下。"),
           Message.text("user", "回答简单一点。")]


def _post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url.removesuffix("/v1") + PATH, json=body,
                      headers={"Authorization": "Bearer session-a"})


def _request(messages: list[Any], tools: Any) -> dict[str, Any]:
    return {"request": {"system": "You are a support agent.", "messages": messages,
                        "tools": tools, "output_budget": 256}}


def _calls(out: Path) -> list[str]:
    rec = Record.load(out / "session1.jsonl")
    return [e["request"]["sha256"] for e in rec.of_type("model_call")]


def test_a_request_naming_an_earlier_ones_messages_and_tools_is_recorded_as_sent_whole(
        tmp_path: Path) -> None:
    whole = [message_to_dict(m) for m in HISTORY]
    tools = [TOOL.to_dict()]
    with serving(tmp_path / "whole") as (url, _):
        first = _post(url, _request(whole[:1], tools))
        second = _post(url, _request(whole, tools))
    with serving(tmp_path / "named") as (url, _):
        named_first = _post(url, _request(whole[:1], tools))
        n = named_first.json()["id"]
        named = _post(url, _request([{"same": [n, 0, 1]}, *whole[1:]], {"same": n}))
    assert first.status_code == second.status_code == named.status_code == 200
    assert named.json()["blocks"] == second.json()["blocks"]
    assert _calls(tmp_path / "named") == _calls(tmp_path / "whole")
    # The control: naming a different run of messages is a different request.
    with serving(tmp_path / "other") as (url, _):
        n = _post(url, _request(whole[:1], tools)).json()["id"]
        assert _post(url, _request([*whole[:1], {"same": [n, 0, 1]}, *whole[2:]],
                                   {"same": n})).status_code == 200
    assert _calls(tmp_path / "other")[1] != _calls(tmp_path / "whole")[1]


@pytest.mark.parametrize(("same", "status", "field"), [
    ([7, 0, 1], 409, None),              # no request 7 was answered
    ([1, 0, 2], 400, "messages[0].same"),  # request 1 had one message
    ([1, -1, 1], 400, "messages[0].same"),
    ("1", 400, "messages[0].same"),
])
def test_a_bad_or_unknown_name_is_refused_and_nothing_is_recorded(
        tmp_path: Path, same: Any, status: int, field: str | None) -> None:
    with serving(tmp_path) as (url, _):
        assert _post(url, _request([message_to_dict(HISTORY[0])], [])).json()["id"] == 1
        r = _post(url, _request([{"same": same}], []))
    assert r.status_code == status
    err = r.json()["error"]
    assert err["param"] == field
    assert err["code"] == ("unknown_request" if status == 409 else None)
    assert len(_calls(tmp_path)) == 1


def test_the_reference_programs_client_sends_only_what_is_new_and_resends_whole_on_409(
        ) -> None:
    import json

    from harnesslab.adapters.reference_program import _Http, _Model
    from tests.wire.test_reference_program import _ok, _server

    answer = _ok(json.dumps({"id": 1, "blocks": [], "input_tokens": 1,
                             "output_tokens": 1}).encode())
    refused = json.dumps({"error": {"code": "unknown_request", "type": "x"}}).encode()
    port, got = _server([[answer, answer,
                          b"HTTP/1.1 409 Conflict\r\ncontent-length: %d\r\n\r\n%s"
                          % (len(refused), refused), answer]])
    model = _Model(_Http(f"http://127.0.0.1:{port}", "tok"), PATH)
    first = Request(system="s", messages=tuple(HISTORY[:2]), tools=(TOOL,))
    model.call(first)
    model.call(Request(system="s", messages=(*first.messages, HISTORY[2]), tools=(TOOL,)))
    # A new first message, then the earlier two: named by their place in the last request.
    new = Message.text("user", "那我明天还要等吗？")
    model.call(Request(system="s", messages=(new, *first.messages), tools=(TOOL,)))
    bodies = [json.loads(g.split(b"\r\n\r\n", 1)[1])["request"] for g in got]
    assert len(bodies[0]["messages"]) == 2 and isinstance(bodies[0]["tools"], list)
    assert bodies[1]["messages"][0] == {"same": [1, 0, 2]} and bodies[1]["tools"] == {"same": 1}
    assert bodies[2]["messages"] == [message_to_dict(new), {"same": [1, 0, 2]}]
    # Refused (the bench no longer keeps request 1): the same request, whole.
    assert bodies[3]["messages"] == [message_to_dict(m) for m in (new, *first.messages)]
    assert bodies[3]["tools"] == [TOOL.to_dict()]
