"""AgentScope's own ReMeMiddleware behind ``memory.mode: workspace`` (the reme extra;
docs/agentscope-memory.md): its embedded ReMe app with the host-timed jobs off, a workspace per
verified user in the run's workdir, ReMe's auto_memory agent answered by the fake model (a
daily card written with ``daily_write``, merged with ``read`` / ``write``), the retrieval
awaited before the first call and injected after the question. Slow (``.ci/run``'s slow stage
installs the extra). Controls: without memory the preference is lost; without the package the
variant is one line with the install."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from datetime import date
from pathlib import Path

import pytest

from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from tests.adapters.support import AGENTSCOPE_EXTRA

pytestmark = [pytest.mark.slow, pytest.mark.agentscope]
agentscope = pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)
from tests.adapters.test_agentscope_memory import _run, _text  # noqa: E402 (after the skip)

PREFERENCE = bundled_dir() / "memory-preference-next-day-zh.yaml"
TWO_USERS = bundled_dir() / "memory-two-users-zh.yaml"
REME_EXTRA = "pip install -e '.[agentscope,reme]'"


def _reme() -> None:
    if importlib.util.find_spec("reme") is None:
        pytest.skip(f"the reme extra is not installed: {REME_EXTRA}")


def test_reme_remembers_the_preference_for_the_next_session(tmp_path: Path) -> None:
    _reme()
    rec, path = _run(PREFERENCE, "workspace", tmp_path / "a")
    assert all(c["passed"] for c in rec.of_type("check"))
    # ReMe's auto_memory agent asked the fake model (purpose memory), which wrote the daily card
    # with ReMe's daily_write, dated by the simulated day the prompt states.
    calls = [e for e in rec.of_type("model_call") if e["purpose"] == "memory"]
    assert calls and "automatic memory system" in rec.request(calls[0]["request"]).system
    first = calls[0]["reply"][0]
    assert first["type"] == "tool_call" and first["name"] == "daily_write"
    card = next((path.with_suffix(".work") / "memory" / "reme" / "assistant" / "U-1" / "daily"
                 / "2026-11-28").glob("*.md"))
    assert "[constraint:brevity]" in card.read_text(encoding="utf-8")
    # The next day's answering call had it, right after the question (ReMe's on_reasoning), in
    # the first call of the turn (the retrieval awaited).
    reads = [r for r in rec.of_type("memory_read") if r["items"]]
    assert reads and "[constraint:brevity]" in reads[-1]["items"][0]["text"]
    answer = [e for e in rec.of_type("model_call") if e["purpose"] == "reply"][-2]
    msgs = rec.request(answer["request"]).messages
    q = max(n for n, m in enumerate(msgs) if m.role == "user" and m.plain_text())
    assert any("[constraint:brevity]" in _text(m) for m in msgs[q + 1:])
    assert rec.of_type("result")[0]["metrics"]["memory_items"] >= 1
    # The cards are filed by the simulated day, and the host's date is nowhere in the record.
    text = path.read_text(encoding="utf-8")
    host = date.today().isoformat()
    assert '"date\\": \\"2026-11-28\\"' in text
    assert host in ("2026-11-28", "2026-11-29") or host not in text
    # The same run into the same folder writes the same record (ReMe's write tool names the
    # workspace's absolute path, docs/agentscope-memory.md, so the folder must be the same).
    shutil.move(str(tmp_path / "a"), str(tmp_path / "first"))
    _, again = _run(PREFERENCE, "workspace", tmp_path / "a")
    assert again.read_bytes() == (tmp_path / "first" / path.relative_to(tmp_path / "a")
                                  ).read_bytes()


def test_reme_keeps_users_apart(tmp_path: Path) -> None:
    _reme()
    rec, path = _run(TWO_USERS, "workspace", tmp_path)
    assert all(c["passed"] for c in rec.of_type("check"))
    m = rec.of_type("result")[0]["metrics"]
    assert m["cross_user_memory_items"] == 0 and m["identity_leaks"] == 0
    users = sorted(p.name for p in (path.with_suffix(".work") / "memory" / "reme" / "assistant"
                                    ).iterdir())
    assert len(users) == 2  # one workspace per verified user
    assert all(i["user"] == r["user"] for r in rec.of_type("memory_read") for i in r["items"])


def test_without_the_extra_workspace_is_one_line_with_the_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "reme", None)  # import reme fails
    sc = load_scenario(PREFERENCE)
    (v,) = [v for v in sc.variants if v.name == "workspace"]
    res = run_variant(sc, v, out_dir=tmp_path, cli_set={"harness": "agentscope"})
    assert res.error is not None and REME_EXTRA in res.error
    assert "\n" not in res.error.strip()


def test_reme_runs_the_workspace_variants_with_only_the_documented_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from harnesslab.cli import main

    _reme()
    memory = sorted(str(p) for p in bundled_dir().glob("memory-*.yaml"))
    code = main(["run", *memory, "--set", "harness=agentscope", "--variant", "workspace",
                 "--out", str(tmp_path), "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    ran = [r for r in rows if not r["not_applicable"]]
    assert len(ran) == 8 and code == 1
    # docs/agentscope-memory.md: traced to ReMe's auto_memory (the transcript it records holds
    # the messages' texts only, no tool result) and to its daily index card outranking the note.
    assert [r["scenario"] for r in ran if not r["expected"]] == [
        "memory-recall-by-word-zh", "memory-recall-short-item-en", "memory-recall-top-k-en",
        "memory-recall-top-k-zh"]


def test_the_stock_app_does_not_start_and_the_adapters_starts_without_its_off_jobs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    _reme()
    monkeypatch.chdir(tmp_path)  # the stock app logs to ./logs
    from agentscope.middleware import ReMeMiddleware

    from harnesslab.adapters.agentscope_reme import OFF_JOBS, BenchReMe

    # As AgentScope 2.0.11 ships it with reme-ai 0.4.2.0: its dream pipeline names a step ReMe
    # does not register, so the app never starts (every search and write-back fails, logged).
    stock = ReMeMiddleware(workspace_dir=str(tmp_path / "stock"))
    with pytest.raises(ValueError, match="dream_topics_step"):
        asyncio.run(stock._ensure_started())
    ours = BenchReMe(workspace_dir=str(tmp_path / "ours"), timezone="Asia/Shanghai",
                     chat_model=None, top_k=5)

    async def go() -> list[str]:
        await ours._ensure_started()
        try:
            jobs = ours._app.context.jobs
            assert all(not jobs[n].enabled for n in OFF_JOBS)
            assert ours._app.config.timezone == "Asia/Shanghai"
            return await ours._search("anything")
        finally:
            await ours.close()

    assert asyncio.run(go()) == []  # started, searchable, empty
