from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from harnesslab.sim.intents import (
    AGENTSCOPE_FIELDS,
    CONSTRAINT_PHRASES,
    FREEFORM_SUMMARY_MARKER,
    HANDOFF_SUMMARY_MARKER,
    REF,
    SEED_FIELDS,
    SUMMARY_TOOL,
    TAG_RE,
    Act,
    Claim,
    ClaimKind,
    Constraint,
    Intent,
    current_time_text,
)
from harnesslab.sim.model import BRIEF_MAX_CHARS, LONG_MIN_CHARS, FakeModel, ModelReply, draw, serialize
from harnesslab.sim.summarizer import SummarizerProfile, swap_id
from harnesslab.sim.tools import TOOLS

TZ = timezone(timedelta(hours=8))
T10 = datetime(2026, 11, 28, 10, 0, tzinfo=TZ)
AS_OF = "2026-11-28T10:00:00+08:00"

ASK_1001 = "帮我查订单 O-1001 为什么还没到，回答简单一点。"
ASK_1001_LONG = "帮我查订单 O-1001 现在到哪了？"
ASK_1002 = "O-1002 呢？"
WAIT = "那我明天还要等吗？"
WHEN_EN = "When will O-1001 arrive?"
I_AM_LISI = "我是李四。"
ADDRESS = "我的收货地址是什么？"
RETURNS = "怎么退货？"
TRACE = "把 O-1001 的完整物流轨迹给我看看。"
DETAILED = "详细说说。"
THANKS = "谢谢！"

LEXICON: dict[str, Intent] = {
    ASK_1001: Intent(Act.ORDER_STATUS, order="O-1001", constraints=(Constraint.BREVITY,)),
    ASK_1001_LONG: Intent(Act.ORDER_STATUS, order="O-1001"),
    ASK_1002: Intent(Act.ORDER_STATUS, order="O-1002"),
    WAIT: Intent(Act.ASK_WAIT, order=REF),
    WHEN_EN: Intent(Act.ASK_ETA, order="O-1001"),
    I_AM_LISI: Intent(Act.CHITCHAT, claims=(Claim(ClaimKind.IDENTITY, "U-2"),)),
    ADDRESS: Intent(Act.ASK_ADDRESS),
    RETURNS: Intent(Act.ASK_POLICY, topic="return_policy"),
    TRACE: Intent(Act.ASK_TRACE, order="O-1001"),
    DETAILED: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.DETAILED,)),
    THANKS: Intent(Act.CHITCHAT),
}
MAX_AGES: dict[str, timedelta | None] = {"track_order": timedelta(hours=6),
                                         "get_user_profile": timedelta(days=30), "search_kb": None}
SYSTEM = "你是客服助手。"


def model(**kw: Any) -> FakeModel:
    kw.setdefault("max_ages", MAX_AGES)
    return FakeModel(LEXICON, **kw)


def user(text: str) -> Message:
    return Message.text("user", text)


def said(text: str) -> Message:
    return Message.text("assistant", text)


def clock(at: datetime) -> Message:
    return Message("assistant", (HintBlock(current_time_text(at)),))


def track(order: str = "O-1001", *, as_of: str | None = AS_OF, status: str = "in_transit",
          eta: str | None = "2026-11-29", call_id: str = "c1") -> Message:
    body: dict[str, Any] = {"tool": "track_order"}
    if as_of is not None:
        body["as_of"] = as_of
    body.update(order_id=order, status=status, eta=eta, location="上海")
    args = json.dumps({"order_id": order})
    return Message("assistant", (ToolCallBlock(call_id, "track_order", args),
                                 ToolResultBlock(call_id, "track_order",
                                                 json.dumps(body, ensure_ascii=False))))


# Every world tool, as a harness offers them (the model calls only what a request offers).
ALL_TOOLS = tuple(t.schema for t in TOOLS.values())


def req(*messages: Message, summary: str = "",
        tools: tuple[ToolSchema, ...] = ALL_TOOLS) -> Request:
    return Request(SYSTEM, messages, summary=summary, tools=tools)


def text_of(r: ModelReply) -> str:
    (b,) = r.blocks
    assert isinstance(b, TextBlock)
    return b.text


def call_of(r: ModelReply) -> ToolCallBlock:
    (b,) = r.blocks
    assert isinstance(b, ToolCallBlock)
    return b


# --- serialisation and draws -------------------------------------------------------------------

def test_serialize_joins_system_summary_and_block_texts() -> None:
    r = Request("SYS", (
        Message("user", (TextBlock("hi"), DataBlock("image/png", "AAAA"))),
        Message("assistant", (ThinkingBlock("hmm"), HintBlock((TextBlock("h1"), TextBlock("h2"))),
                              ToolCallBlock("c", "track_order", '{"order_id": "O-1001"}'),
                              ToolResultBlock("c", "track_order", (TextBlock("r1"),
                                                                   DataBlock("image/png", "B")))),
                )), summary="SUM")
    assert serialize(r) == 'SYS\nSUM\nhi\nhmm\nh1\nh2\ntrack_order({"order_id": "O-1001"})\nr1'
    # An empty summary still holds its place, so positions do not depend on sending one.
    assert serialize(Request("S", (user("x"),))) == "S\n\nx"


