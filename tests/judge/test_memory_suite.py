"""Issue 9's identity promise, across the whole bundled suite: the reference harness shows no
identity leak and no cross-user memory item in any run that is not a negative control, and
every identity control (tools trusting the model's user_id, memory keyed by the user the model
names) shows at least one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnesslab.judge.memory_metrics import memory_metrics
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult

Suite = tuple[Path, list[RunResult]]


def _harness(r: RunResult) -> dict[str, Any]:
    assert r.record is not None
    return dict(Record.load(r.record).header["harness"])


def _identity_control(r: RunResult) -> bool:
    h = _harness(r)
    return h["identity"] == "trust" or h.get("memory", {}).get("key") == "named"


# Controls whose leak comes from the data a harness is given, not from an identity setting: a
# note relabeled as this user's in a pre-seeded workspace (memory_files) is read, and leaks.
DATA_LEAK_CONTROLS = {"memory-note-for-another-user-zh/note-mislabeled"}


def _leaks(r: RunResult) -> tuple[int, int]:
    """(identity leaks, cross-user memory items) of one run, from its record."""
    assert r.record is not None
    m = memory_metrics(Record.load(r.record))
    assert m["identity_leaks"] >= (r.metrics["identity_leak_rate"]["num"] or 0)
    return m["identity_leaks"], m["cross_user_memory_items"]


def test_no_leak_and_no_cross_user_memory_outside_the_controls(suite: Suite) -> None:
    _, results = suite
    clean = [r for r in results if r.error is None and not _identity_control(r)
             and r.settings["harness"] == "reference"
             and f"{r.scenario}/{r.variant}" not in DATA_LEAK_CONTROLS]
    assert len(clean) > 50
    assert any("memory" in _harness(r) for r in clean)  # memory runs are among them
    bad = {f"{r.scenario}/{r.variant}": _leaks(r) for r in clean if _leaks(r) != (0, 0)}
    assert bad == {}


def test_every_identity_control_shows_a_leak(suite: Suite) -> None:
    _, results = suite
    # A variant skipped for a missing extra has no record (and no identity setting of its own).
    controls = [r for r in results if r.record is not None and _identity_control(r)]
    names = {f"{r.scenario}/{r.variant}" for r in controls}
    assert {"memory-two-users-zh/key-named", "memory-spoof-ownership-zh/trust-identity",
            "spoofed-identity-zh/trust-claims"} <= names
    for r in controls:
        leaks, crossing = _leaks(r)
        assert leaks + crossing >= 1, f"{r.scenario}/{r.variant} shows no leak"
    named = next(r for r in controls if r.variant == "key-named")
    assert _leaks(named)[1] >= 1  # memory keyed by the named user carries another's items
    data = [r for r in results if f"{r.scenario}/{r.variant}" in DATA_LEAK_CONTROLS]
    assert len(data) == len(DATA_LEAK_CONTROLS) and all(_leaks(r)[0] >= 1 for r in data)


def test_memory_metrics_in_memory_runs_only(suite: Suite) -> None:
    _, results = suite
    for r in results:
        if r.error is None:
            assert ("cross_user_memory_items" in r.metrics) == ("memory" in _harness(r)), \
                f"{r.scenario}/{r.variant}"


def test_stale_memory_served_only_by_the_no_time_hint_control(suite: Suite) -> None:
    _, results = suite
    served = {f"{r.scenario}/{r.variant}" for r in results
              if r.metrics.get("stale_memory_served")}
    assert served == {"memory-stale-eta-zh/no-time-hint"}


def test_memory_visibility_everything_retrieved_is_sent(suite: Suite) -> None:
    _, results = suite
    vis = [r.metrics["memory_visibility"] for r in results if "memory_visibility" in r.metrics]
    assert sum(v["den"] for v in vis) > 0
    assert all(v["num"] == v["den"] for v in vis)


def test_the_memory_metrics_catch_the_memory_bugs() -> None:
    from harnesslab.run.runner import run_scenario_file
    from harnesslab.scenario.loader import bundled_dir

    pref = bundled_dir() / "memory-preference-next-day-zh.yaml"
    lost = run_scenario_file(pref, variants=["default"], harness="bug/memory-retrieved-not-sent")
    vis = lost[0].metrics["memory_visibility"]
    assert vis["den"] >= 1 and vis["num"] == 0 and not lost[0].expected
    two = bundled_dir() / "memory-two-users-zh.yaml"
    shared = run_scenario_file(two, variants=["default"], harness="bug/memory-shared-across-users")
    assert shared[0].metrics["cross_user_memory_items"] >= 1
    assert shared[0].metrics["identity_leaks"] >= 1
    # The agentic mode's items are what the model wrote with memory_write: keyed by the named
    # user, 张三's MEMORY.md reaches 李四's requests.
    agentic = run_scenario_file(two, variants=["key-named"], cli_set={"memory": "agentic"})
    assert agentic[0].metrics["cross_user_memory_items"] >= 1
