"""report/ is the only matplotlib importer, and nothing below it imports report/."""

from __future__ import annotations

import ast
from pathlib import Path

import harnesslab

ROOT = Path(harnesslab.__file__).parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_only_report_imports_matplotlib_and_nothing_below_imports_report() -> None:
    bad = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        names = _imports(path)
        if rel.parts[0] != "report" and any(n.split(".")[0] == "matplotlib" for n in names):
            bad.append(f"{rel} imports matplotlib")
        if rel.parts[0] in ("bench", "sim", "harness") and \
                any(n.startswith("harnesslab.report") for n in names):
            bad.append(f"{rel} imports harnesslab.report")
    assert bad == []
    assert any(n.startswith("matplotlib") for n in _imports(ROOT / "report" / "plots.py"))
