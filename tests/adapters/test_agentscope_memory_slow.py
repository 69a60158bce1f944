"""Slow (``.ci/run``'s slow stage, which installs the agentscope extra): every agentic-memory
variant of the bundled suite through AgentScope's own AgenticMemoryMiddleware from the command
line, all as expected, and ``fidelity`` against the reference harness's agentic mode listing
only the differences docs/agentscope-memory.md explains (no scoping, read, write-back or file
difference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.scenario.loader import bundled_dir
from tests.adapters.support import AGENTSCOPE_EXTRA

pytestmark = [pytest.mark.slow, pytest.mark.agentscope]
agentscope = pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)

MEMORY = sorted(str(p) for p in bundled_dir().glob("memory-*.yaml"))
# What the middleware does differently, each explained in docs/agentscope-memory.md.
EXPLAINED = {"calls", "estimate", "request (system)", "memory position"}


def test_every_agentic_variant_runs_through_the_middleware_as_expected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spoof = str(bundled_dir() / "memory-agentic-spoof-write-zh.yaml")  # agentic in every variant
    code = main(["run", *MEMORY, "--set", "harness=agentscope", "--variant", "agentic",
                 "--out", str(tmp_path / "a"), "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    code2 = main(["run", spoof, "--set", "harness=agentscope", "--out", str(tmp_path / "b"),
                  "--json"])
    rows += json.loads(capsys.readouterr().out)["rows"]
    assert code == code2 == 0
    ran = {(r["scenario"], r["variant"]) for r in rows if not r["not_applicable"]}
    assert len(ran) == 6 and all(r["expected"] for r in rows if not r["not_applicable"])
    assert [(r["scenario"], r["variant"]) for r in rows if r["not_applicable"]] == [
        ("memory-agentic-spoof-write-zh", "key-named")]


def test_fidelity_lists_only_the_explained_differences(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["fidelity", *MEMORY, "--variant", "agentic", "--variant", "default", "--out",
          str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    done = [r for r in out["runs"] if r["not_applicable"] is None]
    # The four scenarios with an agentic variant (the spoof scenario's default is agentic); the
    # vector defaults are not applicable.
    assert len(done) == 4
    assert {d["what"] for r in done for d in r["differences"]} <= EXPLAINED
    assert all(r["turns"] == r["turns_equal"] for r in done)
