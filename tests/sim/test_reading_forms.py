"""The fake model reads what a model would read (docs/understanding.md): decorations a real
harness adds (around the user's words, to the statement of the time, to the summary
instruction) leave its reading of every request the bundled suite sends unchanged; each form
the contract names is read, and a copy without it is read as missing."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.messages import HintBlock, Message, Request, TextBlock, ToolResultBlock, ToolSchema
from harnesslab.record.format import Record
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sim.model import FakeModel, SummarizerProfile
from harnesslab.sim.reading import View, current_index
from harnesslab.sim.summarizer import summary_request
from harnesslab.sim.times import _stated_times, stated_times

# --- decorations ------------------------------------------------------------------------------

# Around the user's words: none adds an id, a constraint phrase, a tag or a time.
USER_DECORATIONS: dict[str, Callable[[str], str]] = {
    "prefix": lambda q: "User: " + q,
    "speaker": lambda q: "【客户】" + q,
    "suffix": lambda q: q + "\n\n(sent from the mobile app)",
    "wrapper": lambda q: f"<user_query>\n{q}\n</user_query>",
    "template": lambda q: f"The customer wrote:\n\n{q}\n\nAnswer the customer's message above.",
    "block-before": lambda q: "Relevant notes from earlier sessions:\n- none on file\n\n" + q,
    "block-after": lambda q: q + "\n\n<system-reminder>Use the tools when you need live "
                             "data.</system-reminder>",
    # Serialised as JSON by json.dumps' default: non-ASCII escaped (\u90a3\u6211...).
    "json-escaped": lambda q: json.dumps({"type": "user_message", "message": q}),
    # Rendered by a template that escapes HTML (Semantic Kernel's prompt templates).
    "html-escaped": lambda q: html.escape(f"<message role='user'>{q}</message>"),
}
_TAG = re.compile(r"<current-time>([^<\n]+)</current-time>")


def _zh(t: datetime) -> str:
    # Seconds written when there are any: a form that dropped them would state another time
    # (time-hint-interval-boundary-zh restates the time at 10:00:10).
    secs = f":{t.second:02d}" if t.second else ""
    return f"{t.year}年{t.month}月{t.day}日 {t.hour:02d}:{t.minute:02d}{secs}"


TIME_FORMS: dict[str, Callable[[datetime], str]] = {
    "current-time": lambda t: f"Current time: {t.isoformat()}",
    "the-current-date": lambda t: f"The current date and time is {t.isoformat(sep=' ')}.",
    "zh-now": lambda t: f"现在是 {t.isoformat()}",
    "zh-date": lambda t: f"当前时间：{_zh(t)}",
    "rfc2822": lambda t: "Current time: " + t.strftime("%a, %d %b %Y %H:%M:%S %z"),
    "no-zone": lambda t: f"Current time: {t.replace(tzinfo=None).isoformat()}",
    "js": lambda t: t.strftime("Current time: %a %b %d %Y %H:%M:%S GMT%z (Local Time)"),
    "ctime": lambda t: t.strftime("Current time: %a %b %d %H:%M:%S %Y"),
    "12-hour": lambda t: t.strftime("Current time: %Y-%m-%d %I:%M:%S %p %z"),
    "time-first": lambda t: t.strftime("Now: %I:%M:%S %p on %A, %B %d, %Y (UTC%z)"),
    "day-first": lambda t: t.strftime("Local time: %d.%m.%Y %H:%M:%S %z"),
    "json-field": lambda t: json.dumps({"time": t.strftime("%Y-%m-%d %I:%M:%S %p %Z%z")}),
    "html-escaped-tag": lambda t: html.escape(f"<current-time>{t.isoformat()}</current-time>"),
}


def decorate_user(r: Request, index: int, how: Callable[[str], str]) -> Request:
    m = r.messages[index]
    blocks = list(m.content)
    k = next(n for n, b in enumerate(blocks) if isinstance(b, TextBlock))
    blocks[k] = TextBlock(how(m.plain_text()))
    msgs = list(r.messages)
    msgs[index] = replace(m, content=tuple(blocks))
    return replace(r, messages=tuple(msgs))


def restate_time(r: Request, form: Callable[[datetime], str]) -> Request:
    """Every ``<current-time>`` tag rewritten in another form (the zone's own offset kept)."""
    def sub(text: str) -> str:
        return _TAG.sub(lambda m: form(datetime.fromisoformat(m.group(1))), text)

    def block(b: Any) -> Any:
        if isinstance(b, TextBlock):
            return TextBlock(sub(b.text))
        if isinstance(b, HintBlock) and isinstance(b.hint, str):
            return replace(b, hint=sub(b.hint))
        if isinstance(b, HintBlock):
            return replace(b, hint=tuple(TextBlock(sub(p.text)) if isinstance(p, TextBlock)
                                         else p for p in b.hint))
        return b

    return replace(r, system=sub(r.system), summary=sub(r.summary),
                   messages=tuple(replace(m, content=tuple(block(b) for b in m.content))
                                  for m in r.messages))


# --- what is compared -------------------------------------------------------------------------

def reading(ann: dict[str, Any]) -> dict[str, Any]:
    """A reply's annotations without what depends on character offsets."""
    out = {k: v for k, v in ann.items() if k not in ("cited", "stale")}
    for k in ("cited", "stale"):
        if isinstance(ann.get(k), dict):
            out[k] = {kk: vv for kk, vv in ann[k].items() if kk != "position"}
    return out


def models(rec: Record) -> FakeModel:
    sc = load_scenario(Path(rec.header["scenario_file"]))
    return FakeModel(sc.intents(), seed=rec.header["seed"],
                     summarizer=SummarizerProfile(**rec.header["summarizer"]),
                     extractor=SummarizerProfile(**rec.header["extractor"]),
                     max_ages={t: None if s is None else timedelta(seconds=s)
                               for t, s in rec.header["max_ages"].items()},
                     phrases={k: tuple(v) for k, v in rec.header["phrases"].items()},
                     zone=sc.world.now.tzinfo)


def suite_requests(out: Path) -> list[tuple[FakeModel, Request, dict[str, Any]]]:
    found = []
    for path in sorted(out.rglob("seed0.jsonl")):
        rec = Record.load(path)
        if rec.header.get("harness_name") != "reference":
            continue
        model = models(rec)
        for e in rec.of_type("model_call"):
            if "request" in e and e.get("annotations"):
                found.append((model, rec.request(e["request"]), e["annotations"]))
    return found


def test_decorations_leave_the_reading_of_every_suite_request_unchanged(
        suite: tuple[Path, list[Any]]) -> None:
    requests = suite_requests(suite[0])
    tried = {"user": 0, "time": 0, "summary": 0}
    for n, (model, r, ann) in enumerate(requests):
        base = reading(dict(model.reply(r).annotations))
        assert base == reading(ann)  # the record's own reading, re-read
        view = View(r, model._lexicon, model._phrases)
        index, asked = view.current()
        found = summary_request(view)
        if asked is not None and found is None and index is not None:
            name = list(USER_DECORATIONS)[n % len(USER_DECORATIONS)]
            got = model.reply(decorate_user(r, index, USER_DECORATIONS[name]))
            assert reading(dict(got.annotations)) == base, name
            tried["user"] += 1
        if _TAG.search(view.text):
            name = list(TIME_FORMS)[n % len(TIME_FORMS)]
            got = model.reply(restate_time(r, TIME_FORMS[name]))
            assert reading(dict(got.annotations)) == base, name
            tried["time"] += 1
        if found is not None and found[0] == "freeform" and index is not None and \
                not view.segment(index).mentions:
            for ask in ("Please summarize the conversation so far.",
                        "请总结一下以上对话，保留订单号。"):
                got = model.reply(decorate_user(r, index, lambda _q, a=ask: a))
                assert reading(dict(got.annotations)) == base, ask
            # ... or in the instructions of a separate call that ends on the model's turn.
            alone = replace(r, system=r.system + "\n\nCondense the conversation below into "
                            "a summary.", messages=r.messages[:index] + r.messages[index + 1:])
            if alone.messages and alone.messages[-1].role != "user":
                assert reading(dict(model.reply(alone).annotations)) == base
            tried["summary"] += 1
    # Never vacuous: each kind of decoration was tried on many requests.
    assert tried["user"] > 100 and tried["time"] > 100 and tried["summary"] >= 1, tried


# --- each form, and its control ---------------------------------------------------------------

LEXICON_FILE = Path(__file__).parents[2] / "harnesslab" / "scenarios" / "followup-after-filler-zh.yaml"
ASK = "帮我查订单 O-1001 为什么还没到，回答简单一点。"
WAIT = "那我明天还要等吗？"


def model() -> FakeModel:
    sc = load_scenario(LEXICON_FILE)
    return FakeModel(sc.intents(), zone=sc.world.now.tzinfo,
                     max_ages={"track_order": timedelta(hours=6)})


TOOLS = (ToolSchema("track_order", '{"type": "function", "function": {"name": "track_order", '
                   '"parameters": {"type": "object", "properties": {"order_id": '
                   '{"type": "string"}}}}}'),)


def track(call: str, as_of: str) -> list[Message]:
    from harnesslab.messages import ToolCallBlock
    return [Message("assistant", (ToolCallBlock(call, "track_order", '{"order_id": "O-1001"}'),)),
            Message("tool", (ToolResultBlock(call, "track_order",
                                             '{"tool": "track_order", "as_of": "' + as_of +
                                             '", "order_id": "O-1001", "status": "in_transit", '
                                             '"eta": "2026-11-30"}'),))]


@pytest.mark.parametrize("stated", [
    "Current time: 2026-11-29T10:00:00+08:00", "Current time: 2026-11-29T10:00:00",
    "Today is 2026-11-29 10:00", "现在是2026年11月29日 10:00", "当前时间：2026-11-29 10:00:00",
    "The current date and time is Sun, 29 Nov 2026 10:00:00 +0800.",
    "Current datetime: 2026-11-29T02:00:00Z", "Current UTC time: 2026-11-29 02:00:00 UTC",
    "[2026-11-29 10:00] ",
    "Based on the previous CONTEXT_SUMMARY, continue with my current message: [2026-11-29 10:00] ",
    # BeeAI's ToolCallingAgent system prompt: "is" and a colon both.
    "The current date and time is: 2026-11-29T02:00:00Z", "现在时间是：2026-11-29 10:00",
    "Today is Sunday, November 29, 2026 10:00 AM.",
    "It is now 2026/11/29 10:00 (Asia/Shanghai).", "当前时间：2026/11/29 10:00:00",
    # JavaScript's Date.toString() and en-US toLocaleString(), C's ctime, a 12-hour clock
    # after an ISO date, the time first, day first with dots, a zone abbreviation.
    "Current time: Sun Nov 29 2026 10:00:00 GMT+0800 (China Standard Time)",
    "Current time: 11/29/2026, 10:00:00 AM", "Current time: Sun Nov 29 10:00:00 2026",
    "Current time: 2026-11-29 10:00 AM", "Now: 10:00 AM on Sunday, November 29, 2026",
    "Local time: 29.11.2026 10:00", "Current time: 2026-11-28 18:00 PST",
    "Current time: 2026-11-29 10:00 CST",
    # Cline's and Roo Code's environment details.
    "<environment_details>\n# Current Time\n11/29/2026, 10:00:00 AM (Asia/Shanghai, UTC+8:00)\n"
    "</environment_details>\n",
    "# Current Time\nCurrent time in ISO 8601 UTC format: 2026-11-29T02:00:00.000Z\n"
    "User time zone: Asia/Shanghai, UTC+8:00\n",
    # OpenClaw's envelope around the user's message.
    "[WhatsApp +8613800000000 +5m Sun 2026-11-29 10:00 GMT+8] "])
def test_now_in_any_common_form_makes_a_day_old_fact_stale(stated: str) -> None:
    old = track("c1", "2026-11-28T10:00:00+08:00")
    r = Request(system="You are a customer-service assistant.", tools=TOOLS,
                messages=(Message.text("user", ASK), *old, Message.text("assistant", "好的"),
                          Message.text("user", stated + WAIT)))
    got = model().reply(r)
    assert datetime.fromisoformat(got.annotations["now"]) == \
        datetime.fromisoformat("2026-11-29T10:00:00+08:00")
    assert got.annotations["reason"] == "stale_fact"
    # The control: without the statement, now is unknown and the old fact is served.
    r = decorate_user(r, len(r.messages) - 1, lambda _q: WAIT)
    got = model().reply(r)
    assert got.annotations["now"] is None and got.annotations["reason"] == "fresh_fact"


@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_message_serialised_as_json_is_read_as_a_model_reads_it(ascii_only: bool) -> None:
    # Letta (MemGPT) sends each user message as JSON with the time it was sent; json.dumps
    # escapes the Chinese unless told not to, and a model reads the escapes as the text.
    old = track("c1", "2026-11-28T10:00:00+08:00")

    def ask(text: str) -> dict[str, Any]:
        r = Request(system="You are a customer-service assistant.", tools=TOOLS,
                    messages=(Message.text("user", ASK), *old, Message.text("assistant", "好的"),
                              Message.text("user", text)))
        return dict(model().reply(r).annotations)

    def packed(message: str, **more: str) -> str:
        return json.dumps({"type": "user_message", "message": message, **more},
                          ensure_ascii=ascii_only)

    got = ask(packed(WAIT, time="2026-11-29 10:00:00 AM CST+0800"))
    assert got["now"] == "2026-11-29T10:00:00+08:00" and got["reason"] == "stale_fact"
    # Controls: without the field now is unknown; another question's escapes are not this one.
    assert ask(packed(WAIT))["reason"] == "fresh_fact"
    assert ask(packed(WAIT[:-2] + "呀？"))["reason"] == "utterance_not_found"


def test_text_a_template_escaped_as_html_is_read_as_its_characters() -> None:
    tag = html.escape("<current-time>2026-11-29T10:00:00+08:00</current-time>")
    assert "<" not in tag
    old = track("c1", "2026-11-28T10:00:00+08:00")

    def ask(system: str) -> dict[str, Any]:
        r = Request(system=system, tools=TOOLS, messages=(
            Message.text("user", ASK), *old, Message.text("assistant", "好的"),
            Message.text("user", WAIT)))
        return dict(model().reply(r).annotations)

    got = ask("You are a customer-service assistant. " + tag)
    assert got["now"] == "2026-11-29T10:00:00+08:00" and got["reason"] == "stale_fact"
    # The control: a reference that is no character reference is no tag.
    assert ask("You are a customer-service assistant. " + tag.replace("&lt;", "&lt ", 1))[
        "now"] is None


def test_a_time_in_a_tool_result_is_not_now() -> None:
    r = Request(system="", messages=(Message.text("user", ASK),
                                     *track("c1", "Current time: 2026-11-29T10:00:00+08:00")))
    assert model().reply(r).annotations["now"] is None


@pytest.mark.parametrize("ask", [
    "Summarize the conversation above.", "Please condense this chat history.",
    "Write a concise summary of the conversation so far.", "Recap the discussion for handoff.",
    "请总结以上对话。", "概括一下之前的对话内容", "请把对话压缩成一段摘要"])
def test_a_summary_asked_in_the_instructions_of_a_separate_call(ask: str) -> None:
    msgs = (Message.text("user", ASK), *track("c1", "2026-11-29T09:00:00+08:00"),
            Message.text("assistant", "订单 O-1001 在途，预计 2026-11-30 送达。"))
    got = model().reply(Request(system=ask, messages=msgs))
    assert got.annotations["kind"] == "summary"
    (b,) = got.blocks
    assert isinstance(b, TextBlock) and "O-1001" in b.text and "[constraint:brevity]" in b.text
    # Asked in the last user message instead, in the same words: the same summary.
    again = model().reply(Request(system="", messages=(*msgs, Message.text("user", ask))))
    assert again.annotations["kind"] == "summary"
    # The control: a system prompt that presents a summary asks for none.
    plain = model().reply(Request(system="Summary of the conversation earlier: none.",
                                  messages=msgs))
    assert plain.annotations["kind"] != "summary"


def test_a_summary_prompt_that_quotes_the_transcript_summarises_it() -> None:
    transcript = f"<messages>\nHuman: {ASK}\nAI: 订单 O-1001 在途。\n</messages>"
    r = Request(system="", messages=(Message.text(
        "user", "Summarize the messages below.\n" + transcript),))
    got = model().reply(r)
    assert got.annotations["kind"] == "summary"
    assert "O-1001" in got.blocks[0].text  # type: ignore[union-attr]
    assert "[constraint:brevity]" in got.blocks[0].text  # type: ignore[union-attr]


def test_a_presented_summary_in_any_role_is_read() -> None:
    summary = model().reply(Request(system="Summarize the conversation.", messages=(
        Message.text("user", ASK), *track("c1", "2026-11-29T09:00:00+08:00"),
        Message.text("assistant", "在途")))).blocks[0].text  # type: ignore[union-attr]
    for role, words in (("system", "Summary of the conversation earlier: "),
                        ("user", "Here is a summary of the conversation to date:\n\n"),
                        ("assistant", "以下是之前对话的总结：\n")):
        r = Request(system="", messages=(Message.text(role, words + summary),  # type: ignore[arg-type]
                                         Message.text("user", WAIT)))
        got = model().reply(r).annotations
        assert got["resolved"] == {"order": "O-1001"} and got["constraints"] == ["brevity"], role
    # The control: without the summary the follow-up has no referent.
    got = model().reply(Request(system="", messages=(Message.text("user", WAIT),))).annotations
    assert got["reason"] == "unresolved_ref"


def test_a_reminder_after_the_question_leaves_it_the_question() -> None:
    r = Request(system="", messages=(Message.text("user", ASK), Message.text(
        "user", "<system-reminder>Be helpful.</system-reminder>")))
    assert model().reply(r).annotations["utterance"] == ASK
    # ... but a question the model already answered is not asked again.
    r = Request(system="", messages=(Message.text("user", ASK), Message.text("assistant", "ok"),
                                     Message.text("user", "<system-reminder>x</system-reminder>")))
    assert model().reply(r).annotations["reason"] == "utterance_not_found"


def test_auxiliary_calls_are_answered_as_such() -> None:
    msgs = (Message.text("user", ASK), Message.text("assistant", "在途"))
    title = model().reply(Request(system="Generate a short title for this conversation.",
                                  messages=msgs))
    assert title.annotations["kind"] == "auxiliary" and title.annotations["form"] == "title"
    memory = model().reply(Request(system="Extract memories about the user from the "
                                   "conversation.", messages=msgs))
    assert memory.annotations["kind"] == "summary" and memory.annotations["form"] == "memory"
    assert "[constraint:brevity]" in memory.blocks[0].text  # type: ignore[union-attr]
    other = model().reply(Request(system="Classify the conversation's sentiment.",
                                  messages=msgs))
    assert other.annotations["kind"] == "unreadable"
    # The control: the same request with a question to answer answers it.
    asked = model().reply(Request(system="Generate a short title for this conversation.",
                                  messages=(*msgs, Message.text("user", WAIT))))
    assert asked.annotations["kind"] in ("tool_call", "answer")


def test_current_index_is_the_last_user_message() -> None:
    r = Request(system="", messages=(Message.text("user", "a"), Message.text("assistant", "b")))
    assert current_index(r) == 0


def test_a_summary_asked_in_a_json_schema_is_answered_in_it() -> None:
    import json

    from harnesslab.adapters.openai_wire import request_from_openai

    schema = {"type": "object", "properties": {"summary": {"type": "string"},
                                               "topics": {"type": "array"}}}
    body = {"messages": [
        {"role": "system", "content": "Analyze the conversation and provide a concise summary."
                                      f"<conversation>User: {ASK}</conversation>"},
        {"role": "user", "content": "Provide the summary of the conversation."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "S", "schema": schema}}}
    got = model().reply(request_from_openai(body))
    answer = json.loads(got.blocks[0].text)  # type: ignore[union-attr]
    assert set(answer) == {"summary", "topics"} and answer["topics"] == []
    # The conversation quoted in the system prompt is what is summarised.
    assert "O-1001" in answer["summary"] and "[constraint:brevity]" in answer["summary"]
    # In JSON mode, with the keys named in the prompt: the summary in the one named like it.
    mode = {**body, "response_format": {"type": "json_object"}, "messages": [
        body["messages"][0], {"role": "user", "content": "Provide the summary of the "
                              "conversation. The JSON has the keys `summary` and `title`."}]}
    moded = json.loads(model().reply(request_from_openai(mode)).blocks[0].text)  # type: ignore[union-attr]
    assert moded == {"summary": answer["summary"], "title": ""}
    # The control: without response_format the same summary comes as text.
    del body["response_format"]
    plain = model().reply(request_from_openai(body)).blocks[0].text  # type: ignore[union-attr]
    assert plain == answer["summary"]


def test_a_tool_result_quoted_as_text_is_a_fact() -> None:
    quoted = ('tool: {"tool": "track_order", "as_of": "2026-11-29T09:00:00+08:00", '
              '"order_id": "O-1001", "status": "in_transit", "eta": "2026-11-30"}')
    r = Request(system="", tools=TOOLS, messages=(
        Message.text("user", f"Transcript so far: user: {ASK}\n{quoted}"),
        Message.text("assistant", "在途"), Message.text("user", WAIT)))
    got = model().reply(r).annotations
    assert got["kind"] == "answer" and got["cited"]["tool"] == "track_order"
    # The control: cut (no longer JSON), the quoted result states nothing.
    cut = without_text(r, '"eta": "2026-11-30"}', '"eta": "2026-')
    assert model().reply(cut).annotations["kind"] == "tool_call"


def without_text(r: Request, old: str, new: str) -> Request:
    return replace(r, messages=tuple(
        replace(m, content=tuple(TextBlock(b.text.replace(old, new)) if isinstance(b, TextBlock)
                                 else b for b in m.content)) for m in r.messages))


@pytest.mark.parametrize("tag", ["current_date", "current-date", "current_time",
                                 "current_datetime", "current-time"])
def test_a_current_time_tag_under_its_kin_names_is_read(tag: str) -> None:
    # Codex CLI's <environment_context> states <current_date>2026-11-29</current_date>.
    zone = timezone(timedelta(hours=8))
    text = f"<environment_context>\n  <{tag}>2026-11-29</{tag}>\n</environment_context>"
    assert [t for _, t in stated_times(text, zone)] == [datetime(2026, 11, 29, tzinfo=zone)]
    # Controls: the same date in running prose, or under a tag that is no statement of now.
    assert not list(stated_times("the parcel left on 2026-11-29 from 杭州", zone))
    assert not list(stated_times("the parcel left on 2026/11/29 10:00 from 杭州", zone))
    assert not list(stated_times(f"<{tag}>2026-11-29</ship_date>", zone))
    assert not list(stated_times("<ship_date>2026-11-29</ship_date>", zone))


# Pieces of statements of the time: labels, tags, dates in every form, digits ASCII and not.
TIME_BITS = ["Current time: ", "现在是", "<current-time>", "</current-time>", "<current_date>",
             "</current_date>", "2026-11-29 10:00:00+08:00", "２０２６-１１-２９ １０:００",
             "2026年11月29日 下午3点", "November 29, 2026 10:00 AM", "Sun, 29 Nov 2026 10:00:00 +0800",
             "2026/11/29 10:00", "now", "today is ", "\n", " ", "tomorrow", "下午", "[", "١٢"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TIME_BITS), max_size=6))
