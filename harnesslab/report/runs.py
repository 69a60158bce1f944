"""Per-run views, read from the run's record alone: the token sawtooth with the stacked budget,
fact presence per call, and the failure drill-down (the request the model saw when a check
failed, and the compaction that dropped what it needed).

The budget split counts system prompt, tool schemas, summary and history with the service's
true tokenizer (each part's texts, without the chat template's per-message tokens, so the parts
add up to a little less than the true count drawn above them).
"""

from __future__ import annotations

from typing import Any

from harnesslab.errors import HarnessLabError
from harnesslab.record.facts import fact_names, timeline
from harnesslab.record.format import Record, message_text
from harnesslab.tokens import CountRule, TokenCache, make_rule

MAX_MESSAGES = 8       # messages shown at the end of a request
MAX_CHARS = 600        # per message shown
MAX_FAILED_TURNS = 3   # failing turns drilled into per run, each for a different cause


def _budget_rule(tokenizer: str) -> tuple[CountRule, str]:
    try:
        return make_rule(tokenizer, TokenCache()), tokenizer
    except HarnessLabError:
        # The tokenizers extra is missing: split in the bytes/4 estimate rather than not at all.
        return make_rule("bytes4"), "bytes4"


def trace(rec: Record) -> dict[str, Any]:
    """The sawtooth of one run: per model call its estimate and true input, the budget parts,
    the trigger (estimate units), the true window and the compactions."""
    h = rec.header
    harness, service = h["harness"], h["service"]
    rule, unit = _budget_rule(service["tokenizer"])
    calls: list[dict[str, Any]] = []
    compactions: list[dict[str, Any]] = []
    tools_cache: dict[str, int] = {}
    for e in rec.events:
        if e["type"] in ("model_call", "overflow"):
            ref = e["request"]
            req = rec.request(ref)
            tkey = ref["tools"]
            if tkey not in tools_cache:
                tools_cache[tkey] = rule.finalize(rule.head_units("", "", req.tools))
            calls.append({
                "call": e["call"], "purpose": e.get("purpose", ""), "step": e["step"],
                "estimate": e["estimate"], "true": e["true_input"],
                "overflow": e["type"] == "overflow",
                "system": rule.finalize(rule.head_units(req.system, "", ())),
                "tools": tools_cache[tkey],
                "summary": rule.finalize(rule.head_units("", req.summary, ())),
                "history": rule.finalize(sum(rule.message_units(m) for m in req.messages)),
            })
        elif e["type"] == "compaction" and e.get("applied"):
            compactions.append({"after_call": calls[-1]["call"] if calls else 0,
                                "step": e["step"], "strategy": e.get("strategy"),
                                "removed": e.get("removed"), "kept": e.get("kept"),
                                "summary_ok": e.get("summary_ok")})
    return {"context_size": harness["context_size"], "trigger_ratio": harness["trigger_ratio"],
            "trigger": harness["trigger_ratio"] * harness["context_size"],
            "window": service["window"], "estimator": harness["estimator"],
            "tokenizer": service["tokenizer"], "budget_unit": unit,
            "calls": calls, "compactions": compactions}


def facts(rec: Record) -> dict[str, Any]:
    """Which declared facts each reply call showed, and where compactions fell."""
    tl = timeline(rec)
    return {"calls": tl.calls, "facts": tl.facts,
            "present": [[f in p for f in tl.facts] for p in tl.present],
            "compactions": tl.compactions}


def request_view(rec: Record, event: dict[str, Any], turn_text: str | None = None
                 ) -> dict[str, Any]:
    """A request as text, for people: the summary and the newest messages in full, older ones
    counted (``harnesslab show RECORD --call N`` prints all of it)."""
    req = rec.request(event["request"])
    msgs = list(req.messages)
    shown = msgs[-MAX_MESSAGES:]
    # The turn being answered, where the request still has it: its last user message.
    last_user = max((i for i, m in enumerate(shown) if m.role == "user"
                     and (turn_text is None or message_text(m) == turn_text)), default=-1)

    def clip(s: str) -> str:
        return s if len(s) <= MAX_CHARS else s[:MAX_CHARS] + f" … ({len(s) - MAX_CHARS} more)"

    return {"call": event["call"], "estimate": event["estimate"], "true": event["true_input"],
            "overflow": event["type"] == "overflow", "system": clip(req.system),
            "summary": req.summary, "hidden": len(msgs) - len(shown), "total": len(msgs),
            "messages": [{"role": m.role, "text": clip(message_text(m)),
                          "current": i == last_user} for i, m in enumerate(shown)],
            "present": fact_names(event.get("present"))}