def test_draw_is_a_seeded_hash_in_unit_interval() -> None:
    assert draw(0, "a") == 0.9342673977842338
    assert draw(7, "drop", "constraint", "[constraint:brevity]") == 0.6230706663618943
    assert draw(1, "a") != draw(0, "a")
    assert draw(0, "a", "b") != draw(0, "ab")


@pytest.mark.parametrize(("given_id", "similar"), [
    ("O-1001", "O-1010"), ("O-1011", "O-1012"), ("O-1019", "O-1091"), ("U-12", "U-21"),
    ("U-1", "U-2"), ("U-9", "U-0")])
def test_swap_id(given_id: str, similar: str) -> None:
    assert swap_id(given_id) == similar


# --- current turn and @ref -------------------------------------------------------------------

def test_utterance_missing_asks_to_clarify() -> None:
    said_otherwise = ASK_1001.replace("O-1001", "O-1001 ")  # not the utterance any more
    r = model().reply(req(user(said_otherwise)))
    assert text_of(r) == "抱歉，我没有理解您的意思，能再说一遍吗？"
    assert r.annotations["kind"] == "clarify"
    assert r.annotations["reason"] == "utterance_not_found"
    assert r.annotations["utterance"] == said_otherwise


def test_utterance_inside_a_decorated_message_is_read() -> None:
    r = model().reply(req(user(ASK_1001 + " ")))  # a trailing space no longer hides it
    assert r.annotations["utterance"] == ASK_1001
    assert r.annotations["reason"] == "no_fact"


def test_no_user_message_asks_to_clarify() -> None:
    r = model().reply(req(said("hello")))
    assert r.annotations["reason"] == "utterance_not_found"
    assert r.annotations["utterance"] is None


def test_ref_picks_the_latest_visible_id() -> None:
    m = model()
    r = m.reply(req(user(ASK_1001_LONG), track("O-1001"), user(ASK_1002),
                    track("O-1002", call_id="c2"), user(WAIT)))
    assert r.annotations["resolved"] == {"order": "O-1002"}
    assert "O-1002" in text_of(r)
    # The same ids in the other order resolve the other way.
    r = m.reply(req(user(ASK_1002), track("O-1002", call_id="c2"), user(ASK_1001_LONG),
                    track("O-1001"), user(WAIT)))
    assert r.annotations["resolved"] == {"order": "O-1001"}


def test_ref_counts_ids_wherever_the_harness_put_them() -> None:
    # A memory injection after the question changes the referent: measured, not a bug.
    r = model().reply(req(user(ASK_1001_LONG), track("O-1001"), user(WAIT),
                          Message("assistant", (HintBlock("memory: O-1002"),))))
    assert r.annotations["resolved"] == {"order": "O-1002"}
    assert call_of(r).input == '{"order_id": "O-1002"}'
    # ... and so does the summary, which precedes all messages.
    r = model().reply(req(user(WAIT), summary="用户问过 O-1003"))
    assert r.annotations["resolved"] == {"order": "O-1003"}


def test_unresolved_ref_asks_which_order() -> None:
    r = model().reply(req(user(THANKS), said("不客气"), user(WAIT)))
    assert text_of(r) == "请问您指的是哪个订单？"
    assert r.annotations["kind"] == "clarify"
    assert r.annotations["reason"] == "unresolved_ref"
    assert r.annotations["act"] == "ask_wait"


def test_tool_schemas_are_not_read() -> None:
    # The business tools' schemas say "e.g. O-1001"; that is not a visible order.
    schema = ToolSchema.from_dict({"type": "function", "function": {
        "name": "track_order", "description": "e.g. O-1001", "parameters": {}}})
    r = model().reply(req(user(WAIT), tools=(schema,)))
    assert r.annotations["reason"] == "unresolved_ref"


# --- facts, staleness, tool calls --------------------------------------------------------------

def test_missing_fact_gives_a_tool_call_with_a_content_hash_id() -> None:
    r0 = req(user(ASK_1001), clock(T10))
    r = model().reply(r0)
    c = call_of(r)
    assert (c.name, c.input) == ("track_order", '{"order_id": "O-1001"}')
    digest = hashlib.sha256((serialize(r0) + "track_order" + c.input).encode()).hexdigest()
    assert c.id == "call_" + digest[:12]
    assert r.annotations == {
        "kind": "tool_call", "utterance": ASK_1001, "act": "order_status",
        "resolved": {"order": "O-1001"}, "constraints": ["brevity"], "now": AS_OF,
        "cited": None, "reason": "no_fact", "stale": None}


def test_result_of_this_turn_is_answered_with() -> None:
    r0 = req(user(ASK_1001), clock(T10), track())
    r = model().reply(r0)
    assert text_of(r) == "订单 O-1001 当前状态：in_transit，预计 2026-11-29 送达。"
    assert r.annotations["reason"] == "fact_after_turn"
    position = serialize(r0).index('{"tool": "track_order"')  # where the result starts
    assert r.annotations["cited"] == {"tool": "track_order", "key": "O-1001", "as_of": AS_OF,
                                      "position": position, "error": False}


def test_result_of_this_turn_is_used_even_when_stale() -> None:
    # Otherwise a harness whose clock hint runs ahead would loop on the same call.
    r = model().reply(req(user(ASK_1001), clock(T10 + timedelta(hours=7)), track()))
    assert r.annotations["kind"] == "answer"
    assert r.annotations["reason"] == "fact_after_turn"