def test_a_text_without_a_digit_is_not_searched_for_times(bits: list[str]) -> None:
    """``stated_times`` skips a text with no digit (``\\d``, any script's): what it yields is what
    the whole search yields, for texts with and without digits of every kind."""
    text = "".join(bits)
    assert list(stated_times(text, UTC)) == list(_stated_times(text, UTC))


SK_ASK = ("\nProvide a concise and complete summarization of the entire dialog that does not "
          "exceed 5 sentences.\n\nThis summary must always:\n- Consider both user and assistant "
          "interactions\n")


def test_a_summary_asked_in_a_system_message_after_the_conversation() -> None:
    # Semantic Kernel's summarization reducer: the old messages, then its instructions as a
    # last system message (tool calls and results left out by default).
    msgs = (Message.text("user", ASK), Message.text("assistant", "订单 O-1001 在途，预计 2026-11-30 送达。"))
    got = model().reply(Request(system="", messages=(*msgs, Message.text("system", SK_ASK))))
    assert got.annotations["kind"] == "summary"
    (b,) = got.blocks
    assert isinstance(b, TextBlock) and "O-1001" in b.text and "[constraint:brevity]" in b.text
    # The control: a question asked after those instructions is the turn's, and answered.
    asked = model().reply(Request(system="", tools=TOOLS, messages=(
        *msgs, Message.text("system", SK_ASK), Message.text("user", WAIT))))
    assert asked.annotations["kind"] != "summary"
    assert asked.annotations["utterance"] == WAIT


