"""Benchmarks: not in the default run (``-m benchmark`` selects them). Each asserts a ratio
measured within one run, since absolute times on shared machines are noise.

Times are CPU time of this process (``time.process_time``): on a loaded machine wall time also
counts the slices other processes hold the cores, which has nothing to do with the code
measured. Limits sit halfway (geometrically) between the complexity class promised and the next
one up, so that load moves a figure without crossing them. Every test prints its figures (run
with ``-s``), stores them in ``benchmark.extra_info`` and lists them again in a "benchmark
figures" section at the end of the run, so a CI log without ``-s`` still shows them.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "benchmarks" in str(item.path):
            item.add_marker(pytest.mark.benchmark)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector's passes depend on whatever else the test process holds, not on the code
    measured: collect once, then keep it off while timing."""
    gc.collect()
    was_enabled = gc.isenabled()  # --benchmark-disable-gc may have turned it off already
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def cpu_min(*fns: Callable[[], object], repeats: int) -> list[float]:
    """The least CPU time of each function over ``repeats`` rounds. Rounds interleave the
    functions, so a spell of load (cache and TLB refills after preemptions still cost CPU
    time) falls on all of them alike; the minimum is the least disturbed run."""
    best = [float("inf")] * len(fns)
    with collector_paused():
        for _ in range(repeats):
            for k, fn in enumerate(fns):
                t0 = time.process_time()
                fn()
                best[k] = min(best[k], time.process_time() - t0)
    return best


def cpu_min_chunked(*fns: Callable[[int], object], chunks: int, repeats: int) -> list[float]:
    """The sum over ``chunks`` pieces of work (``fn(i)`` does piece ``i``) of each function's
    least CPU time on that piece. A disturbance long enough to touch every repeat of a whole
    150 ms run seldom touches every repeat of a 5 ms piece, so the sum of the pieces' minimums
    is the undisturbed cost even on a machine with a neighbour. Each round alternates which
    function goes first, so neither always runs on the other's warm caches."""
    total = [0.0] * len(fns)
    with collector_paused():
        for i in range(chunks):
            best = [float("inf")] * len(fns)
            for r in range(repeats):
                order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
                for k in order:
                    t0 = time.process_time()
                    fns[k](i)
                    best[k] = min(best[k], time.process_time() - t0)
            total = [t + b for t, b in zip(total, best, strict=True)]
    return total


FIGURES: list[str] = []


def figure(line: str) -> None:
    """Print a line of measured figures and list it again in the run's closing summary."""
    FIGURES.append(line)
    print(f"\n{line}")


def report(benchmark: object, line: str, **figures: float) -> None:
    """Print the measured figures (visible with ``-s``) and keep them in the benchmark's JSON."""
    benchmark.extra_info.update(figures)  # type: ignore[attr-defined]
    figure(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("benchmark figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
