"""Turn-by-turn counting scales linearly: counting a conversation after every message costs
O(messages), because each message is measured once per tokenizer and prefix sums are kept.
Linear makes 2,000 messages cost 4 times 500; quadratic, 16. The limit, 8, is between.

    pytest -m benchmark tests/benchmarks/test_counting_bench.py -s
"""

from __future__ import annotations

import unicodedata

import pytest

from harnesslab.messages import History, Message, Request, ToolSchema
from harnesslab.tokens import RequestCounter, TokenCache, get_tokenizer, make_rule
from tests.markers import needs_tokenizers_extra

from .conftest import cpu_min, cpu_min_chunked, report

LINES = ["您好，我想查一下订单 O-{n} 的物流，为什么还没到？",
         "I ordered a jacket last week (order O-{n}) and it still says in transit.",
         "已为您查询：订单 O-{n} 目前在上海转运中心，预计明天送达，请耐心等待。",
         "Thanks! Could you also tell me whether the return window is 7 or 30 days?"]
TOOLS = (ToolSchema.from_dict({"type": "function", "function": {
    "name": "track_order", "description": "查询订单物流",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}),)
LIMIT = 8.0  # 2,000 / 500 messages: linear 4, quadratic 16


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
    t_small, t_large = cpu_min(lambda: count_all(estimator, small),
                               lambda: count_all(estimator, large), repeats=40)
    ratio = t_large / t_small
    report(benchmark, f"{estimator}: 500 msgs {t_small * 1e3:.2f} ms, 2000 msgs "
           f"{t_large * 1e3:.2f} ms CPU, ratio {ratio:.2f} (linear 4, quadratic 16, limit {LIMIT})",
           t500_s=t_small, t2000_s=t_large, ratio=ratio, limit=LIMIT)
    benchmark.pedantic(count_all, args=(estimator, large), rounds=3, iterations=1)
    assert ratio <= LIMIT


QWEN_LIMIT = 1.1  # qwen2.5 count / raw encode (the per-text NFC step cost 1.27 before)


@needs_tokenizers_extra
def test_qwen_count_close_to_raw_encode(benchmark) -> None:  # type: ignore[no-untyped-def]
    """Qwen normalises to NFC before encoding; text already NFC (nearly all) skips it. The
    floor is tiktoken's own encode of the same texts; every text distinct, so no cache helps.
    Timed in 30 pieces of 200 texts (the quick check costs about 1% of the encode, so a
    whole-run minimum read 1.13 once under a neighbour's load where pieces read 1.01-1.04)."""
    from .test_tokens_bench import _Writer

    qwen = get_tokenizer("qwen2.5")
    w = _Writer(7)
    texts = [w.text(10, 400) for _ in range(6000)]
    raw = qwen._encode  # type: ignore[attr-defined]

    piece = 200
    chunks = len(texts) // piece

    def floor(i: int) -> None:
        for t in texts[i * piece:(i + 1) * piece]:
            len(raw(t))

    def counted(i: int) -> None:
        for t in texts[i * piece:(i + 1) * piece]:
            qwen.count(t)

    def per_character(i: int) -> None:
        # The control: a count that normalises each character in Python (a step per character
        # instead of one C call per text) must read over the limit in the same measurement.
        for t in texts[i * piece:(i + 1) * piece]:
            len(raw("".join([unicodedata.normalize("NFC", ch) for ch in t])))

    def count_every_text() -> None:
        for t in texts:
            qwen.count(t)

    t_floor, t_count, t_control = cpu_min_chunked(floor, counted, per_character,
                                                  chunks=chunks, repeats=7)
    ratio, control = t_count / t_floor, t_control / t_floor
    report(benchmark, f"qwen2.5 on {len(texts)} mixed zh/en texts: raw encode "
           f"{t_floor * 1e3:.1f} ms, count {t_count * 1e3:.1f} ms CPU, ratio {ratio:.3f} "
           f"(limit {QWEN_LIMIT}; control, NFC per character in Python, {control:.2f})",
           floor_s=t_floor, count_s=t_count, ratio=ratio, control=control, limit=QWEN_LIMIT)
    benchmark.pedantic(count_every_text, rounds=1, iterations=1)
    assert ratio <= QWEN_LIMIT < control
