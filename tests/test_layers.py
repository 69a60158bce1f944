"""Dependencies point one way: sim and harness know nothing of bench or report; the world
outside the harness knows nothing of the harness; heavy optional packages load lazily."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


def test_importing_harnesslab_loads_no_heavy_package() -> None:
    code = ("import sys, harnesslab; heavy = [m for m in ('matplotlib', 'pandas', 'agentscope', "
            "'tokenizers', 'tqdm') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert out == "[]"
