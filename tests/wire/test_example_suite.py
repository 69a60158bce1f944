"""The plain openai-SDK example through the whole bundled suite, black-box on loopback (slow:
one program per run): the table names it, its records hold every request it sent, and the
checks it fails are the ones its context handling (last 12 messages, no time) explains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.adapters.openai_wire import request_from_openai
from harnesslab.bench.record import CALL_EVENTS, Record
from harnesslab.cli import main
from tests.wire.test_cmd import LOGGING, ROOT

pytest.importorskip("openai")


@pytest.mark.slow
def test_plain_example_through_the_bundled_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SENT_LOG", str(tmp_path / "sent.jsonl"))
    wrapper = tmp_path / "logging_agent.py"
    wrapper.write_text(LOGGING, encoding="utf-8")
    example = ROOT / "examples" / "plain_openai_agent.py"
    out = tmp_path / "out"
    code = main(["run", "--set", f"harness=cmd:python {wrapper} {example}", "--out", str(out),
                 "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 1  # it is not the reference harness: some outcomes differ
    rows = {(r["scenario"], r["variant"]): r for r in summary["rows"]}
    assert {r["settings"]["harness"] for r in rows.values()} == {"cmd:plain_openai_agent.py"}
    # Every request it sent is in the records, in order (runs are serial, in summary order).
    sent = [json.loads(x) for x in (tmp_path / "sent.jsonl").read_text().splitlines()]
    recorded = []
    for scenario, variant in rows:
        rec = Record.load(out / scenario / variant / "seed0.jsonl")
        recorded += [rec.request(e["request"]) for e in rec.events if e["type"] in CALL_EVENTS]
    assert len(sent) == len(recorded) > 100
    for body, req in zip(sent, recorded, strict=True):
        assert request_from_openai(body, session_id=req.session_id) == req
    # Failures its own context handling explains.
    follow = rows[("followup-after-filler-zh", "default")]["unexpected"]
    assert any("s3.resolves failed: resolved nothing" in u for u in follow)
    stale = rows[("stale-logistics-zh", "default")]["unexpected"]
    assert any("fresh_fact failed: stale" in u for u in stale)
    # No run hung or crashed, except where the scenario needs the harness's own estimate or
    # its state (restarts, alternate instances, kills: a program without save_state).
    errors = {k: r["errors"] for k, r in rows.items() if r["errors"]}
    assert errors and all(rows[k]["not_applicable"] for k in errors)
    why = ("NotApplicable: filler fill_to needs the harness's own estimate",
           "harness 'cmd' does not save its state")
    assert all(any(w in e for w in why) for es in errors.values() for e in es), errors
    assert all(rows[(s, "default")]["not_applicable"] for s in (
        "restart-followup-zh", "alternate-instances-zh", "kill-mid-turn-zh"))
