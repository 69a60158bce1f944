"""Loop-level parity: the real AgentScope 2.0.x agent and the reference harness's ``agentscope``
profile, driven by the same scripted model, send the same requests with the same estimates,
compact before the same calls and end each turn the same way. Each test also states what that
behaviour is (semantics spec §2.2-§2.8), read from what AgentScope sent, so that two harnesses
agreeing on something wrong would still fail.

    pip install -e '.[dev,agentscope]' && pytest tests/adapters
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tests.adapters.support import (
    AGENTSCOPE_EXTRA,
    FIELDS,
    SUMMARY_TOOL,
    Run,
    assert_same,
    both,
    refuse,
    run,
    say,
    summary_call,
    track,
)

pytestmark = pytest.mark.agentscope
agentscope = pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)

from agentscope.agent import ContextConfig, InjectionConfig  # noqa: E402

WHERE = "Where is O-1001?"
TRUNCATED = "<system-info>Some earlier messages were truncated for limited context.</system-info>"
RUNTIME = '{"label": "System", "sublabel": "Runtime State"}'
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
FILLER = [(f"Small talk number {i}: the weather is fine today, isn't it? " * 3,
           f"Indeed it is, number {i}. Anything about your orders? " * 3) for i in range(12)]


def hints(r: Request) -> list[str]:
    return [b.hint for m in r.messages for b in m.content
            if isinstance(b, HintBlock) and b.source == RUNTIME and isinstance(b.hint, str)]


def summaries(r: Run) -> list[Request]:
    return [c.request for c in r.calls() if c.purpose == "summary"]


# --- the trigger ---------------------------------------------------------------------------------

def test_the_check_runs_before_every_reasoning_step_and_fires_at_the_trigger() -> None:
    # 0.8 x 600 = 480. The check before call 1 runs before the runtime hints are added: they
    # take the request to 481, over the trigger, and it is sent as it is (the spec's "the
    # context-length hint can itself push the context over the trigger"); the next check, after
    # the tool round, compacts before call 2.
    ref, ags = both(replies=[track(), say("O-1001 is in transit.")], context_size=600)
    for r in (ref, ags):
        assert r.turn(WHERE).text == "O-1001 is in transit."
    assert_same(ref, ags)
    assert [c.purpose for c in ags.calls()] == ["reply", "summary", "reply"]
    (ev,) = ags.events("compaction")
    assert ev["estimate"] >= 480 and ags.calls()[0].estimate == 481
    assert ags.compaction_points() == [(3, True)]  # done (with its summary, call 2) before 3


def test_no_check_after_the_final_answer() -> None:
    # The answer takes the context over the trigger; nothing compacts until the next turn.
    ref, ags = both(replies=[say("x" * 800), say("fine.")], context_size=700)
    for r in (ref, ags):
        r.turn(WHERE)
        assert r.events("compaction") == []
        assert r.harness.context_estimate() >= 560
        r.turn("Thanks!")
    assert_same(ref, ags)
    assert ags.compaction_points() == [(3, True)]
    assert [c.purpose for c in ags.calls()] == ["reply", "summary", "reply"]


def test_preload_runs_the_check_after_each_exchange() -> None:
    # 0.8 x 1100 = 880 is crossed by the 7th exchange (950): AgentScope compacts right there.
    ref, ags = both(context_size=1100)
    for r in (ref, ags):
        r.preload(FILLER)
    assert_same(ref, ags)
    assert ags.compaction_points() == [(2, True)]
    (ev,) = ags.events("compaction")
    assert (ev["estimate"], ev["removed"]) == (950, 14)
    assert ref.harness.context_estimate() == ags.harness.context_estimate() < 880


# --- the split -----------------------------------------------------------------------------------

def test_nothing_to_compress_at_the_reserve_retries_with_zero() -> None:
    # A check never gets here (estimate >= trigger > reserve): a compaction forced with a
    # reserve that holds everything does, and compresses everything.
    ref, ags = both(replies=[say("fine.")], context_size=32768, reserve_ratio=0.5)
    for r in (ref, ags):
        r.preload(FILLER[:2])
        r.turn(WHERE)
    h = ref.harness
    assert h.split(h.cfg.reserve_tokens).to_compress == ()
    h.strategy.compact(h, h.context_estimate())
    cfg = ContextConfig(trigger_ratio=0.001, reserve_ratio=0.5)
    ags.harness._run(ags.harness.agent.compress_context(cfg))
    assert_same(ref, ags)
    (req,) = summaries(ags)
    assert len(req.messages) == 2 * 2 + 2 + 1  # the filler, the turn, the compression prompt
    assert ags.harness.agent.state.context == []


def test_a_reserve_below_the_head_compresses_the_newest_question() -> None:
    ref, ags = both(replies=[track(), say("fine.")], context_size=600, reserve_ratio=0.1)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    (req,) = summaries(ags)
    assert req.messages[0].plain_text() == WHERE  # the question went into the summary
    (ev,) = ags.events("compaction")
    assert ev["kept"] == 0


# --- the summary request -------------------------------------------------------------------------

def test_the_summary_request_is_agentscopes_byte_for_byte() -> None:
    ref, ags = both(replies=[track(), say("fine.")], context_size=600)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    (req,) = summaries(ags)
    last = req.messages[-1]
    prompt = ContextConfig().compression_prompt.replace(
        "{current_time}", "2026-11-28T10:00:00+0800 (Etc/GMT-8)")
    assert last.role == "user"
    assert [b.text for b in last.content if isinstance(b, TextBlock)] == [
        prompt, f"<system-reminder>Now you **MUST** call the tool named '{SUMMARY_TOOL}' to "
        "generate the structured output required by the user. DON'T do anything else."
        "</system-reminder>"]
    (tool,) = req.tools
    params = tool.to_dict()["function"]["parameters"]
    assert params == ContextConfig().summary_schema
    assert params["title"] == "SummarySchema" and list(params["properties"]) == list(FIELDS)
    assert dict(req.meta) == {"purpose": "summary", "tool_choice": "forced"}


def test_the_summary_replaces_the_previous_one_which_is_sent_with_the_request() -> None:
    ref, ags = both(replies=[track(), say("a."), track("c2"), say("b.")], context_size=600)
    for r in (ref, ags):
        r.turn(WHERE)
        r.turn("And now?")
    assert_same(ref, ags)
    first, second = summaries(ags)[:2]
    assert first.summary == ""
    assert second.summary.startswith("<system-info>Here is a summary of your previous work")
    assert ags.harness.agent.state.summary.count("# Task Overview") == 1


# --- failures: the ladder, truncation, no fallback, the overflow retry -----------------------------

def test_a_model_without_the_tool_is_asked_forced_auto_unset_then_the_context_is_truncated() -> None:
    # A trigger of 0.5 leaves room for the summary request (no overflow retry here).
    ref, ags = both(replies=[say("fine.")], summarize=refuse, context_size=1500,
                    trigger_ratio=0.5, reserve_ratio=0.3)
    for r in (ref, ags):
        r.preload(FILLER[:6])
        assert not r.turn(WHERE).failed
    assert_same(ref, ags)
    assert [c.tool_choice for c in ags.calls() if c.purpose == "summary"] == [
        "forced", "auto", None]  # the last with no tool_choice: the API's default
    (ev,) = ags.events("compaction")
    assert (ev["summary_ok"], ev["applied"], ev["summary"]) == (False, True, TRUNCATED)
    assert (ev["removed"], ev["kept"]) == (9, 1)  # the newest message, within the reserve


def test_without_fallback_the_compaction_fails_the_turn_and_keeps_the_context() -> None:
    ref, ags = both(replies=[track(), say("fine.")], summarize=refuse, context_size=600,
                    fallback_to_truncation=False)
    for r in (ref, ags):
        res = r.turn(WHERE)
        assert (res.failed, res.reason) == (True, "compaction_failed")
    assert_same(ref, ags)
    (ev,) = ags.events("compaction")
    assert (ev["applied"], ev["summary_ok"]) == (False, False)
    assert ags.harness.agent.state.summary == ""
    assert len(ags.harness.agent.state.context) == 2


def test_an_overflowing_summary_request_is_retried_once_without_the_oldest_messages() -> None:
    # The summary request (~755 tokens of fixed overhead plus all of the context) is over
    # context_size; when it fails, the oldest messages are dropped until it is under the
    # trigger and it is tried once more.
    ref, ags = both(summarize=refuse, context_size=1100)
    for r in (ref, ags):
        r.preload(FILLER[:7])
    assert_same(ref, ags)
    reqs = summaries(ags)
    assert [dict(r.meta).get("tool_choice") for r in reqs] == ["forced", "auto", None] * 2
    first, retry = reqs[0], reqs[3]
    assert len(retry.messages) < len(first.messages)
    assert retry.messages[-1].content == first.messages[-1].content  # the compression prompt
    counted = [c.estimate for c in ags.calls() if c.purpose == "summary"]
    assert counted[0] > 1100 and counted[3] < counted[0]
    (ev,) = ags.events("compaction")
    assert (ev["summary_ok"], ev["removed"], ev["summary"]) == (False, 14, TRUNCATED)


def test_a_summary_call_the_service_rejects_is_not_retried_by_the_ladder() -> None:
    # The true window (1300) rejects the summary request: a provider error is raised at once
    # (no auto, no none); the request was over context_size, so it is retried once without
    # the oldest messages, and that one is admitted and summarised.
    ref, ags = both(context_size=1100, window=1300)
    for r in (ref, ags):
        r.preload(FILLER[:7])
    assert_same(ref, ags)
    calls = ags.calls()
    assert [(c.purpose, c.tool_choice, c.rejected) for c in calls] == [
        ("summary", "forced", True), ("summary", "forced", False)]
    assert len(calls[1].request.messages) < len(calls[0].request.messages)
    (ev,) = ags.events("compaction")
    assert (ev["summary_ok"], ev["removed"]) == (True, 14)


# --- runtime hints ---------------------------------------------------------------------------------

def test_runtime_hints_time_on_the_first_reply_again_after_the_interval_and_context_length() -> None:
    # (0.8 - 0.2) x 700 = 420: the context-length hint from the second reply on, the time
    # again once more than 0.5 h has passed since the last one stated.
    ref, ags = both(replies=[say("a."), say("b."), say("c.")], context_size=700)
    for r in (ref, ags):
        r.turn(WHERE)
        r.world.clock.advance(timedelta(minutes=20))
        r.turn("Thanks!")
        r.world.clock.advance(timedelta(minutes=20))
        r.turn("Bye!")
    assert_same(ref, ags)
    calls = ags.calls()
    (first,) = hints(calls[0].request)
    assert "<current-time>2026-11-28T10:00:00+0800</current-time>\n" \
        "<timezone>Etc/GMT-8</timezone>" in first
    assert [e["kinds"] for e in ags.events("hint")] == [
        ["current-time", "timezone"], ["context-length"],
        ["current-time", "timezone", "context-length"]]
    second = hints(calls[1].request)[-1]
    assert "<context-length>Your current context contains 450 tokens. When reaching 560 " \
        "tokens, your context will be compressed.</context-length>" in second
    assert "<current-time>2026-11-28T10:40:00+0800</current-time>" in hints(calls[2].request)[-1]
    assert ags.events("hint") == ref.events("hint")


def test_the_time_hint_comes_back_after_a_compaction_removed_it() -> None:
    ref, ags = both(replies=[track(), say("fine.")], context_size=600)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    after = ags.calls()[-1].request
    assert any("<current-time>" in h for h in hints(after))
    assert [e["kinds"] for e in ags.events("hint")][-1][:2] == ["current-time", "timezone"]


def test_no_runtime_hints_when_both_are_off() -> None:
    ref, ags = both(replies=[say("a.")], time_hint=False, context_length_hint=False)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    assert hints(ags.calls()[0].request) == []


def test_a_clock_ahead_of_the_world_is_what_the_time_hint_says() -> None:
    ref, ags = both(replies=[say("a.")], clock_offset_hours=24)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    assert "2026-11-29T10:00:00+0800" in hints(ags.calls()[0].request)[0]


# --- AgentScope's edges ----------------------------------------------------------------------------

def test_slightly_broken_summary_json_is_repaired_not_retried() -> None:
    def broken(request: Request) -> tuple[ToolCallBlock, ...]:
        (call,) = summary_call()
        return (ToolCallBlock(call.id, call.name, call.input[:-1]),)  # no closing brace

    ref, ags = both(replies=[track(), say("fine.")], summarize=broken, context_size=600)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    assert len(summaries(ags)) == 1
    (ev,) = ags.events("compaction")
    assert ev["summary_ok"] and "O-1001 in transit" in ev["summary"]


def test_a_thinking_only_reply_is_a_step_not_an_answer() -> None:
    ref, ags = both(replies=[(ThinkingBlock("let me think"),), say("done.")])
    for r in (ref, ags):
        assert r.turn(WHERE).text == "done."
    assert_same(ref, ags)
    assert [c.purpose for c in ags.calls()] == ["reply", "reply"]


def test_tool_arguments_are_repaired_or_refused_before_the_tool_runs() -> None:
    replies = [(ToolCallBlock("c1", "track_order", '{"order": "O-1001"}'),),
               (ToolCallBlock("c2", "track_order", '{"order_id": "O-1001"'),), say("fine.")]
    ref, ags = both(replies=replies)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    results = [b for m in ags.calls()[-1].request.messages for b in m.content
               if isinstance(b, ToolResultBlock)]
    assert results[0].is_error and results[0].output == (
        "Input validation failed for tool 'track_order': 'order_id' is a required property "
        "(at $)")
    assert not results[1].is_error
    assert [e["args"] for e in ags.tool_runs()] == ['{"order_id": "O-1001"}']


def test_a_head_over_the_trigger_with_an_empty_context_is_an_error() -> None:
    big = "x" * 4000  # the summary alone is over the trigger

    ref, ags = both(summarize=lambda r: summary_call(big), context_size=1100,
                    reserve_ratio=0.01)
    for r in (ref, ags):
        r.preload(FILLER[:7])  # compacts everything into a summary over the trigger
        r.harness.preload([()])  # a check with nothing in the context
    assert_same(ref, ags)
    assert [e["type"] for e in ags.sink.events] == ["model_call", "compaction",
                                                    "compaction_error"]
    with pytest.raises(RuntimeError, match="exceed"):
        ags.harness._run(ags.harness.agent.compress_context())
    assert ref.harness.maintain() is False  # the reference's turn fails here too


def test_tool_results_over_the_limit_are_cut_when_saved(tmp_path: Path) -> None:
    replies = [(ToolCallBlock("c1", "get_logistics_trace", '{"order_id": "O-1001"}'),),
               say("fine.")]
    ref = run("reference", replies=replies, tool_result_limit=200, offload=True,
              workdir=tmp_path / "ref")
    ags = run("agentscope", replies=replies, tool_result_limit=200, offload=True,
              workdir=tmp_path / "ags")
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    (result,) = [b for m in ags.calls()[-1].request.messages for b in m.content
                 if isinstance(b, ToolResultBlock)]
    assert isinstance(result.output, str)
    assert result.output.endswith(
        "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited "
        "context. You can refer to the file in '/workspace/sessions/s1/tool_result-c1.txt' for "
        "the truncated content if needed.</system-reminder>")
    assert (tmp_path / "ags/workspace/sessions/s1/tool_result-c1.txt").read_text() == \
        (tmp_path / "ref/workspace/sessions/s1/tool_result-c1.txt").read_text() != ""


def test_old_images_are_offloaded_with_agentscopes_names(tmp_path: Path) -> None:
    image = DataBlock("image/png", PNG, name="photo.png")
    ref = run("reference", max_image_num=1, offload=True, workdir=tmp_path / "ref")
    ags = run("agentscope", max_image_num=1, offload=True, workdir=tmp_path / "ags")
    for r in (ref, ags):
        r.harness.turn("Look at this.", (image,))
        r.harness.turn("And this one.", (image,))
    assert_same(ref, ags)
    first = ags.calls()[-1].request.messages[0]
    assert first.content[1] == TextBlock(
        "<system-reminder>The image named 'photo.png' is offloaded into workspace:///data/"
        "10a7227ade22bb007518dbb14d064d2f3b0d5a282264d6d94a8682d68866650a.png, you can refer "
        "to it when needed.</system-reminder>")
    assert (tmp_path / "ags/workspace/data/10a7227ade22bb007518dbb14d064d2f3b0d5a282264d6d94a"
            "8682d68866650a.png").read_bytes().startswith(b"\x89PNG")
    assert ags.events("image_limit") == ref.events("image_limit") == [{"type": "image_limit",
                                                                        "removed": 1}]


def test_the_offloaded_context_is_named_in_the_summary(tmp_path: Path) -> None:
    replies = [track(), say("fine.")]
    ref = run("reference", replies=replies, context_size=600, strategy="offload",
              workdir=tmp_path / "ref")
    ags = run("agentscope", replies=replies, context_size=600, strategy="offload",
              workdir=tmp_path / "ags")
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    summary = ags.harness.agent.state.summary
    assert summary.endswith("\n<system-reminder>The compressed context is offloaded to "
                            "'/workspace/sessions/s1/context.jsonl', you can refer to it when "
                            "needed.</system-reminder>")
    lines = (tmp_path / "ags/workspace/sessions/s1/context.jsonl").read_text().splitlines()
    assert [json.loads(x)["role"] for x in lines] == ["user", "assistant"]
    assert [json.loads(x)["content"] for x in lines] == [
        json.loads(x)["content"] for x in
        (tmp_path / "ref/workspace/sessions/s1/context.jsonl").read_text().splitlines()]


# --- identity --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("identity", "acting"), [("bind", "U-1"), ("refuse", None),
                                                   ("trust", "U-2")])
def test_tools_act_for_whom_the_identity_setting_says(identity: str, acting: str | None) -> None:
    replies = [(ToolCallBlock("c1", "get_user_profile", '{"user_id": "U-2"}'),), say("fine.")]
    ref, ags = both(replies=replies, identity=identity)
    for r in (ref, ags):
        r.turn("I am Li Si, what is my address?")
    assert_same(ref, ags)
    assert [e["acting_user"] for e in ags.tool_runs()] == ([acting] if acting else [])
    assert [e["identity"] for e in ags.events("tool_policy")] == [
        {"bind": "overridden", "refuse": "refused", "trust": "trusted"}[identity]]


def test_the_default_profile_is_not_agentscope() -> None:
    # The comparison can fail: the reference's own texts differ from AgentScope's, so the
    # summary call's estimate and bytes differ while the reply calls agree.
    ref = run("reference", replies=[track(), say("fine.")], context_size=600)
    ref.harness.cfg = ref.harness.cfg.model_copy(update={"prompts": "default"})
    from harnesslab.harness.prompts import load_prompts

    ref.harness.prompts = load_prompts("default")
    ref.harness.agentscope = False
    ags = run("agentscope", replies=[track(), say("fine.")], context_size=600)
    for r in (ref, ags):
        r.turn(WHERE)
    with pytest.raises(AssertionError, match="call 1"):
        assert_same(ref, ags)
    assert InjectionConfig().template not in hints(ref.calls()[0].request)[0]


def test_the_same_failing_call_three_times_brings_the_tool_error_hint() -> None:
    # The same arguments every time (an order that does not exist), a fresh call id each.
    replies = [(ToolCallBlock(f"c{i}", "track_order", '{"order_id": "O-9999"}'),)
               for i in range(3)] + [say("I could not check.")]
    ref, ags = both(replies=replies)
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    assert [e["kinds"] for e in ags.events("hint")] == [["current-time", "timezone"],
                                                        ["tool-error"]]
    assert "<tool-error>The last 3 calls to 'track_order' with the same arguments all failed." \
        in hints(ags.calls()[-1].request)[-1]
    assert not any("<tool-error>" in h for c in ags.calls()[:3] for h in hints(c.request))


@pytest.mark.parametrize(("last", "text"), [
    (say("Here is what I found."), "Here is what I found."),
    (track("c9"), "The maximum reasoning-acting iterations are exceeded."),
])
def test_at_max_iters_one_more_call_without_tools_then_the_reply_ends(last: tuple[object, ...],
                                                                      text: str) -> None:
    replies = [track(f"c{i}") for i in range(2)] + [last]
    ref, ags = both(replies=replies, max_iters=2)  # type: ignore[arg-type]
    for r in (ref, ags):
        res = r.turn(WHERE)
        assert (res.text, res.failed, res.reason) == (text, True, "max_iters")
    assert_same(ref, ags)
    calls = ags.calls()
    assert [c.tool_choice for c in calls] == [None, None, "none"]
    final = [b for m in calls[-1].request.messages for b in m.content
             if isinstance(b, HintBlock) and "Max Iterations Reached" in b.source]
    assert len(final) == 1 and "maximum of 2 reasoning-acting iterations" in str(final[0].hint)


def test_only_the_offered_tools_are_sent_and_callable() -> None:
    ref, ags = both(replies=[track(), say("I cannot check.")], tools=["search_kb"])
    for r in (ref, ags):
        r.turn(WHERE)
    assert_same(ref, ags)
    assert [t.name for t in ags.calls()[0].request.tools] == ["search_kb"]
    assert ags.tool_runs() == []
    (result,) = [b for m in ags.calls()[-1].request.messages for b in m.content
                 if isinstance(b, ToolResultBlock)]
    assert result.output == "ToolNotFoundError: The tool named 'track_order' doesn't exist."
