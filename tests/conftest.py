"""Shared fixtures. Every test session starts from an empty tokenizer cache, so the offline
seeding path is exercised on every run, as on a fresh machine."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harnesslab.run.runner import RunResult

# The plugin tests (tests/plugin) run pytest inside pytest; pytest accepts pytest_plugins only
# in the top-level conftest.
pytest_plugins = ["pytester"]

# Set before any harnesslab import can load a tokenizer.
os.environ.pop("TIKTOKEN_CACHE_DIR", None)
os.environ["HARNESSLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="harnesslab-test-cache-")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt by tiktoken to fetch a vocab over HTTP fails the test."""
    import tiktoken.load

    real = tiktoken.load.read_file

    def guarded(blobpath: str) -> bytes:
        if blobpath.startswith(("http://", "https://")):
            raise AssertionError(f"network fetch attempted: {blobpath}")
        data: bytes = real(blobpath)
        return data

    monkeypatch.setattr(tiktoken.load, "read_file", guarded)


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunResult]]:
    """The bundled suite, run once per test session: its results and records feed many tests."""
    from harnesslab.run.runner import run_scenario_file
    from harnesslab.scenario.loader import bundled_dir, scenario_paths

    out = tmp_path_factory.mktemp("suite")
    results: list[RunResult] = []
    for path in scenario_paths([str(bundled_dir())]):
        results += run_scenario_file(path, out_dir=out)
    return out, results
