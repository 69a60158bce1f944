"""Dependencies point one way: sim and harness know nothing of bench or report; the world
outside the harness knows nothing of the harness; heavy optional packages load lazily."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import harnesslab

ROOT = Path(harnesslab.__file__).parent


def imports(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in (ROOT / package).glob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        out[path.name] = names
    return out


def offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{package}/{f} imports {n}" for f, ns in imports(package).items() for n in ns
            if n.startswith(forbidden)]


def test_sim_and_harness_know_nothing_of_bench_or_report() -> None:
    bad = offenders("sim", ("harnesslab.bench", "harnesslab.report", "harnesslab.harness"))
    bad += offenders("harness", ("harnesslab.bench", "harnesslab.report"))
    assert not bad


def test_the_harness_imports_nothing_from_the_simulated_world() -> None:
    # The system under test gets only what a real harness gets (design 2): no fake-model
    # vocabulary, no world, no service.
    assert offenders("harness", ("harnesslab.sim",)) == []
    assert offenders("adapters", ("harnesslab.sim",)) == []


def test_the_offender_scan_sees_a_forbidden_import(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The control for the test above: a harness module that imports the fake model is caught.
    pkg = tmp_path / "harness"
    pkg.mkdir()
    (pkg / "leaky.py").write_text("from harnesslab.sim.intents import CONSTRAINT_PHRASES\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert offenders("harness", ("harnesslab.sim",)) == \
        ["harness/leaky.py imports harnesslab.sim.intents"]


def test_importing_harnesslab_loads_no_heavy_package() -> None:
    code = ("import sys, harnesslab; heavy = [m for m in ('matplotlib', 'pandas', 'agentscope', "
            "'tokenizers', 'tqdm', 'starlette', 'uvicorn', 'openai') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert out == "[]"
