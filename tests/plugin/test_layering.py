"""The plugin is the only module that imports pytest, and importing harnesslab does not."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import harnesslab

ROOT = Path(harnesslab.__file__).parent


def test_only_the_plugin_imports_pytest() -> None:
    importers = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] in ("pytest", "_pytest") for n in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"ci/plugin.py"}


def test_importing_harnesslab_does_not_import_pytest() -> None:
    code = "import sys, harnesslab, harnesslab.ci.config; print('pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert out == "False"
