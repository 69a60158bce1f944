"""``harnesslab fidelity``: the reference harness (prompts=agentscope) against the real
AgentScope, call by call. The comparison finds differences where there are some (the default
profile's own texts), and finds none on the bundled suite (slow: the whole suite, twice)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.record.format import Record
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.study.fidelity import Comparison, compare_records, compare_variant, totals
from tests.adapters.support import AGENTSCOPE_EXTRA

pytestmark = pytest.mark.agentscope
agentscope = pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)

SUMMARY_FAILS = bundled_dir() / "summary-fails-truncation-zh.yaml"


def test_a_variant_with_compaction_agrees_call_by_call(tmp_path: Path) -> None:
    sc = load_scenario(SUMMARY_FAILS)
    c = compare_variant(sc, sc.variants[0], seed=0, source=SUMMARY_FAILS, out_dir=tmp_path)
    assert c.not_applicable is None and c.differences == []
    assert (c.calls, c.summary_calls, c.compaction_points, c.turns) == (7, 3, 1, 2)
    assert c.estimates_equal == c.requests_equal == 7
    assert c.agrees
    assert Path(c.records["agentscope"]).parent.parent.parent.name == "agentscope"


def test_a_setting_without_equivalent_is_not_applicable_not_agreement(tmp_path: Path) -> None:
    sc = load_scenario(bundled_dir() / "stale-logistics-zh.yaml")
    (v,) = [v for v in sc.variants if v.name == "no-time-hint"]
    c = compare_variant(sc, v, seed=0, source=None, out_dir=tmp_path)
    assert c.not_applicable is not None and "time_hint=false" in c.not_applicable
    assert not c.agrees and c.calls == 0 and not list(tmp_path.iterdir())
    assert totals([c])["not_applicable"] == 1 and totals([c])["runs"] == 0


def test_differences_are_listed_with_their_call_and_both_values(tmp_path: Path) -> None:
    # The reference's default profile (its own texts: runtime hint, compression prompt,
    # reminder, schema) against AgentScope: estimates and requests differ, each one listed.
    sc = load_scenario(SUMMARY_FAILS)
    v = sc.variants[0]
    ref = run_variant(sc, v, out_dir=tmp_path / "r", cli_set={"prompts": "default"})
    ags = run_variant(sc, v, out_dir=tmp_path / "a", cli_set={"harness": "agentscope"})
    c = Comparison(sc.id, v.name, 0)
    assert ref.record is not None and ags.record is not None
    compare_records(Record.load(ref.record), Record.load(ags.record), c)
    est = [d for d in c.differences if d.what == "estimate" and d.where.startswith("call ")]
    assert est
    ags_calls = {e["call"]: e for e in Record.load(ags.record).of_type("model_call")}
    for d in est:
        assert ags_calls[int(d.where.split()[1])]["estimate"] == d.agentscope != d.reference
    assert any(d.what.startswith("request (") for d in c.differences)
    assert any(d.where == "compaction 1" and d.what == "request" for d in c.differences)
    assert c.summary_estimates_equal < c.summary_calls and not c.agrees


def test_the_command_prints_the_table_and_the_totals(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fidelity", str(bundled_dir() / "followup-o1001-zh.yaml"), "--out",
                 str(tmp_path), "--variant", "default", "--variant", "estimator-o200k"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "followup-o1001-zh/default" in out and "not applicable" in out
    assert "totals: 1 runs compared (1 agree in everything), 1 not applicable; model calls 3: " \
           "estimates equal 3" in out
    code = main(["fidelity", str(bundled_dir() / "followup-o1001-zh.yaml"), "--out",
                 str(tmp_path), "--variant", "default", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["totals"]["requests_equal"] == 3


# The memory modes that run AgentScope's own middlewares (docs/agentscope-memory.md): a real
# middleware is compared with the reference harness's mode, so differences are expected there
# and listed; everywhere else the two agree exactly.
MIDDLEWARE_MODES = ("agentic", "vector", "workspace")


def _memory_mode(record: str) -> str | None:
    with open(record, encoding="utf-8") as f:
        header = json.loads(f.readline())
    return (header.get("harness", {}).get("memory") or {}).get("mode")


@pytest.mark.slow
def test_the_bundled_suite_agrees_wherever_agentscope_applies(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fidelity", "--out", str(tmp_path), "--json"])
    data = json.loads(capsys.readouterr().out)
    compared = [r for r in data["runs"] if not r["not_applicable"]]
    middleware = [r for r in compared if _memory_mode(r["records"]["reference"]) in MIDDLEWARE_MODES]
    rest = [r for r in compared if r not in middleware]
    assert rest and middleware, (len(rest), len(middleware))
    # Without a memory middleware: identical call by call, as before the middlewares were wired.
    off = [d for r in rest for d in r["differences"]]
    assert not off, off[:5]
    assert all(r["agrees"] for r in rest)
    # With one: the differences are the listed kinds (injection, cost, what is written), never a
    # failed run or another user's memory read (scoping by the verified user never differs).
    bad = [d for r in middleware for d in r["differences"] if d["what"] in ("error", "memory users")]
    assert not bad, bad[:5]
    assert code == (1 if any(r["differences"] for r in middleware) else 0)
