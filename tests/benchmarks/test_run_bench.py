"""A 1,000-turn run has flat per-turn cost: compaction keeps the context bounded and nothing
else grows with the conversation (counting, record writing and the fake model all work on
the current request only).

Per-turn CPU times are too coarse and too noisy to compare one by one, so whole blocks are
timed: turns 101-200 against turns 901-1000. Flat cost makes the ratio 1; a cost growing
linearly with the turn number, up to 6.3 (950 / 150). The limit, 2.5, is between. The run is
repeated and each block keeps its least CPU time.

    pytest -m benchmark tests/benchmarks/test_run_bench.py -s
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

from harnesslab.run.runner import run_variant
from harnesslab.scenario.schema import UserStep

from .conftest import report
from .scenarios import long_scenario

EARLY, LATE = (101, 200), (901, 1000)  # turns, inclusive
LIMIT = 2.5  # late / early block: flat 1, linear growth up to 6.3
RUNS = 2  # about 13 s of CPU each


def test_thousand_turns_flat_per_turn_cost(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sc = long_scenario(1000)
    early: list[float] = []
    late: list[float] = []
    totals: list[float] = []

    def once() -> None:
        turn_end: dict[int, float] = {0: time.process_time()}

        def on_step(i: int) -> None:
            if isinstance(sc.steps[i - 1], UserStep):
                turn_end[len(turn_end)] = time.process_time()

        # Objects left by earlier tests (and runs) would make the collector's full passes, and
        # so the later turns, slower for reasons that have nothing to do with this run.
        gc.collect()
        gc.freeze()
        try:
            r = run_variant(sc, sc.variants[0], out_dir=tmp_path, on_step=on_step)
        finally:
            gc.unfreeze()
        assert r.error is None, r.error
        totals.append(turn_end[1000] - turn_end[0])
        early.append(turn_end[EARLY[1]] - turn_end[EARLY[0] - 1])
        late.append(turn_end[LATE[1]] - turn_end[LATE[0] - 1])

    benchmark.pedantic(once, rounds=RUNS, iterations=1)
    ratio = min(late) / min(early)
    report(benchmark, f"1000 turns in {min(totals):.1f} s CPU (best of {len(totals)}); "
           f"turns {EARLY[0]}-{EARLY[1]}: {min(early):.2f} s, turns {LATE[0]}-{LATE[1]}: "
           f"{min(late):.2f} s, ratio {ratio:.2f} (flat 1, linear up to 6.3, limit {LIMIT})",
           early_s=min(early), late_s=min(late), ratio=ratio, limit=LIMIT)
    assert (tmp_path / "thousand-turns" / "default" / "seed0.jsonl").stat().st_size > 0
    assert ratio <= LIMIT
