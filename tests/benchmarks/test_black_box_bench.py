"""A black-box run costs no more than it must: the bundled suite through the reference harness
as a program (started by the light launcher, ``zygote.command()``, over the loopback wire)
against the same suite in process, as a ratio of CPU time in one run. The program's CPU counts
too: each program is waited for, so ``os.times()`` holds it under the children's times.
Program start-up is paid once per instance (one process per instance, kept for every turn); the
zygote's CPU and its workers' are added (they are not this process's children).

    pytest -m benchmark tests/benchmarks/test_black_box_bench.py -s
"""

from __future__ import annotations

import os
from typing import Any

from harnesslab.adapters import zygote
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

from .conftest import collector_paused, report

# The target is 3x (docs/black-box.md, "What a black-box run costs"). Each of the
# suite's 296 programs is a process the bench starts: the reference harness as a program starts
# from a fork server (adapters/zygote.py), so a program is an interpreter's start without site
# (the light launcher, zygote.command(), about 13 ms) and a forked worker (about 30 ms, mostly
# the harness's own turns). Measured 2.94x, 2.95x and 2.07x on the shared machine (in process
# 9.5 s, 10.2 s and 12.5 s, through the program 27.9 s, 30.3 s and 25.7 s; the in-process
# figure moves most with the load), 3.56x and 3.65x with the launcher that ran site
# (python -m), 7.5x to 9.3x before the fork server. The limit sits above the load's spread of
# the new figures (3.1x and 3.3x were seen before the zygote preloaded the IDNA codec), below
# the old limit of 5.5x: a launcher that ran site again would be about 3.6x.
# Since the two AgentScope-profile scenarios (nine variants that import agentscope in every
# program that runs them; in process it is imported once) the suite measured 3.25x to 3.65x
# where agentscope is installed (CI's slow stage). With the zygote keeping agentscope once a
# worker needed it (adapters/zygote.py, ZYGOTE_KEEP) it measures 2.59x to 2.98x (this venv,
# five runs) and 2.79x, 2.87x and 3.29x in a clean CI venv with an empty tokenizer cache (the
# in-process figure moves most with the load: 11.3 s in the last). The limit sits between
# those and the figures before.
TARGET = 3.0
LIMIT = 3.5
WRAPPER = "cmd:" + zygote.command()  # the light launcher (adapters/launcher.py)


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
