"""``harnesslab fidelity``: how faithfully the reference harness (its ``agentscope`` profile)
reproduces the real AgentScope 2.0.x (the ``agentscope`` adapter), measured by running the same
scenarios with the same settings through both and comparing the two records.

Per model call (the n-th call of one run against the n-th of the other): the estimate each
harness sent with it (bytes4 against AgentScope's own ``count_tokens``), the request the service
received (compared byte for byte as canonical JSON, message ids left out: they are each
harness's own labels, read by neither the service nor the model), its purpose and whether it was
rejected; whether a compaction happened just before it. Per turn: the outcome (failed or not,
the reply, the reason). Every disagreement is listed with its call or step and both values.

With long-term memory (the ``agentic`` mode: AgentScope's AgenticMemoryMiddleware), per turn:
whose memory was read and what (``memory_read``: scoping by user), where it sits in the
answering request (the system prompt, before the question, after it, or absent: injection
timing and visibility); per run, what the model wrote to each user's memory and each user's
MEMORY.md on disk afterwards (write-back).

A variant whose settings AgentScope cannot express is reported as not applicable with the
reason, never as agreement (``harnesslab.adapters.agentscope_settings``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harnesslab.adapters.agentscope_settings import memory_folder, not_applicable
from harnesslab.harness.memory.files import MemoryFiles
from harnesslab.harness.prompts import agentscope_timezone
from harnesslab.judge.checks import turn_answer
from harnesslab.judge.memory_metrics import extracted_items, session_users
from harnesslab.messages import (
    HintBlock,
    Message,
    Request,
    TextBlock,
    ToolResultBlock,
    dumps,
    message_to_dict,
)
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Scenario, Variant
from harnesslab.scenario.settings import resolve_settings

REFERENCE = {"harness": "reference", "prompts": "agentscope"}
CALLS = ("model_call", "overflow", "protocol_error")  # every call the service saw
ADAPTER = {"harness": "agentscope"}


@dataclass(frozen=True)
class Difference:
    """One disagreement: where (a call, a step, or the run) and both values."""

    scenario: str
    variant: str
    seed: int
    where: str       # "call 12", "step 3", "run"
    what: str        # estimate, request, purpose, admitted, compaction fields, calls, outcome
    reference: Any
    agentscope: Any


@dataclass
class Comparison:
    """One scenario variant and seed, compared (or why it could not be)."""

    scenario: str
    variant: str
    seed: int
    not_applicable: str | None = None
    calls: int = 0                   # calls compared (pairs)
    estimates_equal: int = 0
    summary_calls: int = 0
    summary_estimates_equal: int = 0
    requests_equal: int = 0
    compaction_points: int = 0       # calls preceded by a compaction in either run
    compaction_points_equal: int = 0
    turns: int = 0
    turns_equal: int = 0
    differences: list[Difference] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        return self.not_applicable is None and not self.differences


def canonical(request: Request) -> str:
    """The request as the service and the model read it: canonical JSON without message ids."""
    msgs = tuple(Message(m.role, m.content, name=m.name) for m in request.messages)
    return dumps(replace(request, messages=msgs))


def _excerpt(a: str, b: str, width: int = 60) -> tuple[str, str]:
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, i - width // 2)
    return ("…" if lo else "") + a[lo:i + width // 2], ("…" if lo else "") + b[lo:i + width // 2]


def request_difference(a: Request, b: Request) -> tuple[str, str, str]:
    """The first part in which two requests differ: (part, reference excerpt, AgentScope
    excerpt)."""
    for part in ("system", "summary", "meta", "output_budget"):
        x, y = getattr(a, part), getattr(b, part)
        if x != y:
            return (part, *_excerpt(str(x), str(y)))
    tx, ty = [t.json for t in a.tools], [t.json for t in b.tools]
    if tx != ty:
        return ("tools", *_excerpt(json.dumps(tx, ensure_ascii=False),
                                   json.dumps(ty, ensure_ascii=False)))
    for i, (x, y) in enumerate(zip(a.messages, b.messages, strict=False)):
        dx = json.dumps({**message_to_dict(x), "id": ""}, ensure_ascii=False)
        dy = json.dumps({**message_to_dict(y), "id": ""}, ensure_ascii=False)
        if dx != dy:
            return (f"message {i + 1}", *_excerpt(dx, dy))
    return ("messages", f"{len(a.messages)} messages", f"{len(b.messages)} messages")


COMPACTION_FIELDS = ("type", "applied", "summary_ok", "estimate", "removed", "kept", "summary",
                     "summary_tokens", "offload_path", "after_estimate")


def compaction_view(rec: Record, e: dict[str, Any]) -> dict[str, Any]:
    """What two harnesses' records of one compaction should agree on: the decision, its
    numbers, the new summary, and the request it was decided on."""
    view = {k: e.get(k) for k in COMPACTION_FIELDS}
    view["request"] = canonical(rec.request(e["request"])) if e.get("request") else None
    return view


def _compaction_points(rec: Record) -> dict[int, bool]:
    """Call number -> whether the compaction just before it was applied (a compaction during
    the last step, with no call after it, is at call n + 1)."""
    out: dict[int, bool] = {}
    calls = 0
    for e in rec.events:
        if e["type"] in CALLS:
            calls += 1
        elif e["type"] in ("compaction", "compaction_error"):
            out[calls + 1] = bool(e.get("applied"))
    return out


def _texts(m: Message) -> str:
    out = []
    for b in m.content:
        v = b.text if isinstance(b, TextBlock) else b.hint if isinstance(b, HintBlock) else \
            b.output if isinstance(b, ToolResultBlock) else ""
        out.append(v if isinstance(v, str) else "".join(
            p.text for p in v if isinstance(p, TextBlock)))
    return "\n".join(out)


def memory_position(req: Request, text: str) -> str:
    """Where ``text`` (an item the harness reported reading) sits in a request: the system
    prompt, before the question (the last user message with text), after it, or absent."""
    if text in req.system or (req.summary and text in req.summary):
        return "system prompt"
    question = max((n for n, m in enumerate(req.messages) if m.role == "user"
                    and any(isinstance(b, TextBlock) for b in m.content)), default=-1)
    for n, m in enumerate(req.messages):
        if text in _texts(m):
            return "before the question" if n < question else \
                "in the question" if n == question else "after the question"
    return "absent"


def memory_turns(rec: Record) -> dict[int, dict[str, Any]]:
    """Per turn with a memory read: whose memory, the items' texts, and where each sits in the
    answering request."""
    out: dict[int, dict[str, Any]] = {}
    for t in rec.of_type("turn"):
        reads = rec.in_step(t["step"], "memory_read")
        if not reads:
            continue
        texts = [it.get("text", "") for r in reads for it in r.get("items", [])]
        call = turn_answer(rec, t)
        req = rec.request(call["request"]) if call is not None else None
        out[t["step"]] = {
            "users": sorted({r["user"] for r in reads}), "items": texts,
            "position": [memory_position(req, x) if req is not None else "no answering call"
                         for x in texts]}
    return out


def memory_files(record: Path, rec: Record, harness: str) -> dict[str, str]:
    """Each session user's MEMORY.md after the run, where each harness keeps it in the run's
    workdir (``<record>.work``): the reference's ``memory/files/<agent>/<user>/`` and the
    adapter's ``memory/agentscope/<agent>/<user>/Memory/``."""
    mem = rec.header.get("harness", {}).get("memory")
    if not isinstance(mem, Mapping) or mem.get("mode", "none") == "none":
        return {}
    work = record.with_suffix(".work")
    agent = str(mem.get("agent_id", "assistant"))
    out = {}
    for user in sorted(set(session_users(rec).values())):
        path = (memory_folder(work, agent, user) / "Memory" / "MEMORY.md"
                if harness == "agentscope" else
                MemoryFiles(work / "memory", agent).folder(user).root / "MEMORY.md")
        text = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
        if text:
            out[user] = text
    return out


