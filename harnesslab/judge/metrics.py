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
- ``server_truncation_rate`` = model calls the server answered only after dropping messages
  of the request (the Responses API's ``truncation: "auto"``, Ollama's truncation at
  ``num_ctx``) / model calls answered, with ``server_dropped_messages`` (their sum); only for
  runs where the server cut something: the harness's overflows the server hid.
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
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from harnesslab.judge.checks import (
    CheckOutcome,
    called_tools,
    cited_fact,
    facts_in,
    fresh_at,
    leaks_in_step,
    real_model,
    turn_answer,
)
from harnesslab.judge.memory_metrics import memory_metrics
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


def steps_of(events: Iterable[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]]]]:
    """Events grouped by step, in record order (steps only grow as a run goes)."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
    for e in events:
        step = e.get("step", 0)
        if not out or out[-1][0] != step:
            out.append((step, []))
        out[-1][1].append(e)
    return out


def _declared_reference(intent: Mapping[str, Any]) -> bool:
    """A declared domain's ask that names no instance, or refers to one (``@ref`` is its
    default, left out of the header's lexicon)."""
    if intent.get("act") != "ask" or intent.get("entity") in (None, "user"):
        return False
    return intent.get("id") is None or is_reference(intent.get("id"))


class Tally:
    """The metrics of one run, gathered a step at a time: what ``run_metrics`` computes from a
    whole record, fed each step's events as the step ends (the live judge, ``judge.live``) or
    as a record is read back (``run_metrics``): one code path, so the two agree by
    construction, and the tests compare them on every bundled record. A step's requests must
    still be readable from ``rec`` when it is added; after that the tally keeps only counts
    and one number per model call. What needs the whole record (a program's compactions found
    from its request stream, the memory metrics) is computed at :meth:`result` from ``rec``,
    which must then still hold every event."""

    def __init__(self, rec: Record) -> None:
        h = rec.header
        self._lexicon: dict[str, dict[str, Any]] = h["lexicon"]
        self._expects: dict[str, dict[str, Any]] = h["expects"]
        self._max_ages: dict[str, float | None] = h["max_ages"]
        self._world_ids: set[str] = set(h["world_ids"])
        # A declared domain's ids (the header names their patterns), else the bundled world's.
        pats = [re.compile(p) for p in (h.get("domain") or {}).get("id_patterns", {}).values()]
        self._any_id = re.compile("|".join(f"(?:{p.pattern})" for p in pats)) if pats \
            else _ANY_ID
        self._types = pats or list(ID_PATTERNS.values())
        self._real = real_model(rec)
        self.black_box = is_black_box(rec)
        self._fu = [0, 0]
        self._cr = [0, 0]
        self._active: dict[str, int] = {}
        self._ef = [0, 0]
        self._sef = [0, 0]
        self._stale = [0, 0]
        self._wasted = [0, 0]
        self._leaking = 0
        self._leak_den = 0
        self._overflows = self._protocol = self._calls = 0
        self._cut_calls = self._cut_messages = 0  # calls the server truncated, messages it dropped
        self._true_input = 0
        self._summary_tokens = 0
        self._compactions = 0
        self._recounted: list[int] = []  # true counts of applied compactions, if recounted
        # Per estimated call: its request kind as the key and as the filter of
        # estimate_error_by_kind read it (a call without one: key "", matching none), error.
        self._errors: list[tuple[str, Any, float]] = []
        self.memory_calls = False
        self._sessions = False  # turns naming their instance, or session steps
        self._turns_lost = 0
        self.kinds: set[Any] = set()  # the fake model's answer kinds (run.applicable)
        self._svc: Any = None

    def add(self, rec: Record, step: int, events: Sequence[dict[str, Any]],
            checks: Sequence[CheckOutcome], *, recount: bool) -> None:
        """One step's events (in record order) and that step's checks. ``recount``: count the
        true tokens of each applied compaction's request here (no count kept by the run)."""
        now: datetime | None = None
        for e in events:
            if e["type"] == "turn":
                now = datetime.fromisoformat(e["now"])
        for e in events:
            kind = e["type"]
            if kind == "turn":
                self._turn(rec, e, checks)
            elif kind == "model_call":
                self._call(rec, e, now)
            elif kind == "overflow":
                self._overflows += 1
            elif kind == "protocol_error":
                self._protocol += 1
            elif kind == "compaction" and not self.black_box:
                self._compaction(rec, e, recount=recount)
            if kind in ("resume", "session", "instances"):
                self._sessions = True

    def _turn(self, rec: Record, t: dict[str, Any], checks: Sequence[CheckOutcome]) -> None:
        step = t["step"]
        intent = self._lexicon.get(t["text"], {})
        exp = self._expects.get(str(step), {})
        reply = t["reply"] or ""
        last = turn_answer(rec, t)
        ann = (last or {}).get("annotations", {})
        # follow-up accuracy. What a real model resolved is not known: not applicable (0 of 0).
        if (is_reference(intent.get("order")) or is_reference(intent.get("user"))
                or _declared_reference(intent)) and exp.get("resolves") and not self._real:
            self._fu[1] += 1
            # The answering call: memory write-back may call the model after it, within the turn.
            resolved = ann.get("resolved") or {}
            ok = all(resolved.get(k) == v for k, v in exp["resolves"].items())
            self._fu[0] += ok and all(c.passed for c in _turn_checks(checks, step))
        # constraint retention: from the turn after a constraint is stated, until one replaces it
        stated = intent.get("constraints", [])
        for c in stated:
            self._active.pop(CONFLICTS[Constraint(c)].value, None)  # replaced from this turn on
        for c in self._active:
            self._cr[1] += 1
            if t["failed"]:
                continue  # a failed turn obeys nothing
            if c == "brevity":
                obeys = 0 < len(reply) <= BRIEF_MAX_CHARS
            elif c == "detailed":
                obeys = len(reply) >= LONG_MIN_CHARS
            elif c == "english":
                obeys = bool(reply) and not _CJK.search(reply)
            else:
                obeys = bool(_CJK.search(reply))
            self._cr[0] += obeys
        for c in stated:
            self._active[c] = step
        # entity fidelity (answers)
        expected = set((exp.get("resolves") or {}).values())
        said = {m.group(0) for m in self._any_id.finditer(t["text"])}
        for found in [m.group(0) for m in self._any_id.finditer(reply)]:
            self._ef[1] += 1
            same_slot = {e for e in expected if self._same_type(e, found)}
            # Echoing the id the user gave ("could not check O-1010") is faithful.
            self._ef[0] += found in said or (found in self._world_ids
                                             and (not same_slot or found in same_slot))
        # staleness (world clock)
        cited = cited_fact(rec, last, reply)
        if not (t["failed"] or ann.get("kind", "answer") != "answer" or not cited
                or cited.get("error")):
            self._stale[1] += 1
            self._stale[0] += not fresh_at(rec, cited, datetime.fromisoformat(t["now"]))[0]
        # Over answered turns, plus any failed turn that leaked (a leak counts whatever the
        # answer).
        leaked = bool(leaks_in_step(rec, step, reply, t.get("user")))
        self._leaking += leaked
        self._leak_den += not t["failed"] or leaked
        self._sessions = self._sessions or "instance" in t
        self._turns_lost += bool(t.get("killed"))

    def _call(self, rec: Record, e: dict[str, Any], now: datetime | None) -> None:
        self._calls += 1
        self._true_input += e["true_input"]
        if e.get("truncated"):
            self._cut_calls += 1
            self._cut_messages += e["truncated"]
        self.kinds.add((e.get("annotations") or {}).get("kind"))
        if e["true_input"] and e["estimate"] is not None:
            self._errors.append((e.get("kind", ""), e.get("kind"),
                                 (e["estimate"] - e["true_input"]) / e["true_input"]))
        self.memory_calls = self.memory_calls or e["purpose"] == "memory"
        if not self.black_box and e["purpose"] != "reply":
            self._summary_tokens += e["true_input"] + e["output_tokens"]
        # wasted re-queries: a tool call while the request still showed a fresh result of it
        tool_calls = called_tools(e)
        if not tool_calls:
            return
        facts = facts_in(rec, e["request"])
        for name, b in tool_calls:
            self._wasted[1] += 1
            try:
                args = json.loads(b["input"])
            except json.JSONDecodeError:
                continue
            key = _key(args) if isinstance(args, dict) else ""
            ma = self._max_ages.get(name)
            for d in facts:
                if d.get("tool") != name or _key(d) != key or now is None:
                    continue
                if ma is None or now - datetime.fromisoformat(d["as_of"]) <= timedelta(seconds=ma):
                    self._wasted[0] += 1
                    break

    def _compaction(self, rec: Record, comp: dict[str, Any], *, recount: bool) -> None:
        self._summary_ids(rec, comp)
        if comp.get("applied"):
            self._compactions += 1
            if recount:
                self._recounted.append(self._service(rec).count_input(rec.request(comp["request"])))

    def _same_type(self, a: str, b: str) -> bool:
        """Whether two ids are of one entity type (the first whose pattern each matches)."""
        return next((n for n, p in enumerate(self._types) if p.fullmatch(a)), -1) == \
            next((n for n, p in enumerate(self._types) if p.fullmatch(b)), -2)

    def _summary_ids(self, rec: Record, comp: dict[str, Any]) -> None:
        """Summary entity fidelity: ids in a summary that the request it summarised shows."""
        if not comp.get("summary"):
            return
        source = rec.request_text(comp["request"])
        for found in [m.group(0) for m in self._any_id.finditer(comp["summary"])]:
            self._sef[1] += 1
            self._sef[0] += found in source

    def _service(self, rec: Record) -> Any:
        if self._svc is None:
            from harnesslab.sim.service import ServiceProfile, SimulatedService

            self._svc = SimulatedService(ServiceProfile.model_validate(rec.header["service"]))
        return self._svc

    def uses_memory(self, rec: Record) -> bool:
        """``memory_metrics.uses_memory``, from the calls this tally saw."""
        return "memory" in rec.header.get("harness", {}) or self.memory_calls

    @property
    def call_errors(self) -> list[float]:
        """(estimate - true) / true of every estimated call, in order."""
        return [err for _, _, err in self._errors]

    def result(self, rec: Record, compaction_true: Sequence[int] | None = None) -> dict[str, Any]:
        """The run's metrics. ``compaction_true``: the true counts of the applied compactions'
        requests, counted as they happened (used when the tally did not recount them)."""
        h = rec.header
        lateness: list[float] = []
        summary_tokens = self._summary_tokens
        if self.black_box:
            # A program's compactions and summary calls are found from its requests
            # (judge.observed): the whole record.
            seen = observe(rec)
            compactions = [c for c in seen.compactions if c.get("applied")]
            for comp in seen.compactions:
                self._summary_ids(rec, comp)
            summary_tokens = sum(e["true_input"] + e["output_tokens"]
                                 for e in rec.of_type("model_call") if e["call"] in seen.auxiliary)
            true = [self._service(rec).count_input(rec.request(c["request"]))
                    for c in compactions] if compactions else []
            n_compactions = len(compactions)
        else:
            n_compactions = self._compactions
            true = self._recounted if len(self._recounted) == n_compactions else \
                list(compaction_true or [])
            if len(true) != n_compactions:
                raise ValueError(f"{len(true)} true counts for {n_compactions} compactions")
        if n_compactions:
            from harnesslab.sim.service import ServiceProfile

            trig = h["harness"]["trigger_ratio"] * ServiceProfile.model_validate(h["service"]).window
            lateness = [n / trig for n in true]
        attempted = self._calls + self._overflows + self._protocol
        errors = self.call_errors
        return {
            "followup_accuracy": Rate(*self._fu).to_dict(),
            "constraint_retention": Rate(*self._cr).to_dict(),
            "entity_fidelity": Rate(*self._ef).to_dict(),
            "summary_entity_fidelity": Rate(*self._sef).to_dict(),
            "stale_fact_rate": Rate(*self._stale).to_dict(),
            "wasted_requery_rate": Rate(*self._wasted).to_dict(),
            "identity_leak_rate": Rate(self._leaking, self._leak_den).to_dict(),
            "overflow_rate": Rate(self._overflows, attempted).to_dict(),
            "protocol_error_rate": Rate(self._protocol, attempted).to_dict(),
            "trigger_lateness": mean_or_none(lateness),
            "estimate_error": error_stats(errors),
            "estimate_error_by_kind": {
                k: error_stats([err for _, kind, err in self._errors if kind == k])
                for k in sorted({key for key, _, _ in self._errors})},
            "true_input_tokens": self._true_input,
            "compactions": n_compactions,
            "summary_tokens": summary_tokens,
            "model_calls": self._calls,
            # only for runs whose server truncated a request (Responses' truncation "auto",
            # Ollama's default): the context the harness left to the server to cut
            **({"server_truncation_rate": Rate(self._cut_calls, self._calls).to_dict(),
                "server_dropped_messages": self._cut_messages} if self._cut_calls else {}),
            # only for scenarios with session steps (their turns name the instance)
            **(self._resume(rec) if self._sessions else {}),
            **(memory_metrics(rec) if self.uses_memory(rec) else {}),
        }

    def _resume(self, rec: Record) -> dict[str, Any]:
        done = [e for e in rec.of_type("resume") if e.get("applicable")]
        return {"resume_fidelity": Rate(sum(1 for e in done if e["fidelity"]), len(done)).to_dict(),
                "turns_lost": self._turns_lost}