OBSERVED = ('{"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00", "order_id": '
            '"O-1001", "status": "in_transit", "eta": "2026-11-30"}')


def observed(result: str) -> Request:
    """The question, then a lookup as smolagents hands it back: the tool call as assistant
    text, its result as a user message."""
    called = Message.text("assistant", "Calling tools:\n[{'id': 'call_1', 'type': 'function', "
                          "'function': {'name': 'track_order', 'arguments': {'order_id': "
                          "'O-1001'}}}]")
    return Request(system="Current time: 2026-11-28T10:30:00+08:00", tools=TOOLS, messages=(
        Message.text("user", "New task:\n" + ASK), called,
        Message.text("user", "Observation:\n" + result)))


def test_a_tool_call_written_as_text_leaves_the_turn_under_way() -> None:
    r = observed(OBSERVED)
    got = model().reply(r).annotations
    assert (got["kind"], got["utterance"]) == ("answer", ASK)
    assert got["cited"]["key"] == "O-1001"
    # The control: an observation that quotes no result leaves the assistant's text an
    # answer, and no question open after it.
    cut = without_text(r, OBSERVED, "(nothing)")
    assert model().reply(cut).annotations["reason"] == "utterance_not_found"


def test_an_id_given_as_an_example_is_no_referent() -> None:
    # A framework that writes the tools' documentation into its prompt (smolagents): the
    # bench's own parameter descriptions give example ids.
    doc = ("- track_order: Look up an order\n    Takes inputs: {'order_id': {'type': 'string', "
           "'description': 'The order id, e.g. O-1001'}}")
    got = model().reply(Request(system=doc, tools=TOOLS, messages=(Message.text("user", WAIT),)))
    assert got.annotations["reason"] == "unresolved_ref"
    # The control: an order the prompt states as a fact is one.
    stated = model().reply(Request(system="The customer's open order is O-1001.", tools=TOOLS,
                                   messages=(Message.text("user", WAIT),)))
    assert stated.annotations["resolved"] == {"order": "O-1001"}


