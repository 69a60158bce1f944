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

from harnesslab.adapters import zygote
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

from .conftest import collector_paused, report

# The issue's target is 3x, out of reach for this program (docs/performance.md, "A black-box
# run"): the suite starts 248 programs, and each start of the reference harness costs about
# 0.19 s CPU before any turn (25 ms the interpreter, most of the rest pydantic, which its
# settings are built on): 47 s, six times the suite in process. Even a program that only
# answers the protocol (json and socket) pays 33 ms a start, 8 s in all. Measured 9.3x
# (in process 10.5 s, through the program 98.2 s, on the shared machine under load; 14.3x
# before the wrapper dropped httpx and the bench matched resent messages by content). The
# limit, about 1.5x that, guards against getting worse.
TARGET = 3.0
LIMIT = 14.0
WRAPPER = "cmd:python -m harnesslab.adapters.reference_program"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _suite(cli_set: dict[str, Any]) -> tuple[float, float, float]:
    """CPU seconds of the suite: in all, in the programs (the children's times and the
    zygote's), and of those in the zygote and its workers."""
    start, kids, forks = _cpu(), os.times(), zygote.cpu_seconds()
    for path in sorted(bundled_dir().glob("*.yaml")):
        sc = load_scenario(path)
        for v in sc.variants:
            run_variant(sc, v, source=path, cli_set=cli_set)
    end = os.times()
    # The zygote is no child of this process (adapters.zygote): its CPU and its workers' are
    # not in the children's times; it reports them.
    forked = zygote.cpu_seconds() - forks
    return _cpu() - start + forked, (end.children_user + end.children_system
                                     - kids.children_user - kids.children_system) + forked, \
        forked


def test_black_box_suite_cpu_ratio(benchmark: Any) -> None:
    with collector_paused():
        inproc, _, _ = _suite({})
        wire, programs, forked = _suite({"harness": WRAPPER, "turn_timeout": 300})
    ratio = wire / inproc
    report(benchmark, f"bundled suite: in process {inproc:.1f} s CPU, through the reference "
           f"harness as a program {wire:.1f} s CPU (the bench {wire - programs:.1f} s, the "
           f"programs {programs:.1f} s, of which the zygote and its workers {forked:.1f} s): "
           f"{ratio:.2f}x (target {TARGET:g}x, "
           f"{'met' if ratio <= TARGET else 'NOT met'}; limit {LIMIT:g}x)",
           inproc_cpu_s=inproc, wire_cpu_s=wire, programs_cpu_s=programs,
           zygote_cpu_s=forked, ratio=ratio)
    benchmark.pedantic(lambda: None, rounds=1)
    assert ratio <= LIMIT