def run_metrics(rec: Record, checks: Sequence[CheckOutcome],
                compaction_true: Sequence[int] | None = None) -> dict[str, Any]:
    """The metrics of one run, from its record (:class:`Tally`, fed the record step by step).
    ``compaction_true``: the true counts of the applied compactions' requests, if the run
    counted them as they happened (the same numbers a recount of the rebuilt requests gives;
    tested), else they are recounted here."""
    tally = Tally(rec)
    for step, events in steps_of(rec.events):
        tally.add(rec, step, events, _turn_checks(checks, step), recount=compaction_true is None)
    return tally.result(rec, compaction_true)


_ZERO_WHEN_ABSENT: dict[str, Any] = {
    "server_truncation_rate": lambda r: {"num": 0, "den": r.get("model_calls", 0)},
    "server_dropped_messages": lambda r: 0,
}


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pool per-seed metrics of one (scenario, variant): rates with Wilson intervals, means
    with bootstrap intervals, pass^k of 'every check passed' for k = 1..seeds."""
    out: dict[str, Any] = {}
    if not runs:
        return out
    # A metric only some runs have (the server's cuts happen in some seeds and not in others)
    # is zero in the others; any other metric is pooled over the runs that have it.
    names = list(dict.fromkeys(k for r in runs for k in r))
    runs = [{**{k: f(r) for k, f in _ZERO_WHEN_ABSENT.items() if k in names and k not in r},
             **r} for r in runs]
    for name in names:
        have = [r for r in runs if name in r]
        v = have[0][name]
        if isinstance(v, dict) and "num" in v:
            num = sum(r[name]["num"] for r in have)
            den = sum(r[name]["den"] for r in have)
            out[name] = {"value": num / den if den else None, "ci": wilson(num, den),
                         "num": num, "den": den}
        elif isinstance(v, dict) and "signed_mean" in v:
            out[name] = {}
            for stat in ("signed_mean", "mape", "p95"):
                xs = [float(r[name][stat]) for r in have if r[name][stat] is not None]
                out[name][stat] = {"value": mean_or_none(xs), "ci": bootstrap_mean(xs)}
        elif isinstance(v, int | float) or v is None:
            xs = [float(r[name]) for r in have if r[name] is not None]
            out[name] = {"value": mean_or_none(xs), "ci": bootstrap_mean(xs)}
    return out
