"""The bundled suite, run once per test session: its results and records feed many tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.bench.runner import RunResult, run_scenario_file
from harnesslab.bench.scenario import bundled_dir, scenario_paths


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunResult]]:
    out = tmp_path_factory.mktemp("suite")
    results: list[RunResult] = []
    for path in scenario_paths([str(bundled_dir())]):
        results += run_scenario_file(path, out_dir=out)
    return out, results
