"""The README's "Testing your own harness": its harness, copied out of the README into a
temporary folder, runs through the bundled suite by command line and from Python, and fails
the checks the README says it fails, for the reasons it gives."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.record.format import Record
from harnesslab.run.runner import run_scenario_file
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import missing_extras, skip_reason

# The harness is in docs/your-harness.md (the README points there).
README = Path(__file__).resolve().parents[1] / "docs" / "your-harness.md"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "own-harness.md"


def page_lists() -> tuple[set[str], dict[str, str]]:
    """docs/own-harness.md's two lists: the variants LastN fails (for the causes given there)
    and those not applicable to it, with their reasons."""
    text = PAGE.read_text(encoding="utf-8")
    fails = text[text.index("### Failures that LastN's own handling explains"):
                 text.index("### Not applicable to LastN")]
    na = text[text.index("### Not applicable to LastN"):]
    item = re.compile(r"^- `([a-z0-9-]+/[a-z0-9-]+)`: (.+)$", re.M)
    return {m.group(1) for m in item.finditer(fails)}, dict(item.findall(na))


def without_extras(na: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """The page lists what LastN gets with every extra installed; where one is missing, the
    variants that require it are skipped before any harness is built, with the skip's reason
    (not the honours one): (the not-applicable reasons as this install gives them, the
    variants skipped for an extra)."""
    skipped: set[str] = set()
    out = dict(na)
    for p in sorted(bundled_dir().glob("*.yaml")):
        sc = load_scenario(p)
        for v in sc.variants:
            if missing := missing_extras(v.requires):
                key = f"{sc.id}/{v.name}"
                out[key] = f"skipped: {skip_reason(missing)}"
                skipped.add(key)
    return out, skipped


def readme_harness(folder: Path) -> Path:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("# Testing your own harness"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    path = folder / "my_harness.py"
    path.write_text(code.group(1), encoding="utf-8")
    return path


def test_the_readme_harness_runs_the_bundled_suite_from_the_command_line(tmp_path: Path) -> None:
    readme_harness(tmp_path)
    p = subprocess.run([sys.executable, "-m", "harnesslab.cli", "run", "--set",
                        "harness=my_harness.py:LastN", "--out", "out"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr
    rows = [ln.split() for ln in p.stdout.splitlines()[1:] if ln and not ln.startswith(" ")]
    assert {r[3] for r in rows if len(r) > 3 and r[0].endswith("-zh")} == {"LastN"}
    for line in (
        "! followup-after-filler-zh/default: s3.resolves failed: resolved nothing",
        "! stale-logistics-zh/default: s3.fresh_fact failed: stale: fact from "
        "2026-11-28T10:00:00+08:00 is 1 day, 0:00:00 old",
        "! tool-output-flood-zh/default: s1.answered failed: turn failed (overflow)",
        "! image-limit-zh/default: s3.max_images failed: at most 9 images in a request",
    ):
        assert line in p.stdout
    rec = Record.load(tmp_path / "out" / "followup-o1001-zh" / "default" / "seed0.jsonl")
    assert rec.header["harness_name"] == "LastN"
    assert rec.header["harness"]["harness"] == "my_harness.py:LastN"
    # The bench recorded its tool runs although the harness emitted nothing itself.
    (run,) = rec.of_type("tool_call")
    assert (run["name"], run["acting_user"]) == ("track_order", "U-1")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["rows"][0]["settings"]["harness"] == "LastN"
    # Failures only where docs/own-harness.md gives LastN's own cause; every other variant
    # that does not pass as designed is not applicable, with the reason the page lists.
    fails, na = page_lists()
    assert len(fails) == 45 and len(na) == 315
    rows = {f"{r['scenario']}/{r['variant']}": r for r in summary["rows"]}
    assert {k for k, r in rows.items() if not r["expected"]} == fails
    here, _ = without_extras(na)
    assert {k: r["not_applicable"][0].removeprefix("NotApplicable: ")
            for k, r in rows.items() if r["not_applicable"] and not r["checks"]} == here
    assert na["followup-after-filler-zh/codex"] == (
        "sets strategy=codex, codex.user_message_budget=1500; LastN honours none of: codex.*, "
        "strategy")
    _, for_extras = without_extras(na)
    assert f"{len(na) - len(for_extras)} variants not applicable to LastN" in \
        p.stdout.splitlines()[-2]
    assert "harness LastN honours none of the harness settings" in subprocess.run(
        [sys.executable, "-m", "harnesslab.cli", "show",
         "out/followup-after-filler-zh/default/seed0.jsonl"], cwd=tmp_path,
        capture_output=True, text=True, timeout=60).stdout.splitlines()[1]


def test_the_readme_harness_under_pytest_fails_and_skips_as_the_page_lists(
        pytester: pytest.Pytester) -> None:
    """``[tool.harnesslab]`` naming LastN over the bundled suite: the failed items are the
    page's failures, the skipped ones its not-applicable list (with the reason); none is an
    xfail or an XPASS of a control that does not apply."""
    readme_harness(pytester.path)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nfilterwarnings = ["ignore::pytest.PytestAssertRewriteWarning"]\n'
        f'[tool.harnesslab]\nharness = "my_harness.py:LastN"\nscenarios = ["{bundled_dir()}"]\n')
    result = pytester.runpytest("-rfs", "-p", "no:cacheprovider")
    out = result.stdout.str()
    fails, na = page_lists()
    failed = set(re.findall(r"^FAILED (?:\S*/)?([a-z0-9-]+)\.yaml::([a-z0-9-]+)", out, re.M))
    assert {f"{a}/{b}" for a, b in failed} == fails
    skipped = re.findall(r"^SKIPPED \[1\] \S+: not applicable to LastN: (.+)$", out, re.M)
    _, for_extras = without_extras(na)
    assert sorted(skipped) == sorted(v for k, v in na.items() if k not in for_extras)
    assert f"{len(na) - len(for_extras)} variants not applicable to LastN (skipped, with the " \
        "reason)" in out
    assert "harness LastN honours none of the harness settings" in out


def test_the_readme_harness_runs_from_python_by_path_and_by_class(tmp_path: Path) -> None:
    path = readme_harness(tmp_path)
    scenario = bundled_dir() / "followup-after-filler-zh.yaml"
    by_path = run_scenario_file(scenario, harness=f"{path}:LastN", variants=["default"],
                                out_dir=tmp_path / "a")
    assert [c.id for c in by_path[0].checks if not c.passed] == \
        ["s3.answered", "s3.mentions", "s3.max_chars", "s3.not_called", "s3.fresh_fact",
         "s3.resolves"]
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_harness_mod", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_harness_mod"] = module
    try:
        spec.loader.exec_module(module)
        by_class = run_scenario_file(scenario, harness=module.LastN, variants=["default"],
                                     out_dir=tmp_path / "b")
    finally:
        del sys.modules["readme_harness_mod"]
    assert [c.to_dict() for c in by_class[0].checks] == [c.to_dict() for c in by_path[0].checks]
    assert by_class[0].settings["harness"] == "LastN"


@pytest.mark.parametrize(("spec", "message"), [
    ("nope", "harness: unknown harness 'nope'; expected one of reference"),
    ("missing.py:X", "harness: no such file: missing.py"),
    ("harnesslab.nothing_here:X", "harness: cannot import harnesslab.nothing_here"),
    ("harnesslab.run.runner:Nope", "harness: harnesslab.run.runner has no class 'Nope'"),
])
def test_a_bad_harness_choice_is_one_line(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        run_scenario_file(bundled_dir() / "followup-o1001-zh.yaml", harness=spec)