def compare_memory(ref: Record, ags: Record, c: Comparison) -> None:
    """The memory side of two records (the module docstring): reads per turn, write-back per
    run, MEMORY.md per user on disk."""
    def diff(where: str, what: str, x: Any, y: Any) -> None:
        c.differences.append(Difference(c.scenario, c.variant, c.seed, where, what, x, y))

    mr, ma = memory_turns(ref), memory_turns(ags)
    for step in sorted(set(mr) | set(ma)):
        x, y = mr.get(step, {}), ma.get(step, {})
        for k in ("users", "items", "position"):
            if x.get(k) != y.get(k):
                diff(f"step {step}", f"memory {k}", x.get(k), y.get(k))
    wr = {u: sorted(v) for u, v in extracted_items(ref, paths=False).items()}
    wa = {u: sorted(v) for u, v in extracted_items(ags, paths=False).items()}
    if wr != wa:
        diff("run", "memory written", wr, wa)
    if c.records:
        fr = memory_files(Path(c.records["reference"]), ref, "reference")
        fa = memory_files(Path(c.records["agentscope"]), ags, "agentscope")
        if fr != fa:
            diff("run", "MEMORY.md", fr, fa)


def compare_records(ref: Record, ags: Record, c: Comparison) -> None:
    """Fill ``c`` with the per-call and per-turn comparison of two records."""
    def diff(where: str, what: str, x: Any, y: Any) -> None:
        c.differences.append(Difference(c.scenario, c.variant, c.seed, where, what, x, y))

    for e in ref.of_type("run_error"):
        diff("run", "error", e["error"], None)
    for e in ags.of_type("run_error"):
        diff("run", "error", None, e["error"])
    rc, ac = ref.of_type(*CALLS), ags.of_type(*CALLS)
    if len(rc) != len(ac):
        diff("run", "calls", len(rc), len(ac))
    for x, y in zip(rc, ac, strict=False):
        where = f"call {x['call']}"
        c.calls += 1
        c.estimates_equal += x["estimate"] == y["estimate"]
        if x["purpose"] == "summary" or y["purpose"] == "summary":
            c.summary_calls += 1
            c.summary_estimates_equal += x["estimate"] == y["estimate"]
        if x["estimate"] != y["estimate"]:
            diff(where, "estimate", x["estimate"], y["estimate"])
        if x["purpose"] != y["purpose"]:
            diff(where, "purpose", x["purpose"], y["purpose"])
        if x["type"] != y["type"]:
            diff(where, "admitted", x["type"], y["type"])
        a, b = ref.request(x["request"]), ags.request(y["request"])
        if canonical(a) == canonical(b):
            c.requests_equal += 1
        else:
            part, ea, eb = request_difference(a, b)
            diff(where, f"request ({part})", ea, eb)
    pr, pa = _compaction_points(ref), _compaction_points(ags)
    for n in sorted(set(pr) | set(pa)):
        c.compaction_points += 1
        if pr.get(n) == pa.get(n):
            c.compaction_points_equal += 1
        else:
            diff(f"call {n}", "compaction before", pr.get(n), pa.get(n))
    kinds = ("compaction", "compaction_error")
    for i, (x, y) in enumerate(zip(ref.of_type(*kinds), ags.of_type(*kinds), strict=False), 1):
        vx, vy = compaction_view(ref, x), compaction_view(ags, y)
        for k in vx:
            if vx[k] != vy[k]:
                diff(f"compaction {i}", k, vx[k], vy[k])
    rt, at = ref.of_type("turn"), ags.of_type("turn")
    for x, y in zip(rt, at, strict=False):
        c.turns += 1
        ox = {k: x[k] for k in ("failed", "reply", "reason")}
        oy = {k: y[k] for k in ("failed", "reply", "reason")}
        if ox == oy:
            c.turns_equal += 1
        else:
            diff(f"step {x['step']}", "outcome", ox, oy)
    if len(rt) != len(at):
        diff("run", "turns", len(rt), len(at))
    compare_memory(ref, ags, c)


