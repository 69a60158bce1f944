"""Checks: a scenario's expectations evaluated over a run record, and the variant's verdict
(did every check pass or fail as the variant expects?)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from harnesslab.messages import Request
from harnesslab.record.format import CALL_EVENTS, Record
from harnesslab.scenario.schema import Expect, Scenario, UserStep, Variant
from harnesslab.scenario.steps import FIDELITY, step_checks
from harnesslab.sim.react import answer_of, field_values
from harnesslab.sim.reading import View
from harnesslab.sim.segments import Reader


@dataclass(frozen=True)
class CheckOutcome:
    id: str        # s<step>.<kind>
    kind: str
    step: int
    passed: bool
    detail: str
    # Why the bench could not judge it (its turn's request was not readable to the fake
    # model, docs/understanding.md): then it is neither a pass nor a harness failure.
    unreadable: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": "check", "id": self.id, "kind": self.kind, "step": self.step,
                "passed": self.passed, "detail": self.detail,
                **({"unreadable": self.unreadable} if self.unreadable else {})}


@dataclass(frozen=True)
class Verdict:
    ok: bool                 # every check passed or failed as expected
    unexpected: list[str]    # what went against the expectation, one line each
    # The checks the bench could not judge, one line each ("s3.resolves: why"): shown apart.
    unreadable: list[str] = field(default_factory=list)


def _turn_calls(rec: Record, step: int) -> list[dict[str, Any]]:
    return rec.in_step(step, *CALL_EVENTS)


def called_tools(call: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A model call's tool calls (name, block), each named as the world names its tool: a
    harness that offers the tools under its own names (``shop-track_order``) called the world's
    (the fake model's ``tool_names`` annotation, sim.aliases); a call written as text in a
    prompt's ReAct protocol is one too (its ``text_calls`` annotation, sim.react)."""
    ann = call.get("annotations") or {}
    names = ann.get("tool_names") or {}
    return [(names.get(b["name"], b["name"]), b) for b in call["reply"]
            if b["type"] == "tool_call"] + [(c["name"], c) for c in ann.get("text_calls", ())]


def answer_call(calls: list[dict[str, Any]], reply: str) -> dict[str, Any] | None:
    """Of a turn's ``reply`` model calls, the one that gave its answer: the last whose text is
    the answer (a black-box harness may call the model again after answering, to summarise,
    through the same endpoint), else the last that gave it as a string of a JSON answer or of
    a tool call's arguments (structured output; smolagents' and BeeAI's ``final_answer``),
    else the last."""
    texts = [reply_text(e) for e in calls]
    hits = [i for i, t in enumerate(texts) if reply and t == reply] or \
        [i for i, e in enumerate(calls) if reply and reply in answer_strings(e)]
    return calls[hits[-1]] if hits else calls[-1] if calls else None


def json_strings(v: Any) -> Iterator[str]:
    """Every string in a JSON value, nested ones included."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from json_strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from json_strings(x)


def argument_strings(call: dict[str, Any]) -> list[str]:
    """The string values of a call's tool calls' arguments (a final answer given through a
    tool, smolagents' and BeeAI's ``final_answer``, is one); arguments that are no JSON, as
    written."""
    out: list[str] = []
    for b in call["reply"]:
        if b["type"] == "tool_call":
            try:
                out += list(json_strings(json.loads(b["input"])))
            except ValueError:
                out.append(b["input"])
    return out


def reply_text(call: dict[str, Any]) -> str:
    """A model call's reply text (its text blocks joined)."""
    return "".join(b.get("text", "") for b in call["reply"] if b["type"] == "text")


def answer_strings(call: dict[str, Any]) -> list[str]:
    """Where a harness may take a call's answer from besides its text: the string values of
    the text when it is a JSON object (a structured output, parsed by the harness) and of its
    tool calls' arguments (:func:`argument_strings`), and the text after a ReAct protocol's
    final-answer marker (``Final Answer:``, ``Answer:``) and the values of its ``[[ ## field ## ]]``
    sections (sim.react)."""
    out: list[str] = []
    text = reply_text(call)
    final = answer_of(text) if "nswer" in text else None
    if final:
        out.append(final)
    if "[[ ## " in text:
        out += field_values(text)
    if text.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            got = json.loads(text)
            if isinstance(got, dict):
                out += json_strings(got)
    return out + argument_strings(call)


