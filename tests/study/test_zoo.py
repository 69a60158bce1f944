"""The bug zoo: the suite's measured power. Every zoo harness behaves like the reference
harness until its mistake is exercised, the kill table names the check that sees each bug, and
the kill rate on the bundled suite holds (the survivors are docs/suite-power.md's list)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harnesses.bugs import BUGS
from harnesslab.scenario.loader import bundled_dir, load_scenario, scenario_paths
from harnesslab.scenario.schema import Variant
from harnesslab.study.zoo import REJECT_ALL, format_kill_table, run_zoo, surprises

# Bugs no bundled scenario can see, each with the reason (docs/suite-power.md lists them too).
SURVIVORS: dict[str, str] = {}


def test_the_zoo_has_at_least_20_named_realistic_bugs() -> None:
    assert len(BUGS) >= 20
    for b in BUGS.values():
        assert b.mistake and len(b.mistake) > 30, b.name
        assert b.cls.name == f"bug/{b.name}"


def test_a_zoo_harness_is_the_reference_harness_until_its_mistake_is_exercised() -> None:
    # followup-o1001-zh has no compaction, no images, no spoofing and no clock advance: a bug
    # in those parts changes nothing there, so every zoo harness scores as the reference.
    quiet = ["summary-after-newest", "keeps-oldest", "rolling-summary-forgets",
             "image-limit-keeps-oldest", "bind-runs-claimed-user", "tools-dropped-after-compaction"]
    results = run_zoo([str(bundled_dir() / "followup-o1001-zh.yaml")], quiet, workers=1)
    assert [r["kill"] for r in results] == [None] * len(quiet)


def test_surprises_are_checks_against_the_variant_expectation() -> None:
    from harnesslab.judge.checks import CheckOutcome

    checks = [CheckOutcome("s1.mentions", "mentions", 1, False, "missing"),
              CheckOutcome("s2.max_chars", "max_chars", 2, True, "ok")]
    assert surprises(checks, Variant(name="v")) == [("s1.mentions", 1, "failed", "missing")]
    assert surprises(checks, Variant(name="c", expect_fail=["s1.mentions", "max_chars"])) == \
        [("max_chars", None, "passed", "expected to fail, but it passed")]


def test_a_bug_that_only_makes_a_control_pass_is_not_killed() -> None:
    # trigger-at-context-size compacts later than the trigger, so reserve-below-head-zh's
    # documented failure (the question compressed away) does not happen: the default
    # variant's expected failure passes. That changes a control; it is not a kill.
    results = run_zoo([str(bundled_dir() / "reserve-below-head-zh.yaml")],
                      ["trigger-at-context-size"], workers=1)
    [r] = results
    assert r["kill"] is None
    assert "reserve-below-head-zh/default/s3.answered" in r["controls"]


def readme_block(results: list[dict[str, Any]]) -> str:
    """The README's zoo table: a bug and its first kill (scenario / variant / check, how) a
    line; the turn is in the check's id."""
    lines = [f"{'bug':<36} first killed by (scenario / variant / check)"]
    for r in results:
        k = r["kill"]
        where = "SURVIVED" if k is None else \
            f"{k['scenario']} / {k['variant']} / {k['check']} ({k['how']})"
        lines.append(f"{r['bug']:<36} {where}")
    return "\n".join(lines)


@pytest.mark.slow
def test_the_kill_rate_on_the_bundled_suite() -> None:
    paths = [str(p) for p in scenario_paths([str(bundled_dir())])]
    results = run_zoo(paths)
    table = format_kill_table(results)
    print("\n" + table)
    # The README shows each bug's first kill as the command finds it (its lines kept under
    # the README's width): a change of the suite or the zoo that moves a cell must move the
    # README's too.
    # The table is made where the agentscope extra is installed (CI's slow stage): without
    # it the AgentScope-profile variants are skipped and first kills move to later scenarios.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    if importlib.util.find_spec("agentscope") is not None:
        assert readme_block(results) in readme, \
            "README.md's zoo table differs from harnesslab bugs"
    survived = sorted(r["bug"] for r in results if r["kill"] is None)
    assert survived == sorted(SURVIVORS)
    killed = len(results) - len(survived)
    assert killed / len(results) >= 0.9
    assert all(not r["errors"] for r in results)
    for r in results:
        if r["kill"] is not None:
            assert r["kill"]["variant"] not in REJECT_ALL
            # A kill is a worse harness: a should-pass check failed or a declared cost grew,
            # never a control that passed (those are listed apart).
            assert r["kill"]["how"] in ("failed", "protocol", "cost"), r
            # The first kill is a check of a scenario that exercises the part the bug is in.
            sc = load_scenario(bundled_dir() / f"{r['kill']['scenario']}.yaml")
            assert any(v.name == r["kill"]["variant"] for v in sc.variants)


def test_the_cli_lists_the_zoo() -> None:
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "harnesslab.cli", "bugs", "--list"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert len(lines) == len(BUGS)
    name, mistake = lines[0].split(None, 1)
    assert (name, mistake) == ("bug/split-tool-pair", BUGS["split-tool-pair"].mistake)


def test_the_kill_table_lists_not_applicable_runs_apart_from_errors() -> None:
    res = {"bug": "b", "mistake": "m", "kill": None, "kills": 0, "errors": ["x/y: Boom: no"],
           "not_applicable": ["s/v: sets strategy=codex; b honours none of: strategy"]}
    text = format_kill_table([res])
    assert "  ! b: run error x/y: Boom: no" in text
    assert "  - b: not applicable s/v: sets strategy=codex; b honours none of: strategy" in text
