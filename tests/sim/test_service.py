from __future__ import annotations

import pytest

from harnesslab.errors import ContextOverflowError, InputError
from harnesslab.messages import (
    DataBlock,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    tools_json,
)
from harnesslab.sim.service import PROFILES, ServiceProfile, SimulatedService, get_profile
from harnesslab.tokens import get_tokenizer
from tests.markers import needs_tokenizers_extra

REF = "帮我查订单 O-1001 为什么还没到，回答简单一点。"
SCHEMA = ToolSchema.from_dict({"type": "function", "function": {
    "name": "track_order", "description": "查询订单物流", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}})


def test_billing_formula_by_hand() -> None:
    svc = SimulatedService("openai-128k")
    t = get_tokenizer("o200k_base").count
    img = DataBlock("image/png", "AAAA")
    r = Request(
        system="你是客服助手。", summary="之前：用户问过 O-1001。",
        messages=(
            Message.text("user", REF, name="zhang"),
            Message("assistant", (ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}'),
                                  ToolResultBlock("c1", "track_order", (TextBlock("在途"), img)),
                                  TextBlock("明天到。"))),
        ),
        tools=(SCHEMA,), output_budget=100)
    expected = (3                                          # per request
                + 3 + t("system") + t("你是客服助手。")
                + 3 + t("user") + t("之前：用户问过 O-1001。")
                + 3 + t("user") + 1 + t("zhang") + t(REF)
                + 3 + t("assistant") + t("track_order") + t('{"order_id": "O-1001"}')
                + t("在途") + 765 + t("明天到。")
                + t(tools_json((SCHEMA,))))
    assert svc.count_input(r) == expected
    assert svc.admit(r).input_tokens == expected


def _request(n_chars: int, budget: int | None = None) -> Request:
    return Request(system="", messages=(Message.text("user", "a " * n_chars),),
                   output_budget=budget)


def test_window_is_input_plus_planned_output() -> None:
    p = PROFILES["openai-128k"].with_overrides(window=1000, max_output=500, default_output=200)
    svc = SimulatedService(p)
    ok = _request(700, budget=200)
    n = svc.count_input(ok)
    assert svc.admit(ok).input_tokens == n
    assert 1000 - n + 1 <= 500  # the budget alone is within max_output: only the sum overflows
    with pytest.raises(ContextOverflowError) as e:
        svc.admit(_request(700, budget=1000 - n + 1))
    d = e.value.detail
    assert d.limit_name == "window" and d.limit == 1000
    assert d.true_input + d.planned_output > 1000
    assert "exceeds the window of 1000" in str(e.value)


def test_exactly_at_the_window_is_admitted() -> None:
    p = PROFILES["openai-128k"].with_overrides(window=1000, max_output=900)
    svc = SimulatedService(p)
    r = _request(300)
    n = svc.count_input(r)
    assert svc.admit(_request(300, budget=1000 - n)).planned_output == 1000 - n
    with pytest.raises(ContextOverflowError):
        svc.admit(_request(300, budget=1000 - n + 1))


def test_separate_input_and_output_limits() -> None:
    p = ServiceProfile(name="tight", window=10000, max_input=50, max_output=100,
                       default_output=10, tokenizer="o200k_base", per_message=3,
                       per_request=3, data_block=85)
    svc = SimulatedService(p)
    with pytest.raises(ContextOverflowError, match="exceeds the max input of 50") as e:
        svc.admit(_request(200))
    assert e.value.detail.limit_name == "max_input"
    with pytest.raises(ContextOverflowError, match="exceeds the max output of 100") as e:
        svc.admit(_request(1, budget=101))
    assert e.value.detail.planned_output == 101


def test_default_output_is_used_when_the_request_states_none() -> None:
    svc = SimulatedService("openai-cl100k-128k")
    assert svc.admit(_request(1)).planned_output == PROFILES["openai-cl100k-128k"].default_output


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=needs_tokenizers_extra) if PROFILES[n].tokenizer in
    ("qwen2.5", "deepseek-v4") else n for n in sorted(PROFILES)])
def test_every_profile_loads_its_true_tokenizer(name: str) -> None:
    svc = SimulatedService(name)
    assert svc.count_input(_request(1)) > 0


def test_profiles_match_the_documented_windows() -> None:
    assert {n: p.window for n, p in PROFILES.items()} == {
        "openai-128k": 128000, "openai-cl100k-128k": 128000, "qwen-131k": 131072,
        "deepseek-64k": 65536}


def test_bad_profile_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        PROFILES["openai-128k"].with_overrides(tokenizer="gpt5")
    with pytest.raises(ValueError, match="must not exceed the window"):
        PROFILES["openai-128k"].with_overrides(max_output=200000)
    with pytest.raises(InputError, match="unknown service profile 'gpt-9'"):
        get_profile("gpt-9")