def turn_answer(rec: Record, turn: dict[str, Any]) -> dict[str, Any] | None:
    """The model call that gave a turn's answer (:func:`answer_call`)."""
    calls = [e for e in _turn_calls(rec, turn["step"])
             if e["type"] == "model_call" and e["purpose"] == "reply"]
    return answer_call(calls, turn["reply"] or "")


def fresh_at(rec: Record, cited: dict[str, Any] | None, now: datetime) -> tuple[bool, str]:
    """Whether the fact an answer cites is within its tool's max_age at ``now`` (world clock),
    with the reason: the one definition the fresh_fact check and the stale-fact rate share."""
    if not cited or cited.get("error"):
        return False, "the answer cites no fact"
    max_age = rec.header["max_ages"].get(cited.get("tool", ""))
    as_of = cited.get("as_of")
    if max_age is None:
        return True, f"fact from {as_of}; its tool's results never go stale"
    if not as_of:
        return False, "the cited fact has no as_of"
    age = now - datetime.fromisoformat(as_of)
    if age <= timedelta(seconds=max_age):
        return True, f"fact from {as_of}, age {age}"
    return False, f"stale: fact from {as_of} is {age} old at {now.isoformat()} " \
                  f"(max_age {timedelta(seconds=max_age)})"


# The checks that read the fake model's annotations (what it resolved, which constraints the
# request showed it, why it could not check): not applicable to a real model's answers.
ANNOTATION_CHECKS = ("in_force", "resolves", "unable")
NOT_APPLICABLE_WHY = "a real model answered: no annotations say what it resolved or saw"
# A turn whose request the fake model could not read (the run record's turn says why).
UNREADABLE_WHY = "the bench could not read this request"


def real_model(rec: Record) -> bool:
    """Whether a real model answered this run (``bench.real_model``; the header names it)."""
    return bool(rec.header.get("model"))


def facts_in(rec: Record, ref: dict[str, Any]) -> list[dict[str, Any]]:
    """The successful tool results (JSON objects) visible in a recorded request, in order."""
    return rec.facts(ref)


def _values(d: Any) -> list[str]:
    if isinstance(d, dict):
        return [v for k, x in d.items() if k not in ("tool", "as_of") for v in _values(x)]
    if isinstance(d, list):
        return [v for x in d for v in _values(x)]
    return [str(d)] if isinstance(d, str | int) and not isinstance(d, bool) else []


def stated_fact(rec: Record, call: dict[str, Any] | None, reply: str) -> dict[str, Any] | None:
    """For an answer without annotations (a real model's): the fact it states, read from the
    answer itself: the latest tool result in the answering request one of whose values (an
    id, a date, an address; four characters at least) the answer repeats."""
    if call is None or not reply:
        return None
    for d in reversed(facts_in(rec, call["request"])):
        if any(len(v) >= 4 and v in reply for v in _values(d)):
            return {"tool": d.get("tool"), "as_of": d.get("as_of")}
    return None


def _answering_request(rec: Record, step: int, last: dict[str, Any] | None) -> Request | None:
    """The request that gave the turn's answer, else the turn's last request (a turn without
    an answer), else None."""
    calls = [e for e in _turn_calls(rec, step) if "request" in e]
    asked = last if last is not None else (calls[-1] if calls else None)
    return rec.request(asked["request"]) if asked is not None else None


def stated_now(request: Request | None, now: datetime, *, zone: bool = False) -> tuple[bool, str]:
    """Whether ``request`` states ``now`` (the world's clock) to the minute, read as the fake
    model reads a time (``sim.times``: any form, in any message but a tool result; the latest
    statement counts, one without a zone is in the scenario's), no zone it names is another
    than the user's, and (``zone``) the time is given in the user's zone, by its offset or a
    zone named beside it; with what it states. Read from the recorded request, not from the
    fake model's annotations, so a real model's run is judged alike."""
    if request is None:
        return False, "no request in this turn"
    view = View(request, {}, {}, Reader({}, {}, now.tzinfo or UTC))
    stated = view.now
    if stated is None and (unread := view.now_unread) is not None:
        return False, f"states the time as {unread.raw!r}, which reads two ways: {unread.why}"
    if stated is None:
        return False, "the request states no current time"
    user = now.utcoffset()
    # A zone named beside the time must be the user's (the latest that names one it can read).
    # An offset no zone has (``UTC-03:238``) names another zone than the user's, whatever the
    # user's is; only a word that is no offset and no zone we know is left unread.
    named = [z for _, z in view.zones(now) if z is not None]
    latest = named[-1] if named else None
    if isinstance(latest, str):
        return False, f"names the zone {latest}, no valid UTC offset, not the user's " \
                      f"{_offset(user)}"
    if latest is not None and latest != user:
        return False, f"names the zone {_offset(latest)}, not the user's {_offset(user)}"
    if zone and stated.utcoffset() != user and not named:
        return False, f"states {stated.isoformat()}: not in the user's zone {_offset(user)}"
    if stated.replace(second=0, microsecond=0) != now.replace(second=0, microsecond=0):
        return False, f"states {stated.isoformat()}, {_ago(now - stated)} (now {now.isoformat()})"
    return True, f"states {stated.isoformat()}"