@pytest.mark.parametrize(("later", "kind", "reason"), [
    (timedelta(hours=7), "tool_call", "stale_fact"),
    (timedelta(hours=6), "answer", "fresh_fact"),     # age == max_age is still fresh
    (timedelta(hours=5), "answer", "fresh_fact"),
])
def test_staleness_with_now_known(later: timedelta, kind: str, reason: str) -> None:
    r = model().reply(req(user(ASK_1001_LONG), track(), said("在途。"), user(WAIT),
                          clock(T10 + later)))
    assert (r.annotations["kind"], r.annotations["reason"]) == (kind, reason)


def test_stale_fact_triggers_a_call_that_names_it() -> None:
    r0 = req(user(ASK_1001_LONG), track(), user(WAIT), clock(T10 + timedelta(hours=7)))
    r = model().reply(r0)
    assert call_of(r).input == '{"order_id": "O-1001"}'
    assert r.annotations["stale"] == {"tool": "track_order", "key": "O-1001", "as_of": AS_OF,
                                      "position": serialize(r0).index('{"tool"'), "error": False}


def test_now_unknown_treats_every_fact_as_current() -> None:
    r = model().reply(req(user(ASK_1001_LONG), track(as_of="2020-01-01T00:00:00+08:00"), user(WAIT)))
    assert r.annotations["kind"] == "answer"
    assert r.annotations["now"] is None


def test_missing_as_of_is_stale_when_now_is_known() -> None:
    r = model().reply(req(user(ASK_1001_LONG), track(as_of=None), user(WAIT), clock(T10)))
    assert r.annotations["reason"] == "stale_fact"
    r = model().reply(req(user(ASK_1001_LONG), track(as_of=None), user(WAIT)))
    assert r.annotations["reason"] == "fresh_fact"


def test_tool_without_max_age_is_never_stale() -> None:
    r = model(max_ages={}).reply(req(user(ASK_1001_LONG), track(), user(WAIT),
                                     clock(T10 + timedelta(days=9))))
    assert r.annotations["reason"] == "fresh_fact"


def test_now_is_the_latest_parseable_current_time() -> None:
    r = model().reply(req(user(ASK_1001_LONG), track(), user(WAIT), clock(T10 + timedelta(hours=9)),
                          Message("assistant", (HintBlock("<current-time>soon</current-time>"),)),
                          clock(T10 + timedelta(hours=1))))
    assert r.annotations["now"] == "2026-11-28T11:00:00+08:00"
    assert r.annotations["kind"] == "answer"


def error_result(order: str = "O-1001") -> Message:
    body = {"tool": "track_order", "as_of": AS_OF, "error": f"order {order} does not belong to the "
            "acting user"}
    return Message("assistant", (ToolCallBlock("c9", "track_order", json.dumps({"order_id": order})),
                                 ToolResultBlock("c9", "track_order", json.dumps(body),
                                                 is_error=True)))


def test_error_result_gives_a_could_not_check_answer_without_a_status() -> None:
    r = model().reply(req(user(ASK_1001_LONG), clock(T10), error_result()))
    text = text_of(r)
    # "does not belong to the acting user": the order is not the user's, not a passing outage
    assert text.startswith("抱歉，订单 O-1001 不在您的账户下，我无法查询。")
    assert r.annotations["unable"] == "forbidden"
    assert len(text) >= LONG_MIN_CHARS
    assert "状态" not in text and "in_transit" not in text
    assert r.annotations["cited"]["error"] is True


def test_an_earlier_error_does_not_stop_a_new_turn_from_asking() -> None:
    r = model().reply(req(user(ASK_1001_LONG), error_result(), said("抱歉。"), user(WAIT)))
    assert r.annotations["reason"] == "no_fact"


def test_truncated_result_is_read_by_its_leading_pairs() -> None:
    events = [{"at": f"2026-11-27T{h:02d}:00", "scan": f"hub #{h}", "note": "n"} for h in range(10)]
    full = json.dumps({"tool": "get_logistics_trace", "as_of": AS_OF, "order_id": "O-1001",
                       "status": "in_transit", "events": events})
    cut = full[:400] + "\n...[truncated]"
    msg = Message("assistant", (ToolCallBlock("t", "get_logistics_trace", '{"order_id": "O-1001"}'),
                                ToolResultBlock("t", "get_logistics_trace", cut)))
    r = model().reply(req(user(TRACE), msg))
    # Five events have begun before the cut (the fifth is cut in half): at least five, since
    # the rest was cut away.
    assert text_of(r).startswith("订单 O-1001 的物流结果被截断，我只看到其中至少 5 条记录，"
                                 "当前状态：in_transit。")
    assert r.annotations["cited"]["as_of"] == AS_OF
    r = model().reply(req(user(TRACE), Message("assistant", (msg.content[0], ToolResultBlock(
        "t", "get_logistics_trace", full)))))
    assert text_of(r).startswith("订单 O-1001 共有 10 条物流记录")


