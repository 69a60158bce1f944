"""Scenario files as pytest items: what is collected, what a control's strict xfail means, the
bundled suite through the plugin, JUnit XML, and ``-p no:harnesslab``."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harnesslab.scenario.loader import bundled_dir, load_scenario, scenario_paths
from harnesslab.scenario.schema import missing_extras
from tests.plugin.support import INI, REFERENT_LOST, TRUNCATE_SMALL, followup, outcomes_by_name


def test_the_bundled_suite_runs_as_items_and_passes_with_controls_as_strict_xfails(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    scenarios = [load_scenario(p) for p in scenario_paths([str(bundled_dir())])]
    # Variants whose extra is not installed here are skipped (requires: [agentscope]).
    skipped = {f"{sc.id}/{v.name}" for sc in scenarios for v in sc.variants
               if missing_extras(v.requires)}
    controls = {f"{sc.id}/{v.name}" for sc in scenarios for v in sc.variants
                if v.fail_always} - skipped
    plain = {f"{sc.id}/{v.name}" for sc in scenarios for v in sc.variants
             if not v.fail_always} - skipped
    assert len(controls) > 10 and len(plain) > 10
    xml = tmp_path / "junit.xml"
    result = pytester.runpytest(str(bundled_dir()), "--harnesslab-out", str(tmp_path / "runs"),
                                f"--junitxml={xml}", "-p", "no:cacheprovider",
                                "-W", "ignore::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(passed=len(plain), xfailed=len(controls), skipped=len(skipped))
    assert result.ret == pytest.ExitCode.OK
    # JUnit XML: one test case per scenario x variant, controls as pytest's xfail skips.
    cases = ET.parse(xml).getroot().iter("testcase")
    seen = {}
    for case in cases:
        scenario = case.get("classname", "").rsplit(".", 2)[-2]
        seen[f"{scenario}/{case.get('name')}"] = case
    assert {k.split("/")[0] for k in seen} == {sc.id for sc in scenarios}
    assert set(seen) == controls | plain | skipped
    for key, case in seen.items():
        if key in skipped:
            assert "pip install 'harnesslab[" in (case.find("skipped").get("message") or "")
            continue
        skip = case.find("skipped")
        assert (skip is not None and skip.get("type") == "pytest.xfail") == (key in controls)
        assert case.find("failure") is None
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["harnesslab_pass_rate"] == "1.00"
        sc_id, variant = key.split("/")
        assert (tmp_path / "runs" / sc_id / variant / "seed0.jsonl").is_file()


def test_only_scenario_files_are_collected(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI)
    pytester.makefile(".yaml", followup=followup([{"name": "default"}]))
    pytester.makefile(".yml", ci="id: build\nsteps: [checkout, test]\n")  # not a scenario
    pytester.makefile(".yaml", almost="id: x\nlexicon: {}\nsteps: []\n")  # no variants
    flow = "{id: flow, lexicon: {}, steps: [], variants: []}\n"  # flow style: parsed
    pytester.makefile(".yaml", flow=flow)
    result = pytester.runpytest("--collect-only", "-q")
    # The flow-style file is a scenario by its keys, and an invalid one: a collection error
    # naming the file, line and field; the other files are not touched.
    result.stdout.fnmatch_lines(["followup.yaml::default", "*flow.yaml*"])
    out = result.stdout.str()
    assert "ci.yml" not in out and "almost.yaml" not in out
    assert "flow.yaml:1: title: missing required field" in out


def test_a_scenario_with_a_yaml_error_is_reported_not_skipped(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI)
    text = followup([{"name": "default"}]).replace("title:", "title: [unclosed", 1)
    pytester.makefile(".yaml", broken=text)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting broken.yaml*", "*broken.yaml:*: bad YAML*"])


def test_a_control_passes_only_when_it_fails_exactly_as_designed(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI)
    pytester.makefile(".yaml", followup=followup([
        {"name": "default"},
        # Fails exactly the listed checks: the strict xfail holds.
        {"name": "holds", "set": TRUNCATE_SMALL, "expect_fail": REFERENT_LOST},
        # Listed check passes, nothing fails: the control no longer fails (strict XPASS).
        {"name": "no-longer-fails", "expect_fail": ["s3.resolves"]},
        # The listed check fails, but so do others it does not list: a plain failure.
        {"name": "fails-more", "set": TRUNCATE_SMALL, "expect_fail": ["s3.resolves"]},
        # Fails as listed except one listed check that passed: a plain failure too.
        {"name": "partly", "set": TRUNCATE_SMALL,
         "expect_fail": [*REFERENT_LOST, "s1.max_chars"]},
    ]))
    result = pytester.runpytest("-rA")
    assert outcomes_by_name(result.outlines) == {
        "default": "PASSED", "holds": "XFAIL", "no-longer-fails": "FAILED",
        "fails-more": "FAILED", "partly": "FAILED"}
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*_ followup / no-longer-fails _*",
        "[[]XPASS(strict)[]] control: s3.resolves must fail",
        "followup / no-longer-fails: every check passed (seed 0), so this control no longer "
        "shows the failure it is meant to show",
        "record: .harnesslab/pytest/followup/no-longer-fails/seed0.jsonl",
    ])
    fails_more = out[out.index("_ followup / fails-more _"):]
    assert "s3.answered failed at step 3 '那我明天还要等吗？': expected answered; got: turn " \
           "failed (the model asked to clarify" in fails_more
    assert "XPASS" not in fails_more.split("\n_")[0]
    partly = out[out.index("_ followup / partly _"):]
    assert "s1.max_chars: expected to fail (this variant is a control), but it passed" in partly
    assert "s3.resolves failed" not in partly.split("\n_")[0]  # listed, and it failed: fine


def _without_paths(text: str) -> str:
    """pytest's output less every path (a word holding a slash)."""
    return re.sub(r"\S*/\S*", "", text)