def _reply_calls(rec: Record) -> list[dict[str, Any]]:
    return [e for e in rec.events
            if e["type"] in ("model_call", "overflow") and e.get("purpose") == "reply"]


def failed_turns(rec: Record) -> int:
    return len({e["step"] for e in rec.of_type("check") if not e["passed"]})


def drilldown(rec: Record) -> list[dict[str, Any]]:
    """For each turn with failed checks (the first ``MAX_FAILED_TURNS``): the checks, the
    turn, the request its answer came from, what it lost (declared facts an earlier call
    showed, or the turn's own question), and the compaction that dropped it."""
    fails: dict[int, list[dict[str, Any]]] = {}
    for e in rec.of_type("check"):
        if not e["passed"]:
            fails.setdefault(e["step"], []).append(e)
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for step, checks in sorted(fails.items())[:4 * MAX_FAILED_TURNS]:
        if len(out) >= MAX_FAILED_TURNS:
            break
        turn = next((t for t in rec.of_type("turn") if t["step"] == step), None)
        call = None
        if turn is not None:
            call = next((e for e in rec.events if e["type"] in ("model_call", "overflow")
                         and e.get("call") == turn["last_call"]), None)
        item: dict[str, Any] = {
            "step": step, "checks": [{"id": c["id"], "detail": c["detail"]} for c in checks],
            "user": turn["text"] if turn else None, "reply": turn["reply"] if turn else None,
            "request": None, "lost": [], "question_missing": False, "compaction": None}
        if call is not None and turn is not None:
            item["request"] = request_view(rec, call, turn["text"])
            item["question_missing"] = turn["text"] not in rec.request_text(call["request"])
            item["lost"], item["compaction"] = _lost(rec, call, item["question_missing"])
        # A later turn failing for the same reason (the same loss, the same compaction) adds
        # nothing: it is counted, not shown.
        cause = (tuple(c["kind"] for c in checks), tuple(item["lost"]),
                 (item["compaction"] or {}).get("step"))
        if cause in seen:
            continue
        seen.add(cause)
        out.append(item)
    return out


QUESTION = "the question of this turn"


def _lost(rec: Record, call: dict[str, Any], question_missing: bool
          ) -> tuple[list[str], dict[str, Any] | None]:
    """Facts some earlier reply call showed that this one does not (and the turn's question
    when the request lacks it), and the first compaction between where they were last shown
    and this call."""
    now = set(fact_names(call.get("present")))
    last_seen: dict[str, int] = {}
    idx = rec.events.index(call)
    for i, e in enumerate(rec.events[:idx]):
        if e["type"] in ("model_call", "overflow") and e.get("purpose") == "reply":
            for f in fact_names(e.get("present")):
                last_seen[f] = i
    lost = sorted(f for f in last_seen if f not in now)
    if question_missing:
        # The question arrived in this step: it can only have gone since the step began.
        step_start = next(i for i, e in enumerate(rec.events) if e.get("step") == call["step"])
        last_seen[QUESTION] = step_start
        lost.append(QUESTION)
    if not lost:
        return [], None
    since = min(last_seen[f] for f in lost)
    comps = [(i, e) for i, e in enumerate(rec.events[since:idx], start=since)
             if e["type"] == "compaction" and e.get("applied")]
    if not comps:
        return lost, None
    # The first compaction after the facts were last shown is the one that took them out; the
    # later ones (several during one long filler) compacted what was already without them.
    i, c = comps[0]
    dropped = [f for f in lost if last_seen[f] <= i]
    return lost, {"step": c["step"], "strategy": c.get("strategy"), "removed": c.get("removed"),
                  "kept": c.get("kept"), "summary_ok": c.get("summary_ok"),
                  "summary": c.get("summary") or "", "estimate": c.get("estimate"),
                  "after_estimate": c.get("after_estimate"), "dropped": dropped,
                  "removed_messages": _removed(rec, c, idx)}


def _removed(rec: Record, comp: dict[str, Any], call_idx: int) -> list[dict[str, str]]:
    """The messages the compaction took out that carried a declared fact (first few)."""
    before = rec.request(comp["request"]).messages
    after_ids = {m.id for m in rec.request(rec.events[call_idx]["request"]).messages}
    # What the scenario declared: its ids and its utterances (those carry the constraints).
    names = [*rec.header.get("world_ids", []), *rec.header.get("lexicon", {})]
    out = []
    for m in before:
        if m.id in after_ids:
            continue
        text = message_text(m)
        if any(n in text for n in names):
            out.append({"role": m.role, "text": text[:400]})
        if len(out) >= 6:
            break
    return out