def test_fact_tags_are_facts_too() -> None:
    tag = f"[fact:track_order order_id=O-1001 status=delayed eta=2026-11-30 as_of={AS_OF}]"
    r = model().reply(req(user(WAIT), clock(T10 + timedelta(hours=1)), summary=tag))
    assert text_of(r).startswith("要等，订单 O-1001 预计 2026-11-30 送达（delayed）。")
    assert r.annotations["cited"] == {"tool": "track_order", "key": "O-1001", "as_of": AS_OF,
                                      "position": len(SYSTEM) + 1, "error": False}  # the summary
    # A stale tag is re-queried even when placed after the question: only a tool result
    # answers this turn's own call.
    r = model().reply(req(user(WAIT), Message("assistant", (HintBlock(tag),)),
                          clock(T10 + timedelta(hours=8))))
    assert r.annotations["reason"] == "stale_fact"


@pytest.mark.parametrize(("status", "eta", "expected"), [
    ("delayed", "2026-11-30", "要等，订单 O-1001 预计 2026-11-30 送达（delayed）。"),
    ("in_transit", "2026-11-29", "订单 O-1001 明天就能到（预计 2026-11-29，in_transit）。"),
    ("delivered", "2026-11-28", "订单 O-1001 已签收，不用再等了。"),
])
def test_ask_wait_compares_the_eta_with_tomorrow(status: str, eta: str, expected: str) -> None:
    r = model().reply(req(user(ASK_1001), track(status=status, eta=eta), user(WAIT), clock(T10)))
    assert text_of(r) == expected


def test_english_question_gets_an_english_answer() -> None:
    r = model().reply(req(user(WHEN_EN), track()))
    assert text_of(r).startswith("Order O-1001 should arrive on 2026-11-29 (in_transit).")


def test_language_constraint_overrides_the_utterance() -> None:
    r = model().reply(req(Message.text("system", "Please answer in English."), user(ASK_1001), track()))
    assert text_of(r) == "Order O-1001 is in_transit; expected delivery 2026-11-29."


# --- constraints and lengths -------------------------------------------------------------------

def test_brevity_caps_length_and_its_absence_pads() -> None:
    brief = text_of(model().reply(req(user(ASK_1001), track())))
    long = text_of(model().reply(req(user(ASK_1001_LONG), track())))
    assert len(brief) <= BRIEF_MAX_CHARS
    assert len(long) >= LONG_MIN_CHARS
    assert long.startswith("订单 O-1001 当前状态：in_transit，预计 2026-11-29 送达。"
                           f"以上信息来自 {AS_OF} 的查询结果。")


def test_brevity_from_tag_phrase_or_extra_phrase() -> None:
    by_tag = model().reply(req(user(ASK_1001_LONG), track(), summary="[constraint:brevity]"))
    assert by_tag.annotations["constraints"] == ["brevity"]
    by_phrase = model().reply(req(said("OK, I will KEEP IT SHORT."), user(ASK_1001_LONG), track()))
    assert by_phrase.annotations["constraints"] == ["brevity"]
    extra = FakeModel(LEXICON, phrases={Constraint.BREVITY: ["少说点"]})
    by_extra = extra.reply(req(said("少说点"), user(ASK_1001_LONG), track()))
    assert by_extra.annotations["constraints"] == ["brevity"]
    for r in (by_tag, by_phrase, by_extra):
        assert len(text_of(r)) <= BRIEF_MAX_CHARS


def test_later_conflicting_constraint_wins() -> None:
    r = model().reply(req(user(ASK_1001), track(), user(DETAILED), said("好的"), user(WAIT)))
    assert r.annotations["constraints"] == ["detailed"]
    assert len(text_of(r)) >= LONG_MIN_CHARS
    r = model().reply(req(user(DETAILED), user(ASK_1001), track()))
    assert r.annotations["constraints"] == ["brevity"]


def test_brief_answers_are_cut_to_fit() -> None:
    policy = json.dumps({"tool": "search_kb", "as_of": AS_OF, "topic": "return_policy",
                         "title": "退货政策", "text": "签收后七天内可无理由退货。" * 10},
                        ensure_ascii=False)
    msg = Message("assistant", (ToolCallBlock("k", "search_kb", '{"topic": "return_policy"}'),
                                ToolResultBlock("k", "search_kb", policy)))
    brief = text_of(model().reply(req(user(RETURNS), msg, summary="[constraint:brevity]")))
    assert brief.startswith("退货政策：签收后七天内可无理由退货。")
    assert len(brief) == BRIEF_MAX_CHARS


def test_answers_carry_no_constraint_phrase_tag_or_foreign_id() -> None:
    # The model's own words must not change what later requests show.
    phrases = [p.lower() for ps in CONSTRAINT_PHRASES.values() for p in ps]
    m = model()
    for u in LEXICON:
        for ctx in ((), (track(),), (error_result(),)):
            for summary in ("", "[constraint:brevity]", "[constraint:english]"):
                r = m.reply(req(user(ASK_1001_LONG), *ctx, user(u), summary=summary))
                for b in r.blocks:
                    if isinstance(b, TextBlock) and u not in (ASK_1001,):
                        assert not any(p in b.text.lower() for p in phrases), (u, b.text)
                        assert not TAG_RE.search(b.text)
                        assert "O-1002" not in b.text