def test_without_paths_drops_a_path_and_keeps_a_plugin_s_word() -> None:
    text = "python -- /home/u/harnesslab/.venv/bin/python\nharnesslab: 2 seeds\n"
    assert _without_paths(text).count("harnesslab") == 1


def test_disabled_plugin_leaves_an_ordinary_run_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI + "[tool.harnesslab]\nseeds = 2\n")
    pytester.makefile(".yaml", followup=followup([{"name": "default"}]))
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    on = pytester.runpytest("-v")
    on.assert_outcomes(passed=2)
    assert "harnesslab" in _without_paths(on.stdout.str())
    off = pytester.runpytest("-v", "-p", "no:harnesslab")
    off.assert_outcomes(passed=1)
    # Paths are not the plugin's words: a checkout or venv in a folder named harnesslab (the
    # default clone folder) puts the word in pytest's interpreter and rootdir lines.
    assert "harnesslab" not in _without_paths(off.stdout.str() + off.stderr.str())
    assert "followup" not in off.stdout.str()
    # Its options and fixture are gone with it.
    bad = pytester.runpytest("-p", "no:harnesslab", "--harnesslab-seeds", "2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --harnesslab-seeds" in bad.stderr.str()


def _normalized(lines: list[str]) -> list[str]:
    return [re.sub(r" in [0-9.]+s ", " in Ns ", ln) for ln in lines
            if not ln.startswith(("plugins:", "running:", "     in:"))]


def test_an_ordinary_project_sees_nothing_of_the_plugin(pytester: pytest.Pytester) -> None:
    # In fresh processes, as pytest runs in CI: the plugin comes from its entry point.
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    pytester.makefile(".yaml", settings="id: 1\nname: not a scenario\n")
    on = pytester.runpytest_subprocess("-v", "-rA")
    off = pytester.runpytest_subprocess("-v", "-rA", "-p", "no:harnesslab")
    on.assert_outcomes(passed=1)
    # Apart from the list of installed plugins, the output is the same line for line.
    assert _normalized(on.outlines) == _normalized(off.outlines)
    assert any(ln.startswith("plugins:") and "harnesslab" in ln for ln in on.outlines)
    assert not (pytester.path / ".harnesslab").exists()
