"""The real Codex CLI under the bench (``harness=codex-cli``, slow: a Codex process per turn):
its requests reach the fake model over the Responses wire, its MCP tools are offered and
called, each turn resumes the session from Codex's own rollout, and its SQLite state indexes
the thread. Skipped, with one line, when node or the codex binary is absent
(`npm install --prefix .ci/node @openai/codex@0.171.0`)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import date
from pathlib import Path

import pytest

from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from tests.wire.test_cmd import ROOT

pytest.importorskip("mcp")
EXAMPLE = ROOT / "examples" / "codex_agent.py"  # the same program, run with arguments
FOUND = [p for p in (shutil.which("codex"), "/work/codex-try/node_modules/.bin/codex",
                     ROOT / ".ci" / "node" / "node_modules" / ".bin" / "codex")
         if p and Path(p).exists()]
if shutil.which("node") is None or not FOUND:
    pytest.skip("the Codex CLI is not installed (npm install --prefix .ci/node "
                "@openai/codex@0.171.0)", allow_module_level=True)


def _run(tmp_path: Path, scenario: str, *args: str) -> RunResult:
    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    # The registered name; with arguments, the checkout's example (it runs the same program).
    harness = f"cmd:{' '.join(('python', str(EXAMPLE), *args))}" if args else "codex-cli"
    return run_variant(sc, v, source=path, out_dir=tmp_path / "runs",
                       cli_set={"harness": harness, "turn_timeout": 300})


def _texts(rec: Record, call: dict) -> list[str]:
    return [m.plain_text() for m in rec.request(call["request"]).messages]


@pytest.mark.slow
def test_codex_answers_the_follow_up_from_its_resumed_rollout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESSLAB_CODEX", str(FOUND[0]))
    res = _run(tmp_path, "followup-o1001-zh")
    assert res.error is None, res.error
    assert res.verdict is not None and res.verdict.ok, res.verdict.unexpected
    assert res.record is not None
    rec = Record.load(res.record)
    calls = rec.of_type("model_call")
    first = _texts(rec, calls[0])
    # Codex's own instructions and its environment context, at the world's date (the shim).
    assert first[0].startswith("You are a coding agent running in the Codex CLI")
    env = next(t for t in first if t.startswith("<environment_context>"))
    assert "<current_date>2026-11-28</current_date>" in env
    # Its MCP tools came as a namespace and were offered one by one; it called track_order.
    offered = {t.name for t in rec.request(calls[0]["request"]).tools}
    assert {"track_order", "exec_command"} <= offered
    assert [e["name"] for e in rec.of_type("tool_call")] == ["track_order"]
    # The second turn is a fresh `codex exec resume`: its request holds the first turn.
    last = _texts(rec, calls[-1])
    assert "帮我查订单 O-1001 为什么还没到，回答简单一点。" in last and last[-1] == "那我明天还要等吗？"
    (home,) = (res.record.parent / f"{res.record.stem}.work").glob("program*/codex-home")
    rollouts = list((home / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1  # one thread, resumed, never a second one
    kinds = [json.loads(line)["type"] for line in rollouts[0].read_text().splitlines()]
    assert kinds[0] == "session_meta" and kinds.count("turn_context") == 2
    db = sqlite3.connect(home / "state_5.sqlite")
    (row,) = db.execute("select rollout_path, first_user_message from threads").fetchall()
    assert Path(row[0]) == rollouts[0] and row[1].startswith("帮我查订单 O-1001")


@pytest.mark.slow
def test_without_the_clock_shim_codex_states_the_host_date(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The control of the shim: Codex's date comes from the host clock.
    monkeypatch.setenv("HARNESSLAB_CODEX", str(FOUND[0]))
    res = _run(tmp_path, "followup-o1001-zh", "--host-clock")
    assert res.record is not None
    rec = Record.load(res.record)
    env = next(t for t in _texts(rec, rec.of_type("model_call")[0])
               if t.startswith("<environment_context>"))
    today = date.today().isoformat()
    assert f"<current_date>{today}</current_date>" in env
    assert today == "2026-11-28" or "<current_date>2026-11-28</current_date>" not in env


@pytest.mark.slow
def test_fidelity_against_codex_turn_by_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `harnesslab fidelity --against codex-cli` on a scenario without a compaction: the same
    # answers, the same facts cited and the same checks turn by turn; Codex's own prompt makes
    # every request many times the reference harness's (listed as costs, not differences).
    from harnesslab.study import fidelity_turns as ft

    monkeypatch.setenv("HARNESSLAB_CODEX", str(FOUND[0]))
    path = bundled_dir() / "stale-logistics-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    c = ft.compare_variant_turns(sc, v, ft.codex_pair(), seed=0, source=path,
                                 out_dir=tmp_path)
    assert c.not_applicable is None and c.differences == [], c.differences
    assert c.turns == c.turns_equal == 2
    ref_input, codex_input = c.costs["true_input_tokens"]
    assert codex_input > 5 * ref_input > 0
