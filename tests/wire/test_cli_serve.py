"""``harnesslab serve`` on the command line: bad input exits 2 with one line; a real server
process binds loopback, answers, and leaves a record ``show`` reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from harnesslab.cli import main
from tests.wire.support import Q1


@pytest.mark.parametrize(("argv", "match"), [
    (["serve", "no-such-scenario"], r"no-such-scenario: SCENARIO: no such scenario file"),
    (["serve", "followup-o1001-zh", "--variant", "nope"], r"--variant: no variant 'nope'"),
    (["serve", "followup-o1001-zh", "--set", "context_sise=3"], r"context_sise"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], match: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and re.search(match, err), err


def test_serve_process_binds_loopback_and_records(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "harnesslab.cli", "serve", "followup-o1001-zh",
                             "--port", "0", "--out", str(out)], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = re.search(r"at (http://\S+/v1)", line)
        assert url and url.group(1).startswith("http://127.0.0.1:"), line
        r = httpx.post(f"{url.group(1)}/chat/completions", headers={"Authorization": "Bearer t"},
                       json={"model": "harnesslab", "messages": [{"role": "user", "content": Q1}]},
                       timeout=60)
        assert r.status_code == 200 and "O-1001" in r.json()["choices"][0]["message"]["content"]
        host = re.search(r"Ollama at (http://\S+);", line)
        assert host and host.group(1) == url.group(1).removesuffix("/v1"), line
        r = httpx.post(f"{host.group(1)}/api/chat", headers={"Authorization": "Bearer t"},
                       json={"model": "m", "stream": False,
                             "messages": [{"role": "user", "content": Q1}]}, timeout=60)
        assert r.status_code == 200 and "O-1001" in r.json()["message"]["content"]
    finally:
        proc.terminate()
        proc.wait(30)
    assert main(["show", str(out / "session1.jsonl"), "--call", "1"]) == 0
