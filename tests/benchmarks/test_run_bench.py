"""A 1,000-turn run has flat per-turn cost: compaction keeps the context bounded and nothing
else grows with the conversation (counting, record writing and the fake model all work on
the current request only).

    pytest -m benchmark tests/benchmarks/test_run_bench.py -s
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

from harnesslab.bench.runner import run_variant
from harnesslab.bench.scenario import Scenario

CHAT = ["你们周末也上班吗？", "最近快递是不是都挺慢的？", "你们的衣服质量还不错。",
        "包装可以再结实一点吗？"]


def long_scenario(turns: int) -> Scenario:
    steps: list[dict[str, object]] = [{"user": "帮我查订单 O-1001 为什么还没到，回答简单一点。"}]
    for i in range(turns - 1):
        steps.append({"filler": {"times_trigger": 0.02}})
        steps.append({"user": CHAT[i % len(CHAT)]})
    return Scenario.model_validate({
        "id": "thousand-turns", "title": "1,000 turns", "locale": "zh",
        "world": {"now": "2026-11-28T10:00:00+08:00",
                  "users": {"U-1": {"name": "张三", "phone": "1", "address": "上海"}},
                  "orders": {"O-1001": {"user": "U-1", "timeline": [
                      {"at": "2026-11-27T20:00:00+08:00", "status": "in_transit",
                       "eta": "2026-11-30"}]}}},
        "session": {"user": "U-1"}, "service": "openai-128k",
        "harness": {"strategy": "structured", "context_size": 32768, "estimator": "bytes4"},
        "lexicon": {"帮我查订单 O-1001 为什么还没到，回答简单一点。":
                    {"act": "order_status", "order": "O-1001", "constraints": ["brevity"]},
                    **{c: {"act": "chitchat"} for c in CHAT}},
        "steps": steps, "variants": [{"name": "default"}]})


def test_thousand_turns_flat_per_turn_cost(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sc = long_scenario(1000)
    done: list[float] = []
    turn_end: dict[int, float] = {}

    def on_step(i: int) -> None:
        # Steps alternate filler, user; a turn is timed from the end of the previous turn.
        if isinstance(sc.steps[i - 1], type(sc.steps[0])):
            turn_end[len(turn_end) + 1] = time.perf_counter()

    def once() -> None:
        turn_end.clear()
        # Objects left by earlier tests would make the collector's full passes, and so the
        # later turns, slower for reasons that have nothing to do with this run.
        gc.collect()
        gc.freeze()
        try:
            start = time.perf_counter()
            r = run_variant(sc, sc.variants[0], out_dir=tmp_path, on_step=on_step)
            done.append(time.perf_counter() - start)
        finally:
            gc.unfreeze()
        assert r.error is None, r.error

    benchmark.pedantic(once, rounds=1, iterations=1)
    per_turn = {t: turn_end[t] - turn_end[t - 1] for t in range(2, 1001)}
    early = sum(per_turn[t] for t in range(101, 201)) / 100
    late = sum(per_turn[t] for t in range(901, 1001)) / 100
    ratio = late / early
    benchmark.extra_info.update(early_ms=early * 1e3, late_ms=late * 1e3, ratio=ratio)
    print(f"\n1000 turns in {done[-1]:.1f} s; turns 100-200: {early * 1e3:.2f} ms/turn, "
          f"turns 900-1000: {late * 1e3:.2f} ms/turn, ratio {ratio:.2f} (limit 1.5)")
    assert (tmp_path / "thousand-turns" / "default" / "seed0.jsonl").stat().st_size > 0
    assert ratio <= 1.5
