"""Compaction seen from outside: the reference harness as a program compacts where it does in
process, and the bench finds it from the requests alone (the compaction, the summary call and
its tokens); a program that never drops history shows none (the control)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from harnesslab.judge.observed import observe
from harnesslab.record.format import Record
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("starlette")
WRAPPER = "cmd:python -m harnesslab.adapters.reference_program"
ROOT = Path(__file__).resolve().parents[2]


def test_compactions_and_summary_tokens_are_found_from_the_requests(tmp_path: Path) -> None:
    path = bundled_dir() / "followup-after-filler-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    inproc = run_variant(sc, v, source=path, out_dir=tmp_path / "in")
    wire = run_variant(sc, v, source=path, out_dir=tmp_path / "wire",
                       cli_set={"harness": WRAPPER, "turn_timeout": 120})
    assert wire.error is None, wire.error
    assert inproc.metrics is not None and wire.metrics is not None
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] == 1
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] > 0
    assert {c.id: c.passed for c in wire.checks} == {c.id: c.passed for c in inproc.checks}
    rec = Record.load(wire.record)  # type: ignore[arg-type]
    seen = observe(rec)
    summary_calls = [e["call"] for e in Record.load(inproc.record).of_type(  # type: ignore[arg-type]
        "model_call") if e["purpose"] == "summary"]
    assert sorted(seen.summaries) == sorted(seen.auxiliary) == summary_calls
    assert seen.compactions[0]["removed"] > 0 and seen.compactions[0]["summary"]
    # No event of the program's own reached the record: it was all found from outside.
    assert rec.of_type("compaction") == []
    # The table shows '-' for the reference harness's settings, which a program need not read.
    assert wire.settings["strategy"] is None and wire.settings["service"] == "openai-128k"

    # The control: a program that resends its whole history compacts nothing.
    plain = run_variant(sc, v, source=path, out_dir=tmp_path / "plain", cli_set={
        "harness": f"cmd:python {ROOT / 'examples' / 'anthropic_agent.py'}",
        "turn_timeout": 120})
    assert plain.metrics is not None and plain.metrics["compactions"] == 0
    assert plain.metrics["summary_tokens"] == 0


@pytest.mark.parametrize("variant", ["codex", "summary-fails"])
def test_a_retried_call_is_one_attempt_not_a_compaction(tmp_path: Path, variant: str) -> None:
    """codex trims its oldest message per overflow until its summary request fits (rejected
    requests, each retried with less); a refusing summarizer's ladder sends the same request
    again (a reply not taken up). Seen from outside, both are one compaction and their calls
    its cost, as in process."""
    path = bundled_dir() / "cost-after-compaction-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == variant)
    inproc = run_variant(sc, v, source=path, out_dir=tmp_path / "in")
    wire = run_variant(sc, v, source=path, out_dir=tmp_path / "wire",
                       cli_set={"harness": WRAPPER, "turn_timeout": 120})
    assert wire.error is None, wire.error
    assert inproc.metrics is not None and wire.metrics is not None
    rec = Record.load(wire.record)  # type: ignore[arg-type]
    calls = [e for e in rec.events if e["type"] in ("model_call", "overflow")]
    requests = [tuple(rec.message_hashes(e["request"])) for e in calls]
    if variant == "codex":  # the pattern is there: rejected requests retried with less
        assert sum(e["type"] == "overflow" for e in calls) > 10
    else:  # the same request sent again after a reply
        assert any(a == b for a, b in itertools.pairwise(requests))
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] >= 4
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] > 0
