"""docs/pytest.md, "CI regression suites with pytest": its config is valid, its fixture example
runs, its workflow is YAML that runs the options the plugin has."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest
import yaml

from harnesslab.ci.config import CIConfig, parse_config
from tests.plugin.support import FOLLOWUP, INI

README = Path(__file__).resolve().parents[2] / "docs" / "pytest.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("# CI regression suites with pytest"):]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)


def test_the_readme_config_is_valid_and_names_every_key() -> None:
    (toml,) = _blocks("toml")
    cfg = parse_config(tomllib.loads(toml)["tool"]["harnesslab"], "README.md")
    assert set(cfg.model_fields_set) == set(CIConfig.model_fields) - {"out"}
    assert (cfg.seeds, cfg.min_pass_rate, cfg.cost_tolerance) == (5, 0.8, 0.1)


def test_the_readme_fixture_example_runs(pytester: pytest.Pytester) -> None:
    (example,) = [b for b in _blocks("python") if "def test_" in b]
    pytester.makepyprojecttoml(INI)
    (pytester.path / "scenarios").mkdir()
    shutil.copy(FOLLOWUP, pytester.path / "scenarios" / FOLLOWUP.name)
    pytester.makepyfile(test_example=example)
    pytester.runpytest("test_example.py").assert_outcomes(passed=1)


def test_the_readme_workflow_uses_real_options(pytester: pytest.Pytester) -> None:
    (workflow,) = _blocks("yaml")
    steps = yaml.safe_load(workflow)["jobs"]["harnesslab"]["steps"]
    command = next(s["run"] for s in steps if "pytest" in str(s.get("run", "")))
    options = set(re.findall(r"--harnesslab-[a-z-]+", command + _section()))
    help_text = pytester.runpytest("--help").stdout.str()
    assert options and all(o in help_text for o in options), options
