"""The world's tools over MCP (streamable HTTP and stdio): the schemas, the results, and the
acting user taken from the verified session, never from a tool argument (but for the trust
control)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from harnesslab.adapters.mcp_app import ToolSession, ToolSessions, http_server
from harnesslab.events import ListSink
from harnesslab.run.doors import ToolDoor
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World

SPOOF = bundled_dir() / "spoofed-identity-zh.yaml"
CLI = "import sys; from harnesslab.cli import main; sys.exit(main())"
U1_ADDRESS, U2_ADDRESS = "上海市浦东新区世纪大道100号", "北京市朝阳区建国路88号"


def session(identity: Any = "bind", user: str = "U-1") -> tuple[ToolSession, ListSink]:
    sc = load_scenario(SPOOF)
    sink = ListSink()
    door = ToolDoor(ToolBox(World(sc.world)), sink, user)
    return ToolSession(user, door, identity, sink), sink


@contextlib.contextmanager
def mcp_http(sessions: ToolSessions) -> Iterator[str]:
    server, url = http_server(sessions)
    server.start()
    try:
        yield url
    finally:
        server.stop()


def http_client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


async def _list_and_call(client: Client, calls: list[tuple[str, dict[str, Any]]]
                         ) -> tuple[list[Any], list[Any]]:
    async with client as c:
        tools = (await c.list_tools()).tools
        results = [await c.call_tool(name, args) for name, args in calls]
    return tools, results


def test_http_serves_the_tools_with_their_schemas_for_the_token_s_user() -> None:
    sessions = ToolSessions()
    s1, sink = session()
    token = sessions.open(s1)
    with mcp_http(sessions) as url:
        tools, results = asyncio.run(_list_and_call(
            http_client(url, token),
            [("get_user_profile", {"user_id": "U-2"}), ("get_user_profile", {})]))
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {d["name"] for d in s1.schemas()}
    assert by_name["track_order"].input_schema["required"] == ["order_id"]
    # The model claimed U-2; the session is U-1's: U-1's own profile, both times.
    texts = [r.content[0].text for r in results]
    assert all(U1_ADDRESS in t and U2_ADDRESS not in t for t in texts)
    calls = sink.of_type("tool_call")
    assert [c["acting_user"] for c in calls] == ["U-1", "U-1"]
    # Nothing of the scenario beyond the tools: no utterance, expectation or other user's data.
    wire = json.dumps([t.model_dump() for t in tools] + texts, ensure_ascii=False)
    sc = load_scenario(SPOOF)
    assert not [u for u in sc.lexicon if u in wire]
    assert "13900000002" not in wire and "李四" not in wire and "expect" not in wire
    assert [p["identity"] for p in sink.of_type("tool_policy")] == ["overridden", "bound"]


def call_once(identity: Any, name: str, args: dict[str, Any]) -> tuple[Any, ListSink]:
    """One call over HTTP in a session of ``identity``: its result and the session's events."""
    sessions = ToolSessions()
    s, sink = session(identity)
    token = sessions.open(s)
    with mcp_http(sessions) as url:
        _, results = asyncio.run(_list_and_call(http_client(url, token),
                                                [(name, args)]))
    return results[0], sink


def test_http_trust_control_lets_the_argument_choose_the_user() -> None:
    result, sink = call_once("trust", "get_user_profile", {"user_id": "U-2"})
    assert U2_ADDRESS in result.content[0].text
    assert sink.of_type("tool_call")[0]["acting_user"] == "U-2"


def test_http_refuse_answers_with_the_tool_s_forbidden_error() -> None:
    result, _ = call_once("refuse", "get_user_profile", {"user_id": "U-2"})
    assert result.is_error
    assert json.loads(result.content[0].text)["code"] == "forbidden"


def test_two_sessions_on_one_server_each_get_their_own_user() -> None:
    sessions = ToolSessions()
    a, sink_a = session(user="U-1")
    b, sink_b = session(user="U-2")
    ta, tb = sessions.open(a), sessions.open(b)

    async def both(url: str) -> list[Any]:
        return list(await asyncio.gather(
            _list_and_call(http_client(url, ta), [("get_user_profile", {})]),
            _list_and_call(http_client(url, tb), [("get_user_profile", {})])))

    with mcp_http(sessions) as url:
        (_, ra), (_, rb) = asyncio.run(both(url))
    assert U1_ADDRESS in ra[0].content[0].text and U2_ADDRESS in rb[0].content[0].text
    assert len(sink_a.of_type("tool_call")) == len(sink_b.of_type("tool_call")) == 1


@pytest.mark.parametrize("token", [None, "not-a-session-token"])
def test_http_without_a_verified_token_runs_no_tool(token: str | None) -> None:
    import httpx

    sessions = ToolSessions()
    s, sink = session()
    sessions.open(s)
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_user_profile", "arguments": {}}}
    with mcp_http(sessions) as url:
        status = httpx.post(url, json=call, headers=headers, timeout=30).status_code
        with pytest.raises(BaseException, match="unhandled errors"):
            asyncio.run(_list_and_call(http_client(url, token),
                                       [("get_user_profile", {})]))
    assert status == 401
    assert sink.events == []


def test_stdio_serves_the_scenario_s_session_user(tmp_path: Path) -> None:
    record = tmp_path / "tools.jsonl"
    params = StdioServerParameters(command=sys.executable, args=[
        "-c", CLI, "mcp", str(SPOOF), "--stdio", "--record", str(record)])
    tools, results = asyncio.run(_list_and_call(
        Client(params), [("get_user_profile", {"user_id": "U-2"})]))
    assert "get_user_profile" in {t.name for t in tools}
    text = results[0].content[0].text
    assert U1_ADDRESS in text and U2_ADDRESS not in text
    events = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert [e["acting_user"] for e in events if e["type"] == "tool_call"] == ["U-1"]
    # The record's header is the bench's, but nothing of it went over the wire.
    assert events[0]["type"] == "header"


def test_cli_http_prints_the_url_and_token_and_serves(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", str(SPOOF), "--variant", "trust-claims"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        env = dict(proc.stdout.readline().strip().split("=", 1) for _ in range(2))
        _, results = asyncio.run(_list_and_call(
            http_client(env["HARNESSLAB_MCP_URL"], env["HARNESSLAB_MCP_TOKEN"]),
            [("get_user_profile", {"user_id": "U-2"})]))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # The trust-claims control variant: the argument chose the user.
    assert U2_ADDRESS in results[0].content[0].text


def test_without_the_extra_the_exact_install_line(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from harnesslab.cli import main

    monkeypatch.setitem(sys.modules, "mcp", None)
    assert main(["mcp", str(SPOOF), "--stdio"]) == 2
    assert capsys.readouterr().err.strip() == (
        "harnesslab mcp: error: mcp: the MCP tool server needs the mcp package: "
        "pip install 'harnesslab[mcp]'")


def test_the_shared_server_imports_the_sdk_only_on_its_first_request() -> None:
    # The bench starts its MCP server before its first program; most programs never use MCP,
    # and the SDK's import is most of a black-box run's fixed cost. A fresh interpreter, so
    # this test's own imports of mcp do not count.
    import subprocess

    code = ("import sys, httpx\n"
            "from harnesslab.adapters import mcp_app\n"
            "sessions, url = mcp_app.shared_sessions()\n"
            "assert 'mcp' not in sys.modules, 'imported at start'\n"
            "r = httpx.post(url, json={}, headers={'Authorization': 'Bearer nobody'})\n"
            "assert 'mcp' in sys.modules and r.status_code == 401, r.status_code\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