def test_a_failed_result_written_as_text_is_the_turns_failed_lookup() -> None:
    # A failed result names no order and its call is text: after the question it is this
    # turn's own lookup failing, and the model says it could not check (not a call again).
    failed = ('{"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00", "error": '
              '"track_order is temporarily unavailable; try again later", "code": "unavailable"}')
    r = observed(failed)
    got = model().reply(r).annotations
    assert (got["kind"], got["reason"]) == ("answer", "fact_after_turn")
    assert got["cited"]["error"]
    # The control: the same failure before the question (an earlier turn's) is no answer to
    # this one: the model looks the order up.
    earlier = Request(system=r.system, tools=TOOLS, messages=(
        Message.text("user", "Observation:\n" + failed), Message.text("assistant", "好的"),
        Message.text("user", ASK)))
    assert model().reply(earlier).annotations["kind"] == "tool_call"


def looked_up(content: str) -> dict[str, Any]:
    """The fake model's reading after a lookup of O-1001 whose result the tool message holds
    as ``content``."""
    from harnesslab.messages import ToolCallBlock

    r = Request(system="Current time: 2026-11-28T10:30:00+08:00", tools=TOOLS, messages=(
        Message.text("user", ASK),
        Message("assistant", (ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}'),)),
        Message("tool", (ToolResultBlock("c1", "track_order", content),))))
    return dict(model().reply(r).annotations)


def test_a_result_a_framework_wrapped_under_one_key_is_read() -> None:
    # Google ADK returns a tool's string as {"result": "<the string>"}: the bench's JSON inside.
    got = looked_up(json.dumps({"result": OBSERVED}))
    assert got["reason"] == "fact_after_turn" and "unable" not in got
    assert got["cited"]["as_of"] == "2026-11-28T10:00:00+08:00"
    # The control: a wrapper around anything else states no fact (the lookup failed).
    other = looked_up(json.dumps({"result": "ok"}))
    assert other["unable"] == "failed"


@pytest.mark.parametrize("form", ["repr", "repr-wrapped", "repr-ascii-json-inside"])
def test_a_result_written_as_a_python_literal_is_read(form: str) -> None:
    # LlamaIndex's ToolOutput holds str() of what the tool returned; a harness that parses the
    # JSON and formats the dict sends the same: single quotes, True and None.
    data = {**json.loads(OBSERVED), "signed": True, "note": None}
    content = {"repr": repr(data), "repr-wrapped": repr({"result": data}),
               "repr-ascii-json-inside": repr({"result": json.dumps(data)})}[form]
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)  # no JSON: read as the literal it is
    got = looked_up(content)
    assert got["reason"] == "fact_after_turn" and "unable" not in got
    assert got["cited"]["as_of"] == "2026-11-28T10:00:00+08:00"
    # The control: a literal that is no result (a prose line, a call) states no fact.
    assert looked_up("track_order(order_id='O-1001') -> in transit")["unable"] == "failed"


