"""Long-term memory of the reference harness, through the real fake model: what is remembered
(an extraction call), what is injected (scoped by the verified user), where, and how old."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.harness.config import HarnessConfig, MemorySettings
from harnesslab.harness.memory import MEMORY_MODES, register_memory
from harnesslab.harness.memory.modes import MEMORY_SOURCE
from harnesslab.messages import HintBlock, ToolCallBlock
from harnesslab.sim.model import BRIEF_MAX_CHARS
from harnesslab.sim.summarizer import SummarizerProfile
from tests.harness.memory_support import (
    ADDRESS,
    LISI,
    OWN,
    PRIVATE,
    RETURNS,
    SHORT,
    WAIT,
    WHERE_1,
    WHERE_2,
    Deployment,
)

ITEM_MODES = ("vector", "workspace", "background")


def _memory_hint(request_text: str) -> bool:
    return "Long-term memory of this user" in request_text


def test_the_registry_names_every_mode_and_refuses_a_duplicate() -> None:
    assert set(MEMORY_MODES) == {"none", "vector", "workspace", "agentic", "background"}
    with pytest.raises(ValueError, match="memory mode 'vector' is already registered"):
        register_memory("vector")(type("X", (), {}))
    with pytest.raises(ValueError, match="unknown memory mode 'mem0'"):
        MemorySettings(mode="mem0")


def test_without_memory_the_config_dump_is_unchanged() -> None:
    assert "memory" not in HarnessConfig().model_dump()
    assert HarnessConfig(memory=MemorySettings(mode="vector")).model_dump()["memory"]["mode"] \
        == "vector"


def test_settings_take_the_mode_alone_or_fields() -> None:
    from harnesslab.scenario.settings import resolve

    s = resolve([{"memory": "vector"}, {"memory.top_k": 2, "memory.key": "named"}])
    assert (s.harness.memory.mode, s.harness.memory.top_k, s.harness.memory.key) == \
        ("vector", 2, "named")
    with pytest.raises(InputError, match=r"memory\.position"):
        resolve([{"memory.position": "middle"}])
    with pytest.raises(InputError, match="expected a memory mode name or a mapping"):
        resolve([{"memory": 5}])
    with pytest.raises(InputError, match="unknown memory mode 'mem0'"):
        resolve([{"memory": "mem0"}])


@pytest.mark.parametrize("mode", (*ITEM_MODES, "agentic"))
def test_a_preference_stated_yesterday_is_obeyed_in_todays_new_session(
        tmp_path: Path, mode: str) -> None:
    d = Deployment(tmp_path, {"memory": {"mode": mode}})
    yesterday = d.open("s-1", "U-1")
    yesterday.turn(SHORT)
    d.advance(24)
    today = d.open("s-2", "U-1")
    res = today.turn(WHERE_1)
    assert not res.failed and len(res.text) <= BRIEF_MAX_CHARS
    assert "[constraint:brevity]" in d.reply_text()
    if mode == "agentic":  # written by the model itself, through its memory tool
        assert [e["name"] for e in d.sink.of_type("memory_tool")] == ["memory_write"]
    # The same day without memory: a fresh session knows nothing of it.
    plain = Deployment(tmp_path / "none", {})
    plain.open("s-1", "U-1").turn(SHORT)
    plain.advance(24)
    assert len(plain.open("s-2", "U-1").turn(WHERE_1).text) > BRIEF_MAX_CHARS


def test_background_memory_is_made_only_when_a_later_session_starts(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "background"})
    first = d.open("s-1", "U-1")
    first.turn(SHORT)
    first.turn(WHERE_1)
    assert not d.calls("memory")  # nothing extracted while the session runs
    assert not d.sink.of_type("memory_write")
    d.open("s-2", "U-1").turn(WHERE_1)
    writes = d.sink.of_type("memory_write")
    assert writes and {i["kind"] for w in writes for i in w["items"]} == {"preference", "fact"}
    assert not (tmp_path / "memory" / "files" / "assistant" / "U-1" / "queue" /
                "s-1.jsonl").exists()


def test_yesterdays_eta_in_memory_shows_its_age_and_is_looked_up_again(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "vector"})
    d.open("s-1", "U-1").turn(WHERE_1)
    d.advance(24)
    today = d.open("s-2", "U-1")
    res = today.turn(WHERE_1)
    injected = [e for e in d.sink.of_type("memory_read") if e["items"]][-1]
    fact = next(i for i in injected["items"] if i["kind"] == "fact")
    assert "as_of=2026-11-28T10:00:00+08:00" in fact["text"]
    replies = d.calls("reply")[-2:]
    assert replies[0]["annotations"]["kind"] == "tool_call"
    assert replies[0]["annotations"]["reason"] == "stale_fact"
    assert "2026-12-02" in res.text  # today's ETA, not yesterday's 2026-11-29
    assert "look it up again" in d.reply_text()


def test_stale_memory_is_served_as_current_without_a_time_hint(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "vector", "time_hint": False})
    d.open("s-1", "U-1").turn(WHERE_1)
    d.advance(24)
    res = d.open("s-2", "U-1").turn(WHERE_1)
    assert "2026-11-29" in res.text  # yesterday's ETA stated as today's status
    assert d.calls("reply")[-1]["annotations"]["cited"]["as_of"].startswith("2026-11-28")


def test_expire_policy_drops_a_volatile_item_after_its_ttl(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": {"mode": "vector", "volatile_policy": "expire",
                                         "ttl_hours": 12}})
    h = d.open("s-1", "U-1")
    h.turn(SHORT)
    h.turn(WHERE_1)
    written = [i for w in d.sink.of_type("memory_write") for i in w["items"]]
    assert [i["kind"] for i in written] == ["preference", "fact"]
    d.advance(24)
    d.open("s-2", "U-1").turn(WAIT)
    read = d.sink.of_type("memory_read")[-1]
    assert [i["kind"] for i in read["items"]] == ["preference"]  # the ETA expired; the pref not


def test_items_record_user_agent_source_time_and_expiry(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": {"mode": "vector", "agent_id": "support-bot"}})
    d.open("s-1", "U-1").turn(WHERE_1)
    path = tmp_path / "memory" / "items" / "support-bot" / "U-1.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(rows) == 1
    r = rows[0]
    assert (r["user"], r["agent"], r["session"], r["source"], r["kind"]) == \
        ("U-1", "support-bot", "s-1", "tool:track_order", "fact")
    assert r["created_at"] == "2026-11-28T10:00:00+08:00"
    assert r["reverify"] is True and r["expires_at"] is None


def test_a_claim_is_stored_as_an_unverified_claim_and_never_grants_access(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "vector"})
    d.open("s-1", "U-1").turn(OWN)
    claims = [i for w in d.sink.of_type("memory_write") for i in w["items"]]
    assert [(i["kind"], i["text"]) for i in claims] == \
        [("claim", "[claim:ownership=O-2002 unverified]")]
    d.advance(24)
    res = d.open("s-2", "U-1").turn(WHERE_2)
    assert "Claims the user made (unverified" in d.reply_text()
    run = d.sink.of_type("tool_call")[-1]
    assert run["acting_user"] == "U-1" and run["is_error"]
    assert "2026-12-01" not in res.text and "shipped" not in res.text


def test_a_promoting_extractor_does_not_make_the_harness_act_for_the_claimed_user(
        tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "vector"},
                   extractor=SummarizerProfile(profile="lossy", promote_claims=1.0))
    d.open("s-1", "U-1").turn(LISI)
    d.advance(24)
    d.open("s-2", "U-1").turn(ADDRESS)
    assert all(e["acting_user"] == "U-1" for e in d.sink.of_type("tool_call"))
    assert all(PRIVATE["U-2"][1] not in text for _, _, text in d.requests())


def _leaks(d: Deployment) -> list[tuple[str, str]]:
    return [(user, other) for user, _, text in d.requests()
            for other, vals in PRIVATE.items() if other != user
            for v in vals if v in text]


@pytest.mark.parametrize("mode", (*ITEM_MODES, "agentic"))
def test_memory_keyed_by_the_verified_user_never_crosses(tmp_path: Path, mode: str) -> None:
    d = Deployment(tmp_path, {"memory": mode})
    d.open("s-2", "U-2").turn(ADDRESS)   # U-2's own address goes into U-2's memory
    d.advance(24)
    d.open("s-9", "U-2").turn(WHERE_2)   # (background: U-2's queue is consolidated now)
    d.open("s-1", "U-1").turn(LISI)      # U-1 claims to be 李四
    d.open("s-3", "U-1").turn(ADDRESS)
    assert _leaks(d) == []
    assert all(r["user"] == "U-1" for r in d.sink.of_type("memory_read")
               if r["user"] != "U-2")


@pytest.mark.parametrize("mode", ITEM_MODES)
def test_negative_control_memory_keyed_by_the_named_user_leaks(tmp_path: Path, mode: str) -> None:
    d = Deployment(tmp_path, {"memory": {"mode": mode, "key": "named"}})
    d.open("s-2", "U-2").turn(ADDRESS)
    d.advance(24)
    d.open("s-9", "U-2").turn(WHERE_2)
    u1 = d.open("s-1", "U-1")
    u1.turn(LISI)   # the model passes user_id U-2: memory now follows the named user
    u1.turn(ADDRESS)
    assert ("U-1", "U-2") in _leaks(d)


def test_position_before_the_question_moves_the_reference(tmp_path: Path) -> None:
    def run(position: str) -> dict[str, str]:
        d = Deployment(tmp_path / position, {"memory": {"mode": "vector",
                                                         "position": position}})
        d.open("s-1", "U-1").turn(WHERE_1)          # O-1001 goes into memory
        d.advance(1)
        today = d.open("s-2", "U-1")
        today.turn(WHERE_2)                          # today's talk is about O-2002
        today.turn(WAIT)                             # "it": the latest order visible
        return d.calls("reply")[-1]["annotations"]["resolved"]

    assert run("start")["order"] == "O-2002"
    assert run("before_question")["order"] == "O-1001"


def test_workspace_notes_are_markdown_and_memory_search_is_scoped(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "workspace"})
    h = d.open("s-1", "U-1")
    h.turn(SHORT)
    notes = tmp_path / "memory" / "files" / "assistant" / "U-1" / "notes" / "2026-11-28.md"
    assert notes.read_text().startswith("# 2026-11-28\n\n- [constraint:brevity] <!-- memory ")
    assert "memory_search" in [t.name for t in h.tool_schemas]
    res = h._run_tool(ToolCallBlock("c1", "memory_search", json.dumps({"query": "简单"})))
    assert json.loads(str(res.output))["results"] == ["[constraint:brevity]"]
    u2 = d.open("s-2", "U-2")
    res = u2._run_tool(ToolCallBlock("c2", "memory_search", json.dumps({"query": "简单"})))
    assert json.loads(str(res.output))["results"] == []


def test_agentic_memory_index_is_injected_and_its_tools_are_confined(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "agentic"})
    h = d.open("s-1", "U-1")
    assert {"memory_read", "memory_write", "memory_edit"} <= {t.name for t in h.tool_schemas}
    ok = h._run_tool(ToolCallBlock("c1", "memory_write", json.dumps(
        {"path": "MEMORY.md", "content": "- prefers short answers: see topics/style.md"})))
    assert not ok.is_error
    bad = h._run_tool(ToolCallBlock("c2", "memory_write", json.dumps(
        {"path": "../U-2/MEMORY.md", "content": "x"})))
    assert bad.is_error and json.loads(str(bad.output))["code"] == "forbidden"
    assert [e["is_error"] for e in d.sink.of_type("memory_tool")] == [False, True]
    d.open("s-2", "U-1").turn(RETURNS)
    assert "prefers short answers" in d.reply_text()
    d.open("s-3", "U-2").turn(RETURNS)
    assert "prefers short answers" not in d.reply_text()


def test_the_injected_message_is_a_memory_hint_and_extraction_requests_are_not_decorated(
        tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": "vector"})
    d.open("s-1", "U-1").turn(SHORT)
    h = d.open("s-2", "U-1")
    h.turn(WHERE_1)
    req = d.calls("reply")[-1]["request"]
    first = req.messages[0]
    assert first.name == MEMORY_SOURCE and isinstance(first.content[0], HintBlock)
    assert all(not _memory_hint(text) for _, p, text in d.requests() if p == "memory")


def test_without_a_workdir_memory_lives_in_the_process() -> None:
    d = Deployment(None, {"memory": "vector"})
    h = d.open("s-1", "U-1")
    h.turn(SHORT)
    h.turn(WHERE_1)
    assert len(h.turn(WHERE_1).text) <= BRIEF_MAX_CHARS


def test_the_agentscope_adapter_reports_unwired_memory_as_not_applicable() -> None:
    from harnesslab.adapters.agentscope_settings import not_applicable

    assert not_applicable(HarnessConfig()) == []
    assert not_applicable(HarnessConfig(memory=MemorySettings(mode="agentic"))) == []
    assert not_applicable(HarnessConfig(memory=MemorySettings(mode="vector"))) == []
    assert not_applicable(HarnessConfig(memory=MemorySettings(mode="workspace"))) == []
    # The one mode AgentScope has no middleware for is reported, with what is wired.
    assert not_applicable(HarnessConfig(memory=MemorySettings(mode="background"))) == [
        "memory background: AgentScope 2.0.11 has no middleware that consolidates a user's "
        "queued sessions later (wired: agentic: AgenticMemoryMiddleware, vector: "
        "Mem0Middleware, workspace: ReMeMiddleware)"]
