"""Facts an answer states in the fake model's own words (harnesslab.sim.prose): read back from
every answer template, kept by a summary whose transcript quotes the answer but not the tool
result (agno's session summary), dropped by a lossy profile as a tool fact is, and given back
without an ``as_of`` where the prose states none (then not fresh)."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from harnesslab.messages import HintBlock, Message, Request, TextBlock, ToolCallBlock, ToolResultBlock
from harnesslab.sim.facts import result_fact
from harnesslab.sim.intents import FIRST, REF, Act, Constraint, Intent, current_time_text
from harnesslab.sim.model import FakeModel, ModelReply
from harnesslab.sim.prose import prose_facts
from harnesslab.sim.summarizer import SummarizerProfile, restates
from harnesslab.sim.tools import TOOLS

TZ = timezone(timedelta(hours=8))
T10 = datetime(2026, 11, 28, 10, 0, tzinfo=TZ)
AS_OF = "2026-11-28T10:00:00+08:00"
BRIEF = {"zh": "以后回答简单一点。", "en": "Keep it short from now on."}
ASKS: dict[tuple[Act, str], str] = {
    (Act.ORDER_STATUS, "zh"): "O-2001 到哪了？", (Act.ORDER_STATUS, "en"): "Where is O-2001?",
    (Act.ASK_ETA, "zh"): "O-2001 什么时候到？", (Act.ASK_ETA, "en"): "When will O-2001 arrive?",
    (Act.ASK_WAIT, "zh"): "O-2001 还要等吗？", (Act.ASK_WAIT, "en"): "Should I wait for O-2001?",
    (Act.ASK_TRACE, "zh"): "O-2001 的完整物流轨迹？", (Act.ASK_TRACE, "en"): "O-2001's full trace?",
    (Act.ASK_SHIP_TO, "zh"): "O-2001 寄到哪？", (Act.ASK_SHIP_TO, "en"): "Where does O-2001 ship?",
    (Act.LIST_ORDERS, "zh"): "我有哪些订单？", (Act.LIST_ORDERS, "en"): "What orders do I have?",
}
WAIT_LATER = "那我明天还要等吗？"
FIRST_ONE = "第一个订单什么时候到？"
LEXICON: dict[str, Intent] = {
    **{text: Intent(act, order=None if act is Act.LIST_ORDERS else "O-2001")
       for (act, _), text in ASKS.items()},
    BRIEF["zh"]: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
    BRIEF["en"]: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
    WAIT_LATER: Intent(Act.ASK_WAIT, order=REF),
    FIRST_ONE: Intent(Act.ASK_ETA, order=FIRST),
}
AGES = {"track_order": timedelta(hours=6), "get_logistics_trace": timedelta(hours=6)}
TOOL_OF = {Act.ORDER_STATUS: "track_order", Act.ASK_ETA: "track_order",
           Act.ASK_WAIT: "track_order", Act.ASK_TRACE: "get_logistics_trace",
           Act.ASK_SHIP_TO: "get_order", Act.LIST_ORDERS: "list_orders"}
AGNO = ("Analyze the following conversation between a user and an assistant, and extract the "
        "following details:\n- Summary (str): Provide a concise summary of the session.\n"
        "<conversation>{}</conversation>")
ASK_SUMMARY = Message.text("user", "Provide the summary of the conversation.")


def model(**kw: Any) -> FakeModel:
    return FakeModel(LEXICON, max_ages=AGES, **kw)


def user(text: str) -> Message:
    return Message.text("user", text)


def body(tool: str, status: str, eta: str | None, items: list[list[str]]) -> dict[str, Any]:
    if tool == "track_order":
        return {"order_id": "O-2001", "status": status, "eta": eta, "location": "上海"}
    if tool == "get_logistics_trace":
        return {"order_id": "O-2001", "status": status,
                "events": [{"at": AS_OF, "scan": f"#{i}"} for i in range(len(items) + 1)]}
    if tool == "get_order":
        return {"order_id": "O-2001", "status": status, "items": ["滑板"],
                "ship_to": "上海市浦东新区世纪大道100号"}
    return {"user_id": "U-1", "orders": [{"order_id": f"O-20{n + 1:02d}", "items": it,
                                          "status": status} for n, it in enumerate(items)]}


def result(tool: str, fields: dict[str, Any]) -> Message:
    args = {} if tool == "list_orders" else {"order_id": "O-2001"}
    out = json.dumps({"tool": tool, "as_of": AS_OF, **fields}, ensure_ascii=False)
    return Message("assistant", (ToolCallBlock("c1", tool, json.dumps(args)),
                                 ToolResultBlock("c1", tool, out)))


def text_of(r: ModelReply) -> str:
    (b,) = r.blocks
    assert isinstance(b, TextBlock), r
    return b.text


def summary_of(r: ModelReply) -> str:
    (b,) = r.blocks
    assert isinstance(b, TextBlock), r
    return str(json.loads(b.text)["summary"]) if b.text.startswith("{") else b.text


STATUSES = ("in_transit", "shipped", "delayed", "delivered", "cancelled", "returned", "lost")
ETAS = (None, "2026-11-28", "2026-11-29", "2026-12-02")
ITEMS = ([["滑板", "护具"], ["耳机"]], [["down jacket"], [], ["Pads", "helmet"]])


# The whole grid, not a sample: each answer template is a handful of its cells.
@pytest.mark.parametrize("act", sorted(TOOL_OF))
@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("brief", [False, True])
def test_every_answer_that_states_a_fact_is_read_back_as_that_fact(
        act: Act, lang: str, brief: bool) -> None:
    read_any = False
    for status, eta, items in itertools.product(STATUSES, ETAS, ITEMS):
        read_any |= _read_back(act, lang, brief, status, eta, items)
    assert read_any  # not every cell's answer was cut


def _read_back(act: Act, lang: str, brief: bool, status: str, eta: str | None,
               items: list[list[str]]) -> bool:
    tool = TOOL_OF[act]
    got = result(tool, body(tool, status, eta, items))
    turn = (user(BRIEF[lang]), Message.text("assistant", "ok")) if brief else ()
    answer = text_of(model().reply(Request("", (*turn, user(ASKS[(act, lang)]), got),
                                           tools=tuple(t.schema for t in TOOLS.values()))))
    (block,) = got.content[1:]
    assert isinstance(block, ToolResultBlock)
    fact = result_fact(block, {}, 0)
    read = prose_facts(answer)
    if answer.endswith("…"):  # a brief answer cut to fit states only part of its fact
        assert len(read) <= 1
        return False
    assert len(read) == 1, answer
    (p,) = read
    assert p.tool == tool and p.source == "prose" and not p.error
    # What the prose says is what the result said; the lookup time only when the answer states it.
    assert restates(p, fact), (answer, dict(p.fields), dict(fact.fields))
    assert (p.as_of is not None) == (not brief)
    assert p.as_of is None or p.as_of == fact.as_of
    return True


def test_a_paraphrase_or_a_cut_answer_states_no_fact() -> None:
    assert prose_facts("O-2001 还在路上，30 号左右到。") == []
    assert prose_facts("订单 O-2001 当前状态：in_transit，预计 2026-11-30 送…") == []
    assert prose_facts("您共有 2 个订单：O-2001（滑板），O-2002（耳…") == []
    # A profile answer is not read: one field would stand for the whole profile.
    assert prose_facts("张三的收货地址：上海市浦东新区世纪大道100号。") == []


def agno_summary(*transcript: str, m: FakeModel | None = None) -> ModelReply:
    system = AGNO.format("\n".join(transcript))
    return (m or model()).reply(Request(system, (ASK_SUMMARY,)))


STATED = "Assistant: 订单 O-2001 当前状态：in_transit，预计 2026-11-30 送达。"
LONG = STATED + f"以上信息来自 {AS_OF} 的查询结果。感谢您的耐心等待，祝您生活愉快！"


def test_a_summary_keeps_the_fact_only_the_answer_states() -> None:
    r = agno_summary("User: O-2001 到哪了？", LONG)
    fact = f"[fact:track_order order_id=O-2001 status=in_transit eta=2026-11-30 as_of={AS_OF}]"
    assert fact in summary_of(r)
    assert [i["kind"] for i in r.annotations["items"]["kept"]] == ["goal", "fact", "entity"]
    # A brief answer states no lookup time: the fact is kept without one.
    brief = summary_of(agno_summary("User: O-2001 到哪了？", STATED))
    assert "[fact:track_order order_id=O-2001 status=in_transit eta=2026-11-30]" in brief


def test_the_control_a_lossy_summary_drops_a_prose_fact_as_it_drops_a_tool_fact() -> None:
    r = agno_summary("User: O-2001 到哪了？", LONG,
                     m=model(summarizer=SummarizerProfile(profile="lossy", drop={"fact": 1.0})))
    assert "[fact:" not in summary_of(r)
    assert [i["kind"] for i in r.annotations["items"]["dropped"]] == ["fact"]
    # And without the answer there is nothing to keep.
    assert "[fact:" not in summary_of(agno_summary("User: O-2001 到哪了？"))


def test_an_answer_restating_a_visible_result_adds_nothing() -> None:
    # A transcript with the tool result keeps the result (its as_of), once.
    got = result("track_order", body("track_order", "in_transit", "2026-11-30", []))
    prose = Message.text("assistant", "订单 O-2001 当前状态：in_transit，预计 2026-11-30 送达。")
    r = model().reply(Request("", (user(ASKS[(Act.ORDER_STATUS, "zh")]), got, prose,
                                   user("[task:summarize]"))))
    facts = [i["text"] for i in r.annotations["items"]["kept"] if i["kind"] == "fact"]
    assert facts == [f"[fact:track_order order_id=O-2001 status=in_transit eta=2026-11-30 "
                     f"as_of={AS_OF}]"]
    # An answer that says something newer than the visible result is kept after it.
    newer = Message.text("assistant", "订单 O-2001 当前状态：delivered，暂无预计送达日期。")
    r = model().reply(Request("", (user(ASKS[(Act.ORDER_STATUS, "zh")]), got, prose, newer,
                                   user("[task:summarize]"))))
    assert r.annotations["items"]["kept"][-2]["text"] == \
        "[fact:track_order order_id=O-2001 status=delivered]"


def follow_up(summary: str, question: str = WAIT_LATER) -> ModelReply:
    now = Message("assistant", (HintBlock(current_time_text(T10 + timedelta(hours=1))),))
    return model().reply(Request(f"Summary:\n{summary}", (now, user(question)),
                                 tools=tuple(t.schema for t in TOOLS.values())))


def test_the_kept_fact_answers_the_follow_up_only_when_its_time_is_known() -> None:
    dated = follow_up(summary_of(agno_summary("User: O-2001 到哪了？", LONG)))
    assert dated.annotations["reason"] == "fresh_fact"
    assert "2026-11-30" in text_of(dated)
    # Without a lookup time it cannot be shown fresh: the follow-up looks again.
    undated = follow_up(summary_of(agno_summary("User: O-2001 到哪了？", STATED)))
    assert undated.annotations["kind"] == "tool_call"
    assert undated.annotations["reason"] == "stale_fact"


def test_an_order_list_stated_in_prose_resolves_a_reference_into_it() -> None:
    listed = ("Assistant: 您共有 2 个订单：O-2001（滑板、护具），O-2010（耳机）。"
              f"以上信息来自 {AS_OF} 的查询结果。")
    s = summary_of(agno_summary("User: 我有哪些订单？", listed))
    assert "[fact:list_orders orders=O-2001:滑板+护具,O-2010:耳机" in s
    r = follow_up(s, FIRST_ONE)
    assert r.annotations["resolved"] == {"order": "O-2001"}
    # The control: without the list there is no first order to find.
    assert follow_up(summary_of(agno_summary("User: 我有哪些订单？")), FIRST_ONE) \
        .annotations["kind"] == "clarify"