def _mcp_forms(js: str, data: dict[str, Any]) -> dict[str, str]:
    """A bench result as harnesses hand MCP's CallToolResult on to the model."""
    part = {"type": "text", "text": js, "annotations": None, "meta": None}
    return {
        "content-parts-json": json.dumps([part]),
        "call-result-json": json.dumps({"meta": None, "content": [part],
                                        "structuredContent": None, "isError": False}),
        "structured": json.dumps({"content": [part], "structuredContent": data,
                                  "isError": False}, ensure_ascii=False),
        # str() of the SDK's pydantic objects: the JSON raw inside a Python string.
        "pydantic-str": f"[TextContent(type='text', text='{js}', annotations=None, meta=None)]",
        "prefixed": "Observation: " + js,
    }


@pytest.mark.parametrize("form", list(_mcp_forms("{}", {})))
def test_a_result_handed_on_as_mcp_content_is_read(form: str) -> None:
    got = looked_up(_mcp_forms(OBSERVED, json.loads(OBSERVED))[form])
    assert got["reason"] == "fact_after_turn" and "unable" not in got
    assert got["cited"]["as_of"] == "2026-11-28T10:00:00+08:00"
    # The control: the same wrapping around a result cut short states no fact.
    cut = _mcp_forms(OBSERVED[:60], {"status": "ok"})[form]
    assert looked_up(cut)["unable"] == "failed"


