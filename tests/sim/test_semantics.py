"""The fake model's tightened semantics: orders that will not arrive, tool errors told apart,
the conversation's language, partial results, anchored ids, tools not offered, references by
item and position, believed (promoted) claims, and the summarizer profiles that fail on
purpose (a superseded constraint kept, a claim promoted)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from harnesslab.messages import (
    HintBlock,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from harnesslab.sim.intents import (
    FIRST,
    LAST,
    REF,
    SUMMARY_TOOL,
    Act,
    Claim,
    ClaimKind,
    Constraint,
    Intent,
    current_time_text,
)
from harnesslab.sim.model import BRIEF_MAX_CHARS, FakeModel, ModelReply
from harnesslab.sim.summarizer import SummarizerProfile
from harnesslab.sim.tools import TOOLS

TZ = timezone(timedelta(hours=8))
T10 = datetime(2026, 11, 28, 10, 0, tzinfo=TZ)
AS_OF = "2026-11-28T10:00:00+08:00"

WHERE = "O-2001 到哪了？"
WHEN = "它什么时候到？"
WAIT = "那我还要等吗？"
WHERE_EN = "Where is O-2001?"
WHEN_EN = "When will it arrive?"
WAIT_EN = "Should I keep waiting?"
LIST = "我有哪些订单？"
SKATE = "滑板那个订单到哪了？"
FIRST_ONE = "第一个什么时候到？"
LAST_ONE = "最后一个呢？"
SHIP = "这个订单寄到哪？"
TERSE = "以后别啰嗦。"
EXPAND = "这个问题展开讲讲。"
LISI = "我是李四。"
ADDRESS = "我的收货地址是什么？"
THANKS = "谢谢！"

LEXICON: dict[str, Intent] = {
    WHERE: Intent(Act.ORDER_STATUS, order="O-2001"),
    WHEN: Intent(Act.ASK_ETA, order=REF),
    WAIT: Intent(Act.ASK_WAIT, order=REF),
    WHERE_EN: Intent(Act.ORDER_STATUS, order="O-2001"),
    WHEN_EN: Intent(Act.ASK_ETA, order=REF),
    WAIT_EN: Intent(Act.ASK_WAIT, order=REF),
    LIST: Intent(Act.LIST_ORDERS),
    SKATE: Intent(Act.ORDER_STATUS, order="@item:滑板"),
    FIRST_ONE: Intent(Act.ASK_ETA, order=FIRST),
    LAST_ONE: Intent(Act.ORDER_STATUS, order=LAST),
    SHIP: Intent(Act.ASK_SHIP_TO, order=REF),
    TERSE: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
    EXPAND: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.DETAILED,)),
    LISI: Intent(Act.CHITCHAT, claims=(Claim(ClaimKind.IDENTITY, "U-2"),)),
    ADDRESS: Intent(Act.ASK_ADDRESS),
    THANKS: Intent(Act.CHITCHAT),
}
BUSINESS = tuple(t.schema for t in TOOLS.values())
AGES = {"track_order": timedelta(hours=6), "list_orders": timedelta(hours=6),
        "get_order": timedelta(hours=6), "get_logistics_trace": timedelta(hours=6)}


def model(**kw: Any) -> FakeModel:
    kw.setdefault("max_ages", AGES)
    return FakeModel(LEXICON, **kw)


def user(text: str) -> Message:
    return Message.text("user", text)


def said(text: str) -> Message:
    return Message.text("assistant", text)


def clock(at: datetime = T10) -> Message:
    return Message("assistant", (HintBlock(current_time_text(at)),))


def result(tool: str, args: dict[str, Any], body: dict[str, Any], *, call_id: str = "c1",
           error: bool = False) -> Message:
    full = {"tool": tool, "as_of": AS_OF, **body}
    return Message("assistant", (ToolCallBlock(call_id, tool, json.dumps(args)),
                                 ToolResultBlock(call_id, tool, json.dumps(full, ensure_ascii=False),
                                                 is_error=error)))


def track(status: str, eta: str | None = None, order: str = "O-2001") -> Message:
    return result("track_order", {"order_id": order},
                  {"order_id": order, "status": status, "eta": eta, "location": ""})


def listing(*orders: tuple[str, list[str]]) -> Message:
    return result("list_orders", {}, {"user_id": "U-1", "orders": [
        {"order_id": o, "items": items, "status": "in_transit"} for o, items in orders]},
                  call_id="l1")


def req(*messages: Message, summary: str = "", tools: tuple[ToolSchema, ...] = BUSINESS) -> Request:
    return Request("你是客服助手。", messages, summary=summary, tools=tools)


def text_of(r: ModelReply) -> str:
    (b,) = r.blocks
    assert isinstance(b, TextBlock), r
    return b.text


def call_of(r: ModelReply) -> ToolCallBlock:
    (b,) = r.blocks
    assert isinstance(b, ToolCallBlock), r
    return b


# --- orders that will not arrive -----------------------------------------------------------------

@pytest.mark.parametrize(("status", "zh", "en"), [
    ("cancelled", "已取消", "cancelled"),
    ("returned", "已退回", "returned to the sender"),
    ("lost", "在运输中丢失", "lost in transit"),
])
@pytest.mark.parametrize("act", ["status", "eta", "wait"])
def test_an_order_that_will_not_arrive_is_never_awaited(status: str, zh: str, en: str,
                                                        act: str) -> None:
    # An ETA stated before the cancellation must not be read as a delivery date either.
    fact = track(status, eta="2026-11-29")
    for lang, ask, words in (("zh", {"status": WHERE, "eta": WHEN, "wait": WAIT}, zh),
                             ("en", {"status": WHERE_EN, "eta": WHEN_EN, "wait": WAIT_EN}, en)):
        text = text_of(model().reply(req(user(ask[act]), clock(), fact)))
        assert words in text and status in text, (lang, text)
        assert "2026-11-29" not in text
        assert "暂无预计送达日期" not in text and "no delivery date" not in text
        assert "明天" not in text and "tomorrow" not in text
        if act == "wait":
            assert ("不用等了" in text) if lang == "zh" else ("No need to wait" in text)
        if act != "status":
            assert ("不会送达" in text) if lang == "zh" else ("will not arrive" in text)


def test_a_delivered_order_is_answered_as_before() -> None:
    text = text_of(model().reply(req(user(WAIT), clock(), track("delivered", "2026-11-27"))))
    assert text.startswith("订单 O-2001 已签收，不用再等了。")


# --- tool errors told apart ------------------------------------------------------------------------

ERRORS = {
    "not_found": ("抱歉，没有找到订单 O-2001，请确认订单号是否正确。",
                  "Sorry, I could not find order O-2001. Please check the order number."),
    "forbidden": ("抱歉，订单 O-2001 不在您的账户下，我无法查询。",
                  "Sorry, order O-2001 is not on your account, so I cannot look it up."),
    "unavailable": ("抱歉，暂时无法查询订单 O-2001，请稍后再试。",
                    "Sorry, I could not check order O-2001 right now. Please try again later."),
}


def error(code: str | None, message: str) -> Message:
    body: dict[str, Any] = {"error": message, **({"code": code} if code else {})}
    return result("track_order", {"order_id": "O-2001"}, body, error=True)


@pytest.mark.parametrize("kind", list(ERRORS))
def test_tool_errors_are_told_apart_by_code(kind: str) -> None:
    texts = []
    for ask, expected in zip((WHERE, WHERE_EN), ERRORS[kind], strict=True):
        r = model().reply(req(user(ask), clock(), error(kind, "something went wrong")))
        texts.append(text_of(r))
        assert texts[-1].startswith(expected)
        assert r.annotations["unable"] == kind and r.annotations["cited"]["error"]
    assert "in_transit" not in "".join(texts)


@pytest.mark.parametrize(("message", "kind"), [
    ("user_id U-2 does not match the verified session", "forbidden"),  # the harness's refusal
    ("order O-2001 does not belong to the acting user", "forbidden"),
    ("no order O-2001", "not_found"),
    ("upstream timeout, try again", "unavailable"),
    ("boom", "failed"),
])
def test_an_error_without_a_code_is_read_by_its_wording(message: str, kind: str) -> None:
    r = model().reply(req(user(WHERE), clock(), error(None, message)))
    assert r.annotations["unable"] == kind
    if kind == "failed":  # nothing to tell it apart: the generic "try again later"
        assert text_of(r).startswith(ERRORS["unavailable"][0])


def test_forbidden_profile_and_list_errors_have_their_own_words() -> None:
    profile = result("get_user_profile", {"user_id": "U-2"}, {"error": "x", "code": "forbidden"},
                     error=True)
    assert text_of(model().reply(req(user(ADDRESS), profile))).startswith(
        "抱歉，我只能查询您本人账户的资料。")
    lst = result("list_orders", {}, {"error": "x", "code": "not_found"}, error=True)
    assert text_of(model().reply(req(user(LIST), lst))).startswith("抱歉，没有找到您的订单记录。")


# --- the conversation's language ------------------------------------------------------------------

@pytest.mark.parametrize(("messages", "summary", "expected"), [
    ((said("好的。"),), "", "抱歉，我没有理解您的意思"),                # no user message at all
    ((), "[goal] 用户询问订单 O-2001 的物流状态", "抱歉，我没有理解您的意思"),  # a summary alone
    ((said("不客气"), Message("user", (HintBlock("<current-time>x</current-time>"),))), "",
     "抱歉，我没有理解"),
    ((said("Sure."),), "[goal] user asked about O-2001", "Sorry, I did not understand"),
])
def test_with_no_question_visible_it_speaks_the_conversations_language(
        messages: tuple[Message, ...], summary: str, expected: str) -> None:
    r = model().reply(req(*messages, summary=summary))
    assert r.annotations["reason"] == "utterance_not_found"
    assert text_of(r).startswith(expected)


def test_a_question_not_in_the_lexicon_is_answered_in_its_own_language() -> None:
    r = model().reply(req(user(THANKS), said("不客气"), user("What now?")))
    assert text_of(r).startswith("Sorry, I did not understand")


# --- partial results --------------------------------------------------------------------------------

def test_a_truncated_trace_is_partial_in_both_languages() -> None:
    events = [{"at": f"2026-11-27T{h:02d}:00", "scan": f"hub #{h}"} for h in range(20)]
    full = json.dumps({"tool": "get_logistics_trace", "as_of": AS_OF, "order_id": "O-2001",
                       "status": "in_transit", "events": events})
    call = ToolCallBlock("t", "get_logistics_trace", '{"order_id": "O-2001"}')
    cut = Message("assistant", (call, ToolResultBlock("t", "get_logistics_trace",
                                                      full[:300] + "\n<<<TRUNCATED>>>")))
    lexicon = {"trace": Intent(Act.ASK_TRACE, order="O-2001"),
               "追踪": Intent(Act.ASK_TRACE, order="O-2001")}
    en = text_of(FakeModel(lexicon).reply(req(user("trace"), cut)))
    zh = text_of(FakeModel(lexicon).reply(req(user("追踪"), cut)))
    assert "truncated; I can see at least 4 events" in en  # 4 begun before the cut, of 20
    assert "被截断" in zh and "至少 4 条" in zh
    whole = Message("assistant", (call, ToolResultBlock("t", "get_logistics_trace", full)))
    assert "has 20 tracking events" in text_of(FakeModel(lexicon).reply(req(user("trace"), whole)))


# --- anchored ids -----------------------------------------------------------------------------------

@pytest.mark.parametrize("noise", ["采购单 PO-7731 已入库。", "SKU-1002 缺货", "XO-2002", "O-20019",
                                   "see U-12 and KU-1"])
def test_an_id_inside_a_longer_token_is_not_an_id(noise: str) -> None:
    r = model().reply(req(said(noise), user(WHEN)))
    assert r.annotations["reason"] == "unresolved_ref"
    r = model().reply(req(said("订单O-2002，" + noise), user(WHEN)))  # CJK before an id is fine
    assert call_of(r).input == '{"order_id": "O-2002"}'


# --- tools the request does not offer ---------------------------------------------------------------

def test_it_never_calls_a_tool_the_request_does_not_offer() -> None:
    offered = tuple(s for s in BUSINESS if s.name != "track_order")
    r = model().reply(req(user(WHERE), tools=offered))
    assert r.annotations["unable"] == "not_offered"
    assert text_of(r).startswith("抱歉，我目前没有办法查询订单 O-2001。")
    assert text_of(model().reply(req(user(WHERE_EN), tools=()))).startswith(
        "Sorry, I have no way to check order O-2001 right now.")
    assert call_of(model().reply(req(user(WHERE)))).name == "track_order"
    # a fresh fact visible needs no tool: it answers from it
    assert "in_transit" in text_of(model().reply(req(user(WHERE), clock(), track("in_transit"),
                                                     tools=())))


# --- references by item and position ----------------------------------------------------------------

TWO = listing(("O-2001", ["滑板", "护具"]), ("O-2002", ["耳机"]))


def test_list_orders_is_answered_from_the_list() -> None:
    text = text_of(model().reply(req(user(LIST), TWO)))
    assert text.startswith("您共有 2 个订单：O-2001（滑板、护具），O-2002（耳机）。")


@pytest.mark.parametrize(("ask", "order"), [(SKATE, "O-2001"), (FIRST_ONE, "O-2001"),
                                            (LAST_ONE, "O-2002")])
def test_item_and_position_references_resolve_from_a_visible_list(ask: str, order: str) -> None:
    # O-2002 is the latest id mentioned: @ref would pick it, the item or position must not.
    r = model().reply(req(user(LIST), TWO, said("O-2002 是耳机。"), user(ask)))
    assert r.annotations["resolved"] == {"order": order}
    assert json.loads(call_of(r).input)["order_id"] == order


def test_the_latest_fact_naming_the_item_wins_and_two_holders_are_ambiguous() -> None:
    later = result("get_order", {"order_id": "O-2003"}, {"order_id": "O-2003", "items": ["滑板"],
                                                        "ship_to": "x", "status": "shipped"},
                   call_id="g1")
    assert model().reply(req(TWO, later, user(SKATE))).annotations["resolved"] == \
        {"order": "O-2003"}
    both = listing(("O-2001", ["滑板"]), ("O-2002", ["滑板"]))
    r = model().reply(req(both, user(SKATE)))
    assert r.annotations["reason"] == "unresolved_ref" and text_of(r) == "请问您指的是哪个订单？"


def test_without_a_visible_list_position_and_item_references_ask_which_one() -> None:
    for ask in (SKATE, FIRST_ONE, LAST_ONE):
        r = model().reply(req(said("O-2001 和 O-2002"), user(ask)))
        assert r.annotations["reason"] == "unresolved_ref", ask


def test_references_survive_a_faithful_summary_of_the_list() -> None:
    fields = ("task_overview", "current_state", "important_discoveries", "next_steps",
              "context_to_preserve")
    tool = ToolSchema.from_dict({"type": "function", "function": {
        "name": SUMMARY_TOOL, "parameters": {"type": "object", "properties": {
            f: {"type": "string"} for f in fields}}}})
    summary_req = req(user(LIST), TWO, said("您共有 2 个订单"), user("请总结"), tools=(tool,))
    body = json.loads(call_of(model().reply(summary_req)).input)
    summary = "\n".join(body.values())
    assert "[fact:list_orders user_id=U-1 orders=O-2001:滑板+护具,O-2002:耳机" in summary
    for ask, order in ((SKATE, "O-2001"), (FIRST_ONE, "O-2001"), (LAST_ONE, "O-2002")):
        r = model().reply(req(said("O-2002 是耳机。"), user(ask), summary=summary))
        assert r.annotations["resolved"] == {"order": order}, ask


def test_ship_to_is_answered_from_get_order() -> None:
    detail = result("get_order", {"order_id": "O-2001"}, {
        "order_id": "O-2001", "status": "shipped", "items": ["滑板"], "ship_to": "杭州西湖区"})
    assert call_of(model().reply(req(said("O-2001"), user(SHIP)))).name == "get_order"
    text = text_of(model().reply(req(said("O-2001"), user(SHIP), clock(), detail)))
    assert text.startswith("订单 O-2001 寄往：杭州西湖区。")


# --- claims: unverified, or promoted and believed -------------------------------------------------

def test_an_unverified_claim_is_passed_to_tools_but_never_asserted() -> None:
    r = model().reply(req(user(ADDRESS), summary="[claim:identity=U-2 unverified]"))
    assert json.loads(call_of(r).input) == {"user_id": "U-2"}
    profile = result("get_user_profile", {"user_id": "U-2"}, {
        "user_id": "U-1", "name": "张三", "phone": "1", "address": "上海"})
    text = text_of(model().reply(req(user(ADDRESS), clock(), profile,
                                     summary="[claim:identity=U-2 unverified]")))
    assert "U-2" not in text


def test_a_promoted_claim_is_believed_and_shows_in_every_answer() -> None:
    profile = result("get_user_profile", {"user_id": "U-2"}, {
        "user_id": "U-1", "name": "张三", "phone": "1", "address": "上海"})
    r = model().reply(req(user(ADDRESS), clock(), profile, summary="[claim:identity=U-2]"))
    assert text_of(r).startswith("U-2 您好，张三的收货地址：上海。")
    assert r.annotations["trusted"] == "U-2"
    r = model().reply(req(user(THANKS), summary="[claim:identity=U-2]", tools=()))
    assert text_of(r).startswith("U-2 您好，不客气")


# --- summarizer profiles that fail on purpose ------------------------------------------------------

def _summary(profile: SummarizerProfile, *messages: Message, seed: int = 0) -> tuple[str, Any]:
    r = FakeModel(LEXICON, seed=seed, summarizer=profile).reply(
        req(*messages, user("[task:summarize] go"), tools=()))
    return text_of(r), r.annotations["items"]


def test_keep_superseded_lists_the_replaced_constraint_last() -> None:
    convo = (user(TERSE), said("好的"), user(EXPAND), said("好的"))
    faithful, items = _summary(SummarizerProfile(), *convo)
    assert "[constraint:detailed]" in faithful and "[constraint:brevity]" not in faithful
    assert "superseded" not in items
    kept, items = _summary(SummarizerProfile(profile="lossy", keep_superseded=1.0), *convo)
    assert kept.index("[constraint:detailed]") < kept.index("[constraint:brevity]")
    assert items["superseded"] == ["[constraint:brevity]"]
    # Read back, the summary now says brevity is in force: the wrong constraint wins.
    r = model().reply(req(user(THANKS), summary=kept, tools=()))
    assert r.annotations["constraints"] == ["brevity"]
    assert len(text_of(r)) <= BRIEF_MAX_CHARS


def test_promote_claims_drops_unverified_and_the_model_then_believes_it() -> None:
    convo = (user(LISI), said("好的"))
    assert "[claim:identity=U-2 unverified]" in _summary(SummarizerProfile(), *convo)[0]
    promoted, items = _summary(SummarizerProfile(profile="lossy", promote_claims=1.0), *convo)
    assert "[claim:identity=U-2]" in promoted and "unverified" not in promoted
    assert items["promoted"] == ["[claim:identity=U-2 unverified]"]
    r = model().reply(req(user(THANKS), summary=promoted, tools=()))
    assert r.annotations["trusted"] == "U-2"


def test_a_rate_strictly_between_0_and_1_depends_on_the_seed() -> None:
    convo = (user(LISI), said("好的"))
    profile = SummarizerProfile(profile="lossy", promote_claims=0.5)
    outcomes = {"promoted" in _summary(profile, *convo, seed=s)[1] for s in range(10)}
    assert outcomes == {True, False}


def test_faithful_takes_neither_rate() -> None:
    with pytest.raises(ValueError, match="faithful summarizer takes no loss rates"):
        SummarizerProfile(keep_superseded=0.5)
    with pytest.raises(ValueError, match="faithful summarizer takes no loss rates"):
        SummarizerProfile(promote_claims=1.0)
