"""A black-box run costs no more than it must: the bundled suite through the reference harness
as a program (``python -m harnesslab.adapters.reference_program``, over the loopback wire)
against the same suite in process, as a ratio of CPU time in one run. The program's CPU counts
too: each program is waited for, so ``os.times()`` holds it under the children's times.
Program start-up is paid once per run (one process per instance, kept for every turn).

    pytest -m benchmark tests/benchmarks/test_black_box_bench.py -s
"""

from __future__ import annotations

import os
from typing import Any

from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

from .conftest import collector_paused, report

# The target is 3x; measured 13.5x (not met yet): each run starts a Python process
# (interpreter and imports, about 0.3 s CPU), a variant with a real tokenizer loads its
# vocabulary again in every process, and every call sends the whole request as JSON. The limit
# guards against getting worse while that work is open.
TARGET = 3.0
LIMIT = 20.0
WRAPPER = "cmd:python -m harnesslab.adapters.reference_program"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _suite(cli_set: dict[str, Any]) -> float:
    start = _cpu()
    for path in sorted(bundled_dir().glob("*.yaml")):
        sc = load_scenario(path)
        for v in sc.variants:
            run_variant(sc, v, source=path, cli_set=cli_set)
    return _cpu() - start


def test_black_box_suite_cpu_ratio(benchmark: Any) -> None:
    with collector_paused():
        inproc = _suite({})
        wire = _suite({"harness": WRAPPER, "turn_timeout": 300})
    ratio = wire / inproc
    report(benchmark, f"bundled suite: in process {inproc:.1f} s CPU, through the reference "
           f"harness as a program {wire:.1f} s CPU: {ratio:.2f}x (target {TARGET:g}x, "
           f"{'met' if ratio <= TARGET else 'NOT met'}; limit {LIMIT:g}x)",
           inproc_cpu_s=inproc, wire_cpu_s=wire, ratio=ratio)
    benchmark.pedantic(lambda: None, rounds=1)
    assert ratio <= LIMIT
