"""The LangGraph example through a representative part of the bundled suite
(``support.REPRESENTATIVE``; the whole suite with ``HARNESSLAB_FULL_SUITE=1``), black-box on
loopback (slow: one program per run): the table names it, its records hold every request it
sent, and the checks it fails are ones its own context handling (trim to 2000 approximate
tokens, summarise only after an answer, no time stated) explains."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.record.format import Record
from tests.wire.support import assert_only_not_applicable, example_through_suite
from tests.wire.test_cmd import ROOT

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")
pytest.importorskip("mcp")

# Logs every body the agent sends (LangChain calls the SDK's async client) before sending it.
LOGGING = """import runpy, json, os, sys
from openai.resources.chat.completions import AsyncCompletions
real = AsyncCompletions.create
async def create(self, **kw):
    with open(os.environ["SENT_LOG"], "a") as f:
        f.write(json.dumps({k: kw[k] for k in ("messages", "tools", "max_completion_tokens",
                                               "max_tokens") if k in kw},
                           ensure_ascii=False) + "\\n")
    return await real(self, **kw)
AsyncCompletions.create = create
runpy.run_path(sys.argv[1], run_name="__main__")
"""


@pytest.mark.slow
def test_langgraph_example_through_the_bundled_suite(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, out = example_through_suite(ROOT / "examples" / "langgraph_agent.py", LOGGING,
                                            tmp_path, monkeypatch, capsys,
                                            "--set", "turn_timeout=120")
    assert code == 1  # it is not the reference harness: some outcomes differ
    assert {r["settings"]["harness"] for r in rows.values()} == {"cmd:langgraph_agent.py"}
    # Its trimming keeps 2000 tokens by LangChain's count (characters / 4), and writes a
    # summary only after an answer: the small talk preloaded after the first question pushes
    # O-1001 out of the trimmed request before any summary holds it.
    follow = rows[("followup-after-filler-zh", "default")]["unexpected"]
    assert any("s3.resolves failed: resolved nothing" in u for u in follow)
    rec = Record.load(out / "followup-after-filler-zh" / "default" / "seed0.jsonl")
    s3 = [e for e in rec.of_type("model_call") if e["step"] == 3]
    assert "O-1001" not in rec.request_text(s3[0]["request"])
    assert "Create a summary" in rec.request(s3[-1]["request"]).messages[-1].plain_text()
    # It never states the time: yesterday's ETA is served as today's.
    stale = rows[("stale-logistics-zh", "default")]["unexpected"]
    assert any("fresh_fact failed: stale" in u for u in stale)
    assert_only_not_applicable(rows)
    # Its SQLite checkpointer brings the session back after a restart, a kill and across
    # alternate instances (the control without it: test_langgraph_restarts below).
    for s in ("restart-followup-zh", "alternate-instances-zh", "kill-mid-turn-zh"):
        assert rows[(s, "default")]["expected"], rows[(s, "default")]


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["restart-followup-zh", "alternate-instances-zh",
                                      "kill-mid-turn-zh"])
def test_langgraph_restarts_need_its_checkpointer(tmp_path: Path, scenario: str) -> None:
    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.loader import bundled_dir, load_scenario

    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    example = ROOT / "examples" / "langgraph_agent.py"

    def run(flag: str) -> list[str]:
        r = run_variant(sc, v, source=path, out_dir=tmp_path / (flag or "sqlite"),
                        cli_set={"harness": f"cmd:python {example} {flag}".strip(),
                                 "turn_timeout": 120})
        assert r.error is None, r.error
        return [c.id for c in r.checks if not c.passed]

    assert run("") == []
    # The control: the same graph without its checkpointer forgets across processes.
    lost = run("--no-checkpointer")
    assert any(c.endswith(".resolves") for c in lost), lost
