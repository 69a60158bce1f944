"""A declared domain's world, tools and fake-model answers (the help-desk example's domain):
each rule with the case that makes it fail."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from harnesslab.messages import Message, Request, TextBlock, ToolCallBlock, ToolResultBlock
from harnesslab.scenario.domains import load_domain
from harnesslab.sim.intents import FIRST, LAST, REF, Act, Intent, current_time_text
from harnesslab.sim.model import FakeModel
from harnesslab.sim.tools import ToolBox as DomainToolBox
from harnesslab.sim.vocab import vocab_of
from harnesslab.sim.world import World, WorldSpec

DOMAIN = load_domain(Path(__file__).resolve().parents[2] / "examples" / "helpdesk" /
                     "helpdesk.domain.yaml")
TZ = timezone(timedelta(hours=8))
START = datetime(2026, 12, 1, 9, 0, tzinfo=TZ)


def world(**data: object) -> World:
    spec = WorldSpec.model_validate({"now": START.isoformat(), "data": data},
                                    context={"domain": True})
    return World(spec, domain=DOMAIN)


def run(tools: DomainToolBox, name: str, args: dict[str, str], user: str = "E-101") -> dict:
    out = tools.run(name, json.dumps(args), user)
    return {"error": out.is_error, **json.loads(out.text)}


def test_volatile_fields_follow_the_timeline_on_the_clock() -> None:
    w = world()
    tools = DomainToolBox(w)
    first = run(tools, "get_ticket", {"ticket_id": "INC-1001"})
    assert (first["status"], first["assignee"], first["due"]) == ("new", "", None)
    w.clock.advance(timedelta(hours=1))
    later = run(tools, "get_ticket", {"ticket_id": "INC-1001"})
    assert (later["status"], later["assignee"], later["due"]) == \
        ("in_progress", "王工", "2026-12-02")
    assert later["as_of"] == "2026-12-01T10:00:00+08:00" and list(later)[1:3] == ["tool", "as_of"]


def test_tools_act_for_the_acting_user() -> None:
    tools = DomainToolBox(world())
    assert run(tools, "get_ticket", {"ticket_id": "INC-2001"})["code"] == "forbidden"
    assert run(tools, "get_ticket", {"ticket_id": "INC-2001"}, user="E-102")["status"] == \
        "resolved"
    refused = run(tools, "get_employee", {"user_id": "E-102"})
    assert refused["error"] and refused["code"] == "forbidden"
    own = run(tools, "get_employee", {})
    assert own["user_id"] == "E-101" and own["email"] == "zhang.wei@example.com"
    assert run(tools, "get_ticket", {"ticket_id": "INC-9999"})["code"] == "not_found"
    assert run(tools, "get_ticket", {})["code"] == "bad_request"
    listed = run(tools, "list_tickets", {})
    assert [e["ticket_id"] for e in listed["entries"]] == ["INC-1001", "INC-1002"]
    assert set(listed["entries"][0]) == {"ticket_id", "title", "status"}


def test_the_scenario_data_lays_over_the_domain_data() -> None:
    w = world(ticket={"INC-3001": {"owner": "E-102", "title": "打印机卡纸", "status": "new"}})
    assert "INC-3001" in w.ids() and "INC-1001" in w.ids()
    assert w.private_values("E-101") == ("zhang.wei@example.com", "8101")
    assert w.offered() == ("get_ticket", "list_tickets", "get_employee", "search_kb")
    assert w.max_age("get_ticket") == timedelta(hours=2) and w.max_age("get_employee") is None


def test_schemas_name_the_key_and_user_arguments() -> None:
    by_name = {s.name: json.loads(s.json) for s in DomainToolBox(world()).schemas()}
    params = by_name["get_ticket"]["function"]["parameters"]
    assert params["required"] == ["ticket_id"] and set(params["properties"]) == \
        {"ticket_id", "user_id"}
    assert "INC-1001" in params["properties"]["ticket_id"]["description"]


# --- the fake model ---------------------------------------------------------------------------

STATUS = "INC-1001 现在什么状态？"
WHO = "那谁在处理？"
LIST = "我有哪些工单？"
FIRST_Q = "第一个工单是什么状态？"
LAST_Q = "最后一个呢，谁在处理？"
BY_TITLE = "显示器那个工单谁在处理？"
MAIL = "我的邮箱是什么？"
LEXICON = {
    STATUS: Intent(Act.ASK, entity="ticket", id="INC-1001", field="status"),
    WHO: Intent(Act.ASK, entity="ticket", id=REF, field="assignee"),
    LIST: Intent(Act.LIST, entity="ticket"),
    FIRST_Q: Intent(Act.ASK, entity="ticket", id=FIRST, field="status"),
    LAST_Q: Intent(Act.ASK, entity="ticket", id=LAST, field="assignee"),
    BY_TITLE: Intent(Act.ASK, entity="ticket", id="@title:显示器闪屏", field="assignee"),
    MAIL: Intent(Act.ASK, entity="user", field="email"),
}


def model() -> FakeModel:
    return FakeModel(LEXICON, domain=DOMAIN, max_ages={"get_ticket": timedelta(hours=2)},
                     zone=TZ)


def ask(messages: list[Message], tools: DomainToolBox | None = None, now: datetime = START
        ) -> tuple[str | None, dict, list[Message]]:
    """One turn to its end: the model's tool calls run by ``tools``; the answer, the last
    annotations and the messages."""
    tools = tools or DomainToolBox(world())
    m = model()
    msgs = list(messages)
    for _ in range(4):
        req = Request(system=current_time_text(now), messages=tuple(msgs),
                      tools=tools.schemas())
        reply = m.reply(req)
        msgs.append(Message("assistant", reply.blocks))
        calls = [b for b in reply.blocks if isinstance(b, ToolCallBlock)]
        if not calls:
            text = "".join(b.text for b in reply.blocks if isinstance(b, TextBlock))
            return text, dict(reply.annotations), msgs
        for c in calls:
            out = tools.run(c.name, c.input, "E-101")
            msgs.append(Message("user", (ToolResultBlock(c.id, c.name, out.text,
                                                         is_error=out.is_error),)))
    raise AssertionError("no answer")


def user(text: str) -> Message:
    return Message("user", (TextBlock(text),))


def test_ask_looks_up_and_states_the_field() -> None:
    text, ann, msgs = ask([user(STATUS)])
    assert text is not None and text.startswith("工单 INC-1001 的状态：new。")
    assert ann["resolved"] == {"ticket": "INC-1001"} and ann["cited"]["tool"] == "get_ticket"
    text, ann, _ = ask([*msgs, user(WHO)])
    # No assignee at 09:00: the whole result says so, and so does the answer.
    assert text is not None and text.startswith("工单 INC-1001 目前没有处理人。")
    assert ann["resolved"] == {"ticket": "INC-1001"} and "unable" not in ann


def test_a_follow_up_refers_to_the_ticket_discussed_and_a_fresh_fact_is_not_asked_again() -> None:
    tools = DomainToolBox(world())
    tools.world.clock.advance(timedelta(hours=1))
    now = START + timedelta(hours=1)
    _, _, msgs = ask([user(STATUS)], tools, now)
    text, ann, _ = ask([*msgs, user(WHO)], tools, now)
    assert text is not None and "王工" in text and ann["reason"] == "fresh_fact"
    # Three hours on, the status (volatile, max_age 2h) is stale: looked up again.
    tools.world.clock.advance(timedelta(hours=3))
    text, ann, _ = ask([*msgs, user(WHO)], tools, now + timedelta(hours=3))
    assert ann["reason"] == "fact_after_turn"
    # The control: with nothing visible to refer to, the model asks which ticket.
    text, ann, _ = ask([user(WHO)], tools, now)
    assert ann["kind"] == "clarify" and text == "请问您指的是哪个工单？"


def test_a_non_volatile_field_is_never_stale() -> None:
    tools = DomainToolBox(world())
    _, _, msgs = ask([user(MAIL)], tools)
    text, ann, _ = ask([*msgs, user(MAIL)], tools, START + timedelta(days=30))
    assert text is not None and "zhang.wei@example.com" in text and ann["reason"] == "fresh_fact"


def test_first_last_and_by_field_resolve_from_the_visible_list() -> None:
    tools = DomainToolBox(world())
    text, _, msgs = ask([user(LIST)], tools)
    assert text is not None and text.startswith("您共有 2 个工单：INC-1001（VPN 连不上，new），"
                                                "INC-1002（显示器闪屏，in_progress）。")
    assert ask([*msgs, user(FIRST_Q)], tools)[1]["resolved"] == {"ticket": "INC-1001"}
    assert ask([*msgs, user(LAST_Q)], tools)[1]["resolved"] == {"ticket": "INC-1002"}
    assert ask([*msgs, user(BY_TITLE)], tools)[1]["resolved"] == {"ticket": "INC-1002"}
    # Without the list in view, none of them resolves.
    for q in (FIRST_Q, LAST_Q, BY_TITLE):
        assert ask([user(q)], tools)[1]["kind"] == "clarify"


@pytest.mark.parametrize(("tid", "why"), [("INC-2001", "forbidden"), ("INC-9999", "not_found")])
def test_a_failed_lookup_is_said_with_its_reason(tid: str, why: str) -> None:
    q = f"{tid} 现在什么状态？"
    lex = {q: Intent(Act.ASK, entity="ticket", id=tid, field="status")}
    m = FakeModel(lex, domain=DOMAIN, zone=TZ)
    tools = DomainToolBox(world())
    msgs = [user(q)]
    reply = m.reply(Request(system="", messages=tuple(msgs), tools=tools.schemas()))
    call = reply.blocks[0]
    assert isinstance(call, ToolCallBlock) and json.loads(call.input) == {"ticket_id": tid}
    out = tools.run(call.name, call.input, "E-101")
    msgs += [Message("assistant", reply.blocks),
             Message("user", (ToolResultBlock(call.id, call.name, out.text, is_error=True),))]
    answer = m.reply(Request(system="", messages=tuple(msgs), tools=tools.schemas()))
    assert answer.annotations["unable"] == why and tid in answer.blocks[0].text  # type: ignore[union-attr]


def test_its_own_answers_read_back_as_facts_for_a_summary_of_answers_only() -> None:
    """A summary call that quotes the answers but not the tool results (agno's) keeps the
    facts the answers state, in the fake model's own words; another wording is not read."""
    from harnesslab.sim.prose import prose_facts

    text = ("工单 INC-1001 的处理人：王工。以上信息来自 2026-12-01T10:00:00+08:00 的查询结果。\n"
            "Ticket INC-1002: status is in_progress.\nINC-1001 is handled by 王工.")
    facts = prose_facts(text, vocab_of(DOMAIN))
    assert [(f.tool, f.key, dict(f.fields)) for f in facts] == [
        ("get_ticket", "INC-1001", {"assignee": "王工", "as_of": "2026-12-01T10:00:00+08:00"}),
        ("get_ticket", "INC-1002", {"status": "in_progress"})]
    assert facts[0].as_of == datetime(2026, 12, 1, 10, 0, tzinfo=TZ) and facts[1].as_of is None


def test_a_fact_stating_other_fields_only_is_looked_up_again() -> None:
    """A summary's tag that kept the assignee says nothing of the status: the model looks the
    status up rather than saying it could not check; the tag answers the assignee."""
    tag = ("[fact:get_ticket ticket_id=INC-1001 assignee=王工 "
           "as_of=2026-12-01T10:00:00+08:00]")
    now = START + timedelta(hours=1)
    m = model()
    for question, kind in ((STATUS, "tool_call"), (WHO, "answer")):
        req = Request(system=current_time_text(now), summary=tag,
                      messages=(user(question),), tools=DomainToolBox(world()).schemas())
        assert m.reply(req).annotations["kind"] == kind, question


def test_the_bundled_worlds_short_form_agrees_with_its_domain_file() -> None:
    """A scenario's world.orders (the short form's schema) takes the statuses the domain file
    declares, and the id patterns the reader uses are the file's."""
    from typing import get_args

    from harnesslab.sim.domain import bundled_domain
    from harnesslab.sim.intents import ID_PATTERNS
    from harnesslab.sim.world import OrderStatus

    d = bundled_domain("commerce")
    assert list(get_args(OrderStatus)) == d.types["order"].fields["status"].values
    assert d.patterns == ID_PATTERNS
    found = d.patterns["order"].search("PO-7731 O-7731")
    assert found is not None and found.group(0) == "O-7731"
