"""Compaction seen from outside: the reference harness as a program compacts where it does in
process, and the bench finds it from the requests alone (the compaction, the summary call and
its tokens); a program that never drops history shows none (the control)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.judge.observed import observe
from harnesslab.record.format import Record, message_text
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("starlette")
WRAPPER = "cmd:python -m harnesslab.adapters.reference_program"
ROOT = Path(__file__).resolve().parents[2]


def test_compactions_and_summary_tokens_are_found_from_the_requests(tmp_path: Path) -> None:
    path = bundled_dir() / "followup-after-filler-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    inproc = run_variant(sc, v, source=path, out_dir=tmp_path / "in")
    wire = run_variant(sc, v, source=path, out_dir=tmp_path / "wire",
                       cli_set={"harness": WRAPPER, "turn_timeout": 120})
    assert wire.error is None, wire.error
    assert inproc.metrics is not None and wire.metrics is not None
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] == 1
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] > 0
    assert {c.id: c.passed for c in wire.checks} == {c.id: c.passed for c in inproc.checks}
    rec = Record.load(wire.record)  # type: ignore[arg-type]
    seen = observe(rec)
    summary_calls = [e["call"] for e in Record.load(inproc.record).of_type(  # type: ignore[arg-type]
        "model_call") if e["purpose"] == "summary"]
    assert sorted(seen.summaries) == sorted(seen.auxiliary) == summary_calls
    assert seen.compactions[0]["removed"] > 0 and seen.compactions[0]["summary"]
    # No event of the program's own reached the record: it was all found from outside.
    assert rec.of_type("compaction") == []
    # The table shows '-' for the reference harness's settings, which a program need not read.
    assert wire.settings["strategy"] is None and wire.settings["service"] == "openai-128k"

    # The control: a program that resends its whole history compacts nothing.
    plain = run_variant(sc, v, source=path, out_dir=tmp_path / "plain", cli_set={
        "harness": f"cmd:python {ROOT / 'examples' / 'anthropic_agent.py'}",
        "turn_timeout": 120})
    assert plain.metrics is not None and plain.metrics["compactions"] == 0
    assert plain.metrics["summary_tokens"] == 0


@pytest.mark.parametrize("variant", ["codex", "summary-fails"])
def test_a_retried_call_is_one_attempt_not_a_compaction(tmp_path: Path, variant: str) -> None:
    """codex trims its oldest message per overflow until its summary request fits (rejected
    requests, each retried with less); a refusing summarizer's ladder sends the same request
    again (a reply not taken up). Seen from outside, both are one compaction and their calls
    its cost, as in process."""
    inproc, wire, _, rec = _both(tmp_path, "cost-after-compaction-zh", variant)
    calls = [e for e in rec.events if e["type"] in ("model_call", "overflow")]
    requests = [tuple(rec.message_hashes(e["request"])) for e in calls]
    if variant == "codex":  # the pattern is there: rejected requests retried with less
        assert sum(e["type"] == "overflow" for e in calls) > 10
    else:  # the same request sent again after a reply
        assert any(a == b for a, b in itertools.pairwise(requests))
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] >= 4
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] > 0


def _both(tmp_path: Path, scenario: str, variant: str) -> tuple[Any, Any, Record, Record]:
    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == variant)
    inproc = run_variant(sc, v, source=path, out_dir=tmp_path / "in")
    wire = run_variant(sc, v, source=path, out_dir=tmp_path / "wire",
                       cli_set={"harness": WRAPPER, "turn_timeout": 120})
    assert wire.error is None, wire.error
    assert inproc.metrics is not None and wire.metrics is not None
    assert {c.id: c.passed for c in wire.checks} == {c.id: c.passed for c in inproc.checks}
    return (inproc, wire, Record.load(inproc.record),  # type: ignore[arg-type]
            Record.load(wire.record))  # type: ignore[arg-type]


def _gone(rec: Record) -> list[str]:
    """Messages of a main-line request missing from the next of its session: what a rule that
    counts every vanished message as compacted would count."""
    by: dict[str, list[list[str]]] = {}
    aux = observe(rec).auxiliary
    for e in rec.of_type("model_call"):
        if e["call"] not in aux:
                by.setdefault(e["request"]["session_id"], []).append(
                rec.message_hashes(e["request"]))
    return [h for seq in by.values() for a, b in itertools.pairwise(seq) for h in a
            if h not in b]


def test_injected_memory_is_no_compaction_and_its_extractions_cost_summary_tokens(
        tmp_path: Path) -> None:
    """A harness-written block that changes (injected memory) removes no conversation; the
    extraction calls answer no turn: summary tokens in process and outside alike."""
    inproc, wire, a, b = _both(tmp_path, "memory-two-users-zh", "default")
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] == 0
    extractions = [e for e in a.of_type("model_call") if e["purpose"] == "memory"]
    cost = sum(e["true_input"] + e["output_tokens"] for e in extractions)
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] == cost > 0
    seen = observe(b)
    assert len(seen.auxiliary) == len(extractions)
    # The control: requests do lose messages (the memory block moves and changes with each
    # turn), so counting every vanished message would find compactions; none is conversation.
    assert any(b.message(h).name == "memory" for h in _gone(b))


def test_a_summary_that_fails_and_is_never_applied_is_no_compaction(tmp_path: Path) -> None:
    """fallback_to_truncation off: every summary is refused, nothing is removed, the turn
    fails. From outside the refused calls are auxiliary (their cost is the summary tokens in
    process too) and no request shows anything removed: no compaction."""
    inproc, wire, a, b = _both(tmp_path, "summary-fails-truncation-zh", "no-fallback")
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] == 0
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] > 0
    summary_calls = {e["call"] for e in a.of_type("model_call") if e["purpose"] == "summary"}
    assert observe(b).auxiliary == summary_calls
    # The control: each refused summary request's history is held whole by the next one (the
    # next attempt, more filler appended): a rule taking "a later request extends it" as the
    # reply taken up finds main-line requests there, and their breaks.
    reqs = [b.message_hashes(e["request"]) for e in b.of_type("model_call")
            if e["call"] in summary_calls]
    assert any(x != y and set(x[:-1]) <= set(y) for x, y in itertools.pairwise(reqs))


def test_a_pin_board_is_no_conversation_and_pin_and_summary_are_one_compaction(
        tmp_path: Path) -> None:
    """pinned: the board is renewed at every compaction and its extraction compresses the
    same conversation as the summary (with the board before it): one compaction each, as in
    process."""
    inproc, wire, a, b = _both(tmp_path, "constraint-switch-zh", "lossy-pinned")
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] >= 2
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] > 0
    # The control: the board message vanishes from the requests (renewed), and the pin and
    # summary requests of one compaction differ (the board), so neither a vanished-message
    # rule nor one compaction per distinct compressed request would count as in process.
    assert any(b.message(h).name == "pinned" for h in _gone(b))
    calls = a.of_type("model_call")
    pairs = [(a.message_hashes(x["request"])[:-1], a.message_hashes(y["request"])[:-1])
             for x, y in itertools.pairwise(calls) if (x["purpose"], y["purpose"]) == ("pin",
                                                                                     "summary")]
    assert pairs and any(p != q for p, q in pairs)


def test_a_window_compacts_alike_in_process_and_outside(tmp_path: Path) -> None:
    """window: the harness records a compaction where a request leaves out conversation the
    previous one carried, and the outside view finds the same points."""
    inproc, wire, a, b = _both(tmp_path, "brevity-30-turns-zh", "window-2")
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] > 10
    assert {c["strategy"] for c in a.of_type("compaction")} == {"window"}
    # At the same points: before the same calls.
    before, pending = [], False
    for e in a.events:
        if e["type"] == "compaction":
            pending = True
        elif e["type"] == "model_call" and pending:
            before.append(e["call"])
            pending = False
    assert [c["at_call"] for c in observe(b).compactions] == before
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] == 0


def test_filler_text_is_told_from_what_a_harness_writes() -> None:
    from harnesslab.sim.filler import exchanges, is_filler_text

    for u, x in itertools.islice(exchanges("zh", 5), 50):
        assert is_filler_text(message_text(u)) and is_filler_text(message_text(x))
    for u, x in itertools.islice(exchanges("en", 5), 50):
        assert is_filler_text(message_text(u)) and is_filler_text(message_text(x))
    # The control: a user's real words, a harness's note, a filler sentence with more to it.
    for text in ("帮我查一下订单 O-1001 的物流。", "Some earlier messages were truncated.", "",
                 "周末客服照常在线，节假日也有值班同事，您放心。O-1001"):
        assert not is_filler_text(text)


def test_a_harness_that_compacts_before_any_request_shows_the_answer(tmp_path: Path) -> None:
    """Codex, whenever its own prompt is over its limit, summarises the model's answer or tool
    round away before any request carries it: the answer was never in a request, and yet it
    is gone, with a summary call between. Each such point is a compaction seen from outside;
    the control resends its whole history and shows none."""
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    program = ROOT / "tests" / "wire" / "programs" / "compacting_agent.py"
    runs = {flag: run_variant(sc, v, source=path, out_dir=tmp_path / (flag or "compacting"),
                              cli_set={"harness": f"cmd:python {program} {flag}".strip(),
                                       "turn_timeout": 120})
            for flag in ("", "--keep")}
    compacting, keep = runs[""], runs["--keep"]
    assert compacting.error is None and keep.error is None, (compacting.error, keep.error)
    rec = Record.load(compacting.record)  # type: ignore[arg-type]
    seen = observe(rec)
    # The tool round summarised before the first turn's answer, and that answer before the
    # follow-up: two summary calls, each followed by a request without what it summarised.
    assert len(seen.summaries) == len(seen.auxiliary) == 2
    assert [c["at_call"] for c in seen.compactions] == [3, 5]
    assert compacting.metrics["compactions"] == 2 and compacting.metrics["summary_tokens"] > 0
    assert compacting.verdict is not None and compacting.verdict.ok  # the handoff kept the fact
    assert keep.metrics["compactions"] == 0 and keep.metrics["summary_tokens"] == 0
    assert keep.verdict is not None and keep.verdict.ok


def test_a_rejected_summary_request_is_an_attempt_not_a_compaction(tmp_path: Path) -> None:
    """retry_on_overflow with a belief twice the window: the reply is rejected, the summary
    request (over the part to compress) is rejected too, truncation drops the old part and the
    retry is served. One compaction in process; from outside the refused summary request is
    an auxiliary attempt, so one too (not a break into it and another out of it)."""
    inproc, wire, a, b = _both(tmp_path, "failure-reported-zh", "retry-on-overflow")
    assert wire.metrics["compactions"] == inproc.metrics["compactions"] == 1
    refused = [e["call"] for e in a.of_type("overflow") if e["purpose"] == "summary"]
    assert refused and set(refused) <= observe(b).auxiliary
    # The control: the refused summary request does remove conversation from the rejected
    # reply before it (it ends at an older message), so taken as a main-line request it shows
    # a break of its own: two compactions.
    calls = [e for e in b.events if e["type"] in ("model_call", "overflow")]
    at = next(i for i, e in enumerate(calls) if e["call"] == refused[0])
    before, summary = (set(b.message_hashes(calls[k]["request"])) for k in (at - 1, at))
    assert before - summary


def test_a_turn_that_ran_out_of_iterations_last_is_the_main_line_not_a_summary(
        tmp_path: Path) -> None:
    """max_iters 1 and a follow-up that must look its order up again: the run's last call makes
    the lookup and the turn is reported failed, so no later request shows its result. It is
    the main line's call all the same (it carries the turn's words): no summary tokens from
    outside, as in process. The control: the same record with the turn not reported failed
    (a harness's word the rule reads) makes that call auxiliary, its tokens a summary's."""
    inproc, wire, _, b = _both(tmp_path, "max-iters-reported-zh", "result-expires")
    assert wire.metrics["summary_tokens"] == inproc.metrics["summary_tokens"] == 0
    last = max(e["call"] for e in b.of_type("model_call"))
    assert last not in observe(b).auxiliary
    for t in b.of_type("turn"):
        t["harness_failed"] = False
    assert last in observe(b).auxiliary


@pytest.mark.parametrize("mode", ["", "--quoted", "--system", "--text-calls"])
def test_a_summary_kept_as_an_assistant_message_is_a_summary_call(
        tmp_path: Path, mode: str) -> None:
    """Semantic Kernel keeps its summary verbatim as an assistant message, CAMEL under a
    heading of its own, agno in its system prompt: their summary calls answered no turn and
    are the compactions' cost,
    though a later request shows their text in an assistant message (it stands where the
    conversation it replaced was, after no message the summary request held). smolagents
    quotes its tool calls as text and answers through ``final_answer``: every call is the
    conversation's, none a summary (the control, and a program that never compacts)."""
    path = bundled_dir() / "followup-after-filler-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    program = ROOT / "tests" / "wire" / "programs" / "kept_summary_agent.py"
    r = run_variant(sc, v, source=path, out_dir=tmp_path / "run", cli_set={
        "harness": f"cmd:python {program} {mode}".strip(), "turn_timeout": 120})
    assert r.error is None and r.metrics is not None, r.error
    rec = Record.load(r.record)  # type: ignore[arg-type]
    seen = observe(rec)
    asked = [e for e in rec.of_type("model_call")
             if "Summarize the conversation above" in rec.request_text(e["request"])]
    if mode == "--text-calls":
        assert asked == [] and seen.auxiliary == frozenset()
        assert r.metrics["summary_tokens"] == 0 and r.metrics["compactions"] == 0
        return
    assert len(asked) > 10 and seen.auxiliary == {e["call"] for e in asked}
    last = max(e["call"] for e in rec.of_type("model_call"))
    # Kept: a later request shows what each wrote (but the last, after the last answer, and
    # any "[summary]" too short to tell).
    def kept(e: dict[str, Any]) -> str:  # what the program keeps of the summary call's reply
        text = e["reply"][0]["text"]
        return json.loads(text)["summary"] if mode == "--system" else text

    shown = {e["call"] for e in asked if e["call"] < last and len(kept(e)) >= 12}
    assert shown and shown <= seen.summaries
    assert r.metrics["summary_tokens"] == sum(e["true_input"] + e["output_tokens"]
                                              for e in asked)
    # Each summary applied, but one after the last answer (no request came after it).
    assert r.metrics["compactions"] == sum(e["call"] < last for e in asked)


def test_a_filler_answer_a_fresh_instance_never_shows_is_no_compaction(tmp_path: Path) -> None:
    """A program that cannot preload answers each filler exchange as a turn; the record keeps
    those answers. The last one before a restart (given through ``final_answer``) is shown by
    no later request, the fresh instance restoring nothing: it answered the filler, so it is
    no summary call and no compaction (without the answers in the record it read as one)."""
    path = bundled_dir() / "restart-cost-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    program = ROOT / "tests" / "wire" / "programs" / "kept_summary_agent.py"
    r = run_variant(sc, v, source=path, out_dir=tmp_path / "run", cli_set={
        "harness": f"cmd:python {program} --text-calls", "turn_timeout": 120})
    assert r.error is None and r.metrics is not None, r.error
    rec = Record.load(r.record)  # type: ignore[arg-type]
    fillers = rec.of_type("filler")
    assert fillers and all(len(f["replies"]) == f["exchanges"] for f in fillers)
    assert observe(rec).auxiliary == frozenset() and r.metrics["compactions"] == 0


@pytest.mark.parametrize("mode", ["", "--answers-only"])
def test_output_fields_steps_are_the_conversations_and_kept_results_are_read(
        tmp_path: Path, mode: str) -> None:
    """A DSPy-style program (tests/wire/programs/fields_agent.py): its steps, written as output
    fields (sim.react), are the conversation's, its ``finish`` step (no tool run, shown only in
    the trajectory the harness renders back) among them: no summary call, no compaction. Its
    history keeps each turn's trajectory serialised as JSON, the result's quotes escaped: the
    follow-up is answered from it without a lookup. The control keeps only the answers: the
    follow-up looks the order up again, and its check fails."""
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    program = ROOT / "tests" / "wire" / "programs" / "fields_agent.py"
    r = run_variant(sc, v, source=path, out_dir=tmp_path / "run", cli_set={
        "harness": f"cmd:python {program} {mode}".strip(), "turn_timeout": 120})
    assert r.error is None and r.metrics is not None, r.error
    rec = Record.load(r.record)  # type: ignore[arg-type]
    calls = rec.of_type("model_call")
    assert all(e["annotations"].get("tool_protocol") == "fields" for e in calls)
    assert observe(rec).auxiliary == frozenset()
    assert r.metrics["compactions"] == 0 and r.metrics["summary_tokens"] == 0
    failed = {c.id for c in r.checks if not c.passed}
    if mode:
        assert failed == {"s2.not_called"}
    else:
        assert failed == set() and r.metrics["followup_accuracy"]["value"] == 1.0
        follow = next(e for e in calls if e["step"] == 2)
        assert '\\"tool\\"' in rec.request_text(follow["request"])  # the escaped result