def test_fixed_answers_for_chitchat_and_set_constraint() -> None:
    r = model().reply(req(user(THANKS), summary="[constraint:brevity]"))
    assert text_of(r) == "不客气，还有什么可以帮您？"
    assert r.annotations["reason"] == "no_fact_needed"
    assert len(text_of(model().reply(req(user(DETAILED))))) >= LONG_MIN_CHARS


# --- identity ----------------------------------------------------------------------------------

def test_claimed_identity_is_passed_as_user_id() -> None:
    r = model().reply(req(user(I_AM_LISI), said("好的"), user(ADDRESS)))
    assert call_of(r).input == '{"user_id": "U-2"}'
    assert r.annotations["resolved"] == {"user": "U-2"}
    r = model().reply(req(user(I_AM_LISI), said("好的"), user(ASK_1001)))
    assert json.loads(call_of(r).input) == {"order_id": "O-1001", "user_id": "U-2"}
    r = model().reply(req(user(ADDRESS), summary="[claim:identity=U-3 unverified]"))
    assert call_of(r).input == '{"user_id": "U-3"}'


def test_without_a_claim_no_user_id_is_passed() -> None:
    assert call_of(model().reply(req(user(ADDRESS)))).input == "{}"
    assert call_of(model().reply(req(user(ASK_1001)))).input == '{"order_id": "O-1001"}'


def profile_result(uid: str, asked: str | None, name: str, address: str) -> Message:
    body = {"tool": "get_user_profile", "as_of": AS_OF, "user_id": uid, "name": name,
            "phone": "13900000002", "address": address}
    args = json.dumps({"user_id": asked} if asked else {})
    return Message("assistant", (ToolCallBlock("p", "get_user_profile", args),
                                 ToolResultBlock("p", "get_user_profile",
                                                 json.dumps(body, ensure_ascii=False))))


def test_profile_answer_states_name_and_address() -> None:
    r = model().reply(req(user(ADDRESS), profile_result("U-1", None, "张三", "上海市浦东新区")))
    assert text_of(r).startswith("张三的收货地址：上海市浦东新区。")
    # The harness overrode the claimed user: the answer is about whom the result is about.
    r = model().reply(req(user(I_AM_LISI), user(ADDRESS),
                          profile_result("U-1", "U-2", "张三", "上海市浦东新区")))
    assert r.annotations["reason"] == "fact_after_turn"
    assert text_of(r).startswith("张三的收货地址")


def test_policy_call_uses_the_topic() -> None:
    assert call_of(model().reply(req(user(RETURNS)))).input == '{"topic": "return_policy"}'


# --- summaries ---------------------------------------------------------------------------------

CONVERSATION = (user(I_AM_LISI), said("好的"), user(ASK_1001), clock(T10), track(),
                said("订单 O-1001 当前状态：in_transit，预计 2026-11-29 送达。"))
GOAL = "[goal] 用户询问订单 O-1001 的物流状态"
GOALS = f"[goal] 用户闲聊\n{GOAL}"  # the claim was made in small talk
FACT = f"[fact:track_order order_id=O-1001 status=in_transit eta=2026-11-29 as_of={AS_OF}]"
CLAIM = "[claim:identity=U-2 unverified]"
NEXT = "根据用户的下一条消息继续处理，需要时重新查询最新状态。"


def summary_tool(fields: tuple[str, ...], wrapped: bool = True) -> ToolSchema:
    params = {"type": "object", "properties": {f: {"type": "string"} for f in fields}}
    if wrapped:
        return ToolSchema.from_dict({"type": "function", "function": {
            "name": SUMMARY_TOOL, "parameters": params}})
    return ToolSchema.from_dict({"name": SUMMARY_TOOL, "parameters": params})


def structured(fields: tuple[str, ...], *, wrapped: bool = True, m: FakeModel | None = None,
               messages: tuple[Message, ...] = CONVERSATION) -> dict[str, str]:
    # The instruction says "keep it short" on purpose: it is not summarised content.
    prompt = Message("user", (TextBlock("Summarize; keep it short."), TextBlock("<reminder>")))
    r = (m or model()).reply(req(*messages, prompt, tools=(summary_tool(fields, wrapped),)))
    c = call_of(r)
    assert c.name == SUMMARY_TOOL
    assert r.annotations["kind"] == "summary"
    out: dict[str, str] = json.loads(c.input)
    return out


def test_structured_summary_with_agentscope_fields() -> None:
    assert structured(AGENTSCOPE_FIELDS) == {
        "task_overview": f"{GOALS}\n[constraint:brevity]",
        "current_state": FACT,
        "important_discoveries": CLAIM,
        "next_steps": NEXT,
        "context_to_preserve": "[constraint:brevity]\nentities: O-1001",
    }


def test_structured_summary_with_seed_fields_and_plain_schema() -> None:
    assert structured(SEED_FIELDS, wrapped=False) == {
        "goal": GOALS, "confirmed_facts": FACT, "unconfirmed_items": CLAIM, "next_step": NEXT,
        "constraints_to_keep": "[constraint:brevity]\nentities: O-1001",
    }


def test_structured_summary_with_unknown_fields_puts_everything_first() -> None:
    assert structured(("notes", "extra")) == {
        "notes": f"{GOALS}\n{FACT}\n{CLAIM}\n{NEXT}\n[constraint:brevity]\nentities: O-1001",
        "extra": ""}


