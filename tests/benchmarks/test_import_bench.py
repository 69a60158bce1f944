"""Start-up is cheap: ``harnesslab --version`` and ``import harnesslab`` cost a small multiple of
a bare ``python -c pass``, because the package loads its public names lazily and the command
imports a subcommand's libraries only when that subcommand runs (issue 18: at most 4x and 5x;
the eager package cost 17x and 15x).

Each figure is the child processes' CPU time (user + system, from ``os.wait4``), the minimum of
interleaved repeats, so that all three commands meet the same load.

    pytest -m benchmark tests/benchmarks/test_import_bench.py -s
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import report

VERSION_LIMIT = 4.0
IMPORT_LIMIT = 5.0
REPEATS = 15


def child_cpu(cmd: list[str]) -> float:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd=os.path.dirname(sys.executable))  # not this checkout: no stray imports
    _, status, usage = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, cmd
    return usage.ru_utime + usage.ru_stime


def harnesslab_command() -> list[str]:
    # The console script pip wrote beside this interpreter; else the same entry point by -c.
    script = Path(sys.executable).with_name("harnesslab")
    if script.is_file():
        return [str(script)]
    found = shutil.which("harnesslab")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from harnesslab.cli import main; sys.exit(main())"]


def test_version_and_import_cost_a_small_multiple_of_a_bare_python(benchmark) -> None:  # type: ignore[no-untyped-def]
    commands = {"bare": [sys.executable, "-c", "pass"],
                "version": [*harnesslab_command(), "--version"],
                "import": [sys.executable, "-c", "import harnesslab"]}
    best = dict.fromkeys(commands, float("inf"))
    for _ in range(REPEATS):
        for name, cmd in commands.items():
            best[name] = min(best[name], child_cpu(cmd))
    version, imported = best["version"] / best["bare"], best["import"] / best["bare"]
    report(benchmark, f"start-up CPU: python -c pass {best['bare'] * 1e3:.1f} ms; "
           f"harnesslab --version {best['version'] * 1e3:.1f} ms = {version:.2f}x (limit "
           f"{VERSION_LIMIT}); import harnesslab {best['import'] * 1e3:.1f} ms = {imported:.2f}x "
           f"(limit {IMPORT_LIMIT})", bare_s=best["bare"], version_ratio=version,
           import_ratio=imported)
    benchmark.pedantic(child_cpu, args=(commands["version"],), rounds=1, iterations=1)
    assert version <= VERSION_LIMIT
    assert imported <= IMPORT_LIMIT
