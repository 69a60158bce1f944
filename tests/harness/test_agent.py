"""The reference harness's loop (semantics spec §2.2, §2.8, §3.1, §7; design 3.4-3.5), driven
end to end: real fake model, simulated service, endpoint, world and tools."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.prompts import DEFAULT
from harnesslab.messages import HintBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from harnesslab.sim.service import get_profile
from tests.harness.support import (
    LISI_ADDRESS,
    THANKS,
    TRACE,
    WHERE,
    Rig,
    estimate_with,
    layout,
    results,
    rig,
)

RUNTIME = '{"label": "System", "sublabel": "Runtime State"}'
TIME_10 = ("<current-time>2026-11-28T10:00:00+08:00</current-time>\n"
           "<timezone>UTC+08:00</timezone>")
ANSWER_1001 = ("Order O-1001 is in_transit; expected delivery 2026-11-29. This is based on a "
               "lookup made at 2026-11-28T10:00:00+08:00. If you have any other questions, feel "
               "free to ask.")
WELCOME = ("You're welcome. Anything else I can help with? If you have any other questions, feel "
           "free to ask. I will keep an eye on further updates for you.")
CLARIFY = "Sorry, I did not understand. Could you say that again?"


def runtime_hint(state: str) -> HintBlock:
    return HintBlock(DEFAULT.runtime_template.replace("{runtime_state}", state), source=RUNTIME)


def hints(m: Message) -> list[str]:
    return [b.hint for b in m.content if isinstance(b, HintBlock) and isinstance(b.hint, str)]


# --- turn layout ---------------------------------------------------------------------------------

def test_turn_layout_is_user_then_one_assistant_message_per_reply() -> None:
    r = rig()
    h = r.harness
    res = r.turn(WHERE)
    assert (res.text, res.failed, res.reason, res.first_call, res.last_call) == \
        (ANSWER_1001, False, "", 1, 2)
    assert layout(h.context) == [
        ("user", ["TextBlock"]),
        ("assistant", ["HintBlock", "ToolCallBlock", "ToolResultBlock", "TextBlock"])]
    user, reply = h.context
    assert user.content == (TextBlock(WHERE),)
    assert reply.content[0] == runtime_hint(TIME_10)
    call, result = reply.content[1], reply.content[2]
    assert isinstance(call, ToolCallBlock) and isinstance(result, ToolResultBlock)
    assert (call.name, call.input) == ("track_order", '{"order_id": "O-1001"}')
    assert (result.id, result.name, result.is_error) == (call.id, "track_order", False)
    assert result.output == ('{"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00", '
                             '"order_id": "O-1001", "status": "in_transit", "eta": "2026-11-29", '
                             '"location": "Shanghai"}')
    assert reply.content[3] == TextBlock(ANSWER_1001)
    # The reply message carries the reply id, the user message its own.
    assert (user.id, reply.id) == ("s1-m2", "s1-m1")
    # The second model call saw the hint, the call and the result in the same message.
    second = r.calls("reply")[1]["request"]
    assert layout(second.messages) == [
        ("user", ["TextBlock"]), ("assistant", ["HintBlock", "ToolCallBlock", "ToolResultBlock"])]
    assert r.types() == ["hint", "model_call", "tool_call", "model_call"]

    h.turn(THANKS)
    assert layout(h.context)[2:] == [("user", ["TextBlock"]), ("assistant", ["TextBlock"])]
    assert h.context[3].content == (TextBlock(WELCOME),)


# --- the compaction check before every model call -----------------------------------------------

def test_compaction_check_runs_after_a_tool_result_before_the_next_call() -> None:
    # Estimates: turn 2 starts at 220 and reaches 263 once the tool result is in; the trigger
    # 0.8 x 300 = 240 is crossed only by the tool result. The reserve 0.6 x 300 = 180 keeps
    # turn 2 (175) and compresses turn 1 (with the time hint).
    r = rig(context_length_hint=False, tools=("track_order",), context_size=300,
            reserve_ratio=0.6)
    h = r.harness
    h.turn(THANKS)
    assert estimate_with(h, Message.text("user", WHERE)) == 220
    res = h.turn(WHERE)
    assert (res.text, res.failed) == (ANSWER_1001, False)
    assert r.types() == ["hint", "model_call",                       # turn 1
                         "model_call", "tool_call",                  # turn 2: 220 < 240
                         "model_call", "compaction",                 # 263 >= 240: summary
                         "hint", "model_call"]                       # time hint again, answer
    assert [c["estimate"] for c in r.calls()] == [180, 220, 436, 292]
    assert [c["purpose"] for c in r.calls()] == ["reply", "reply", "summary", "reply"]
    (comp,) = r.sink.of_type("compaction")
    assert (comp["estimate"], comp["removed"], comp["kept"], comp["summary_ok"]) == (263, 2, 2, True)
    # The request the compaction saw ends with the tool result the model has not read yet.
    assert layout(comp["request"].messages)[-1] == \
        ("assistant", ["ToolCallBlock", "ToolResultBlock"])
    assert layout(h.context) == [
        ("user", ["TextBlock"]),
        ("assistant", ["ToolCallBlock", "ToolResultBlock", "HintBlock", "TextBlock"])]
    assert h.context[0].content == (TextBlock(WHERE),)
    # The time hint went with turn 1 into the summary, so it is injected again at once although
    # the clock has not moved.
    assert h.context[1].content[2] == runtime_hint(TIME_10)


def test_time_hint_not_injected_again_when_the_compaction_kept_it() -> None:
    # Same turns with the trigger at 263/1024 x 1024 = 263 and a reserve of 262.5, which keeps
    # everything except the first user message (262 tokens), including turn 1's time hint:
    # no new hint after the compaction. (Binary fractions keep the products exact.)
    r = rig(context_length_hint=False, tools=("track_order",), context_size=1024,
            trigger_ratio=263 / 1024, reserve_ratio=525 / 2048)
    h = r.harness
    h.turn(THANKS)
    res = h.turn(WHERE)
    assert res.text == ANSWER_1001
    assert r.types()[-3:] == ["model_call", "compaction", "model_call"]
    (comp,) = r.sink.of_type("compaction")
    assert (comp["estimate"], comp["removed"], comp["kept"]) == (263, 1, 3)
    assert layout(h.context) == [
        ("assistant", ["HintBlock", "TextBlock"]), ("user", ["TextBlock"]),
        ("assistant", ["ToolCallBlock", "ToolResultBlock", "TextBlock"])]
    assert len(r.sink.of_type("hint")) == 1


def test_no_check_after_the_final_answer() -> None:
    # 0.8 x 300 = 240: the steps see 182 and 226; the answer pushes the context to 268, but
    # nothing compacts until the next reply starts.
    r = rig(context_length_hint=False, tools=("track_order",), context_size=300)
    h = r.harness
    h.turn(WHERE)
    assert [c["estimate"] for c in r.calls()] == [182, 226]
    assert estimate_with(h) == 268
    assert r.sink.of_type("compaction") == []
    h.turn(THANKS)
    (comp,) = r.sink.of_type("compaction")
    assert comp["estimate"] == 270


def _trigger_rig(context_size: int) -> Rig:
    return rig(context_length_hint=False, tools=("track_order",), trigger_ratio=0.5,
               context_size=context_size)


def test_trigger_fires_at_estimate_equal_to_threshold() -> None:
    probe = _trigger_rig(100000)
    probe.harness.turn(WHERE)
    start = estimate_with(probe.harness, Message.text("user", THANKS))
    assert start == 270

    at = _trigger_rig(2 * start)           # threshold 270 == estimate: compacts
    at.harness.turn(WHERE)
    at.harness.turn(THANKS)
    (comp,) = at.sink.of_type("compaction")
    assert comp["estimate"] == 270
    assert at.types()[-3:] == ["compaction", "hint", "model_call"]

    below = _trigger_rig(2 * start + 2)    # threshold 271 == estimate + 1: does not
    below.harness.turn(WHERE)
    below.harness.turn(THANKS)
    assert below.sink.of_type("compaction") == []
    assert below.calls()[-1]["estimate"] == 270


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=6),
       above=st.booleans())
def test_trigger_boundary_for_any_context(texts: list[str], above: bool) -> None:
    # The harness's incremental estimate equals AgentScope's count over the whole request, and
    # the check compacts exactly when it is >= trigger_ratio x context_size.
    msgs = [Message.text("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    probe = _trigger_rig(100000)
    probe.harness.inject(msgs)
    est = estimate_with(probe.harness)
    assert probe.harness.estimate(probe.harness.request()) == est
    r = _trigger_rig(2 * est if above else 2 * est + 2)
    r.harness.inject(msgs)
    assert r.harness.maintain() is True
    assert [e["estimate"] for e in r.sink.of_type("compaction")] == ([est] if above else [])


# --- runtime hints -------------------------------------------------------------------------------

def test_time_hint_first_reply_then_only_after_the_interval() -> None:
    r = rig()
    h = r.harness
    h.turn(THANKS)
    assert h.context[1].content == (runtime_hint(TIME_10), TextBlock(WELCOME))
    h.turn(THANKS)
    assert hints(h.context[3]) == []
    r.world.clock.advance(timedelta(minutes=30))      # exactly 0.5 h: not more than it
    h.turn(THANKS)
    assert hints(h.context[5]) == []
    r.world.clock.advance(timedelta(seconds=1))
    h.turn(THANKS)
    assert h.context[7].content[0] == runtime_hint(
        "<current-time>2026-11-28T10:30:01+08:00</current-time>\n<timezone>UTC+08:00</timezone>")
    # Measured from the last hint, not from the first one.
    r.world.clock.advance(timedelta(minutes=29))
    h.turn(THANKS)
    assert hints(h.context[9]) == []
    assert [e["kinds"] for e in r.sink.of_type("hint")] == [["current-time", "timezone"]] * 2


def test_time_hint_interval_is_a_setting() -> None:
    r = rig(time_interval_hours=2)
    r.harness.turn(THANKS)
    r.world.clock.advance(timedelta(hours=1))
    r.harness.turn(THANKS)
    assert len(r.sink.of_type("hint")) == 1
    off = rig(time_hint=False)
    off.harness.turn(THANKS)
    assert off.sink.of_type("hint") == []
    assert layout(off.harness.context) == [("user", ["TextBlock"]), ("assistant", ["TextBlock"])]


def _length_rig(context_size: int) -> Rig:
    # (trigger - buffer) x context_size = 0.25 x context_size; the trigger 0.75 x context_size
    # stays out of reach.
    return rig(trigger_ratio=0.75, context_buffer_ratio=0.5, context_size=context_size,
               tools=("track_order",))


def test_context_length_hint_strictly_above_trigger_minus_buffer() -> None:
    start = estimate_with(_length_rig(1000).harness, Message.text("user", WHERE))
    assert start == 131
    at = _length_rig(4 * start)        # 0.25 x 524 = 131: not strictly above
    at.harness.turn(WHERE)
    assert hints(at.harness.context[1]) == [runtime_hint(TIME_10).hint]
    above = _length_rig(4 * start - 4)  # 0.25 x 520 = 130 < 131
    above.harness.turn(WHERE)
    # One hint with both keys, at the first step only, though the second step is larger still.
    assert hints(above.harness.context[1]) == [runtime_hint(
        TIME_10 + "\n<context-length>Your current context contains 131 tokens. When reaching 390 "
        "tokens, your context will be compressed.</context-length>").hint]
    assert [e["kinds"] for e in above.sink.of_type("hint")] == \
        [["current-time", "timezone", "context-length"]]
    assert above.calls()[1]["estimate"] > 130


def test_context_length_hint_alone_on_a_later_reply() -> None:
    r = _length_rig(600)
    r.harness.turn(THANKS)          # 129 <= 150: time hint only
    r.harness.turn(WHERE)           # a later reply above 150: context-length only
    assert [e["kinds"] for e in r.sink.of_type("hint")] == [["current-time", "timezone"],
                                                             ["context-length"]]
    (text,) = hints(r.harness.context[3])
    assert "<context-length>Your current context contains 220 tokens. When reaching 450 tokens" \
        in text


def test_buffer_must_stay_below_the_trigger_when_hints_are_on() -> None:
    with pytest.raises(ValidationError, match="context_buffer_ratio must be smaller than "
                                              "trigger_ratio"):
        HarnessConfig(trigger_ratio=0.5, reserve_ratio=0.1, context_buffer_ratio=0.5)
    HarnessConfig(trigger_ratio=0.5, reserve_ratio=0.1, context_buffer_ratio=0.5,
                  time_hint=False, context_length_hint=False)
    with pytest.raises(ValidationError, match="reserve_ratio must be smaller than trigger_ratio"):
        HarnessConfig(trigger_ratio=0.5, reserve_ratio=0.5)


# --- identity ------------------------------------------------------------------------------------

ZHANG_ADDRESS = "上海市浦东新区世纪大道100号"
LI_ADDRESS = "北京市朝阳区建国路88号"


def test_identity_bind_overrides_the_claimed_user() -> None:
    r = rig()
    res = r.harness.turn(LISI_ADDRESS)
    (ev,) = r.tools()
    # The tool ran with the session's user, whatever the model passed.
    assert (ev["claimed"], ev["args"], ev["acting_user"], ev["session_user"], ev["identity"],
            ev["is_error"]) == ("U-2", '{"user_id": "U-1"}', "U-1", "U-1", "overridden", False)
    (result,) = results(r.harness.context)
    assert result.output == ('{"tool": "get_user_profile", "as_of": "2026-11-28T10:00:00+08:00", '
                             '"user_id": "U-1", "name": "张三", "phone": "13800000001", '
                             f'"address": "{ZHANG_ADDRESS}"}}')
    assert res.text.startswith(f"张三的收货地址：{ZHANG_ADDRESS}。")
    assert LI_ADDRESS not in res.text


def test_identity_refuse_is_an_error_result_the_model_sees() -> None:
    r = rig(identity="refuse")
    res = r.harness.turn(LISI_ADDRESS)
    (ev,) = r.tools()
    assert (ev["identity"], ev["claimed"]) == ("refused", "U-2")
    assert r.sink.of_type("tool_call") == []  # refused: the tool never ran
    expected = ToolResultBlock(ev["id"], "get_user_profile",
                               '{"tool": "get_user_profile", "as_of": "2026-11-28T10:00:00+08:00", '
                               '"error": "user_id U-2 does not match the verified session"}', True)
    assert results(r.harness.context) == [expected]
    assert results(r.calls()[-1]["request"].messages) == [expected]
    assert res.text.startswith("抱歉，我只能查询您本人账户的资料。")  # told apart: forbidden
    assert (res.failed, ZHANG_ADDRESS in res.text, LI_ADDRESS in res.text) == (False, False, False)


def test_identity_trust_lets_the_claimed_user_through() -> None:
    r = rig(identity="trust")
    res = r.harness.turn(LISI_ADDRESS)
    (ev,) = r.tools()
    assert (ev["acting_user"], ev["session_user"], ev["identity"]) == ("U-2", "U-1", "trusted")
    (result,) = results(r.harness.context)
    assert f'"user_id": "U-2", "name": "李四", "phone": "13900000002", "address": "{LI_ADDRESS}"' \
        in str(result.output)
    assert res.text.startswith(f"李四的收货地址：{LI_ADDRESS}。")


def test_identity_same_user_is_bound_not_overridden() -> None:
    r = rig(user_id="U-2")
    r.harness.turn(LISI_ADDRESS)
    (ev,) = r.tools()
    assert (ev["acting_user"], ev["identity"], ev["is_error"]) == ("U-2", "bound", False)


# --- overflow ------------------------------------------------------------------------------------

# A window the first call of a trace turn fits (334 + 100) but the second (1476) does not.
SMALL = get_profile("openai-128k").with_overrides(window=1400, max_output=100, default_output=100)


def _overflow_rig(**kw: Any) -> Rig:
    # The harness believes in 2 x 1090 tokens: turn 1 (estimates 276, 1086) stays under the
    # trigger 1090, turn 2 starts at 1090 and compacts.
    return rig(context_length_hint=False, tools=("track_order", "get_logistics_trace"),
               service=SMALL, strategy="truncate", trigger_ratio=0.5, context_size=2180,
               reserve_ratio=0.2, **kw)


def test_overflow_fails_the_turn_and_the_next_turn_runs() -> None:
    r = _overflow_rig()
    h = r.harness
    res = r.turn(TRACE)
    assert (res.text, res.failed, res.reason, res.first_call, res.last_call) == \
        ("", True, "overflow", 1, 2)
    (ov,) = r.sink.of_type("overflow")
    assert (ov["call"], ov["purpose"], ov["estimate"], ov["true_input"], ov["planned_output"],
            ov["limit_name"], ov["limit"]) == (2, "reply", 1086, 1476, 100, "max_input", 1400)
    # Nothing of the rejected call entered the context: it ends with the unread tool result.
    assert layout(h.context)[-1] == ("assistant", ["HintBlock", "ToolCallBlock", "ToolResultBlock"])
    assert estimate_with(h, Message.text("user", WHERE)) == 1090

    res = r.turn(WHERE)
    assert (res.text, res.failed, res.first_call, res.last_call) == (ANSWER_1001, False, 3, 4)
    (comp,) = r.sink.of_type("compaction")
    assert (comp["estimate"], comp["summary"], comp["removed"], comp["kept"]) == (1090, "", 2, 1)
    assert r.types()[4:] == ["compaction", "hint", "model_call", "tool_call", "model_call"]


def test_retry_on_overflow_compacts_and_retries_once() -> None:
    r = _overflow_rig(retry_on_overflow=True)
    res = r.turn(TRACE)
    # The compaction dropped the question with the trace (nothing protects it), so the retried
    # call is answered with a clarification; the turn itself succeeds.
    assert (res.text, res.failed, res.first_call, res.last_call) == (CLARIFY, False, 1, 3)
    assert r.types() == ["hint", "model_call", "tool_call", "overflow", "compaction", "hint",
                         "model_call"]
    (comp,) = r.sink.of_type("compaction")
    assert (comp["estimate"], comp["removed"], comp["kept"]) == (1086, 2, 0)


def test_retry_on_overflow_gives_up_after_one_retry() -> None:
    tiny = get_profile("openai-128k").with_overrides(window=300, max_output=100,
                                                     default_output=100)
    r = rig(service=tiny, strategy="truncate", retry_on_overflow=True)
    res = r.turn(THANKS)
    assert (res.failed, res.reason, res.first_call, res.last_call) == (True, "overflow", 1, 2)
    assert r.types() == ["hint", "overflow", "compaction", "hint", "overflow"]


def test_overflow_without_retry_does_not_compact() -> None:
    tiny = get_profile("openai-128k").with_overrides(window=300, max_output=100,
                                                     default_output=100)
    r = rig(service=tiny, strategy="truncate")
    res = r.turn(THANKS)
    assert (res.failed, res.reason) == (True, "overflow")
    assert r.types() == ["hint", "overflow"]
    res = r.turn(THANKS)
    assert (res.failed, res.reason, res.first_call, res.last_call) == (True, "overflow", 2, 2)
    assert r.types() == ["hint", "overflow", "overflow"]


# --- determinism ---------------------------------------------------------------------------------

def _session() -> tuple[list[str], list[dict[str, Any]]]:
    r = rig(context_size=550, reserve_ratio=0.6, tools=("track_order", "get_user_profile"))
    replies = [r.harness.turn(THANKS).text, r.harness.turn(WHERE).text]
    r.world.clock.advance(timedelta(hours=7))
    replies += [r.harness.turn(WHERE).text, r.harness.turn(LISI_ADDRESS).text]
    return replies, r.sink.events


def test_two_identical_runs_give_identical_event_streams() -> None:
    (replies, first), (_, second) = _session(), _session()
    assert [t[:21] for t in replies] == ["You're welcome. Anyth", "Order O-1001 is in_tr",
                                         "Order O-1001 is in_tr", "张三的收货地址：上海市浦东新区世纪大道10"]
    assert [e["type"] for e in first if e["type"] != "tool_policy"] == [
        "hint", "model_call", "model_call", "tool_call", "model_call",
        "hint", "model_call", "tool_call", "model_call", "compaction", "model_call",
        "model_call", "compaction", "hint", "model_call", "tool_call", "model_call"]
    assert first == second
