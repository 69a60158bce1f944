"""The real AgentScope agent through restarts, alternate instances and a kill: the bench
round-trips its AgentState JSON (save_state / load_state) into a fresh agent; the controls hand
the fresh agent nothing but the session id."""

from __future__ import annotations

import pytest

from harnesslab.run.runner import run_scenario_file
from harnesslab.scenario.loader import bundled_dir
from tests.adapters.support import AGENTSCOPE_EXTRA

pytestmark = pytest.mark.agentscope
pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)


@pytest.mark.parametrize("scenario", ["restart-followup-zh", "alternate-instances-zh",
                                      "kill-mid-turn-zh"])
def test_agentscope_keeps_the_thread_with_its_state_and_loses_it_without(scenario: str) -> None:
    results = run_scenario_file(bundled_dir() / f"{scenario}.yaml", harness="agentscope")
    assert [(r.variant, r.expected) for r in results] == [(r.variant, True) for r in results]
    default = next(r for r in results if r.variant == "default")
    assert default.all_passed
    fidelity = default.metrics["resume_fidelity"]
    assert fidelity["num"] == fidelity["den"] == (0 if scenario.startswith("alternate") else 1)
    for r in results:
        if r.control and "resume_fidelity" in {c.kind for c in r.checks}:
            assert r.metrics["resume_fidelity"]["value"] == 0.0
