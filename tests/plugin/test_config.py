"""``[tool.harnesslab]`` and the plugin's options: a bad key or value is one usage-error line
naming the file and the key; a good config reaches the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.ci.config import CIOptions, resolve_ci
from harnesslab.errors import InputError
from tests.plugin.support import INI, followup


@pytest.mark.parametrize(("table", "message"), [
    ("harnes = 'reference'", "tool.harnesslab.harnes: unknown key; expected one of harness, "
     "settings, scenarios, seeds"),
    ("seeds = 0", "tool.harnesslab.seeds: expected a number of seeds (a whole number >= 1) or "
     "a list of distinct whole numbers >= 0, got 0"),
    ("seeds = [1, 1]", "tool.harnesslab.seeds: expected a number of seeds"),
    ("min_pass_rate = 1.5", "tool.harnesslab.min_pass_rate: Input should be less than or equal "
     "to 1 (got 1.5)"),
    ("pass_k = '2'", "tool.harnesslab.pass_k: Input should be a valid integer (got '2')"),
    ("quarantine_flaky_rate = 0.5", "tool.harnesslab.quarantine_flaky_rate: Input should be "
     "less than 0.5"),
    ("pass_k = 3", "tool.harnesslab.pass_k: pass_k = 3 needs at least 3 seeds; this run has 1"),
    ("settings = {strategy = 'nope'}", "tool.harnesslab.settings.strategy: unknown strategy "
     "'nope'"),
    ("settings = {context_sise = 1}", "tool.harnesslab.settings.context_sise: unknown setting"),
    ("harness = 'missing.py:X'", "tool.harnesslab.harness: no such file: "),
    ("harness = 'reference'\nsettings = {harness = 'reference'}",
     "tool.harnesslab.harness: the harness is given twice"),
    ("scenarios = ['nowhere']", "tool.harnesslab.scenarios[0]: no such file or folder: nowhere"),
    ("cost_tolerance = -1", "tool.harnesslab.cost_tolerance: Input should be greater than or "
     "equal to 0"),
])
def test_a_bad_config_is_one_usage_line_naming_the_file_and_key(
        pytester: pytest.Pytester, table: str, message: str) -> None:
    toml = pytester.makepyprojecttoml(INI + "[tool.harnesslab]\n" + table + "\n")
    pytester.makefile(".yaml", followup=followup([{"name": "default"}]))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in result.errlines if ln.strip()]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"ERROR: {toml}: {message}"), errors[0]


@pytest.mark.parametrize(("args", "message"), [
    (["--harnesslab-set", "strategy"], "--harnesslab-set: expected KEY=VALUE, got 'strategy'"),
    (["--harnesslab-set", "strategy=nope"], "--harnesslab-set strategy: unknown strategy 'nope'"),
    (["--harnesslab-seeds", "0"], "argument --harnesslab-seeds: expected a whole number >= 1, "
     "got '0'"),
    (["--harnesslab-config", "nope.toml"], "nope.toml: --harnesslab-config: no such file"),
    (["--harnesslab-baseline", "nope.json"], "nope.json: --harnesslab-baseline: no such file"),
])
def test_bad_options_are_one_usage_line(pytester: pytest.Pytester, args: list[str],
                                        message: str) -> None:
    pytester.makepyprojecttoml(INI)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_bad_baseline_file_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "base.json"
    bad.write_text('{"version": 1,\n "items": [}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"base.json:2: bad JSON: Expecting value"):
        resolve_ci(CIOptions(baseline=str(bad)), tmp_path, tmp_path)
    bad.write_text('{"version": 1, "items": [{"scenario": "x"}]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"base.json: items.0.variant: Field required"):
        resolve_ci(CIOptions(baseline=str(bad)), tmp_path, tmp_path)


def test_a_config_file_of_its_own_and_the_command_line_over_it(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "agent.py").write_text("class A:\n    pass\n", encoding="utf-8")
    (tmp_path / "ci" / "harnesslab.toml").write_text(
        'harness = "agent.py:A"\nsettings = {strategy = "truncate", "codex.tool_output_limit" = '
        '500}\nseeds = [3, 5]\nout = "records"\nmin_pass_rate = 0.5\npass_k = 2\n',
        encoding="utf-8")
    run = resolve_ci(CIOptions(config="ci/harnesslab.toml", set=["strategy=pinned"]),
                     tmp_path / "elsewhere", tmp_path)
    assert run.cli_set == {"strategy": "pinned", "codex.tool_output_limit": 500,
                           "harness": f"{(tmp_path / 'ci' / 'agent.py').resolve()}:A"}
    assert run.seeds == [3, 5]
    assert run.out == tmp_path / "ci" / "records"
    assert (run.gate.min_pass_rate, run.gate.pass_k) == (0.5, 2)
    assert run.config_file == str(tmp_path / "ci" / "harnesslab.toml")
    # --harnesslab-seeds wins over the file's seeds; then pass_k = 2 needs two of them.
    assert resolve_ci(CIOptions(config="ci/harnesslab.toml", seeds=4), tmp_path,
                      tmp_path).seeds == [0, 1, 2, 3]
    with pytest.raises(InputError, match=r"harnesslab.toml: pass_k: pass_k = 2 needs at least 2"):
        resolve_ci(CIOptions(config="ci/harnesslab.toml", seeds=1), tmp_path, tmp_path)


def test_without_a_config_the_defaults_hold(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    run = resolve_ci(CIOptions(), tmp_path, tmp_path)
    assert (run.cli_set, run.seeds, run.config_file) == ({}, [0], None)
    assert run.out == tmp_path / ".harnesslab" / "pytest"
    assert (run.gate.min_pass_rate, run.gate.pass_k, run.gate.quarantine_flaky_rate) == \
        (1.0, 1, None)
