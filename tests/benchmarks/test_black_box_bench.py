"""A black-box run costs no more than it must: the bundled suite through the reference harness
as a program (started by the light launcher, ``zygote.command()``, over the loopback wire)
against the same suite in process, as a ratio of CPU time in one run. The program's CPU counts
too: each program is waited for, so ``os.times()`` holds it under the children's times.
Program start-up is paid once per instance (one process per instance, kept for every turn); the
zygote's CPU and its workers' are added (they are not this process's children).

    pytest -m benchmark tests/benchmarks/test_black_box_bench.py -s
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harnesslab.adapters import zygote
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

from .conftest import report

# The target is 3x (docs/black-box.md, "What a black-box run costs"). Each of the
# suite's programs is a process the bench starts: the reference harness as a program starts
# from a fork server (adapters/zygote.py), so a program is an interpreter's start without site
# (the light launcher, zygote.command(), about 10 ms) and a forked worker (mostly the harness's
# own turns); the zygote imports agentscope when a hello line asks for its prompts profile
# (zygote_prepare). Each side in a fresh process, as a user runs it: 2.51x to 2.58x on an idle
# machine (about 10 s against 25 s: the bench 11 s, the programs 14.5 s); inside fresh-clone CI
# runs, earlier code read 0.05x to 0.3x more than alone. The limit sits above that spread and
# below the 5.5x of the launcher before the fork server's agentscope keep, 7.5x to 9.3x before
# the fork server.
TARGET = 3.0
LIMIT = 4.0
WRAPPER = "cmd:" + zygote.command()  # the light launcher (adapters/launcher.py)
ROOT = Path(__file__).resolve().parents[2]


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


def _fresh(side: str) -> dict[str, float]:
    """One side of the comparison as a user runs it: a fresh process (its start, imports and
    first loads counted, as ``harnesslab run`` pays them), waited for, so its CPU and its
    programs' are this process's children's times; the zygote's, which is no child, it
    reports. Measured in one process after the other side, the second side would find the
    first's loads done (the tokenizers, the lazy imports) and the ratio would depend on the
    order and on what the test process ran before."""
    before = os.times()
    out = subprocess.run([sys.executable, "-c", _CHILD, side], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    after = os.times()
    got: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    got["cpu"] = (after.children_user + after.children_system - before.children_user
                  - before.children_system) + got["forked"]
    return got


_CHILD = """
import json, sys
from tests.benchmarks.conftest import collector_paused
from tests.benchmarks.test_black_box_bench import WRAPPER, _suite
with collector_paused():
    _, programs, forked = _suite({} if sys.argv[1] == "in" else
                                 {"harness": WRAPPER, "turn_timeout": 300})
print(json.dumps({"programs": programs, "forked": forked}))
"""


def test_black_box_suite_cpu_ratio(benchmark: Any) -> None:
    inproc = _fresh("in")["cpu"]
    got = _fresh("wire")
    wire, programs, forked = got["cpu"], got["programs"], got["forked"]
    ratio = wire / inproc
    report(benchmark, f"bundled suite, each side a fresh process: in process {inproc:.1f} s "
           f"CPU, through the reference harness as a program {wire:.1f} s CPU (the bench "
           f"{wire - programs:.1f} s, the programs {programs:.1f} s, of which the zygote and "
           f"its workers {forked:.1f} s): {ratio:.2f}x (target {TARGET:g}x, "
           f"{'met' if ratio <= TARGET else 'NOT met'}; limit {LIMIT:g}x)",
           inproc_cpu_s=inproc, wire_cpu_s=wire, programs_cpu_s=programs,
           zygote_cpu_s=forked, ratio=ratio)
    benchmark.pedantic(lambda: None, rounds=1)
    assert ratio <= LIMIT


# A long conversation through the wrapper: linear work (the native wire names what a request
# shares with an earlier one, messages.Sent) reads 2.5x to 4.67x the run in process, resending
# the whole history 30.9x; the limit sits between the two classes (docs/black-box.md has the
# measurements and their history).
LONG_TURNS = 1200
LONG_LIMIT = 10.0


def _long_cpu(cli_set: dict[str, Any]) -> float:
    """CPU seconds of the long run: this process's and its children's, and on the wire the
    zygote's and its workers' (which are no children of this one)."""
    from tests.benchmarks.scenarios import long_scenario

    sc = long_scenario(LONG_TURNS, filler=None, context_size=131072)  # no compaction
    wire = "harness" in cli_set
    for _ in range(3):
        start, forks = _cpu(), zygote.cpu_seconds() if wire else 0.0
        run_variant(sc, sc.variants[0], cli_set=cli_set)
        forked = zygote.cpu_seconds() - forks if wire else 0.0
        # The zygote's count only grows: less means it did not answer or another did, and
        # the figure would be wrong (a loaded run once read -0.08 s in process, when the
        # in-process side asked the zygote too): measured again, and never taken.
        if forked >= 0:
            return _cpu() - start + forked
    raise AssertionError(f"the zygote's CPU count went back by {-forked:.2f} s, three times")


def test_a_long_conversation_through_the_wrapper_costs_linear_work(benchmark: Any) -> None:
    from harnesslab.tokens.tokenizers import get_tokenizer

    get_tokenizer("o200k_base")  # the service's count: loaded once, before either side
    _long_cpu({"harness": WRAPPER, "turn_timeout": 300})  # the zygote started, warm
    inproc = min(_long_cpu({}) for _ in range(2))
    wire = min(_long_cpu({"harness": WRAPPER, "turn_timeout": 300}) for _ in range(2))
    ratio = wire / inproc
    report(benchmark, f"{LONG_TURNS} turns of one growing conversation: in process "
           f"{inproc:.2f} s CPU, through the reference harness as a program {wire:.2f} s: "
           f"{ratio:.2f}x (limit {LONG_LIMIT:g}x; resending the history 30.9x)",
           long_inproc_cpu_s=inproc, long_wire_cpu_s=wire, long_ratio=ratio)
    benchmark.pedantic(lambda: None, rounds=1)
    assert ratio <= LONG_LIMIT
