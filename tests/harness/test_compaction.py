"""Compaction strategies (semantics spec §2.3, §2.6, §2.7, §7; design 3.5): AgentScope's
structured summary and its failure paths, offload, truncate, pinned and codex."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harness.compaction import STRATEGIES, make_strategy, register
from harnesslab.harness.prompts import DEFAULT, SUMMARY_TOOL
from harnesslab.messages import (
    HintBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    message_to_dict,
)
from harnesslab.sim.service import get_profile
from harnesslab.sim.summarizer import REFUSAL, SummarizerProfile
from harnesslab.tokens import Bytes4Rule
from tests.harness.support import EXPAND, SHORT, TERSE, THANKS, WHERE, WHERE_2, Rig, layout, rig

TRUNCATED = "<system-info>Some earlier messages were truncated for limited context.</system-info>"
FAILING = SummarizerProfile(profile="failing")
RES_1001 = ('{"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00", "order_id": "O-1001", '
            '"status": "in_transit", "eta": "2026-11-29", "location": "Shanghai"}')
RES_1002 = ('{"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00", "order_id": "O-1002", '
            '"status": "shipped", "eta": "2026-12-02", "location": "Hangzhou"}')
NEXT = "Continue with the user's next message; look up live status again when needed."
SUMMARY_1 = ("<system-info>Summary of the earlier conversation\n"
             "# Task Overview\n[goal] user asked about the status of O-1001\n\n"
             "# Current State\n[fact:track_order order_id=O-1001 status=in_transit eta=2026-11-29 "
             "as_of=2026-11-28T10:00:00+08:00]\n\n"
             "# Important Discoveries\n\n\n"
             f"# Next Steps\n{NEXT}\n\n"
             "# Context to Preserve\nentities: O-1001</system-info>")


def history() -> list[Message]:
    """Three exchanges as the harness lays them out; 243 estimated tokens with track_order."""
    return [
        Message.text("user", WHERE, id="u1"),
        Message("assistant", (ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}'),
                              ToolResultBlock("c1", "track_order", RES_1001),
                              TextBlock("O-1001 is in transit, due 2026-11-29.")), id="a1"),
        Message.text("user", SHORT, id="u2"),
        Message.text("assistant", "Noted.", id="a2"),
        Message.text("user", WHERE_2, id="u3"),
        Message("assistant", (ToolCallBlock("c2", "track_order", '{"order_id": "O-1002"}'),
                              ToolResultBlock("c2", "track_order", RES_1002),
                              TextBlock("O-1002 shipped.")), id="a3"),
    ]


def loaded(**kw: Any) -> Rig:
    """The history in a harness whose trigger is exactly its estimate (0.5 x 486 = 243) and
    whose reserve (0.4 x 486 = 194.4) keeps the last two exchanges."""
    r = rig(tools=("track_order",), trigger_ratio=0.5, context_size=486, reserve_ratio=0.4,
            **kw)
    r.harness.inject(history())
    assert r.harness.estimate(r.harness.request()) == 243
    return r


def summary_calls(r: Rig) -> list[dict[str, Any]]:
    return r.calls("summary")


def choices(r: Rig) -> list[str | None]:
    return [dict(c["request"].meta).get("tool_choice") for c in r.calls("summary")]


# --- structured ----------------------------------------------------------------------------------

def test_structured_summary_request_and_result() -> None:
    r = loaded()
    h = r.harness
    split = h.split(h.cfg.reserve_tokens)
    assert [m.id for m in split.to_compress] == ["u1", "a1"]
    assert [m.id for m in split.to_keep] == ["u2", "a2", "u3", "a3"]
    assert h.maintain() is True
    (call,) = summary_calls(r)
    req = call["request"]
    # System, (no) old summary, the compressed messages, then one user message holding the
    # compression prompt with the time and the structured-output reminder; one tool.
    assert req.system == h.system
    assert req.summary == ""
    assert req.messages[:-1] == split.to_compress
    assert req.messages[-1].role == "user"
    assert req.messages[-1].content == (
        TextBlock(DEFAULT.compression.replace("{current_time}", "2026-11-28T10:00:00+08:00")),
        TextBlock(DEFAULT.structured_reminder))
    assert [t.name for t in req.tools] == [SUMMARY_TOOL]
    assert json.loads(req.tools[0].json)["function"]["parameters"]["required"] == [
        "task_overview", "current_state", "important_discoveries", "next_steps",
        "context_to_preserve"]
    assert dict(req.meta) == {"purpose": "summary", "tool_choice": "forced"}
    assert call["estimate"] == 404
    # The summary is the template filled with the fields of the model's tool call.
    (block,) = call["reply"]
    assert isinstance(block, ToolCallBlock)
    assert h.summary == DEFAULT.summary_templates["agentscope"].format(**json.loads(block.input))
    assert h.summary == SUMMARY_1
    assert h.context == split.to_keep
    (ev,) = r.sink.of_type("compaction")
    assert {k: ev[k] for k in ("strategy", "estimate", "summary_ok", "applied", "removed", "kept",
                               "summary", "offload_path", "after_estimate")} == {
        "strategy": "structured", "estimate": 243, "summary_ok": True, "applied": True,
        "removed": 2, "kept": 4, "summary": SUMMARY_1, "offload_path": None,
        "after_estimate": 286}
    assert ev["summary_tokens"] == Bytes4Rule().finalize(len(SUMMARY_1.encode()))


def test_second_compaction_feeds_and_replaces_the_previous_summary() -> None:
    r = loaded()
    h = r.harness
    h.maintain()
    first = h.summary
    # The summary made the context larger (243 -> 286): the next check compacts again, and
    # with the summary in the prefix (127 + 75 > 194.4) nothing is kept this time.
    assert h.estimate(h.request()) == 286
    split = h.split(h.cfg.reserve_tokens)
    assert (split.to_compress, split.to_keep) == (h.context, ())
    h.maintain()
    second = summary_calls(r)[1]["request"]
    assert second.summary == first                     # the old summary is an input ...
    assert second.messages[:-1] == split.to_compress
    assert h.summary.count("<system-info>") == 1        # ... and is replaced, not appended to
    assert h.summary == (
        "<system-info>Summary of the earlier conversation\n"
        "# Task Overview\n[goal] user asked about the status of O-1001\n"
        "[goal] user set a preference for answers\n"
        "[goal] user asked about the status of O-1002\n[constraint:brevity]\n\n"
        "# Current State\n[fact:track_order order_id=O-1001 status=in_transit eta=2026-11-29 "
        "as_of=2026-11-28T10:00:00+08:00]\n[fact:track_order order_id=O-1002 status=shipped "
        "eta=2026-12-02 as_of=2026-11-28T10:00:00+08:00]\n\n"
        "# Important Discoveries\n\n\n"
        f"# Next Steps\n{NEXT}\n\n"
        "# Context to Preserve\n[constraint:brevity]\nentities: O-1001 O-1002</system-info>")
    assert h.context == ()
    assert r.sink.of_type("compaction")[-1]["after_estimate"] == 285


def test_seed_template() -> None:
    r = loaded(summary_template="seed")
    h = r.harness
    h.maintain()
    (call,) = summary_calls(r)
    assert json.loads(call["request"].tools[0].json)["function"]["parameters"]["required"] == [
        "goal", "confirmed_facts", "unconfirmed_items", "next_step", "constraints_to_keep"]
    assert h.summary == (
        "<system-info>会话摘要 / Conversation summary\n"
        "# 目标 Goal\n[goal] user asked about the status of O-1001\n\n"
        "# 已确认事实 Confirmed facts\n[fact:track_order order_id=O-1001 status=in_transit "
        "eta=2026-11-29 as_of=2026-11-28T10:00:00+08:00]\n\n"
        "# 未确认项 Unconfirmed items\n\n\n"
        f"# 下一步 Next step\n{NEXT}\n\n"
        "# 需保留的约束 Constraints to keep\nentities: O-1001</system-info>")


def test_nothing_to_compress_at_the_reserve_retries_with_zero() -> None:
    # The check alone never gets here (the estimate is >= the trigger > the reserve), but a
    # compaction forced on a small context does, as retry_on_overflow forces one: the reserve
    # (3276.8) keeps everything, so the split is redone with a budget of 0.
    r = rig(tools=("track_order",), summarizer=FAILING)
    h = r.harness
    h.inject(history())
    assert h.split(h.cfg.reserve_tokens).to_compress == ()
    assert h.strategy.compact(h, 243) is True
    (ev,) = r.sink.of_type("compaction")
    assert (ev["removed"], ev["kept"]) == (6, 0)
    assert h.context == ()
    assert summary_calls(r)[0]["request"].messages[:-1] == tuple(history())


# --- failures ------------------------------------------------------------------------------------

def test_refusing_summarizer_three_calls_then_truncation() -> None:
    r = loaded(summarizer=FAILING)
    h = r.harness
    split = h.split(h.cfg.reserve_tokens)
    assert h.maintain() is True
    assert choices(r) == ["forced", "auto", None]
    # Forced, the refusal is a call of the tool that fills nothing (a real API returns a
    # tool call under a forced choice); the schema check rejects it as it rejects the text.
    forced, *rest = [c["reply"] for c in summary_calls(r)]
    assert [(b.name, b.input) for b in forced] == [(SUMMARY_TOOL, "{}")]
    assert rest == [(TextBlock(REFUSAL),)] * 2
    assert h.summary == TRUNCATED
    assert h.context == split.to_keep
    (ev,) = r.sink.of_type("compaction")
    assert (ev["summary_ok"], ev["applied"], ev["removed"], ev["kept"], ev["summary"]) == \
        (False, True, 2, 4, TRUNCATED)


def test_refusing_summarizer_keeps_the_previous_summary() -> None:
    r = loaded(summarizer=FAILING)
    h = r.harness
    h.summary = "<system-info>earlier</system-info>"
    split = h.split(h.cfg.reserve_tokens)
    h.maintain()
    assert summary_calls(r)[0]["request"].summary == "<system-info>earlier</system-info>"
    assert h.summary == "<system-info>earlier</system-info>"
    assert h.context == split.to_keep


def test_no_fallback_fails_the_turn_and_leaves_the_context() -> None:
    r = loaded(summarizer=FAILING, fallback_to_truncation=False)
    h = r.harness
    before = h.context
    assert h.maintain() is False
    assert h.context == before and h.summary == ""
    (ev,) = r.sink.of_type("compaction")
    assert (ev["summary_ok"], ev["applied"], ev["removed"]) == (False, False, 0)
    # Through a turn: the check before the first call fails it; the user message stays.
    res = h.turn(THANKS)
    assert (res.text, res.failed, res.reason) == ("", True, "compaction_failed")
    assert h.context == (*before, Message.text("user", THANKS, id=h.context[-1].id))
    assert r.calls("reply") == []
    assert len(summary_calls(r)) == 6


def _chat(n: int) -> list[Message]:
    out = []
    for i in range(n):
        out += [Message.text("user", THANKS, id=f"u{i}"),
                Message.text("assistant", chr(ord("a") + i) * 400, id=f"a{i}")]
    return out


def test_overflowing_summary_request_drops_oldest_and_retries_once() -> None:
    # Estimate 738 >= 0.9 x 800; the reserve keeps nothing; the summary request (958) is larger
    # than the context size, so after the ladder fails the oldest messages are dropped until the
    # request is under the trigger (653 < 720: u0..a2 dropped), and the ladder runs once more.
    r = rig(tools=("track_order",), trigger_ratio=0.9, context_size=800, summarizer=FAILING)
    h = r.harness
    h.inject(_chat(6))
    assert h.maintain() is True
    calls = summary_calls(r)
    assert [c["estimate"] for c in calls] == [958] * 3 + [653] * 3
    assert choices(r) == ["forced", "auto", None] * 2
    assert [m.id for m in calls[3]["request"].messages[:-1]] == ["u3", "a3", "u4", "a4", "u5", "a5"]
    assert (h.summary, h.context) == (TRUNCATED, ())


@pytest.mark.parametrize(("context_size", "calls"), [(429, 3), (428, 6)])
def test_overflow_flag_counts_the_request_before_the_reminder(context_size: int,
                                                              calls: int) -> None:
    # The summary request sent is 460 tokens; without the structured-output reminder (which
    # generate_structured_output appends) AgentScope counts 429, and only a count strictly
    # above context_size sets the flag that retries a failed summary on a smaller request.
    r = rig(tools=("track_order",), trigger_ratio=0.5, context_size=context_size,
            reserve_ratio=0.4, summarizer=FAILING)
    r.harness.inject(history())
    r.harness.maintain()
    assert [c["estimate"] for c in summary_calls(r)][:3] == [460] * 3
    assert len(summary_calls(r)) == calls


def test_service_overflow_of_the_summary_call_retries_on_the_smaller_request() -> None:
    # The service (900) rejects the full summary request (904 true tokens + 100) and admits the
    # reduced one; the messages dropped are not summarised but are removed all the same.
    svc = get_profile("openai-128k").with_overrides(window=900, max_output=100,
                                                    default_output=100)
    r = rig(tools=("track_order",), trigger_ratio=0.9, context_size=800, service=svc)
    h = r.harness
    h.inject(_chat(6))
    h.maintain()
    (ov,) = r.sink.of_type("overflow")
    assert (ov["purpose"], ov["estimate"], ov["true_input"]) == ("summary", 958, 904)
    (call,) = summary_calls(r)[1:]
    assert [m.id for m in call["request"].messages[:-1]] == ["u3", "a3", "u4", "a4", "u5", "a5"]
    assert h.summary.startswith("<system-info>Summary of the earlier conversation\n"
                                "# Task Overview\n[goal] user made small talk\n")
    assert h.context == ()


def test_service_overflow_without_the_overflow_flag_falls_back() -> None:
    # The request estimate (404) is under context_size (486): no drop-and-retry, truncation.
    svc = get_profile("openai-128k").with_overrides(window=400, max_output=100,
                                                    default_output=100)
    r = loaded(service=svc)
    r.harness.maintain()
    assert [e["type"] for e in r.sink.events] == ["overflow", "compaction"]
    assert r.harness.summary == TRUNCATED


# --- offload -------------------------------------------------------------------------------------

REMINDER = ("\n<system-reminder>The compressed context is offloaded to "
            "'/workspace/sessions/s1/context.jsonl', you can refer to it when needed."
            "</system-reminder>")


def _jsonl(tmp_path: Path) -> list[str]:
    path = tmp_path / "workspace" / "sessions" / "s1" / "context.jsonl"
    return path.read_text(encoding="utf-8").splitlines()


def _lines(messages: tuple[Message, ...]) -> list[str]:
    return [json.dumps(message_to_dict(m), ensure_ascii=False) for m in messages]


@pytest.mark.parametrize("settings", [{"strategy": "offload"}, {"offload": True}])
def test_offload_writes_jsonl_and_appends_the_path_once(tmp_path: Path,
                                                        settings: dict[str, object]) -> None:
    r = loaded(workdir=tmp_path, **settings)
    h = r.harness
    first = h.split(h.cfg.reserve_tokens)
    h.maintain()
    assert _jsonl(tmp_path) == _lines(first.to_compress)
    assert h.summary == SUMMARY_1 + REMINDER
    (ev,) = r.sink.of_type("compaction")
    assert ev["offload_path"] == "/workspace/sessions/s1/context.jsonl"
    second = h.split(h.cfg.reserve_tokens)
    h.maintain()
    assert _jsonl(tmp_path) == _lines(first.to_compress) + _lines(second.to_compress)
    assert h.summary.count("<system-reminder>The compressed context is offloaded") == 1
    assert h.summary.endswith(REMINDER)


def test_offload_on_failure_too_without_duplicating(tmp_path: Path) -> None:
    r = loaded(workdir=tmp_path, strategy="offload", summarizer=FAILING)
    h = r.harness
    first = h.split(h.cfg.reserve_tokens)
    h.maintain()
    assert h.summary == TRUNCATED + REMINDER
    assert _jsonl(tmp_path) == _lines(first.to_compress)
    second = h.split(h.cfg.reserve_tokens)
    assert second.to_compress
    h.maintain()                                        # still >= 243: compacts again
    assert h.summary == TRUNCATED + REMINDER            # the previous one, unchanged
    assert _jsonl(tmp_path) == _lines(first.to_compress) + _lines(second.to_compress)


def test_no_offload_without_fallback(tmp_path: Path) -> None:
    r = loaded(workdir=tmp_path, strategy="offload", summarizer=FAILING,
               fallback_to_truncation=False)
    r.harness.maintain()
    assert not (tmp_path / "workspace" / "sessions" / "s1" / "context.jsonl").exists()


# --- truncate ------------------------------------------------------------------------------------

def test_truncate_drops_without_a_summary() -> None:
    r = loaded(strategy="truncate")
    h = r.harness
    split = h.split(h.cfg.reserve_tokens)
    h.maintain()
    assert summary_calls(r) == []
    assert (h.summary, h.context) == ("", split.to_keep)
    (ev,) = r.sink.of_type("compaction")
    assert (ev["strategy"], ev["summary_ok"], ev["summary"], ev["after_estimate"]) == \
        ("truncate", False, "", 186)


def test_none_never_compacts() -> None:
    r = loaded(strategy="none")
    r.harness.maintain()
    assert r.sink.events == []
    assert r.harness.context == tuple(history())


# --- pinned --------------------------------------------------------------------------------------

DROP_CONSTRAINTS = SummarizerProfile(profile="lossy", drop={"constraint": 1.0})


def _pinned(strategy: str = "pinned", **kw: Any) -> Rig:
    """Room to spare (compactions are forced with ``_compact``); the reserve keeps a2, u3, a3."""
    return rig(strategy=strategy, tools=("track_order",), context_size=2000, reserve_ratio=0.09,
               **kw)


def _compact(r: Rig) -> None:
    h = r.harness
    assert h.strategy.compact(h, h.estimate(h.request())) is True


def _exchanges(constraint: str) -> list[Message]:
    return [m if m.id != "u2" else Message.text("user", constraint, id="u2") for m in history()]


def _purposes(r: Rig) -> list[str]:
    return [e["purpose"] for e in r.calls()]


def test_pinned_sends_no_board_before_any_compaction() -> None:
    r = _pinned()
    r.harness.inject(_exchanges(TERSE)[:2])
    assert r.harness.request().messages == r.harness.context


def test_pinned_keeps_a_constraint_known_only_to_the_lexicon_through_a_lossy_summary() -> None:
    r = _pinned(summarizer=DROP_CONSTRAINTS)
    h = r.harness
    h.inject(_exchanges(TERSE))
    _compact(r)
    # The model is asked for the pins first, then for the summary.
    assert _purposes(r) == ["pin", "summary"]
    pin_req = r.calls("pin")[0]["request"]
    assert pin_req.messages[-1].plain_text() == DEFAULT.pin_request
    assert TERSE in [m.plain_text() for m in pin_req.messages]
    assert all(m.id != "u2" for m in h.context)          # the constraint's message is gone
    assert "[constraint:brevity]" not in h.summary      # and the lossy summary dropped it
    board = h.request().messages[0]
    assert board.name == "pinned"
    (pin,) = r.sink.of_type("pin")
    assert board.content == (HintBlock(pin["board"], source="pinned"),)
    assert "[constraint:brevity]" in pin["board"] and "O-1001" in pin["board"]
    assert len(r.turn(WHERE).text) <= 60                # still brief

    # The control: the same without the board answers at length.
    plain = _pinned("structured", summarizer=DROP_CONSTRAINTS)
    plain.harness.inject(_exchanges(TERSE))
    _compact(plain)
    assert len(plain.turn(WHERE).text) >= 120


def test_pinned_board_loses_what_a_lossy_extraction_loses() -> None:
    r = _pinned(summarizer=DROP_CONSTRAINTS, extractor=DROP_CONSTRAINTS)
    r.harness.inject(_exchanges(TERSE))
    _compact(r)
    (pin,) = r.sink.of_type("pin")
    assert "[constraint:brevity]" not in pin["board"]
    assert len(r.turn(WHERE).text) >= 120


def test_pinned_later_constraint_replaces_the_earlier_one_on_the_board() -> None:
    r = _pinned(summarizer=DROP_CONSTRAINTS)
    h = r.harness
    h.inject(_exchanges(TERSE))
    _compact(r)
    h.inject([Message.text("user", EXPAND, id="u4"), Message.text("assistant", "OK.", id="a4")])
    # Before the next compaction the newer instruction sits after the board and wins.
    assert len(r.turn(WHERE).text) >= 120
    h.inject(history()[4:])
    _compact(r)
    assert _purposes(r).count("pin") == 2 == len(r.sink.of_type("compaction"))
    board = r.sink.of_type("pin")[-1]["board"]
    assert "[constraint:detailed]" in board and "[constraint:brevity]" not in board
    assert all(m.id != "u4" for m in h.context)
    assert len(r.turn(WHERE).text) >= 120


def test_pinned_board_is_renewed_with_every_summary_even_a_failed_one() -> None:
    r = _pinned(summarizer=FAILING)
    h = r.harness
    h.inject(_exchanges(TERSE))
    _compact(r)
    req = h.request()
    assert req.summary == TRUNCATED
    # O-1001 and its question were dropped with the summary failure; the board still has them.
    assert "O-1001" in str(req.messages[0].content[0].hint)  # type: ignore[union-attr]
    assert req.messages[1:] == h.context
    assert r.calls("reply") == []
    assert r.turn(THANKS).failed is False
    assert r.calls("reply")[-1]["request"].messages[0].name == "pinned"


def test_pinned_state_round_trips() -> None:
    r = _pinned(summarizer=DROP_CONSTRAINTS)
    r.harness.inject(_exchanges(TERSE))
    _compact(r)
    fresh = _pinned(summarizer=DROP_CONSTRAINTS)
    fresh.harness.load_state(json.loads(json.dumps(r.harness.save_state())))
    assert fresh.harness.request() == r.harness.request()
    assert fresh.harness.save_state() == r.harness.save_state()


# --- codex ---------------------------------------------------------------------------------------

def _codex(limit: int, **codex: int) -> Rig:
    r = rig(strategy="codex", tools=("track_order",),
            codex={"auto_compact_limit": limit, **codex})
    r.harness.turn(WHERE)
    return r


def test_codex_trigger_is_last_usage_plus_bytes_over_4_of_later_items() -> None:
    r = _codex(10000)
    h = r.harness
    last = r.calls("reply")[-1]
    assert h.last_usage == last["true_input"] + last["output_tokens"] == 298 + 58
    assert h.bytes_since_usage == 0       # the answer is covered by the usage
    # "Thanks!" is 7 bytes: 356 + int(7/4 + 0.5) = 358.
    at, above = _codex(358), _codex(359)
    at.harness.turn(THANKS)
    above.harness.turn(THANKS)
    events = [e for e in at.sink.events if e["type"] != "tool_policy"]
    assert [e["type"] for e in events][4:6] == ["model_call", "compaction"]
    assert dict(events[4]["request"].meta)["purpose"] == "summary"
    assert above.sink.of_type("compaction") == []


def test_codex_ignores_the_harness_estimate() -> None:
    # The bytes4 estimate of the same request (270) is far below; only usage counts.
    r = _codex(300)
    r.harness.turn(THANKS)
    (ev,) = r.sink.of_type("compaction")
    assert ev["estimate"] == 270
    assert 270 < 300 <= 358


def test_codex_compaction_keeps_recent_user_messages_and_adds_the_bridge() -> None:
    r = _codex(358)
    h = r.harness
    res = h.turn(THANKS)
    assert res.failed is False
    (call,) = r.calls("summary")
    req = call["request"]
    assert (req.summary, req.tools) == ("", ())
    assert req.messages[-1].content == (TextBlock(DEFAULT.handoff),)
    assert layout(req.messages[:-1]) == [
        ("user", ["TextBlock"]),
        ("assistant", ["HintBlock", "ToolCallBlock", "ToolResultBlock", "TextBlock"]),
        ("user", ["TextBlock"])]
    (block,) = call["reply"]
    assert isinstance(block, TextBlock) and block.text.startswith("[handoff]\n")
    bridge = DEFAULT.handoff_bridge.format(summary=block.text)
    assert bridge.startswith("Another language model started to solve this problem and produced "
                             "a summary of its work. Use it to continue:\n[handoff]\n")
    (ev,) = r.sink.of_type("compaction")
    # Removed: the assistant message; kept: the two user messages and the bridge.
    assert (ev["strategy"], ev["removed"], ev["kept"], ev["summary"]) == ("codex", 1, 3, block.text)
    # Both user messages fit the 20000 budget; assistant messages and tool outputs are gone.
    assert layout(h.context)[:3] == [("user", ["TextBlock"]), ("user", ["TextBlock"]),
                                     ("user", ["HintBlock"])]
    assert [m.plain_text() for m in h.context[:2]] == [WHERE, THANKS]
    assert h.context[2].content == (HintBlock(bridge, source="handoff"),)
    assert h.summary == ""
    assert not any(isinstance(b, ToolResultBlock) for m in h.context for b in m.content)


def test_codex_user_message_budget() -> None:
    # WHERE costs 4 tokens, THANKS 2: a budget of 5 keeps only the newest.
    r = _codex(358, user_message_budget=5)
    r.harness.turn(THANKS)
    assert layout(r.harness.context)[:2] == [("user", ["TextBlock"]), ("user", ["HintBlock"])]
    assert r.harness.context[0].plain_text() == THANKS
    assert r.sink.of_type("compaction")[0]["kept"] == 2


def test_codex_after_compaction_counts_the_kept_items() -> None:
    r = _codex(358)
    h = r.harness
    h.turn(THANKS)
    # After the compaction, usage restarts from the next reply call.
    last = r.calls("reply")[-1]
    assert h.last_usage == last["true_input"] + last["output_tokens"] == 355 + 33
    assert h.bytes_since_usage == 0


def test_codex_previous_bridge_is_not_kept_as_a_user_message() -> None:
    r = _codex(358)
    h = r.harness
    h.turn(THANKS)
    h.turn(THANKS)              # usage 377 + 2 >= 358: compacts again
    bridges = [m for m in h.context if m.role == "user" and isinstance(m.content[0], HintBlock)]
    assert len(bridges) == 1
    assert [m.plain_text() for m in h.context if m.role == "user" and m.plain_text()] == \
        [WHERE, THANKS, THANKS]


# --- registry ------------------------------------------------------------------------------------

def test_registry() -> None:
    assert sorted(STRATEGIES) == ["codex", "freeform", "none", "offload", "pinned", "structured",
                                  "truncate", "window"]
    assert make_strategy("structured").name == "structured"
    with pytest.raises(ValueError, match="compaction strategy 'structured' is already registered"):
        register("structured")(type("Again", (), {}))


def test_window_sends_the_newest_messages_from_a_user_message_on() -> None:
    r = rig(strategy="window", window_messages=3, tools=("track_order",))
    h = r.harness
    h.inject(history())
    # The newest 3 are a2, u3, a3; a2 is a reply, so the window starts at u3 (never at a reply
    # or a tool result).
    assert [m.id for m in h.request().messages] == ["u3", "a3"]
    h.inject([Message.text("user", THANKS, id="u4")])
    assert [m.id for m in h.request().messages] == ["u3", "a3", "u4"]
    assert [m.id for m in h.context] == [m.id for m in history()] + ["u4"]  # nothing is lost


def test_a_window_that_leaves_out_conversation_records_a_compaction() -> None:
    """A window compacts as a truncation does, though its context stays whole: the request
    that leaves out what the previous one carried is a compaction (nothing summarised), the
    point a black-box view of the same harness sees one too."""
    r = rig(strategy="window", window_messages=2)
    r.harness.turn(WHERE)
    assert r.sink.of_type("compaction") == []  # [u1, a1]: nothing left out yet
    r.harness.turn(SHORT)  # [u1, a1, u2]: the newest two start at a reply, so only u2
    (ev,) = r.sink.of_type("compaction")
    assert ev["strategy"] == "window" and ev["applied"] and ev["removed"] == 2
    assert ev["summary"] == "" and ev["kept"] == 1
    assert len(r.harness.context) == 4  # the context itself keeps everything
    # The control: the same turns without a window leave nothing out and record nothing.
    plain = rig(strategy="none")
    plain.harness.turn(WHERE)
    plain.harness.turn(SHORT)
    assert plain.sink.of_type("compaction") == []