def test_the_records_facts_are_read_as_the_fake_model_reads_them() -> None:
    from harnesslab.messages import ToolResultBlock as R
    from harnesslab.record.format import tool_facts

    data = json.loads(OBSERVED)
    for content in (OBSERVED, repr(data), json.dumps({"result": OBSERVED}), repr({"result": data}),
                    *_mcp_forms(OBSERVED, data).values()):
        assert tool_facts(Message("tool", (R("c1", "track_order", content),))) == (data,), content
    assert tool_facts(Message("tool", (R("c1", "track_order", "in transit"),))) == ()


def test_a_reference_resolves_from_the_models_own_earlier_answer() -> None:
    """Griptape keeps a run's answer but not its tool results: "耳机那个" (the headphones one)
    resolves from the order list the model's own answer stated, as a real model's would; the
    fact is not answered with (the model looks the order up). The control: without that answer
    nothing visible resolves it and the model asks which order."""
    sc = load_scenario(bundled_dir() / "order-by-item-zh.yaml")
    fm = FakeModel(sc.intents(), zone=sc.world.now.tzinfo)
    said = Message.text("assistant", "您共有 2 个订单：O-2001（滑板、护具），O-2010（耳机）。")
    r = Request(system="", tools=TOOLS, messages=(
        Message.text("user", "我最近有哪些订单？"), said, Message.text("user", "耳机那个到哪了？")))
    got = fm.reply(r)
    assert got.annotations["resolved"] == {"order": "O-2010"}
    assert got.annotations["kind"] == "tool_call"
    r = replace(r, messages=(r.messages[0], Message.text("assistant", "好的。"), r.messages[2]))
    got = fm.reply(r)
    assert got.annotations["kind"] == "clarify"
    assert got.annotations["reason"] == "unresolved_ref"


def test_a_rolling_summary_prompt_of_small_talk_keeps_the_earlier_summary() -> None:
    """BeeAI's SummarizeMemory quotes its last summary and the new messages in one prompt; when
    the new messages are small talk only, the earlier summary's goal and ids are still what the
    prompt quotes, and a summary keeps them (the control: the same prompt without them is
    summarised to nothing)."""
    earlier = "system: [summary]\n[goal] 用户询问订单 O-1001 的物流状态\nentities: O-1001\n"
    ask = ("Summarize the following conversation. Be concise but include all key information."
           "\n\nPrevious messages:\n{}user: 我家楼下的快递柜经常满，挺麻烦的。\n\nSummary:")
    got = model().reply(Request(system="", messages=(
        Message.text("user", ask.format(earlier)),)))
    text = "".join(b.text for b in got.blocks if isinstance(b, TextBlock))
    assert got.annotations["kind"] == "summary"
    assert "[goal] 用户询问订单 O-1001 的物流状态" in text and "O-1001" in text.split("\n")[-1]
    got = model().reply(Request(system="", messages=(Message.text("user", ask.format("")),)))
    assert "O-1001" not in "".join(b.text for b in got.blocks if isinstance(b, TextBlock))
