"""``fidelity --against``'s turn-by-turn comparison: one harness on two routes agrees in every
turn; two different harnesses differ where their behaviour does (the control)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harnesslab.record.format import Record
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.study import fidelity_turns as ft

pytest.importorskip("uvicorn")
FOLLOWUP = bundled_dir() / "followup-after-filler-zh.yaml"
WRAPPER = ft.Pair("wrapper", {"harness": "reference", "strategy": "codex"},
                         {"harness": f"cmd:{sys.executable} -m harnesslab.adapters."
                                     "reference_program", "turn_timeout": 120}, "codex")


def test_one_harness_on_two_routes_agrees_in_every_turn(tmp_path: Path) -> None:
    # The reference harness in process against itself as a program: the compactions seen from
    # outside are the ones it made, the handoff, the request after and the answers the same.
    sc = load_scenario(FOLLOWUP)
    v = next(x for x in sc.variants if x.name == "codex")
    c = ft.compare_variant_turns(sc, v, WRAPPER, seed=0, source=FOLLOWUP, out_dir=tmp_path)
    assert c.not_applicable is None
    assert c.differences == [], c.differences
    assert c.turns == c.turns_equal == 2  # the question and the follow-up
    assert c.compaction_turns == c.compaction_turns_equal >= 1
    assert c.costs["compactions"][0] == c.costs["compactions"][1] >= 1
    report = ft.format_turn_report([c], WRAPPER)
    assert "1 agree in every turn" in report and "0 differences" in report


def test_a_handoff_that_loses_the_fact_differs_where_it_does(tmp_path: Path) -> None:
    # The control: the same turns through a handoff whose summarizer drops the tool result.
    sc = load_scenario(FOLLOWUP)
    runs = {name: run_variant(sc, next(x for x in sc.variants if x.name == name), seed=0,
                              source=FOLLOWUP, out_dir=tmp_path / name)
            for name in ("codex", "codex-handoff-loses-fact")}
    c = ft.TurnComparison(sc.id, "codex", 0)
    a, b = runs["codex"], runs["codex-handoff-loses-fact"]
    assert a.record is not None and b.record is not None
    ft.compare_turn_records(Record.load(a.record), a.checks, Record.load(b.record), b.checks, c)
    where = {(d.where, d.what) for d in c.differences}
    assert ("step 3", "checks") in where and ("step 3", "answer") in where
    assert c.turns == 2 and c.turns_equal < 2
    assert not c.agrees


def test_a_variant_with_another_strategy_is_not_applicable(tmp_path: Path) -> None:
    sc = load_scenario(bundled_dir() / "stale-logistics-zh.yaml")
    v = next(x for x in sc.variants if x.name == "window-2")
    c = ft.compare_variant_turns(sc, v, WRAPPER, seed=0, source=None, out_dir=tmp_path)
    assert c.not_applicable == ("the variant sets strategy=window; the comparison is of the "
                                "codex strategy")
    assert not (tmp_path / "reference").exists()  # nothing ran


def test_the_codex_pair_runs_the_registered_program() -> None:
    pair = ft.codex_pair()
    assert pair.other["harness"] == "codex-cli" and pair.reference["strategy"] == "codex"
    assert ft.codex_pair("cmd:python examples/codex_agent.py --host-clock").other["harness"] \
        .endswith("--host-clock")
