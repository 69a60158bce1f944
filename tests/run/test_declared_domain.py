"""A scenario about a declared domain (the help-desk example) runs like a bundled one: every
variant as designed over three seeds, its record naming the domain and the ids it shows."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harnesslab import run_scenario_file
from harnesslab.record.format import Record

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "helpdesk" / \
    "vpn-ticket-followup-zh.yaml"


def test_every_variant_as_designed_over_three_seeds(tmp_path: Path) -> None:
    results = run_scenario_file(EXAMPLE, seeds=(0, 1, 2), out_dir=tmp_path)
    assert [r for r in results if not r.expected] == []
    by = {(r.variant, r.seed): r for r in results}
    assert by[("default", 0)].all_passed
    # Each control fails the checks it names, and only for the reason it names.
    failed = {c.id for c in by[("trust-claims", 1)].checks if not c.passed}
    assert failed == {"s6.no_leak", "s6.mentions", "s6.not_mentions"}
    failed = {c.id for c in by[("no-time-hint", 2)].checks if not c.passed}
    assert failed == {"s5.called", "s5.fresh_fact", "s5.mentions"}
    assert by[("default", 0)].metrics["followup_accuracy"]["value"] == 1.0
    assert by[("truncate-small-window", 0)].metrics["followup_accuracy"]["value"] == 0.0


def test_the_record_names_the_domain_and_its_ids(tmp_path: Path) -> None:
    (r,) = run_scenario_file(EXAMPLE, out_dir=tmp_path, variants=["default"])
    assert r.record is not None
    rec = Record.load(r.record)
    sha = hashlib.sha256(EXAMPLE.with_name("helpdesk.domain.yaml").read_bytes()).hexdigest()
    assert rec.header["domain"] == {"name": "helpdesk", "sha256": sha, "id_patterns": {
        "user": r"(?<![A-Za-z0-9_])(?:E-\d{3})(?![A-Za-z0-9_])",
        "ticket": r"(?<![A-Za-z0-9_])(?:INC-\d{4})(?![A-Za-z0-9_])"}}
    assert rec.header["private"] == {"E-101": ["zhang.wei@example.com", "8101"],
                                     "E-102": ["li.na@example.com", "8102"]}
    assert rec.header["max_ages"] == {"get_ticket": 7200.0, "list_tickets": 7200.0,
                                      "get_employee": None, "search_kb": None}
    calls = [json.loads(line) for line in r.record.read_text(encoding="utf-8").splitlines()]
    present = [e["present"]["ids"] for e in calls if e.get("type") == "model_call"]
    assert ["E-101", "INC-1001"] in present or ["INC-1001"] in present


def test_over_the_wire_the_domain_tools_reach_the_program(tmp_path: Path) -> None:
    """The black-box route: the reference harness as a program (the tools from the domain
    file over the wire) gives the same verdicts as in process."""
    pytest.importorskip("uvicorn", reason="the serve extra: pip install 'harnesslab[serve]'")
    wire = run_scenario_file(EXAMPLE, out_dir=tmp_path / "wire", cli_set={
        "harness": "cmd:python -m harnesslab.adapters.reference_program"})
    here = run_scenario_file(EXAMPLE, out_dir=tmp_path / "here")
    assert [r.expected for r in wire] == [True] * 4
    assert [[(c.id, c.passed) for c in r.checks] for r in wire] == \
        [[(c.id, c.passed) for c in r.checks] for r in here]
    assert wire[0].record is not None
    calls = Record.load(wire[0].record).of_type("tool_call")
    assert [(e["name"], e["acting_user"]) for e in calls][:1] == [("get_ticket", "E-101")]