def _inapplicable(sc: Scenario, variant: Variant, cli_set: Mapping[str, Any]) -> str | None:
    cfg = resolve_settings(sc, variant, {**cli_set, **ADAPTER}).harness
    reasons = not_applicable(cfg)
    if variant.set.get("prompts", "agentscope") != "agentscope":
        # The reference runs with AgentScope's texts here; a variant defined by another prompt
        # profile (its parse of the summary, its hints) has no AgentScope counterpart, since
        # AgentScope always sends its own texts and repairs its summary's JSON.
        reasons.append(f"the variant sets prompts={variant.set['prompts']}: AgentScope always "
                       "sends its own texts and parses its summary its own way")
    if agentscope_timezone(sc.world.now) is None:
        reasons.append("the world clock's UTC offset is not whole hours (no IANA zone name)")
    return "; ".join(reasons) or None


def compare_variant(sc: Scenario, variant: Variant, *, seed: int, source: Path | None,
                    out_dir: Path, cli_set: Mapping[str, Any] | None = None) -> Comparison:
    """Run one variant through both harnesses with the same settings and compare."""
    cli = dict(cli_set or {})
    c = Comparison(sc.id, variant.name, seed)
    c.not_applicable = _inapplicable(sc, variant, cli)
    if c.not_applicable is not None:
        return c
    runs: dict[str, RunResult] = {}
    for name, harness in (("reference", REFERENCE), ("agentscope", ADAPTER)):
        runs[name] = run_variant(sc, variant, seed=seed, source=source, out_dir=out_dir / name,
                                 cli_set={**cli, **harness})
        c.records[name] = str(runs[name].record)
    err = runs["agentscope"].error or ""
    if err.startswith("NotApplicable"):
        c.not_applicable = err.split(": ", 1)[-1]
        return c
    compare_records(Record.load(c.records["reference"]), Record.load(c.records["agentscope"]), c)
    return c


