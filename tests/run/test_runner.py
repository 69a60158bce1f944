"""The runner's step kinds: fillers sized by multiple of the trigger or filled up to just below
it, clock advances, and failed runs recorded as results."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.record.format import Record
from harnesslab.run import drive
from harnesslab.run.runner import run_scenario_file, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import FillerSpec, Variant


def test_fill_to_stays_below_the_trigger_and_close_to_it(tmp_path: Path) -> None:
    sc = load_scenario(bundled_dir() / "reserve-below-head-zh.yaml")
    r = run_variant(sc, Variant(name="larger-reserve", set={"reserve_ratio": 0.4}),
                    out_dir=tmp_path)
    rec = Record.load(r.record)  # type: ignore[arg-type]
    assert not [c for c in rec.of_type("compaction") if c["step"] == 2]
    first_call_of_turn = next(e for e in rec.of_type("model_call") if e["step"] == 3)
    trigger = 0.8 * 3000
    # The filled context plus the new question sits just around the trigger.
    assert 0.95 * trigger < first_call_of_turn["estimate"] < 1.05 * trigger


def test_times_trigger_filler_crosses_the_trigger(tmp_path: Path) -> None:
    sc = load_scenario(bundled_dir() / "followup-after-filler-zh.yaml")
    r = run_variant(sc, Variant(name="default"), out_dir=tmp_path)
    rec = Record.load(r.record)  # type: ignore[arg-type]
    filler = rec.of_type("filler")[0]
    assert filler["estimate"] >= filler["target"] == 1.5 * 0.8 * 8192
    assert filler["true_tokens"] > 0
    assert [c for c in rec.of_type("compaction") if c["step"] == 2]


def test_a_filler_states_one_size() -> None:
    with pytest.raises(ValueError, match="exactly one of times_trigger or fill_to"):
        FillerSpec(times_trigger=1.0, fill_to=0.9)
    with pytest.raises(ValueError, match="exactly one of times_trigger or fill_to"):
        FillerSpec()


def test_a_harness_crash_fails_its_turn_and_the_run_goes_on(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from harnesslab.harness import agent

    def boom(self: object, text: str, images: object = ()) -> object:
        raise RuntimeError("harness exploded")

    monkeypatch.setattr(agent.ReferenceHarness, "turn", boom)
    sc = load_scenario(bundled_dir() / "followup-o1001-zh.yaml")
    r = run_variant(sc, Variant(name="default"), out_dir=tmp_path)
    assert r.error is None and not r.expected
    rec = Record.load(r.record)  # type: ignore[arg-type]
    turns = rec.of_type("turn")
    assert len(turns) == sum(1 for s in sc.steps if hasattr(s, "user"))
    assert all(t["failed"] and t["reason"] == "harness raised RuntimeError: harness exploded"
               and "boom" in t["traceback"] for t in turns)


def test_a_crash_outside_a_turn_is_a_recorded_result(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from harnesslab.harness import agent

    def boom(self: object, exchanges: object) -> None:
        raise RuntimeError("preload exploded")

    monkeypatch.setattr(agent.ReferenceHarness, "preload", boom)
    sc = load_scenario(bundled_dir() / "followup-after-filler-zh.yaml")
    r = run_variant(sc, Variant(name="default"), out_dir=tmp_path)
    assert r.error == "RuntimeError: preload exploded" and not r.expected
    rec = Record.load(r.record)  # type: ignore[arg-type]
    assert rec.of_type("run_error")[0]["error"] == "RuntimeError: preload exploded"


def test_fill_to_reaches_the_trigger_in_every_seed(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A scenario sized to the trigger exercises its boundary whatever the seed: the filler
    passes over an exchange too large for the room left and tries the next ones. Control:
    stopping at the first one that does not fit (FILL_TRIES = 1) leaves room that varies with
    the seed, and the scenario's controls pass where they must fail."""
    path = bundled_dir() / "reserve-boundary-in-tool-round-zh.yaml"
    seeds = range(5)

    def run(out: Path) -> tuple[list[bool], list[int]]:
        results = run_scenario_file(path, seeds=seeds, out_dir=out)
        fills = [Record.load(r.record).of_type("filler")[0]["estimate"]  # type: ignore[arg-type]
                 for r in results if r.variant == "default"]
        return [r.expected for r in results], fills

    expected, fills = run(tmp_path / "tight")
    assert all(expected) and max(fills) - min(fills) < 30, fills
    monkeypatch.setattr(drive, "FILL_TRIES", 1)
    expected, fills = run(tmp_path / "first-miss")
    assert not all(expected) and max(fills) - min(fills) > 60, fills