def _written(form: str) -> str:
    prompt = Message("user", (TextBlock("Summarize; keep it short."), TextBlock("<reminder>")))
    m = model(summarizer=SummarizerProfile.model_validate({"json_form": form}))
    return call_of(m.reply(req(*CONVERSATION, prompt,
                               tools=(summary_tool(AGENTSCOPE_FIELDS),)))).input


@pytest.mark.parametrize("form", ["trailing_comma", "code_fence", "raw_newlines"])
def test_a_malformed_json_form_is_rejected_strictly_and_repaired_to_the_same_summary(
        form: str) -> None:
    strict = json.loads(_written("strict"))
    written = _written(form)
    with pytest.raises(json.JSONDecodeError):
        json.loads(written)
    assert "\\n" in _written("strict")  # multi-line fields: raw_newlines has some to leave raw
    common = pytest.importorskip("agentscope._utils._common")
    schema = summary_tool(AGENTSCOPE_FIELDS).to_dict()["function"]["parameters"]
    assert common._json_loads_with_repair(written, schema) == strict


def test_the_json_form_is_faithful_and_strict_by_default() -> None:
    assert SummarizerProfile().json_form == "strict"
    assert SummarizerProfile(json_form="trailing_comma").profile == "faithful"
    with pytest.raises(ValidationError, match="json_form"):
        SummarizerProfile.model_validate({"json_form": "sloppy"})


def test_freeform_summary() -> None:
    r = model().reply(req(*CONVERSATION, user(f"{FREEFORM_SUMMARY_MARKER} summarize")))
    assert text_of(r) == (f"[summary]\n{GOALS}\n{FACT}\n{CLAIM}\n[constraint:brevity]\n"
                          "entities: O-1001")
    assert r.annotations["form"] == "freeform"


def test_handoff_summary() -> None:
    r = model().reply(req(user(WHEN_EN), track(),
                          user(f"You are performing a {HANDOFF_SUMMARY_MARKER}.")))
    assert text_of(r) == (
        "[handoff]\nUser wants:\n[goal] user asked when O-1001 will arrive\n"
        f"Facts:\n{FACT}\nConstraints:\nentities: O-1001\nNext step:\n"
        "Continue with the user's next message; look up live status again when needed.")


def test_rolling_summary_carries_what_the_previous_one_said() -> None:
    previous = f"<system-info>{GOAL}\n{FACT}\n{CLAIM}\n[constraint:brevity]</system-info>"
    r = model().reply(Request(SYSTEM, (user(THANKS), user(f"{FREEFORM_SUMMARY_MARKER} go")),
                              summary=previous))
    assert text_of(r) == (f"[summary]\n{GOAL}\n[goal] 用户闲聊\n{FACT}\n{CLAIM}\n"
                          "[constraint:brevity]\nentities: O-1001 U-2")


def test_summary_is_read_back_as_the_next_context() -> None:
    # What a faithful summary keeps is enough for the follow-up: referent, constraint, fact.
    s = json.loads(call_of(model().reply(req(*CONVERSATION, user("go"),
                                             tools=(summary_tool(AGENTSCOPE_FIELDS),)))).input)
    r = model().reply(req(user(WAIT), clock(T10 + timedelta(hours=1)), summary="\n".join(s.values())))
    assert r.annotations["resolved"] == {"order": "O-1001", "user": "U-2"}
    assert r.annotations["constraints"] == ["brevity"]
    assert r.annotations["reason"] == "fresh_fact"
    assert len(text_of(r)) <= BRIEF_MAX_CHARS


def lossy(**kw: Any) -> FakeModel:
    return model(summarizer=SummarizerProfile(profile="lossy", **kw))


def test_lossy_drop_of_constraints_removes_the_tag() -> None:
    out = structured(AGENTSCOPE_FIELDS, m=lossy(drop={"constraint": 1.0}))
    assert "[constraint:" not in "".join(out.values())
    assert "简单一点" not in "".join(out.values())  # goals never copy the utterance
    assert out["context_to_preserve"] == "entities: O-1001"


def test_lossy_swap_turns_o1001_into_o1010() -> None:
    out = structured(AGENTSCOPE_FIELDS, m=lossy(swap=1.0))
    text = "".join(out.values())
    assert "O-1001" not in text and "O-1010" in text
    # U-2 has a single digit, so its last digit moves on instead.
    assert out["important_discoveries"] == "[claim:identity=U-3 unverified]"


def test_lossy_swap_annotations() -> None:
    r = lossy(swap=1.0).reply(req(*CONVERSATION, user(f"{FREEFORM_SUMMARY_MARKER}")))
    assert r.annotations["items"]["swapped"] == {"O-1001": "O-1010", "U-2": "U-3"}
    assert "[claim:identity=U-3 unverified]" in text_of(r)


def test_lossy_paraphrase_removes_ids() -> None:
    r = lossy(paraphrase=1.0).reply(req(*CONVERSATION, user(f"{FREEFORM_SUMMARY_MARKER}")))
    assert text_of(r) == (
        "[summary]\n[goal] 用户闲聊\n[goal] 用户询问订单 那笔订单 的物流状态\n"
        f"[fact:track_order order_id=那笔订单 status=in_transit eta=2026-11-29 as_of={AS_OF}]\n"
        "[claim:identity=该用户 unverified]\n[constraint:brevity]")
    assert r.annotations["items"]["paraphrased"] == ["O-1001", "U-2"]


