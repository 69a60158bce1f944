"""Metrics: each a documented formula over the events of a run record, and their aggregation
across seeds (Wilson intervals for rates, a seeded bootstrap for means, pass^k).

Per run (``run_metrics``):

- ``followup_accuracy`` = turns whose intent has an ``@ref`` slot and a ``resolves``
  expectation, where the resolved referent equals the expected one and every check of the turn
  passed / such turns.
- ``constraint_retention`` = (turn, constraint) pairs where the answer obeys the constraint /
  pairs, over turns strictly after the turn whose utterance stated the constraint, up to the
  turn that states its opposite (that turn is scored against the new one only from the next
  turn on). A failed turn (harness failure, clarification, could-not-check) obeys nothing.
  Obeying: brevity = at most ``BRIEF_MAX_CHARS`` characters; detailed = at least
  ``LONG_MIN_CHARS`` (the fake model's length rule, ``harnesslab.sim.model``); english = no CJK
  character; chinese = some CJK character.
- ``entity_fidelity`` = ids (order/user patterns) in answers that the user's own message of
  that turn gave, or that exist verbatim in the world and, where the turn expects a referent
  for that slot, equal it / ids in answers.
- ``summary_entity_fidelity`` = ids in summaries that appear in the request they summarised /
  ids in summaries.
- ``stale_fact_rate`` = answers whose cited fact is older than its tool's max_age at answer
  time (world clock) / answers citing a fact.
- ``wasted_requery_rate`` = tool calls made while the request already showed a result of the
  same tool for the same key that was still within max_age (world clock) / tool calls.
- ``identity_leak_rate`` = turns whose answer or requests contain another user's private data
  / answered turns (plus failed turns that leaked).
- ``overflow_rate`` = service rejections for a crossed limit / model calls attempted;
  ``protocol_error_rate`` = rejections for a broken chat protocol (a tool result without its
  call, an unanswered call, ...) / model calls attempted.
- ``trigger_lateness`` = mean over compactions of true tokens of the context when compaction
  fired / (trigger_ratio x the service's true window).
- ``estimate_error`` = per admitted call (estimate - true) / true: signed mean, MAPE, p95 of
  the absolute error; also per content kind of the request (``estimate_error_by_kind``: zh,
  en, mixed or json, ``harnesslab.record.format.content_kind``) and, in a suite summary, per
  scenario locale.
- ``resume_fidelity`` = fresh instances (after a restart or a kill) whose ``save_state()``,
  once they took over, equals the state before (the old instance's before a restart, the one
  after the last finished turn before a kill) / such instances (a harness without state,
  ``StateUnsupported``, makes the run not applicable); ``turns_lost``: turns killed in flight.
  Both only for scenarios with session steps.
- memory runs only: ``identity_leaks``, ``cross_user_memory_items``, ``stale_memory_served``,
  ``memory_visibility``, ``memory_items`` (``harnesslab.judge.memory_metrics``).
- for a black-box program (``harness=cmd:...``) the compactions are those found from its
  request stream (``judge.observed``), never events of its own, and ``summary_tokens`` counts
  its auxiliary calls (every call that answers no turn: a summary, an extraction, a title);
- cost: ``true_input_tokens`` (sum over calls), ``compactions`` (applied ones: a summary, a
  truncation, a window's request leaving out conversation the previous one carried),
  ``summary_tokens`` (true input + output of the calls that answer no turn: every call whose
  purpose is not ``reply``, i.e. summaries, pin extractions, memory extractions; the same cost
  a program's auxiliary calls are), ``model_calls``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from harnesslab.judge.checks import (
    CheckOutcome,
    cited_fact,
    facts_in,
    fresh_at,
    leaks_in_step,
    real_model,
    turn_answer,
)
from harnesslab.judge.memory_metrics import memory_metrics, uses_memory
from harnesslab.judge.observed import is_black_box, observe
from harnesslab.record.format import Record
from harnesslab.sim.intents import CONFLICTS, ID_PATTERNS, Constraint, is_reference
from harnesslab.sim.model import BRIEF_MAX_CHARS, LONG_MIN_CHARS
from harnesslab.stats import Rate, bootstrap_mean, error_stats, mean_or_none, wilson

_ANY_ID = re.compile("|".join(p.pattern for p in ID_PATTERNS.values()))
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _turn_checks(checks: Sequence[CheckOutcome], step: int) -> list[CheckOutcome]:
    return [c for c in checks if c.step == step]


def _key(d: dict[str, Any]) -> str:
    return str(d.get("order_id") or d.get("user_id") or d.get("topic") or "")


def run_metrics(rec: Record, checks: Sequence[CheckOutcome],
                compaction_true: Sequence[int] | None = None) -> dict[str, Any]:
    """The metrics of one run, from its record. ``compaction_true``: the true counts of the
    applied compactions' requests, if the run counted them as they happened (the same numbers
    a recount of the rebuilt requests gives; tested), else they are recounted here."""
    h = rec.header
    lexicon: dict[str, dict[str, Any]] = h["lexicon"]
    expects: dict[str, dict[str, Any]] = h["expects"]
    max_ages: dict[str, float | None] = h["max_ages"]
    world_ids: set[str] = set(h["world_ids"])
    turns = rec.of_type("turn")
    calls = rec.of_type("model_call")

    # follow-up accuracy
    fu = [0, 0]
    for t in turns:
        intent = lexicon.get(t["text"], {})
        exp = expects.get(str(t["step"]), {})
        # What a real model resolved is not known: the rate is not applicable (0 of 0).
        if (is_reference(intent.get("order")) or is_reference(intent.get("user"))) \
                and exp.get("resolves") and not real_model(rec):
            fu[1] += 1
            # The answering call: memory write-back may call the model after it, within the turn.
            ann = (turn_answer(rec, t) or {}).get("annotations", {})
            resolved = ann.get("resolved") or {}
            ok = all(resolved.get(k) == v for k, v in exp["resolves"].items())
            fu[0] += ok and all(c.passed for c in _turn_checks(checks, t["step"]))

    # constraint retention: from the turn after a constraint is stated, until one replaces it
    cr = [0, 0]
    active: dict[str, int] = {}
    for t in turns:
        stated = lexicon.get(t["text"], {}).get("constraints", [])
        for c in stated:
            active.pop(CONFLICTS[Constraint(c)].value, None)  # replaced from this turn on
        reply = t["reply"] or ""
        for c in active:
            cr[1] += 1
            if t["failed"]:
                continue  # a failed turn obeys nothing
            if c == "brevity":
                ok = 0 < len(reply) <= BRIEF_MAX_CHARS
            elif c == "detailed":
                ok = len(reply) >= LONG_MIN_CHARS
            elif c == "english":
                ok = bool(reply) and not _CJK.search(reply)
            else:
                ok = bool(_CJK.search(reply))
            cr[0] += ok
        for c in stated:
            active[c] = t["step"]

    # entity fidelity (answers, summaries)
    ef = [0, 0]
    for t in turns:
        expected = set((expects.get(str(t["step"]), {}).get("resolves") or {}).values())
        said = set(_ANY_ID.findall(t["text"]))
        for found in _ANY_ID.findall(t["reply"] or ""):
            ef[1] += 1
            same_slot = {e for e in expected if e[:2] == found[:2]}
            # Echoing the id the user gave ("could not check O-1010") is faithful.
            ef[0] += found in said or (found in world_ids and (not same_slot or found in same_slot))
    # A program's compactions and summary calls are found from its requests (judge.observed).
    seen = observe(rec) if is_black_box(rec) else None
    all_compactions = list(seen.compactions) if seen else rec.of_type("compaction")
    sef = [0, 0]
    for comp in all_compactions:
        if not comp.get("summary"):
            continue
        source = rec.request_text(comp["request"])
        for found in _ANY_ID.findall(comp["summary"]):
            sef[1] += 1
            sef[0] += found in source

    # staleness and wasted re-queries (world clock)
    stale = [0, 0]
    for t in turns:
        last = turn_answer(rec, t)
        ann = (last or {}).get("annotations", {})
        cited = cited_fact(rec, last, t["reply"] or "")
        if t["failed"] or ann.get("kind", "answer") != "answer" or not cited \
                or cited.get("error"):
            continue
        stale[1] += 1
        stale[0] += not fresh_at(rec, cited, datetime.fromisoformat(t["now"]))[0]
    wasted = [0, 0]
    now_of_step = {t["step"]: datetime.fromisoformat(t["now"]) for t in turns}
    for e in calls:
        tool_calls = [b for b in e["reply"] if b["type"] == "tool_call"]
        if not tool_calls:
            continue
        facts = facts_in(rec, e["request"])
        now = now_of_step.get(e["step"])
        for b in tool_calls:
            wasted[1] += 1
            try:
                args = json.loads(b["input"])
            except json.JSONDecodeError:
                continue
            key = _key(args) if isinstance(args, dict) else ""
            ma = max_ages.get(b["name"])
            for d in facts:
                if d.get("tool") != b["name"] or _key(d) != key or now is None:
                    continue
                if ma is None or now - datetime.fromisoformat(d["as_of"]) <= timedelta(seconds=ma):
                    wasted[0] += 1
                    break

    # Over answered turns, plus any failed turn that leaked (a leak counts whatever the answer).
    leaking = {t["step"] for t in turns
               if leaks_in_step(rec, t["step"], t["reply"] or "", t.get("user"))}
    leak_den = sum(1 for t in turns if not t["failed"] or t["step"] in leaking)
    overflows = rec.of_type("overflow")
    protocol = rec.of_type("protocol_error")
    attempted = len(calls) + len(overflows) + len(protocol)

    # trigger lateness: true tokens of the context when compaction fired / trigger x window
    from harnesslab.sim.service import ServiceProfile, SimulatedService

    profile = ServiceProfile.model_validate(h["service"])
    lateness: list[float] = []
    compactions = [c for c in all_compactions if c.get("applied")]
    if compactions:
        trig = h["harness"]["trigger_ratio"] * profile.window
        if compaction_true is None or len(compaction_true) != len(compactions):
            svc = SimulatedService(profile)
            compaction_true = [svc.count_input(rec.request(c["request"])) for c in compactions]
        lateness = [n / trig for n in compaction_true]

    estimated = [e for e in calls if e["true_input"] and e["estimate"] is not None]
    errors = [(e["estimate"] - e["true_input"]) / e["true_input"] for e in estimated]
    # What the calls that answer no turn cost (summaries, pin and memory extractions): the
    # same set in process (by purpose) as from outside (the auxiliary calls).
    summary_calls = [e for e in calls if e["call"] in seen.auxiliary] if seen is not None \
        else [e for e in calls if e["purpose"] != "reply"]
    return {
        "followup_accuracy": Rate(*fu).to_dict(),
        "constraint_retention": Rate(*cr).to_dict(),
        "entity_fidelity": Rate(*ef).to_dict(),
        "summary_entity_fidelity": Rate(*sef).to_dict(),
        "stale_fact_rate": Rate(*stale).to_dict(),
        "wasted_requery_rate": Rate(*wasted).to_dict(),
        "identity_leak_rate": Rate(len(leaking), leak_den).to_dict(),
        "overflow_rate": Rate(len(overflows), attempted).to_dict(),
        "protocol_error_rate": Rate(len(protocol), attempted).to_dict(),
        "trigger_lateness": mean_or_none(lateness),
        "estimate_error": error_stats(errors),
        "estimate_error_by_kind": {
            k: error_stats([(e["estimate"] - e["true_input"]) / e["true_input"]
                            for e in estimated if e.get("kind") == k])
            for k in sorted({e.get("kind", "") for e in estimated})},
        "true_input_tokens": sum(e["true_input"] for e in calls),
        "compactions": len(compactions),
        "summary_tokens": sum(e["true_input"] + e["output_tokens"] for e in summary_calls),
        "model_calls": len(calls),
        # only for scenarios with session steps (their turns name the instance)
        **(resume_metrics(rec) if any("instance" in t for t in turns)
           or rec.of_type("resume", "session", "instances") else {}),
        **(memory_metrics(rec) if uses_memory(rec) else {}),
    }


def resume_metrics(rec: Record) -> dict[str, Any]:
    """``resume_fidelity`` and ``turns_lost`` (module docstring)."""
    done = [e for e in rec.of_type("resume") if e.get("applicable")]
    return {"resume_fidelity": Rate(sum(1 for e in done if e["fidelity"]), len(done)).to_dict(),
            "turns_lost": sum(1 for t in rec.of_type("turn") if t.get("killed"))}


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pool per-seed metrics of one (scenario, variant): rates with Wilson intervals, means
    with bootstrap intervals, pass^k of 'every check passed' for k = 1..seeds."""
    out: dict[str, Any] = {}
    if not runs:
        return out
    for name, v in runs[0].items():
        if isinstance(v, dict) and "num" in v:
            num = sum(r[name]["num"] for r in runs)
            den = sum(r[name]["den"] for r in runs)
            out[name] = {"value": num / den if den else None, "ci": wilson(num, den),
                         "num": num, "den": den}
        elif isinstance(v, dict) and "signed_mean" in v:
            out[name] = {}
            for stat in ("signed_mean", "mape", "p95"):
                xs = [float(r[name][stat]) for r in runs if r[name][stat] is not None]
                out[name][stat] = {"value": mean_or_none(xs), "ci": bootstrap_mean(xs)}
        elif isinstance(v, int | float) or v is None:
            xs = [float(r[name]) for r in runs if r[name] is not None]
            out[name] = {"value": mean_or_none(xs), "ci": bootstrap_mean(xs)}
    return out
