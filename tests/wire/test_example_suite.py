"""The plain openai-SDK example through a representative part of the bundled suite
(``support.REPRESENTATIVE``; the whole suite with ``HARNESSLAB_FULL_SUITE=1``), black-box on
loopback (slow: one program per run): the table names it, its records hold every request it
sent, and the checks it fails are the ones its context handling (last 12 messages, no time)
explains."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.wire.support import assert_only_not_applicable, example_through_suite
from tests.wire.test_cmd import LOGGING, ROOT

pytest.importorskip("openai")


@pytest.mark.slow
def test_plain_example_through_the_bundled_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, _ = example_through_suite(ROOT / "examples" / "plain_openai_agent.py", LOGGING,
                                          tmp_path, monkeypatch, capsys)
    assert code == 1  # it is not the reference harness: some outcomes differ
    assert {r["settings"]["harness"] for r in rows.values()} == {"cmd:plain_openai_agent.py"}
    # Failures its own context handling explains.
    follow = rows[("followup-after-filler-zh", "default")]["unexpected"]
    assert any("s3.resolves failed: resolved nothing" in u for u in follow)
    stale = rows[("stale-logistics-zh", "default")]["unexpected"]
    assert any("fresh_fact failed: stale" in u for u in stale)
    assert_only_not_applicable(rows)
    # Restarts now run for programs: this one keeps no store, so a fresh process forgets.
    for s in ("restart-followup-zh", "kill-mid-turn-zh"):
        row = rows[(s, "default")]
        assert not row["not_applicable"] and any("resume_fidelity failed" in u
                                                 for u in row["unexpected"]), row
