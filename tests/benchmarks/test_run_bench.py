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
from harnesslab.scenario.schema import Scenario, UserStep

from .conftest import report

CHAT = ["你们周末也上班吗？", "最近快递是不是都挺慢的？", "你们的衣服质量还不错。",
        "包装可以再结实一点吗？"]
EARLY, LATE = (101, 200), (901, 1000)  # turns, inclusive
LIMIT = 2.5  # late / early block: flat 1, linear growth up to 6.3
RUNS = 2  # about 13 s of CPU each


def long_scenario(turns: int, filler: float | None = 0.02, context_size: int = 32768) -> Scenario:
    """An order question, then chat; ``filler`` (times the trigger) before every chat turn."""
    steps: list[dict[str, object]] = [{"user": "帮我查订单 O-1001 为什么还没到，回答简单一点。"}]
    for i in range(turns - 1):
        if filler is not None:
            steps.append({"filler": {"times_trigger": filler}})
        steps.append({"user": CHAT[i % len(CHAT)]})
    return Scenario.model_validate({
        "id": "thousand-turns", "title": "1,000 turns", "locale": "zh",
        "world": {"now": "2026-11-28T10:00:00+08:00",
                  "users": {"U-1": {"name": "张三", "phone": "1", "address": "上海"}},
                  "orders": {"O-1001": {"user": "U-1", "timeline": [
                      {"at": "2026-11-27T20:00:00+08:00", "status": "in_transit",
                       "eta": "2026-11-30"}]}}},
        "session": {"user": "U-1"}, "service": "openai-128k",
        "harness": {"strategy": "structured", "context_size": context_size, "estimator": "bytes4"},
        "lexicon": {"帮我查订单 O-1001 为什么还没到，回答简单一点。":
                    {"act": "order_status", "order": "O-1001", "constraints": ["brevity"]},
                    **{c: {"act": "chitchat"} for c in CHAT}},
        "steps": steps, "variants": [{"name": "default"}]})


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
