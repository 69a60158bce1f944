"""The long conversations the benchmarks and the long-run tests share, built without
importing pytest (a probe process measuring its own memory imports only this)."""

from __future__ import annotations

from harnesslab.scenario.schema import Scenario

CHAT = ["你们周末也上班吗？", "最近快递是不是都挺慢的？", "你们的衣服质量还不错。",
        "包装可以再结实一点吗？"]


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
