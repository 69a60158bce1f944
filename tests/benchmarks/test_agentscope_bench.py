"""CPU time per scenario turn: the reference harness against the real AgentScope agent behind
the adapter, on the same scenario and settings (the adapter's cost is AgentScope's own loop,
its pydantic messages and deep copies, plus the conversion into the bench's requests).

    pytest -m benchmark tests/benchmarks/test_agentscope_bench.py -s
"""

from __future__ import annotations

import gc
import time

import pytest

from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import UserStep
from tests.adapters.support import AGENTSCOPE_EXTRA

from .conftest import figure

pytestmark = pytest.mark.agentscope
pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)


def per_turn_cpu(scenario: str, harness: str, repeats: int = 3) -> tuple[float, float]:
    """The least CPU and wall seconds per user turn over ``repeats`` runs of the default
    variant (records not written: the same for both harnesses, and not what is compared)."""
    sc = load_scenario(bundled_dir() / f"{scenario}.yaml")
    turns = sum(isinstance(s, UserStep) for s in sc.steps)
    settings = {"harness": harness, "prompts": "agentscope"}
    run_variant(sc, sc.variants[0], cli_set=settings)  # warm: imports, tokenizer, caches
    cpu = wall = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            r = run_variant(sc, sc.variants[0], cli_set=settings)
            cpu = min(cpu, time.process_time() - c0)
            wall = min(wall, time.perf_counter() - w0)
            assert r.error is None, r.error
    finally:
        gc.enable()
    return cpu / turns, wall / turns


@pytest.mark.parametrize("scenario", ["brevity-30-turns-zh", "followup-after-filler-zh"])
def test_cpu_per_turn_reference_vs_agentscope(benchmark, scenario: str) -> None:  # type: ignore[no-untyped-def]
    found: dict[str, tuple[float, float]] = {}

    def once() -> None:
        found["reference"] = per_turn_cpu(scenario, "reference")
        found["agentscope"] = per_turn_cpu(scenario, "agentscope")

    benchmark.pedantic(once, rounds=1, iterations=1)
    (rc, rw), (ac, aw) = found["reference"], found["agentscope"]
    ratio = ac / rc
    benchmark.extra_info.update(reference_cpu_ms=rc * 1e3, agentscope_cpu_ms=ac * 1e3,
                                ratio=ratio)
    figure(f"{scenario}: CPU per turn reference {rc * 1e3:.1f} ms, AgentScope adapter "
           f"{ac * 1e3:.1f} ms, ratio {ratio:.2f}; wall {rw * 1e3:.1f} / {aw * 1e3:.1f} ms")
    # A guard, not a target: the adapter adds AgentScope's loop to the same bench work.
    assert 0.5 < ratio < 6
