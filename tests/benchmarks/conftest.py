"""Benchmarks: not in the default run (``-m benchmark`` selects them). Each asserts a ratio
measured within one run, since absolute times on shared machines are noise."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "benchmarks" in str(item.path):
            item.add_marker(pytest.mark.benchmark)


def best_of(fn: Callable[[], object], repeats: int = 9) -> float:
    """The fastest of several timings: the least disturbed by other load on the machine. The
    collector is paused while timing, so that its passes (which depend on whatever else the
    test process holds) do not blur the scaling being measured."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    finally:
        gc.enable()
    return best
