"""``harnesslab run`` and ``harnesslab show`` as a user calls them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.scenario.loader import bundled_dir

SCENARIO = str(bundled_dir() / "followup-after-filler-zh.yaml")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harnesslab.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_run_prints_checks_outcomes_and_metrics(tmp_path: Path) -> None:
    p = cli("run", SCENARIO, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:13] == ["scenario", "variant", "role", "harness", "strategy", "ctx",
                                     "trig", "estimator", "service", "checks", "outcome",
                                     "follow-up", "retention"]
    default = next(ln for ln in lines if " default " in ln)
    assert "9/9" in default and "as expected" in default and "1.00" in default
    truncate = next(ln for ln in lines if "truncate-small-window" in ln)
    assert "3/9" in truncate and "as expected" in truncate
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["expected"] is True
    assert (tmp_path / "followup-after-filler-zh" / "default" / "seed0.jsonl").exists()


def test_an_unexpected_outcome_exits_1_and_says_why(tmp_path: Path) -> None:
    # Forcing truncation on every variant makes the follow-up fail where a pass is expected.
    p = cli("run", SCENARIO, "--out", str(tmp_path), "--set", "strategy=truncate",
            "--set", "context_size=4096", "--variant", "default")
    assert p.returncode == 1
    assert "UNEXPECTED" in p.stdout
    assert "! followup-after-filler-zh/default: s3.resolves failed: resolved nothing" in p.stdout


def test_seeds_are_pooled(tmp_path: Path) -> None:
    p = cli("run", SCENARIO, "--out", str(tmp_path), "--seeds", "3", "--variant", "default",
            "--json")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)["rows"][0]
    assert row["seeds"] == 3 and row["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    acc = row["metrics"]["followup_accuracy"]
    assert acc["num"] == acc["den"] == 3 and acc["ci"][1] == 1.0


def test_bad_set_value_is_one_line_exit_2(tmp_path: Path) -> None:
    p = cli("run", SCENARIO, "--out", str(tmp_path), "--set", "context_size=big")
    assert p.returncode == 2
    assert p.stderr.strip() == ("harnesslab run: error: --set context_size: Input should "
                                "be a valid integer, unable to parse string as an integer")
    p = cli("run", SCENARIO, "--out", str(tmp_path), "--set", "strategy")
    assert p.returncode == 2 and "expected key=value" in p.stderr


def test_bad_seed_counts_are_one_line_exit_2(tmp_path: Path) -> None:
    p = cli("run", SCENARIO, "--out", str(tmp_path), "--seeds", "0")
    assert p.returncode == 2
    assert p.stderr.strip() == ("harnesslab run: error: argument --seeds: expected a positive "
                                "whole number, got '0'")


def test_show_prints_what_the_model_saw(tmp_path: Path) -> None:
    assert cli("run", SCENARIO, "--out", str(tmp_path), "--variant", "default").returncode == 0
    rec = tmp_path / "followup-after-filler-zh" / "default" / "seed0.jsonl"
    overview = cli("show", str(rec))
    assert overview.returncode == 0
    assert "compaction (structured)" in overview.stdout
    last = max(int(ln.split()[1]) for ln in overview.stdout.splitlines()
               if ln.strip().startswith("call "))
    p = cli("show", str(rec), "--call", str(last))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    # The harness and what it declared come first (issue 26).
    assert out.startswith(f"harness reference honours every setting\ncall {last} (reply, step 3): "
                          "estimate ")
    assert "true input" in out and "那我明天还要等吗？" in out and "<system-info>" in out
    assert "last compaction before this call (structured" in out
    assert "removed:" in out
    bad = cli("show", str(rec), "--call", "999")
    assert bad.returncode == 2 and "no model call 999" in bad.stderr


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_processes_give_the_serial_run_byte_for_byte(tmp_path: Path) -> None:
    """Runs spread over two worker processes: the same table, summary and records, in the
    same order, as one run after another."""
    small = str(bundled_dir() / "stale-logistics-en.yaml")
    out = {}
    for how in ("serial", "processes"):
        p = cli("run", small, "--seeds", "2", "--out", str(tmp_path / how), "--executor", how,
                "--jobs", "2")
        assert p.returncode == 0, p.stderr
        out[how] = p.stdout.replace(str(tmp_path / how), "OUT")
    assert out["serial"] == out["processes"]
    serial, procs = _files(tmp_path / "serial"), _files(tmp_path / "processes")
    assert len(serial) > 4 and serial == procs


def test_an_unknown_executor_is_one_line_exit_2(tmp_path: Path) -> None:
    p = cli("run", SCENARIO, "--out", str(tmp_path), "--executor", "dask")
    assert p.returncode == 2 and "invalid choice: 'dask'" in p.stderr


def test_the_summary_is_computed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from harnesslab import cli as cli_module
    from harnesslab.run import suite
    from harnesslab.run import table as report_text

    calls = []
    real = suite.summarize

    def counted(results: object) -> object:
        calls.append(1)
        return real(results)  # type: ignore[arg-type]

    monkeypatch.setattr(suite, "summarize", counted)
    monkeypatch.setattr(report_text, "summarize", counted)
    small = str(bundled_dir() / "stale-logistics-en.yaml")
    assert cli_module.main(["run", small, "--out", str(tmp_path), "--executor", "serial"]) == 0
    assert "stale-logistics-en" in capsys.readouterr().out
    assert len(calls) == 1
