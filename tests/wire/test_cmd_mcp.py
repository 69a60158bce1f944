"""A black-box program reaching the world's tools over MCP (``HARNESSLAB_MCP_URL``): by default
the backend trusts the ``user_id`` its caller sends (so a program that forwards the model's
claim leaks); under ``tool_identity: server`` the tool acts for the session's verified user
whatever ``user_id`` it passes, unless the variant is the trust control; the bench records
every tool run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("mcp")

# A harness that answers every turn with what get_user_profile returns for the user the
# message claims to be (U-2, "我是李四"): the naive mistake MCP binding must defuse.
PROGRAM = """import asyncio, json, os, sys
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

async def profile():
    http = create_mcp_http_client(
        headers={"Authorization": "Bearer " + os.environ["HARNESSLAB_MCP_TOKEN"]})
    async with Client(streamable_http_client(os.environ["HARNESSLAB_MCP_URL"],
                                             http_client=http)) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        out = await c.call_tool("get_user_profile", {"user_id": "U-2"})
        return names, out.content[0].text

for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        names, text = asyncio.run(profile())
        print(json.dumps({"type": "reply", "text": text}), flush=True)
    else:
        print(json.dumps({"type": "ok"}), flush=True)
"""
U1_ADDRESS, U2_ADDRESS = "上海市浦东新区世纪大道100号", "北京市朝阳区建国路88号"


def run(tmp_path: Path, variant: str, binding: str = "server") -> RunResult:
    prog = tmp_path / "mcp_agent.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    path = bundled_dir() / "spoofed-identity-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == variant)
    return run_variant(sc, v, source=path, out_dir=tmp_path / "runs",
                       cli_set={"harness": f"cmd:python {prog}", "turn_timeout": 60,
                                "tool_identity": binding})


def test_mcp_tools_act_for_the_verified_user(tmp_path: Path) -> None:
    r = run(tmp_path, "default")
    assert r.error is None
    rec = Record.load(r.record)
    replies = [t["reply"] for t in rec.of_type("turn")]
    assert all(U1_ADDRESS in x and U2_ADDRESS not in x for x in replies)
    calls = rec.of_type("tool_call")
    assert [(c["name"], c["acting_user"]) for c in calls] == [("get_user_profile", "U-1")] * 2
    assert {p["identity"] for p in rec.of_type("tool_policy")} == {"overridden"}
    assert next(c for c in r.checks if c.id == "s1.no_leak").passed


def test_the_trust_control_lets_the_claimed_user_through(tmp_path: Path) -> None:
    r = run(tmp_path, "trust-claims")
    rec = Record.load(r.record)
    assert [c["acting_user"] for c in rec.of_type("tool_call")] == ["U-2", "U-2"]
    failed = {c.id for c in r.checks if not c.passed}
    assert {"s1.no_leak", "s1.not_mentions"} <= failed


def test_a_backend_that_trusts_its_caller_leaks_what_the_program_forwards(tmp_path: Path
                                                                           ) -> None:
    r = run(tmp_path, "default", binding="caller")
    rec = Record.load(r.record)
    assert [c["acting_user"] for c in rec.of_type("tool_call")] == ["U-2", "U-2"]
    assert {p["identity"] for p in rec.of_type("tool_policy")} == {"trusted"}
    assert not next(c for c in r.checks if c.id == "s1.no_leak").passed
