"""Like for like: every cell of a sweep runs the same conversation. The default grid's sizing
gives each cell of a scenario variant the same user turns and the same filler (sized once,
from the grid's largest trigger), and compaction still happens in every cell."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.record.format import Record
from harnesslab.scenario.loader import bundled_dir
from harnesslab.sweep.plan import plan
from harnesslab.sweep.rows import SweepTask, run_task
from harnesslab.sweep.spec import DEFAULT_SCENARIOS, default_spec


def conversation(rec: Record) -> dict[str, Any]:
    """What the user side of a run was: the turns' texts and every filler's exchanges."""
    return {"turns": [t["text"] for t in rec.of_type("turn")],
            "filler": [(f["exchanges"], f["true_tokens"]) for f in rec.of_type("filler")]}


def run_cells(scenario: str, out: Path) -> list[tuple[SweepTask, Record]]:
    spec = dataclasses.replace(default_spec(), scenarios=(bundled_dir() / f"{scenario}.yaml",),
                               seeds=(0,), variants=("default",))
    tasks = plan(spec, out)
    assert len(tasks) == 27  # 3 strategies x 3 trigger ratios x 3 context sizes
    done = []
    for t in tasks:
        row = run_task(t)["row"]
        assert row["error"] is None, row["error"]
        done.append((t, Record.load(out / row["record"])))
    return done


def assert_like_for_like(done: list[tuple[SweepTask, Record]]) -> None:
    first = conversation(done[0][1])
    assert first["filler"], "the scenario has filler"
    for task, rec in done:
        assert conversation(rec) == first, task.settings
        # The common size is the grid's largest trigger: 0.8 x 16384.
        assert task.settings["filler_base"] == pytest.approx(0.8 * 16384)
        assert rec.header["filler_base"] == pytest.approx(0.8 * 16384)
        assert rec.of_type("compaction"), f"no compaction in {json.dumps(task.settings)}"


def test_every_cell_of_the_default_grid_runs_the_same_conversation(tmp_path: Path) -> None:
    assert_like_for_like(run_cells("followup-after-filler-zh", tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("scenario", [s for s in DEFAULT_SCENARIOS
                                      if s != "followup-after-filler-zh"])
def test_every_default_scenario_runs_one_conversation_in_every_cell(tmp_path: Path,
                                                                     scenario: str) -> None:
    assert_like_for_like(run_cells(scenario, tmp_path))


def test_without_the_common_size_the_cells_run_different_conversations(tmp_path: Path) -> None:
    # The control: sized per cell (as `harnesslab run --set` does), a larger trigger gets more
    # small talk, so the cells' costs would compare unequal conversations.
    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.loader import load_scenario

    path = bundled_dir() / "followup-after-filler-zh.yaml"
    sc = load_scenario(path)
    (v,) = [v for v in sc.variants if v.name == "default"]
    sizes = []
    for cell in ({"context_size": 4096, "trigger_ratio": 0.6},
                 {"context_size": 16384, "trigger_ratio": 0.8}):
        r = run_variant(sc, v, source=path, out_dir=tmp_path / str(cell["context_size"]),
                        cli_set=cell)
        assert r.record is not None
        sizes.append(conversation(Record.load(r.record))["filler"])
    assert sizes[0] != sizes[1]


def test_a_grid_that_does_not_move_the_trigger_keeps_each_cell_as_run(tmp_path: Path) -> None:
    # Nothing to fix: strategy alone leaves the trigger where it is, so the runs (and their run
    # keys) are those of harnesslab run with --set strategy=...
    spec = dataclasses.replace(default_spec(), grid={"strategy": ["structured", "truncate"]},
                               scenarios=(bundled_dir() / "followup-after-filler-zh.yaml",),
                               seeds=(0,), variants=("default",))
    assert [t.settings for t in plan(spec, tmp_path)] == [{"strategy": "structured"},
                                                          {"strategy": "truncate"}]
