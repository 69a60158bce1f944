"""The bench says when it could not read a request instead of blaming the harness: a black-box
program that sends the user's words where the fake model does not read a question (in the
system prompt, docs/understanding.md) gets ``unreadable`` checks, shown apart in the record,
the verdict and the table; a program that really drops the question still fails as today."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.run.suite import summarize
from harnesslab.run.table import format_results
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("starlette")

PROGRAM = """import json, sys
from openai import OpenAI
client = OpenAI()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "user":
        print(json.dumps({"type": "ok"}), flush=True)
        continue
    messages = [{"role": "system", "content": SYSTEM.format(q=msg["text"])},
                {"role": "user", "content": USER}]
    reply = client.chat.completions.create(model="m", messages=messages).choices[0].message
    print(json.dumps({"type": "reply", "text": reply.content or ""}), flush=True)
"""


def _run(tmp_path: Path, system: str, user: str) -> RunResult:
    prog = tmp_path / "prog.py"
    prog.write_text(f"SYSTEM = {system!r}\nUSER = {user!r}\n" + PROGRAM, encoding="utf-8")
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    return run_variant(sc, v, source=path, out_dir=tmp_path / "runs",
                       cli_set={"harness": f"cmd:python {prog}", "turn_timeout": 30})


def test_a_question_sent_where_the_model_does_not_read_it_is_unreadable(tmp_path: Path) -> None:
    r = _run(tmp_path, "You are a support agent. The customer's message: {q}",
             "Please answer the customer's message in your instructions.")
    assert r.error is None and r.verdict is not None
    assert r.checks and all(c.unreadable for c in r.checks)
    assert not any(c.passed for c in r.checks)
    # Not a harness failure: the verdict blames nothing, and lists every check apart.
    assert r.verdict.unexpected == [] and r.verdict.ok
    assert len(r.checks_unreadable) == len(r.checks)
    assert "found no question it reads" in r.checks_unreadable[0]
    rec = Record.load(r.record)  # type: ignore[arg-type]
    turns = rec.of_type("turn")
    assert turns and all("unreadable" in t for t in turns)
    assert rec.of_type("unreadable")[0]["checks"] == r.checks_unreadable
    assert all(c.get("unreadable") for c in rec.of_type("check"))
    table = format_results([r], summarize([r]))
    assert "  ? followup-o1001-zh/default: unreadable s1." in table
    assert "could not read" in table.splitlines()[-1]
    assert "passed every check" in table and "0 passed every check" in table


def test_a_question_really_dropped_still_fails_the_harness(tmp_path: Path) -> None:
    # The control: the program sends no trace of the user's words.
    r = _run(tmp_path, "You are a support agent.", "hello")
    assert r.error is None and r.verdict is not None
    assert not any(c.unreadable for c in r.checks)
    assert r.verdict.unexpected and not r.verdict.ok
    assert any("asked to clarify (utterance_not_found)" in u for u in r.verdict.unexpected)
    rec = Record.load(r.record)  # type: ignore[arg-type]
    assert not any("unreadable" in t for t in rec.of_type("turn"))
    assert not rec.of_type("unreadable")