def test_loss_draws_do_not_depend_on_the_rest_of_the_request() -> None:
    m = lossy(drop={"fact": 0.5, "goal": 0.5, "entity": 0.5})
    orders = [f"O-{1000 + i}" for i in range(12)]
    msgs = tuple(x for i, o in enumerate(orders) for x in (track(o, call_id=f"c{i}"),))

    def dropped(*extra: Message) -> set[str]:
        r = m.reply(req(*extra, *msgs, user(FREEFORM_SUMMARY_MARKER)))
        return {d["key"] for d in r.annotations["items"]["dropped"]}

    base = dropped()
    assert 0 < len(base) < 24  # some of each kind, not all
    assert dropped(said("lots of filler " * 50), clock(T10)) == base


def test_refusal() -> None:
    conv = req(*CONVERSATION, user(FREEFORM_SUMMARY_MARKER))
    for m in (model(summarizer=SummarizerProfile(profile="failing")), lossy(refuse=1.0)):
        r = m.reply(conv)
        assert text_of(r) == "抱歉，我无法生成摘要。/ Sorry, I cannot produce a summary."
        assert r.annotations["kind"] == "summary_refused"
    structured_req = req(*CONVERSATION, user("go"), tools=(summary_tool(AGENTSCOPE_FIELDS),))
    r = model(summarizer=SummarizerProfile(profile="failing")).reply(structured_req)
    assert not any(isinstance(b, ToolCallBlock) for b in r.blocks)
    ok = model(summarizer=SummarizerProfile(profile="failing", refuse=0.0)).reply(conv)
    assert text_of(ok).startswith("[summary]")


def test_refusal_rate_is_a_draw_over_the_request_hash() -> None:
    m = model(summarizer=SummarizerProfile(profile="failing", refuse=0.5))
    kinds = {m.reply(req(user(f"{FREEFORM_SUMMARY_MARKER} {i}"))).annotations["kind"]
             for i in range(20)}
    assert kinds == {"summary", "summary_refused"}
    r0 = req(user(f"{FREEFORM_SUMMARY_MARKER} 0"))
    h = hashlib.sha256(serialize(r0).encode()).hexdigest()
    expect = "summary_refused" if draw(0, "refuse", h) < 0.5 else "summary"
    assert m.reply(r0).annotations["kind"] == expect


def test_profile_validation() -> None:
    with pytest.raises(ValidationError, match="a faithful summarizer takes no loss rates"):
        SummarizerProfile(swap=0.5)
    with pytest.raises(ValidationError, match=r"drop rate for fact must be in \[0, 1\]"):
        SummarizerProfile(profile="lossy", drop={"fact": 1.5})
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        SummarizerProfile(profile="lossy", swap=2)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        SummarizerProfile.model_validate({"profile": "lossy", "rate": 1})
    assert SummarizerProfile(profile="failing").refusal_rate == 1.0
    assert SummarizerProfile(profile="lossy").refusal_rate == 0.0


# --- purity ------------------------------------------------------------------------------------

def test_determinism_across_instances_and_json_annotations() -> None:
    r0 = req(*CONVERSATION, user(WAIT), clock(T10 + timedelta(hours=7)))
    a, b = model().reply(r0), model().reply(r0)
    assert a == b
    json.dumps(a.annotations)


def test_constructor_arguments_are_copied() -> None:
    lex = dict(LEXICON)
    m = FakeModel(lex)
    r0 = req(user(THANKS))
    before = m.reply(r0)
    lex[THANKS] = Intent(Act.ASK_WAIT, order=REF)
    assert m.reply(r0) == before


POOL = [ASK_1001, ASK_1001_LONG, ASK_1002, WAIT, WHEN_EN, I_AM_LISI, ADDRESS, RETURNS, THANKS,
        DETAILED, "随便说点什么", f"{FREEFORM_SUMMARY_MARKER} now"]
PARTS = st.one_of(
    st.sampled_from(POOL).map(user),
    st.sampled_from(["O-1001", "O-1002", "O-1003"]).map(lambda o: track(o, call_id=o)),
    st.integers(0, 12).map(lambda h: clock(T10 + timedelta(hours=h))),
    st.sampled_from(["好的", "[constraint:brevity]", "[claim:identity=U-2 unverified]",
                     "keep it short", "详细一点"]).map(said),
    st.just(error_result()),
)
REQUESTS = st.builds(lambda ms, s, tool: req(*ms, summary=s,
                                             tools=(summary_tool(SEED_FIELDS),) if tool
                                             else ALL_TOOLS),
                     st.lists(PARTS, max_size=8), st.sampled_from(["", "[constraint:english]"]),
                     st.booleans())
PROFILES = st.sampled_from([SummarizerProfile(),
                            SummarizerProfile(profile="lossy", drop={"fact": 0.5}, swap=0.3),
                            SummarizerProfile(profile="failing", refuse=0.5)])


@settings(max_examples=150, deadline=None)
@given(REQUESTS, st.lists(REQUESTS, max_size=3), st.integers(0, 3), PROFILES,
       st.dictionaries(st.text(min_size=1, max_size=12), st.sampled_from(list(LEXICON.values())),
                       max_size=3))
