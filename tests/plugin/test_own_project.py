"""A team's own project in a temporary folder: its harness class, its ``[tool.harnesslab]`` and one
scenario. It fails readably while the harness drops the referent of a follow-up (or while its
settings make the window too small) and passes once fixed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from harnesslab.cli import main as harnesslab_main
from tests.plugin.support import (
    INI,
    REFERENT_LOST,
    REJECTS_ALL,
    TRUNCATE_SMALL,
    agent_source,
    assert_in_order,
    followup,
    outcomes_by_name,
)

# The bundled scenario's control that holds for any harness: a tiny service window.
CONTROL = REJECTS_ALL


def test_own_harness_fails_readably_when_it_drops_the_referent_and_passes_when_fixed(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makepyprojecttoml('[tool.harnesslab]\nharness = "agent.py:LastN"\n')
    pytester.makefile(".py", agent=agent_source(fixed=False))
    pytester.makefile(".yaml", followup=followup([{"name": "default"}, CONTROL]))
    xml = pytester.path / "junit.xml"
    # A fresh process, as in CI: the plugin comes in through its entry point.
    result = pytester.runpytest_subprocess("-rA", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes_by_name(result.outlines) == {"default": "FAILED",
                                                 "service-rejects-all": "XFAIL"}
    said = "at step 3 '那我明天还要等吗？'"
    assert_in_order(result.stdout.str(), [
        f"harnesslab: pyproject.toml, harness {pytester.path / 'agent.py'}:LastN, seeds 0",
        "_ followup / default _",
        "followup / default (seed 0):",
        f"  s3.answered failed {said}: expected answered; got: turn failed (the model asked to "
        "clarify",
        f"  s3.mentions failed {said}: expected mentions ['O-1001', '2026-11-30']; got: ",
        f"  s3.resolves failed {said}: expected resolves {{'order': 'O-1001'}}; got: resolved "
        "nothing",
        "  record: .harnesslab/pytest/followup/default/seed0.jsonl",
        "  what the model saw (step 3, call 3): harnesslab show "
        ".harnesslab/pytest/followup/default/seed0.jsonl --call 3",
    ])
    # Only the follow-up turn failed.
    assert "failed at step 1" not in result.stdout.str()
    # The printed command works, and shows a request without the order it should refer to.
    cmd = re.search(r"harnesslab show (\S+) --call (\d+)", result.stdout.str())
    assert cmd is not None
    record = pytester.path / cmd.group(1)
    capsys.readouterr()
    assert harnesslab_main(["show", str(record), "--call", cmd.group(2)]) == 0
    shown = capsys.readouterr().out
    assert f"call {cmd.group(2)} (reply, step 3)" in shown
    assert "那我明天还要等吗？" in shown and "O-1001" not in shown.split("reply:")[0]
    # JUnit XML carries the same report.
    root = ET.parse(xml).getroot()
    failure = next(c for c in root.iter("testcase") if c.get("name") == "default").find("failure")
    assert failure is not None and "s3.resolves failed at step 3" in (failure.text or "")

    # The fix: keep the first exchange. This time the harness is named as module:Class.
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\npythonpath = ["."]\n'
                               '[tool.harnesslab]\nharness = "myagent:LastN"\n')
    (pytester.path / "agent.py").unlink()
    pytester.makefile(".py", myagent=agent_source(fixed=True))
    fixed = pytester.runpytest_subprocess("-rA")
    assert fixed.ret == pytest.ExitCode.OK
    assert outcomes_by_name(fixed.outlines) == {"default": "PASSED",
                                                "service-rejects-all": "XFAIL"}


def test_config_settings_go_beneath_each_variants_own(pytester: pytest.Pytester) -> None:
    # The team's settings make the window too small for truncation to keep the first turn.
    pytester.makepyprojecttoml(INI + '[tool.harnesslab]\nsettings = {strategy = "truncate", '
                               'context_size = 4096}\n')
    pytester.makefile(".yaml", followup=followup([
        {"name": "default"},
        {"name": "structured", "set": {"strategy": "structured"}},
        {"name": "truncate-small-window", "set": TRUNCATE_SMALL, "expect_fail": REFERENT_LOST},
    ]))
    result = pytester.runpytest("-rA")
    assert outcomes_by_name(result.outlines) == {
        "default": "FAILED", "structured": "PASSED", "truncate-small-window": "XFAIL"}
    assert "  s3.resolves failed at step 3 '那我明天还要等吗？': expected resolves " \
           "{'order': 'O-1001'}; got: resolved nothing" in result.stdout.str()
    # Fixed in the config: the default variant passes.
    pytester.makepyprojecttoml(INI + '[tool.harnesslab]\nsettings = {context_size = 4096}\n')
    again = pytester.runpytest("-rA")
    assert outcomes_by_name(again.outlines) == {
        "default": "PASSED", "structured": "PASSED", "truncate-small-window": "XFAIL"}


def test_configured_scenarios_join_a_run_without_paths(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(INI.replace("\n", '\ntestpaths = ["tests"]\n', 1)
                               + '[tool.harnesslab]\nscenarios = ["suite"]\n')
    pytester.mkdir("tests")
    pytester.mkdir("suite")
    (pytester.path / "tests" / "test_unit.py").write_text("def test_one():\n    pass\n")
    (pytester.path / "suite" / "followup.yaml").write_text(followup([{"name": "default"}]),
                                                            encoding="utf-8")
    bare = pytester.runpytest("-rA")
    assert outcomes_by_name(bare.outlines) == {"test_one": "PASSED", "default": "PASSED"}
    named = pytester.runpytest("-rA", "tests")
    assert outcomes_by_name(named.outlines) == {"test_one": "PASSED"}
