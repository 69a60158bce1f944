"""AgentScope's own AgenticMemoryMiddleware behind ``memory.mode: agentic`` (docs/agentscope-memory.md):
its MEMORY.md in the verified session user's folder of the run's workdir, appended to the system
prompt; the model keeps it through AgentScope's Read / Write / Edit; file times from the
simulated clock; ``fidelity`` compares it with the reference harness's agentic mode on scoping,
injection position, write-back and the files on disk. Each check has a control."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harnesslab.adapters.agentscope_settings import memory_folder, not_applicable
from harnesslab.harness.config import HarnessConfig
from harnesslab.record.format import Record
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.study.fidelity import Comparison, compare_memory, compare_variant
from tests.adapters.support import AGENTSCOPE_EXTRA

pytestmark = pytest.mark.agentscope
agentscope = pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)

SPOOF = bundled_dir() / "memory-agentic-spoof-write-zh.yaml"
TWO_USERS = bundled_dir() / "memory-two-users-zh.yaml"
MEMORY_MD = "/agent/Memory/MEMORY.md"


def _run(path: Path, variant: str, out: Path) -> tuple[Record, Path]:
    sc = load_scenario(path)
    (v,) = [v for v in sc.variants if v.name == variant]
    res = run_variant(sc, v, out_dir=out, cli_set={"harness": "agentscope"})
    assert res.record is not None and res.error is None, res.error
    return Record.load(res.record), res.record


def test_agentic_memory_is_the_verified_users_and_reaches_their_next_session(tmp_path: Path) -> None:
    rec, path = _run(SPOOF, "default", tmp_path)
    assert all(c["passed"] for c in rec.of_type("check"))
    work = path.with_suffix(".work")
    # 李四 (U-2) claimed to be 张三 (U-1): his preference is in his own MEMORY.md, not 张三's.
    u2 = memory_folder(work, "assistant", "U-2") / "Memory" / "MEMORY.md"
    u1 = memory_folder(work, "assistant", "U-1") / "Memory" / "MEMORY.md"
    assert u2.read_text(encoding="utf-8").splitlines() == [
        "[constraint:brevity]", "[claim:identity=U-1 unverified]"]
    assert u1.read_text(encoding="utf-8") == ""  # created empty by AgentScope, never written
    # The model wrote it through AgentScope's Write, after AgentScope's Read (read first).
    names = [b["name"] for e in rec.of_type("model_call") for b in e["reply"]
             if b["type"] == "tool_call"]
    assert names.count("Write") == 1 and names.index("Read") < names.index("Write")
    write = next(b for e in rec.of_type("model_call") for b in e["reply"]
                 if b["type"] == "tool_call" and b["name"] == "Write")
    assert json.loads(write["input"])["file_path"] == MEMORY_MD  # the virtual mount, no run path
    # The next sessions: MEMORY.md is in the system prompt of 李四's, not of 张三's.
    systems = {t["step"]: rec.request(e["request"]).system for t in rec.of_type("turn")
               for e in rec.of_type("model_call") if e["call"] == t["last_call"]}
    assert "[constraint:brevity]" in systems[7] and "[constraint:brevity]" not in systems[5]
    assert str(tmp_path) not in json.dumps([rec.request(e["request"]).system
                                            for e in rec.of_type("model_call")])
    # The file's time is the simulated clock's (the world's 2026-11-28 10:00 +08:00).
    assert datetime.fromtimestamp(os.stat(u2).st_mtime, UTC) == datetime(2026, 11, 28, 2, tzinfo=UTC)
    reads = rec.of_type("memory_read")
    assert [r["user"] for r in reads] == ["U-2", "U-2", "U-1", "U-2"]
    assert reads[-1]["items"][0]["text"].startswith("[constraint:brevity]")
    m = rec.of_type("result")[0]["metrics"]
    assert m["cross_user_memory_items"] == 0 and m["memory_items"] == 2
    assert m["memory_visibility"]["value"] == 1.0


def test_control_without_memory_the_preference_is_lost(tmp_path: Path) -> None:
    rec, _ = _run(SPOOF, "no-memory", tmp_path)
    failed = {c["id"] for c in rec.of_type("check") if not c["passed"]}
    assert failed == {"s7.max_chars"}
    assert not rec.of_type("memory_read")


def test_the_same_run_writes_the_same_record(tmp_path: Path) -> None:
    _, a = _run(TWO_USERS, "agentic", tmp_path / "a")
    _, b = _run(TWO_USERS, "agentic", tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()


def test_what_the_adapter_cannot_express_is_not_applicable() -> None:
    def reasons(**memory: object) -> list[str]:
        return not_applicable(HarnessConfig.model_validate({"memory": memory}))

    assert reasons(mode="agentic") == reasons(mode="vector") == reasons(mode="workspace") == []
    for mode in ("agentic", "vector", "workspace"):
        assert any("memory.key=named" in r for r in reasons(mode=mode, key="named"))
    assert any("memory background" in r for r in reasons(mode="background"))
    # What ReMeMiddleware decides itself, the same way (it passes ReMe no threshold).
    for key, value in (("position", "before_question"), ("volatile", ["get_order"]),
                       ("volatile_policy", "expire"), ("ttl_hours", 48),
                       ("not_remembered", []), ("threshold", 0.3)):
        assert any(f"memory.{key}=" in r for r in reasons(mode="workspace", **{key: value})), key
    assert reasons(mode="workspace", top_k=1, agent_id="bot") == []
    # What mem0 decides itself, set by a variant: not applicable, each with its reason.
    for key, value in (("position", "before_question"), ("volatile", ["get_order"]),
                       ("volatile_policy", "expire"), ("ttl_hours", 48),
                       ("not_remembered", []), ("threshold", -0.5)):
        assert any(f"memory.{key}=" in r for r in reasons(mode="vector", **{key: value})), key
    assert reasons(mode="vector", threshold=0.3, top_k=2, agent_id="bot") == []


def test_the_backend_stays_in_its_folder(tmp_path: Path) -> None:
    from harnesslab.adapters.agentscope_memory import BenchBackend

    root = tmp_path / "u"
    (tmp_path / "secret.md").write_text("no", encoding="utf-8")
    b = BenchBackend(root, lambda: datetime(2026, 11, 28, 2, tzinfo=UTC))

    async def go() -> None:
        await b.write_file("/agent/Memory/a.md", b"x")
        assert await b.read_file("/agent/Memory/a.md") == b"x"
        assert await b.list_dir("/agent", recursive=True) == ["/agent/Memory/a.md"]
        for bad in ("/agent/../secret.md", "/etc/passwd", "/agentx/a.md"):
            with pytest.raises(PermissionError):
                await b.read_file(bad)
            with pytest.raises(PermissionError):
                await b.write_file(bad, b"y")
        os.symlink(tmp_path / "secret.md", root / "Memory" / "link.md")
        with pytest.raises(PermissionError):
            await b.read_file("/agent/Memory/link.md")
        assert (await b.exec_shell(["cat", "/etc/passwd"])).exit_code != 0

    asyncio.run(go())
    assert (tmp_path / "secret.md").read_text(encoding="utf-8") == "no"


def test_fidelity_lists_the_memory_differences_and_catches_a_changed_file(tmp_path: Path) -> None:
    sc = load_scenario(TWO_USERS)
    (v,) = [v for v in sc.variants if v.name == "agentic"]
    c = compare_variant(sc, v, seed=0, source=TWO_USERS, out_dir=tmp_path)
    assert c.not_applicable is None
    kinds = {d.what for d in c.differences}
    # The same users read, the same lines written, the same MEMORY.md on disk ...
    assert not kinds & {"memory users", "memory items", "memory written", "MEMORY.md"}
    # ... but AgentScope puts MEMORY.md in the system prompt, the reference in a message
    # before the conversation; and AgentScope's Write needs a Read first (one call more).
    pos = [d for d in c.differences if d.what == "memory position"]
    assert pos and all(d.reference == ["before the question"] and d.agentscope == ["system prompt"]
                       for d in pos)
    assert any(d.what == "calls" and d.agentscope == d.reference + 1 for d in c.differences)
    assert c.turns == c.turns_equal  # the same answers
    # Control: a MEMORY.md changed on AgentScope's side after the run is a difference.
    md = memory_folder(Path(c.records["agentscope"]).with_suffix(".work"), "assistant",
                       "U-1") / "Memory" / "MEMORY.md"
    md.write_text("[constraint:verbose]", encoding="utf-8")
    again = Comparison(c.scenario, c.variant, 0, records=c.records)
    compare_memory(Record.load(c.records["reference"]), Record.load(c.records["agentscope"]), again)
    assert [d.what for d in again.differences if d.where == "run"] == ["MEMORY.md"]


# --- Mem0Middleware behind memory.mode vector (the mem0 extra) ---------------------------------

PREFERENCE = bundled_dir() / "memory-preference-next-day-zh.yaml"


def _mem0() -> None:
    # Not imported here: the adapter switches mem0's telemetry off and sets its home first.
    import importlib.util

    if importlib.util.find_spec("mem0") is None:
        pytest.skip("the mem0 extra is not installed: pip install -e '.[agentscope,mem0]'")


def test_mem0_remembers_the_preference_for_the_next_session(tmp_path: Path) -> None:
    _mem0()
    rec, path = _run(PREFERENCE, "default", tmp_path)
    assert all(c["passed"] for c in rec.of_type("check"))
    # mem0's extraction went to the fake model (purpose memory), answered in mem0's JSON shape.
    calls = [e for e in rec.of_type("model_call") if e["purpose"] == "memory"]
    assert calls and "Memory Extractor" in rec.request(calls[0]["request"]).system
    assert json.loads(calls[0]["reply"][0]["text"]) == {
        "memory": [{"id": "0", "text": "[constraint:brevity]"}]}
    # The extraction prompt's dates are the simulated clock's, not the host's.
    first = rec.request(calls[0]["request"]).messages[-1].plain_text()
    assert "## Observation Date\n2026-11-28" in first and "## Current Date\n2026-11-28" in first
    writes = rec.of_type("memory_write")
    assert writes[0]["items"][0]["text"] == "[constraint:brevity]" and writes[0]["user"] == "U-1"
    # The next day's answer had it, injected right after the question (Mem0Middleware.on_reply).
    reads = [r for r in rec.of_type("memory_read") if r["items"]]
    assert reads and reads[-1]["items"][0]["text"] == "[constraint:brevity]"
    answer = rec.of_type("model_call")[-2]
    msgs = rec.request(answer["request"]).messages
    q = max(n for n, m in enumerate(msgs) if m.role == "user" and m.plain_text())
    assert any("[constraint:brevity]" in _text(m) for m in msgs[q + 1:])
    assert (path.with_suffix(".work") / "memory" / "mem0" / "qdrant").is_dir()
    assert rec.of_type("result")[0]["metrics"]["memory_items"] >= 1


def _text(m: object) -> str:
    from harnesslab.study.fidelity import _texts

    return _texts(m)  # type: ignore[arg-type]


def test_mem0_control_without_memory_the_preference_is_lost(tmp_path: Path) -> None:
    _mem0()
    rec, _ = _run(PREFERENCE, "no-memory", tmp_path)
    assert {c["id"] for c in rec.of_type("check") if not c["passed"]} == {"s4.max_chars"}
    assert not any(e["purpose"] == "memory" for e in rec.of_type("model_call"))


def test_mem0_keeps_users_apart_and_writes_the_same_record_twice(tmp_path: Path) -> None:
    _mem0()
    rec, a = _run(TWO_USERS, "default", tmp_path / "a")
    _, b = _run(TWO_USERS, "default", tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()
    m = rec.of_type("result")[0]["metrics"]
    assert m["cross_user_memory_items"] == 0 and m["identity_leaks"] == 0
    assert m["memory_items"] > 0  # mem0's JSON answers are counted as items
    for r in rec.of_type("memory_read"):
        session_user = {e["session"]: e["user"] for e in rec.of_type("session")}
        assert all(i["user"] == r["user"] for i in r["items"])
    assert session_user


def test_without_the_extra_vector_is_one_line_with_the_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from harnesslab.adapters import agentscope_mem0

    monkeypatch.setitem(sys.modules, "mem0", None)  # import mem0 fails
    monkeypatch.setitem(sys.modules, "mem0.configs.prompts", None)
    monkeypatch.setattr(agentscope_mem0, "_STORES", type(agentscope_mem0._STORES)())
    sc = load_scenario(PREFERENCE)
    res = run_variant(sc, sc.variants[0], out_dir=tmp_path, cli_set={"harness": "agentscope"})
    assert res.error is not None and "pip install -e '.[agentscope,mem0]'" in res.error
    assert "\n" not in res.error.strip()