def test_nothing_outside_the_request_changes_the_reply(
        r0: Request, others: list[Request], seed: int, profile: SummarizerProfile,
        extra: dict[str, Intent]) -> None:
    m = FakeModel(LEXICON, seed=seed, summarizer=profile, max_ages=MAX_AGES)
    first = m.reply(r0)
    for o in others:  # other calls in between: no state survives a call
        m.reply(o)
    assert m.reply(r0) == first
    # More lexicon entries, for utterances the request does not contain, change nothing.
    shown = {msg.plain_text() for msg in r0.messages if msg.role == "user"}
    unseen = {k: v for k, v in extra.items() if k not in shown}
    other = FakeModel({**unseen, **LEXICON}, seed=seed, summarizer=profile, max_ages=MAX_AGES)
    assert other.reply(r0) == first


def test_summary_leaves_out_the_instruction_message() -> None:
    r = model().reply(req(user(ASK_1001_LONG), user(f"{FREEFORM_SUMMARY_MARKER} keep it short, O-1009")))
    assert text_of(r) == "[summary]\n[goal] 用户询问订单 O-1001 的物流状态\nentities: O-1001"
    assert r.annotations["constraints"] == []


def test_summary_goal_resolves_ref_where_it_was_said() -> None:
    r = model().reply(req(user(ASK_1001_LONG), user(WAIT), user(ASK_1002),
                          user(FREEFORM_SUMMARY_MARKER)))
    assert text_of(r) == ("[summary]\n[goal] 用户询问订单 O-1001 的物流状态\n"
                          "[goal] 用户询问订单 O-1001 是否还要等待\n"
                          "[goal] 用户询问订单 O-1002 的物流状态\nentities: O-1001 O-1002")


def test_a_tool_the_request_does_not_offer_is_never_called() -> None:
    offered = tuple(t for t in ALL_TOOLS if t.name != "track_order")
    r = model().reply(req(user(WHEN_EN), tools=offered))
    assert all(not isinstance(b, ToolCallBlock) for b in r.blocks)
    assert r.annotations["reason"] == "tool_not_offered"
    # not "try again later": there is no tool to try with
    assert text_of(r).startswith("Sorry, I have no way to check order O-1001 right now.")
    # The control: offered, it is called.
    assert isinstance(model().reply(req(user(WHEN_EN))).blocks[0], ToolCallBlock)


def test_memory_extraction_answers_preferences_claims_and_facts_from_the_request() -> None:
    """A structured request asking only for MEMORY_FIELDS is a memory extraction: constraint
    tags, claim tags (unverified) and fact tags with their as_of, one per line."""
    from harnesslab.messages import Message, Request, TextBlock, ToolResultBlock
    from harnesslab.sim.intents import MEMORY_FIELDS, SUMMARY_TOOL, Claim, ClaimKind

    short, lisi = "以后简单一点。", "我是李四。"
    lexicon = {short: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
               lisi: Intent(Act.CHITCHAT, claims=(Claim(ClaimKind.IDENTITY, "U-2"),))}
    call = ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}')
    result = ToolResultBlock("c1", "track_order", json.dumps(
        {"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00", "order_id": "O-1001",
         "status": "in_transit", "eta": "2026-11-29"}))
    tool = ToolSchema.from_dict({"type": "function", "function": {
        "name": SUMMARY_TOOL, "parameters": {"type": "object", "properties": {
            f: {"type": "string"} for f in MEMORY_FIELDS}}}})
    req = Request(system="s", messages=(
        Message("user", (TextBlock(short),)), Message("user", (TextBlock(lisi),)),
        Message("assistant", (call, result)), Message("user", (TextBlock("extract"),))),
        tools=(tool,))
    reply = FakeModel(lexicon).reply(req)
    assert reply.annotations["form"] == "memory"
    out = json.loads(reply.blocks[0].input)  # type: ignore[union-attr]
    assert out == {"preferences": "[constraint:brevity]",
                   "user_claims": "[claim:identity=U-2 unverified]",
                   "facts": "[fact:track_order order_id=O-1001 status=in_transit "
                            "eta=2026-11-29 as_of=2026-11-28T10:00:00+08:00]"}


def test_a_latest_time_that_reads_two_ways_leaves_now_unknown_and_says_so() -> None:
    # Stated right earlier, then in a form that reads two ways (day-first or month-first): the
    # model no longer knows "now", answers from what it sees (as with no time at all), and its
    # annotations name the statement, so a stale answer can be traced to it.
    two_ways = Message("assistant", (HintBlock("Current time: 03/04/2026 17:00"),))
    r = model().reply(req(user(ASK_1001_LONG), track(), user(WAIT),
                          clock(T10 + timedelta(hours=7)), two_ways))
    assert r.annotations["now"] is None and r.annotations["reason"] == "fresh_fact"
    assert r.annotations["now_unread"] == ("03/04/2026 17:00 (03/04/2026 is April 3 or March 4, "
                                           "2026, as the writer's locale has it)")
    # The control: the same request without it calls the tool again (the fact is stale).
    r = model().reply(req(user(ASK_1001_LONG), track(), user(WAIT),
                          clock(T10 + timedelta(hours=7))))
    assert r.annotations["reason"] == "stale_fact" and "now_unread" not in r.annotations
