"""Without the agentscope extra (simulated by blocking the package), choosing the adapter is one
line with the install command and exit code 2; the adapters' layering holds. Runs in every
test session, with or without the extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = str(ROOT / "scenarios" / "followup-o1001-zh.yaml")
INSTALL = "pip install 'harnesslab[agentscope]'"


def cli_without_agentscope(*args: str) -> subprocess.CompletedProcess[str]:
    code = ("import sys; sys.modules['agentscope'] = None\n"  # every import of it fails
            "from harnesslab.cli import main\n"
            f"sys.exit(main({list(args)!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


@pytest.mark.parametrize("args", [
    ("run", SCENARIO, "--set", "harness=agentscope", "--out", "OUT"),
    ("fidelity", SCENARIO, "--out", "OUT"),
])
def test_choosing_agentscope_without_the_extra_is_one_line_exit_2(
        args: tuple[str, ...], tmp_path: Path) -> None:
    args = tuple(str(tmp_path / "out") if a == "OUT" else a for a in args)
    res = cli_without_agentscope(*args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and INSTALL in lines[0], res.stderr
    assert "agentscope" in lines[0] and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


def test_the_settings_map_needs_no_agentscope() -> None:
    code = ("import sys; sys.modules['agentscope'] = None\n"
            "from harnesslab.adapters.agentscope_settings import not_applicable\n"
            "from harnesslab.harness.config import HarnessConfig\n"
            "print(not_applicable(HarnessConfig(strategy='codex')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "strategy codex" in out.stdout
