"""``requires: [agentscope]``: a variant that needs an optional extra runs where the extra is
installed and is skipped, with the one-line reason and the pip install, where it is not (never
a pass, never a failure); an unknown extra is bad input at load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.run.runner import run_variant
from harnesslab.run.suite import summarize
from harnesslab.run.table import headline
from harnesslab.scenario import schema
from harnesslab.scenario.loader import load_scenario
from tests.plugin.support import INI, followup
from tests.scenario.test_scenario import GOOD, write

REASON = "requires the agentscope extra, not installed: pip install 'harnesslab[agentscope]'"
REQUIRES = GOOD.replace("  - name: default", "  - name: default\n    requires: [agentscope]")


@pytest.fixture
def no_agentscope(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the agentscope extra were not installed (its module cannot be found)."""
    monkeypatch.setitem(schema.EXTRAS, "agentscope", "harnesslab_no_such_module_here")


def test_an_unknown_extra_is_one_line_naming_file_line_and_field(tmp_path: Path) -> None:
    p = write(tmp_path, REQUIRES.replace("[agentscope]", "[agentscop]"))
    with pytest.raises(InputError) as e:
        load_scenario(p)
    assert "\n" not in str(e.value)
    assert str(e.value).startswith(f"{p}:21: variants[0].requires[0]:"), str(e.value)
    proc = subprocess.run([sys.executable, "-m", "harnesslab.cli", "run", str(p), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_extra_skips_the_variant_with_the_install(tmp_path: Path,
                                                            no_agentscope: None) -> None:
    sc = load_scenario(write(tmp_path, REQUIRES))
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path / "runs")
    assert r.skipped == REASON and r.not_applicable and not r.checks
    assert r.record is None and not (tmp_path / "runs").exists()  # nothing ran, nothing written
    summary = {"rows": summarize([r])["rows"], "runs": 1}
    row = summary["rows"][0]
    assert row["skipped"] == [REASON] and row["expected"] and not row["unexpected"]
    assert headline(summary).endswith(f"; 1 variant skipped ({REASON})"), headline(summary)


def test_an_installed_extra_runs_the_variant(tmp_path: Path) -> None:
    pytest.importorskip("agentscope")
    sc = load_scenario(write(tmp_path, REQUIRES))
    r = run_variant(sc, sc.variants[0])
    assert r.skipped is None and not r.not_applicable and r.expected and r.checks


def test_run_prints_and_summary_json_holds_the_skip(tmp_path: Path) -> None:
    # A subprocess cannot see a monkeypatch: a module name no install has stands in.
    p = write(tmp_path, REQUIRES)
    code = ("import sys; from harnesslab.scenario import schema; "
            "schema.EXTRAS['agentscope'] = 'harnesslab_no_such_module_here'; "
            "from harnesslab.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "run", str(p), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"1 variant skipped ({REASON})" in proc.stdout, proc.stdout
    rows = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))["rows"]
    assert rows[0]["skipped"] == [REASON] and rows[0]["expected"]


def test_the_plugin_reports_a_skip_with_the_reason(pytester: pytest.Pytester,
                                                   no_agentscope: None) -> None:
    pytester.makepyprojecttoml(INI)
    pytester.makefile(".yaml", followup=followup([
        {"name": "default", "requires": ["agentscope"]}, {"name": "plain"}]))
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    out = result.stdout.str()  # (fnmatch would read [agentscope] as a character class)
    assert f"followup.yaml:66: skipped: {REASON}" in out, out
    assert f"1 variant skipped: {REASON}" in out, out
