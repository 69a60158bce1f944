"""The bundled suite: every variant's expected outcomes hold, every check can fail, and the
headline numbers the design promises show up."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from harnesslab.run.runner import RunResult
from harnesslab.scenario.loader import bundled_dir, scenario_paths
from harnesslab.study.zoo import REJECT_ALL

Suite = tuple[Path, list[RunResult]]


def _by(results: list[RunResult], scenario: str, variant: str) -> RunResult:
    return next(r for r in results if r.scenario == scenario and r.variant == variant)


def test_suite_has_at_least_12_scenarios_in_both_languages(suite: Suite) -> None:
    _, results = suite
    assert len(scenario_paths([str(bundled_dir())])) >= 12
    assert {r.locale for r in results} == {"zh", "en"}


def test_every_variant_outcome_is_as_expected(suite: Suite) -> None:
    _, results = suite
    # A variant that requires an extra this install lacks is skipped, not run: the only runs
    # without an outcome, each naming the pip install.
    bad = [(r.scenario, r.variant, r.error, r.verdict.unexpected if r.verdict else None)
           for r in results if not r.expected and not r.skipped]
    assert not bad
    assert all("pip install" in r.skipped and r.verdict is None for r in results if r.skipped)


def test_the_reference_harness_never_breaks_the_chat_protocol(suite: Suite) -> None:
    # The kill rule (study/kills.py) counts a request rejected as malformed against a harness
    # whatever the scenario declares, and takes the reference's count as 0 where it ran no
    # reference: that holds on every bundled variant, controls included.
    _, results = suite
    broke = [(r.scenario, r.variant) for r in results
             if (r.metrics.get("protocol_error_rate") or {}).get("num")]
    assert broke == []
    assert any("protocol_error_rate" in r.metrics for r in results)


def _never_failing(results: list[RunResult], ignored: frozenset[str] = frozenset()) -> list[str]:
    """scenario:check ids that pass in every variant not named in ``ignored``."""
    seen: dict[str, set[str]] = defaultdict(set)
    failed: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for c in r.checks:
            seen[r.scenario].add(c.id)
            if not c.passed and r.variant not in ignored:
                failed[r.scenario].add(c.id)
    return sorted(f"{s}:{c}" for s in seen for c in seen[s] - failed[s])


def test_every_check_fails_under_some_control(suite: Suite) -> None:
    _, results = suite
    assert _never_failing(results) == []


def test_every_check_fails_under_a_control_about_its_own_concern(suite: Suite) -> None:
    # Controls that reject every call fail every answer-level check at once: they show the
    # checks can fail, not that they see their own concern.
    _, results = suite
    assert _never_failing(results, REJECT_ALL) == []


def test_every_scenario_has_a_passing_default(suite: Suite) -> None:
    _, results = suite
    for r in results:
        if r.skipped:
            continue
        if r.variant == "default" and not r.verdict.unexpected:  # type: ignore[union-attr]
            assert r.expected


def _rate(r: RunResult, name: str) -> float | None:
    v: float | None = r.metrics[name]["value"]
    return v


def test_followup_accuracy_faithful_vs_truncate(suite: Suite) -> None:
    _, results = suite
    for sc in ("followup-after-filler-zh", "followup-after-filler-en"):
        assert _rate(_by(results, sc, "default"), "followup_accuracy") == 1.0
        assert _rate(_by(results, sc, "truncate-small-window"), "followup_accuracy") == 0.0


def test_swap_lowers_entity_fidelity_and_pinned_restores_it(suite: Suite) -> None:
    _, results = suite
    sc = "entity-swap-o1001-o1010-zh"
    faithful = _rate(_by(results, sc, "default"), "entity_fidelity")
    swapped = _rate(_by(results, sc, "lossy-swap"), "entity_fidelity")
    pinned = _rate(_by(results, sc, "lossy-swap-pinned"), "entity_fidelity")
    assert faithful == pinned == 1.0
    assert swapped is not None and swapped < 1.0
    assert _rate(_by(results, sc, "lossy-swap"), "summary_entity_fidelity") == 0.0
