"""A declared domain's tools over the wire: ``harnesslab serve`` answers a turn about a ticket
through the official openai SDK with the domain's tools, and over MCP the acting user is the
verified session's whatever a tool argument claims."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnesslab.events import ListSink
from harnesslab.record.format import Record
from harnesslab.run.doors import ToolDoor
from harnesslab.scenario.loader import load_scenario
from harnesslab.sim.tools import toolbox_for
from tests.wire.support import serving

openai = pytest.importorskip("openai")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "helpdesk" / \
    "vpn-ticket-followup-zh.yaml"
ASK = "我的工单 INC-1001 现在什么状态？回答简单一点。"


def test_serve_answers_a_ticket_question_with_the_domain_tools(tmp_path: Path) -> None:
    with serving(tmp_path, scenario=EXAMPLE) as (url, _):
        base = url.removesuffix("/v1")
        key = {"Authorization": "Bearer session-a"}
        tools = httpx.get(f"{base}/harnesslab/tools", headers=key).json()["tools"]
        assert [t["function"]["name"] for t in tools] == \
            ["get_ticket", "list_tickets", "get_employee", "search_kb"]
        client = openai.OpenAI(base_url=url, api_key="session-a", max_retries=0)
        msgs: list[dict[str, Any]] = [{"role": "user", "content": ASK}]
        first = client.chat.completions.create(model="harnesslab", messages=msgs, tools=tools)
        call = first.choices[0].message.tool_calls[0]
        assert (call.function.name, json.loads(call.function.arguments)) == \
            ("get_ticket", {"ticket_id": "INC-1001"})
        msgs.append(first.choices[0].message.model_dump(exclude_none=True))
        r = httpx.post(f"{base}/harnesslab/tools/get_ticket", headers=key,
                       json={"arguments": {"ticket_id": "INC-1001"}})
        msgs.append({"role": "tool", "tool_call_id": call.id, "content": r.json()["content"]})
        second = client.chat.completions.create(model="harnesslab", messages=msgs, tools=tools)
    assert second.choices[0].message.content == "工单 INC-1001 的状态：in_progress。"
    rec = Record.load(tmp_path / "session1.jsonl")
    assert rec.header["domain"]["name"] == "helpdesk"
    assert [(t["name"], t["acting_user"]) for t in rec.of_type("tool_call")] == \
        [("get_ticket", "E-101")]


def test_mcp_binds_the_verified_employee_whatever_the_argument() -> None:
    pytest.importorskip("mcp")
    from harnesslab.adapters.mcp_app import ToolSession, ToolSessions
    from tests.wire.test_mcp_server import _list_and_call, http_client, mcp_http

    sc = load_scenario(EXAMPLE)
    sink = ListSink()
    door = ToolDoor(toolbox_for(sc.make_world()), sink, "E-101")
    sessions = ToolSessions()
    token = sessions.open(ToolSession("E-101", door, "bind", sink))
    with mcp_http(sessions) as url:
        tools, results = asyncio.run(_list_and_call(
            http_client(url, token), [("get_employee", {"user_id": "E-102"})]))
    assert {t.name for t in tools} == {"get_ticket", "list_tickets", "get_employee", "search_kb"}
    text = results[0].content[0].text
    assert "zhang.wei@example.com" in text and "li.na@example.com" not in text
    assert [c["acting_user"] for c in sink.of_type("tool_call")] == ["E-101"]