def removal_noted(request: Request) -> str | None:
    """The latest notice of removed conversation in ``request`` (``sim.notices``, outside
    tool results), or None."""
    found = View(request, {}, {}, Reader({}, {})).notices()
    return found[-1][1] if found else None


def _offset(off: timedelta | None) -> str:
    minutes = int((off or timedelta()).total_seconds() // 60)
    return f"UTC{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _ago(delta: timedelta) -> str:
    minutes = round(abs(delta.total_seconds()) / 60)
    return f"{minutes} min {'behind' if delta.total_seconds() > 0 else 'ahead of'} now"


def cited_fact(rec: Record, call: dict[str, Any] | None, reply: str) -> dict[str, Any] | None:
    """The fact an answer cites: the fake model's annotation, or read from a real model's
    answer (:func:`stated_fact`)."""
    if real_model(rec):
        return stated_fact(rec, call, reply)
    cited: dict[str, Any] | None = (call or {}).get("annotations", {}).get("cited")
    return cited


def evaluate_turn(rec: Record, step: int, expect: Expect, turn: dict[str, Any]) -> list[CheckOutcome]:
    reply: str = turn["reply"] or ""
    last = turn_answer(rec, turn)
    ann: dict[str, Any] = last["annotations"] if last else {}
    now = datetime.fromisoformat(turn["now"])
    out: list[CheckOutcome] = []

    def add(kind: str, passed: bool, detail: str) -> None:
        out.append(CheckOutcome(f"s{step}.{kind}", kind, step, passed, detail))

    if expect.answered:
        ok = not turn["failed"] and ann.get("kind", "answer") == "answer"
        add("answered", ok, "answered" if ok else
            f"turn failed ({turn['reason']})" if turn["failed"] else
            f"model replied {ann.get('kind')}: {ann.get('reason', '')}")
    if expect.in_force is not None:
        seen = ann.get("constraints")
        needed = sorted(c.value for c in expect.in_force)
        ok = seen is not None and all(c in seen for c in needed)
        add("in_force", ok, f"in force in the request: {seen}; expected {needed}")
    failed = f"turn failed ({turn['reason']})" if turn["failed"] else ""
    if expect.mentions:
        missing = [s for s in expect.mentions if s not in reply]
        # A failed turn's text (an apology naming the order) mentions nothing it answered.
        add("mentions", not missing and not failed,
            failed or (f"missing {missing}" if missing else "all mentioned"))
    if expect.not_mentions:
        found = [s for s in expect.not_mentions if s in reply]
        add("not_mentions", not found, f"mentions {found}" if found else "none mentioned")
    if expect.max_chars is not None:
        add("max_chars", len(reply) <= expect.max_chars and not failed,
            failed or f"{len(reply)} chars (max {expect.max_chars})")
    if expect.min_chars is not None:
        add("min_chars", len(reply) >= expect.min_chars and not failed,
            failed or f"{len(reply)} chars (min {expect.min_chars})")
    # What the model asked for (a harness may refuse to run it): its replies' tool calls.
    called = [name for e in _turn_calls(rec, step)
              if e["type"] == "model_call" and e["purpose"] == "reply"
              for name, _ in called_tools(e)]
    if expect.called:
        missing = [t for t in expect.called if t not in called]
        add("called", not missing, f"called {called}")
    if expect.not_called:
        bad = [t for t in expect.not_called if t in called]
        # Not calling is a virtue only in a turn that answered.
        add("not_called", not bad and not failed, failed or f"called {called}")
    if expect.fresh_fact is not None:
        ok, detail = fresh_at(rec, cited_fact(rec, last, reply), now) if not turn["failed"] else \
            (False, "turn failed")
        add("fresh_fact", ok == expect.fresh_fact, detail)
    if expect.resolves is not None:
        got = ann.get("resolved") or {}
        want = {str(k): v for k, v in expect.resolves.items()}
        ok = all(got.get(k) == v for k, v in want.items())
        add("resolves", ok, f"resolved {got or 'nothing'}; expected {want}")
    if expect.no_leak is not None:
        leaks = leaks_in_step(rec, step, reply, turn.get("user"))
        add("no_leak", not leaks, f"leaked {leaks}" if leaks else "no leak")
    if expect.request_contains:
        calls = [e for e in _turn_calls(rec, step) if "request" in e]
        text = rec.request_text(calls[-1]["request"]) if calls else ""
        missing = [s for s in expect.request_contains if s not in text]
        add("request_contains", not missing, f"missing {missing}" if missing else "present")
    if expect.states_now is not None:
        ok, detail = stated_now(_answering_request(rec, step, last), now,
                                zone=expect.states_now == "zone")
        add("states_now", ok == bool(expect.states_now), detail)
    if expect.notes_removed is not None:
        asked = _answering_request(rec, step, last)
        notice = removal_noted(asked) if asked is not None else None
        add("notes_removed", (notice is not None) == expect.notes_removed,
            f"notes: {notice!r}" if notice else "no request notes removed messages")
    if expect.unable is not None:
        # The model's could-not-check fails the turn on purpose here; the harness must not.
        why = ann.get("unable") if ann.get("kind") == "answer" else None
        add("unable", why == expect.unable and not turn.get("harness_failed", turn["failed"]),
            f"could not check: {why}" if why else "the answer did not say it could not check")
    if expect.reports_failure is not None:
        # The harness's own word, apart from the bench's verdict on the model's reply (a
        # clarifying question fails a turn the harness answered; it is no report of failure).
        said = bool(turn.get("harness_failed", turn["failed"]))
        calls = _turn_calls(rec, step)
        # What the service did to the turn's last request, so that a misreport (rejected, and
        # reported answered) reads apart from a turn that simply had an answer.
        last_rejected = bool(calls) and calls[-1]["type"] != "model_call"
        add("reports_failure", said == expect.reports_failure,
            f"the harness reported the turn failed ({turn['reason']})" if said else
            "the harness reported an answer" + (
                ", but the service rejected the turn's last request" if last_rejected else ""))
    if expect.max_images is not None:
        most = max((e.get("images", 0) for e in _turn_calls(rec, step)), default=0)
        add("max_images", most <= expect.max_images, f"at most {most} images in a request")
    if expect.min_images is not None:
        # An "at most" check passes a harness that removes every image: the last request must
        # still carry the newest ones.
        calls = [e for e in _turn_calls(rec, step) if "request" in e]
        last_n = calls[-1].get("images", 0) if calls else 0
        add("min_images", last_n >= expect.min_images, f"{last_n} images in the last request")
    return out


def private_values(rec: Record, user: str | None = None) -> dict[str, list[str]]:
    """Per user other than the session's (``user``: the session a turn served, when a scenario
    opens several): the strings whose appearance is a leak."""
    session = user or rec.header["session_user"]
    return {u: vals for u, vals in rec.header["private"].items() if u != session}


def leaks_in_step(rec: Record, step: int, reply: str, user: str | None = None) -> list[str]:
    found: set[str] = set()
    others = private_values(rec, user)
    values = tuple(dict.fromkeys(v for vals in others.values() for v in vals))
    shown: set[str] = set()
    for e in _turn_calls(rec, step):
        if "request" in e:
            shown |= rec.shows(e["request"], values)
    for other, vals in others.items():
        for v in vals:
            if v in reply or v in shown:
                found.add(f"{other}:{v}")
    return sorted(found)


def turn_checks(rec: Record, step: int, expect: Expect, turn: dict[str, Any]) -> list[CheckOutcome]:
    """A user step's checks, as ``evaluate_turn`` judges them; none passes where the bench,
    not the harness, could not read the turn (no verdict on it)."""
    found = evaluate_turn(rec, step, expect, turn)
    if why := turn.get("unreadable"):
        found = [replace(c, passed=False, unreadable=why) for c in found]
    return found


def skipped_kinds(rec: Record) -> tuple[str, ...]:
    """The check kinds that do not apply to the run (a real model's: :data:`ANNOTATION_CHECKS`)."""
    return ANNOTATION_CHECKS if real_model(rec) else ()


def assemble(rec: Record, sc: Scenario, by_step: Mapping[int, list[CheckOutcome]]
             ) -> tuple[list[CheckOutcome], list[str]]:
    """The run's checks in step order, from each user step's (``turn_checks``) and the restore
    checks of session steps (from ``rec``'s resume events), split as ``evaluate_split``'s."""
    resumes: dict[int, list[dict[str, Any]]] = {}
    for e in rec.of_type("resume"):
        resumes.setdefault(e["origin"], []).append(e)
    out: list[CheckOutcome] = []
    for i, step in enumerate(sc.steps, start=1):
        if isinstance(step, UserStep):
            out += by_step.get(i, [])
        elif FIDELITY in step_checks(step):
            out.append(_fidelity(i, resumes.get(i, [])))
    skip = skipped_kinds(rec)
    return [c for c in out if c.kind not in skip], [c.id for c in out if c.kind in skip]


def evaluate_split(rec: Record, sc: Scenario) -> tuple[list[CheckOutcome], list[str]]:
    """The checks that apply, and the ids of those that do not (a real model's run:
    :data:`ANNOTATION_CHECKS`)."""
    turns = {e["step"]: e for e in rec.of_type("turn")}
    return assemble(rec, sc, {i: turn_checks(rec, i, step.expect, turns[i])
                              for i, step in enumerate(sc.steps, start=1)
                              if isinstance(step, UserStep) and i in turns})


def evaluate(rec: Record, sc: Scenario) -> list[CheckOutcome]:
    return evaluate_split(rec, sc)[0]


def _fidelity(step: int, events: list[dict[str, Any]]) -> CheckOutcome:
    """The restored state equals the state before (every instance a restart or kill built)."""
    if not events:
        detail, ok = "no instance was resumed (the kill came after the turn's last call)", False
    else:
        bad = [e for e in events if not e["fidelity"]]
        ok = not bad
        detail = "restored state equals the state before" if ok else "; ".join(
            e.get("reason") or e.get("error") or f"differs in {', '.join(e['differs'])}"
            for e in bad)
    return CheckOutcome(f"s{step}.{FIDELITY}", FIDELITY, step, ok, detail)


def matching(checks: list[CheckOutcome], want: str) -> list[CheckOutcome]:
    """The checks an expect_fail entry names: by id (s3.resolves) or by kind (resolves)."""
    by_id = "." in want
    return [c for c in checks if (c.id if by_id else c.kind) == want]


def expectations_met(checks: Sequence[CheckOutcome], variant: Variant
                     ) -> tuple[list[tuple[str, list[CheckOutcome]]], set[str]]:
    """A variant's ``expect_fail`` entries against one run: those that did not fail (each with
    the checks it names), and the ids of every check an entry covers (a check expected to fail
    only at a rate is covered: free in one run). The rule ``verdict`` applies, less its
    allowance for checks that do not apply or could not be read."""
    covered = {c.id for r in variant.fail_rates for c in matching(list(checks), r.check)}
    passed: list[tuple[str, list[CheckOutcome]]] = []
    for want in variant.fail_always:
        hits = matching(list(checks), want)
        covered.update(c.id for c in hits)
        if not any(not c.passed for c in hits):
            passed.append((want, hits))
    return passed, covered


def verdict(checks: list[CheckOutcome], variant: Variant,
            not_applicable: Sequence[str] = ()) -> Verdict:
    """One run's verdict. A check expected to fail in a fraction of the seeds may go either way
    in one run; ``harnesslab.run.suite`` judges it across the seeds. An expected failure
    naming only checks that do not apply, or that the bench could not read, is no expectation
    for this run; an unreadable check is listed apart, never as a harness failure."""
    unexpected: list[str] = []
    unread = [c for c in checks if c.unreadable]
    checks = [c for c in checks if not c.unreadable]
    covered: set[str] = {c.id for r in variant.fail_rates for c in matching(checks, r.check)}
    for want in variant.fail_always:
        hits = matching(checks, want)
        if not hits and (matching(unread, want) or any(want in (n, n.split(".", 1)[1])
                                                       for n in not_applicable)):
            continue
        failing = [c for c in hits if not c.passed]
        covered.update(c.id for c in hits)
        if not failing:
            unexpected.append(f"expected {want} to fail, but it passed")
    for c in checks:
        if c.id not in covered and not c.passed:
            unexpected.append(f"{c.id} failed: {c.detail}")
    return Verdict(not unexpected, unexpected, [f"{c.id}: {c.unreadable}" for c in unread])