def run_fidelity(paths: Iterable[Path], *, seeds: Iterable[int] = (0,), out_dir: Path,
                 cli_set: Mapping[str, Any] | None = None,
                 variants: Iterable[str] | None = None) -> list[Comparison]:
    wanted = set(variants) if variants is not None else None
    return [compare_variant(sc, v, seed=seed, source=p, out_dir=out_dir, cli_set=cli_set)
            for p in paths for sc in (load_scenario(p),) for v in sc.variants
            if wanted is None or v.name in wanted for seed in seeds]


def tally(comparisons: Sequence[Any], keys: Iterable[str]) -> dict[str, int]:
    """The sums of ``keys`` over the compared runs, with the runs compared, those that agree,
    those not applicable and the differences: the totals of either kind of comparison."""
    done = [c for c in comparisons if c.not_applicable is None]
    out = {k: sum(getattr(c, k) for c in done) for k in keys}
    out.update(runs=len(done), agree=sum(c.agrees for c in done),
               not_applicable=len(comparisons) - len(done),
               differences=sum(len(c.differences) for c in done))
    return out


def totals(comparisons: list[Comparison]) -> dict[str, int]:
    return tally(comparisons, ("calls", "estimates_equal", "summary_calls",
                               "summary_estimates_equal", "requests_equal", "compaction_points",
                               "compaction_points_equal", "turns", "turns_equal"))


def to_json(comparisons: list[Comparison]) -> dict[str, Any]:
    return {"totals": totals(comparisons),
            "runs": [{**asdict(c), "agrees": c.agrees} for c in comparisons]}


def short(v: Any, width: int = 100) -> str:
    """A value as one line of at most ``width`` characters (JSON unless a string)."""
    # A string's line breaks are shown escaped: one difference is one line of the report.
    s = v.replace("\n", "\\n") if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return s if len(s) <= width else s[:width - 1] + "…"


def format_report(comparisons: list[Comparison]) -> str:
    t = totals(comparisons)
    lines = ["fidelity: the reference harness (prompts=agentscope) against AgentScope 2.0.x, "
             "the same settings and seeds",
             f"  {'scenario/variant':<52} {'calls':>5} {'est=':>5} {'req=':>5} "
             f"{'compact=':>8} {'turns=':>6}"]
    for c in comparisons:
        name = f"{c.scenario}/{c.variant}" + (f" (seed {c.seed})" if c.seed else "")
        if c.not_applicable is not None:
            lines.append(f"  {name:<52} not applicable")
            continue
        lines.append(f"  {name:<52} {c.calls:>5} {c.estimates_equal:>5} {c.requests_equal:>5} "
                     f"{c.compaction_points_equal:>3}/{c.compaction_points:<4} "
                     f"{c.turns_equal:>3}/{c.turns}")
    na = [c for c in comparisons if c.not_applicable is not None]
    if na:
        lines.append("not applicable (no AgentScope equivalent):")
        lines += [f"  {c.scenario}/{c.variant}: {c.not_applicable}" for c in na]
    diffs = [d for c in comparisons for d in c.differences]
    if diffs:
        lines.append(f"differences ({len(diffs)}):")
        lines += [f"  {d.scenario}/{d.variant} seed {d.seed} {d.where} {d.what}: reference "
                  f"{short(d.reference)} | agentscope {short(d.agentscope)}" for d in diffs]
    lines.append(
        f"totals: {t['runs']} runs compared ({t['agree']} agree in everything), "
        f"{t['not_applicable']} not applicable; model calls {t['calls']}: estimates equal "
        f"{t['estimates_equal']} (summary calls {t['summary_estimates_equal']} of "
        f"{t['summary_calls']}), requests identical {t['requests_equal']}; compaction at the "
        f"same call {t['compaction_points_equal']} of {t['compaction_points']}; turn outcomes "
        f"identical {t['turns_equal']} of {t['turns']}; {t['differences']} differences")
    return "\n".join(lines) + "\n"
