"""Turn-by-turn counting scales linearly: counting a conversation after every message costs
O(messages), because each message is measured once per tokenizer and prefix sums are kept.

    pytest -m benchmark tests/benchmarks/test_counting_bench.py
"""

from __future__ import annotations

import pytest

from harnesslab.messages import History, Message, Request, ToolSchema
from harnesslab.tokens import RequestCounter, TokenCache, get_tokenizer, make_rule

from .conftest import best_of

LINES = ["您好，我想查一下订单 O-{n} 的物流，为什么还没到？",
         "I ordered a jacket last week (order O-{n}) and it still says in transit.",
         "已为您查询：订单 O-{n} 目前在上海转运中心，预计明天送达，请耐心等待。",
         "Thanks! Could you also tell me whether the return window is 7 or 30 days?"]
TOOLS = (ToolSchema.from_dict({"type": "function", "function": {
    "name": "track_order", "description": "查询订单物流",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}),)


def requests(n: int) -> list[Request]:
    # A harness appends to its History, which remembers what it extends (as the reference
    # harness's context does).
    history = History.of()
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        history = history.appended(Message.text(role, LINES[i % 4].format(n=1000 + i) + f" #{i}"))
        out.append(Request(system="你是电商客服助手。", messages=history, tools=TOOLS))
    return out


def count_all(estimator: str, reqs: list[Request]) -> int:
    counter = RequestCounter(make_rule(estimator, TokenCache()))
    total = 0
    for r in reqs:
        total += counter.count(r)
    return total


@pytest.mark.parametrize("estimator", ["bytes4", "o200k_base"])
def test_turn_by_turn_counting_is_linear(benchmark, estimator: str) -> None:  # type: ignore[no-untyped-def]
    get_tokenizer("o200k_base")  # loading is not counting
    small, large = requests(500), requests(2000)
    t_small = best_of(lambda: count_all(estimator, small))
    t_large = best_of(lambda: count_all(estimator, large))
    ratio = t_large / t_small
    benchmark.extra_info.update(t500=t_small, t2000=t_large, ratio=ratio)
    benchmark.pedantic(count_all, args=(estimator, large), rounds=3, iterations=1)
    print(f"\n{estimator}: 500 msgs {t_small * 1e3:.1f} ms, 2000 msgs {t_large * 1e3:.1f} ms, "
          f"ratio {ratio:.2f} (linear = 4.0, limit 4.5)")
    assert ratio <= 4.5
