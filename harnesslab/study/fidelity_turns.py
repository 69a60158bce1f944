"""``harnesslab fidelity --against codex-cli``: the reference harness's ``codex`` strategy against
the real Codex CLI (``harness=codex-cli``: ``adapters/codex_program.py``, a program over the
wire), turn by turn.

A call-by-call comparison (``fidelity``'s AgentScope pairing) would say nothing here: Codex sends
its own instructions (about 20k characters), skills and some twenty tools, so no request is
alike. What the strategy imitates, and so what the two runs should agree on, is per turn:

- **compactions**: how many the turn's requests were the first to show (in process, the
  strategy's ``compaction`` events; for the program, the compactions seen from its request
  stream, ``judge.observed``);
- **handoff**: the ids the turn's compaction summaries state;
- **after**: what the first request after the turn's last compaction showed the model (the ids
  and the standing constraints it read there);
- **answer**: whether the turn failed, whether the service refused one of its requests as over
  the window, the reason the model gave for its answer, the entity it resolved and the fact it
  cited;
- **checks**: which of the turn's checks failed.

Per run the costs (model calls, compactions, summary tokens, true input tokens) are listed side
by side, not as differences: Codex's own prompt makes every request larger, by design.

A variant whose settings the program does not honour is not applicable (its own declaration,
as in every run); so is one that sets a strategy other than ``codex`` for the reference side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.judge.checks import CheckOutcome, turn_answer
from harnesslab.judge.observed import is_black_box, observe
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Scenario, Variant
from harnesslab.scenario.settings import resolve_settings
from harnesslab.sim.intents import ID_PATTERNS
from harnesslab.study.fidelity import short, tally

_ANY_ID = re.compile("|".join(p.pattern for p in ID_PATTERNS.values()))
ASPECTS = ("compactions", "handoff", "after", "answer", "checks")
COSTS = ("model_calls", "compactions", "summary_tokens", "true_input_tokens")


@dataclass(frozen=True)
class Pair:
    """What runs on each side: the reference harness's settings and the other harness's."""

    name: str
    reference: Mapping[str, Any]
    other: Mapping[str, Any]
    strategy: str          # the reference strategy the comparison is about


def codex_pair(harness: str = "codex-cli", *, turn_timeout: float = 300) -> Pair:
    """The reference harness's codex strategy against the real Codex CLI (``harness``: the
    registered program, or a ``cmd:`` line running it with arguments)."""
    return Pair("codex-cli", {"harness": "reference", "strategy": "codex"},
                {"harness": harness, "turn_timeout": turn_timeout}, "codex")


@dataclass(frozen=True)
class TurnDifference:
    scenario: str
    variant: str
    seed: int
    where: str       # "step 3" or "run"
    what: str        # one of ASPECTS, or "turns" / "error"
    reference: Any
    other: Any


@dataclass
class TurnComparison:
    """One scenario variant and seed, compared turn by turn (or why it could not be)."""

    scenario: str
    variant: str
    seed: int
    not_applicable: str | None = None
    turns: int = 0
    turns_equal: int = 0             # turns equal in every aspect
    compaction_turns: int = 0        # turns with a compaction in either run
    compaction_turns_equal: int = 0  # ... with the same number in both
    costs: dict[str, list[Any]] = field(default_factory=dict)  # cost -> [reference, other]
    differences: list[TurnDifference] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        return self.not_applicable is None and not self.differences


def _compactions(rec: Record) -> list[tuple[int, dict[str, Any], dict[str, Any] | None]]:
    """Each applied compaction as (the step of the first reply request after it, the
    compaction, that request). A compaction belongs to the turn whose request first shows it,
    on both routes: in process one made before a filler step's end shows in the next turn's
    first request, which is where the outside view finds it."""
    calls = rec.of_type("model_call")
    if is_black_box(rec):
        by_call = {e["call"]: e for e in calls}
        return [(by_call[c["at_call"]]["step"], c, by_call[c["at_call"]])
                for c in observe(rec).compactions if c["at_call"] in by_call]
    out: list[tuple[int, dict[str, Any], dict[str, Any] | None]] = []
    pending: list[dict[str, Any]] = []
    for e in rec.events:
        if e["type"] == "compaction" and e.get("applied"):
            pending.append(e)
        elif e["type"] == "model_call" and e["purpose"] == "reply" and pending:
            out += [(e["step"], c, e) for c in pending]
            pending = []
    out += [(c["step"], c, None) for c in pending]
    return out


def step_views(rec: Record, checks: Iterable[CheckOutcome]) -> dict[int, dict[str, Any]]:
    """Step -> the aspects of that turn (module docstring)."""
    failed: dict[int, list[str]] = {}
    for c in checks:
        if not c.passed and not c.unreadable:
            failed.setdefault(c.step, []).append(c.kind)
    comps = _compactions(rec)
    overflowed = {e["step"] for e in rec.of_type("overflow")}
    views: dict[int, dict[str, Any]] = {}
    for t in rec.of_type("turn"):
        mine = [(c, after) for step, c, after in comps if step == t["step"]]
        ids = sorted({i for c, _ in mine for i in _ANY_ID.findall(c.get("summary") or "")})
        last = mine[-1][1] if mine else None
        present = (last or {}).get("present") or {}
        ann = (turn_answer(rec, t) or {}).get("annotations") or {}
        cited = ann.get("cited") or {}
        views[t["step"]] = {
            "compactions": len(mine),
            "handoff": ids,
            "after": ({"ids": sorted(present.get("ids", [])),
                       "constraints": sorted(present.get("constraints", []))}
                      if mine else None),
            # A failed turn's reason is each harness's own text (Codex words its overflow
            # message itself): what is compared is whether the service refused a request.
            "answer": {"failed": t["failed"], "overflowed": t["step"] in overflowed,
                       "reason": ann.get("reason"), "resolved": ann.get("resolved") or {},
                       "cited": [cited.get("tool"), cited.get("key")] if cited else None},
            "checks": sorted(failed.get(t["step"], [])),
        }
    return views


def compare_turn_records(ref: Record, ref_checks: Iterable[CheckOutcome], other: Record,
                         other_checks: Iterable[CheckOutcome], c: TurnComparison) -> None:
    """Fill ``c`` with the turn-by-turn comparison of two runs of one variant and seed."""
    def diff(where: str, what: str, x: Any, y: Any) -> None:
        c.differences.append(TurnDifference(c.scenario, c.variant, c.seed, where, what, x, y))

    for e in ref.of_type("run_error"):
        diff("run", "error", e["error"], None)
    for e in other.of_type("run_error"):
        diff("run", "error", None, e["error"])
    va, vb = step_views(ref, ref_checks), step_views(other, other_checks)
    if sorted(va) != sorted(vb):
        diff("run", "turns", sorted(va), sorted(vb))
    for step in sorted(set(va) & set(vb)):
        x, y = va[step], vb[step]
        c.turns += 1
        c.turns_equal += x == y
        if x["compactions"] or y["compactions"]:
            c.compaction_turns += 1
            c.compaction_turns_equal += x["compactions"] == y["compactions"]
        for aspect in ASPECTS:
            if x[aspect] != y[aspect]:
                diff(f"step {step}", aspect, x[aspect], y[aspect])


def _variant_strategy(sc: Scenario, variant: Variant, cli: Mapping[str, Any]) -> str:
    return str(resolve_settings(sc, variant, cli).harness.strategy)


def compare_variant_turns(sc: Scenario, variant: Variant, pair: Pair, *, seed: int,
                          source: Path | None, out_dir: Path,
                          cli_set: Mapping[str, Any] | None = None) -> TurnComparison:
    """Run one variant through both sides of ``pair`` with the same settings and compare."""
    cli = dict(cli_set or {})
    c = TurnComparison(sc.id, variant.name, seed)
    strategy = _variant_strategy(sc, variant, {**cli, **pair.reference})
    if strategy != pair.strategy:
        c.not_applicable = (f"the variant sets strategy={strategy}; the comparison is of the "
                            f"{pair.strategy} strategy")
        return c
    runs: dict[str, RunResult] = {}
    for name, settings in (("other", pair.other), ("reference", pair.reference)):
        runs[name] = run_variant(sc, variant, seed=seed, source=source,
                                 out_dir=out_dir / (pair.name if name == "other" else name),
                                 cli_set={**cli, **settings})
        if runs[name].not_applicable or (runs[name].error or "").startswith("NotApplicable"):
            c.not_applicable = (runs[name].error or "not applicable").split(": ", 1)[-1]
            return c
        c.records[name] = str(runs[name].record)
    ref, other = runs["reference"], runs["other"]
    c.costs = {k: [ref.metrics.get(k), other.metrics.get(k)] for k in COSTS}
    compare_turn_records(Record.load(c.records["reference"]), ref.checks,
                         Record.load(c.records["other"]), other.checks, c)
    return c


def run_turn_fidelity(paths: Iterable[Path], pair: Pair, *, seeds: Iterable[int] = (0,),
                      out_dir: Path, cli_set: Mapping[str, Any] | None = None,
                      variants: Iterable[str] | None = None) -> list[TurnComparison]:
    wanted = set(variants) if variants is not None else None
    seeds = list(seeds)
    return [compare_variant_turns(sc, v, pair, seed=seed, source=p, out_dir=out_dir,
                                  cli_set=cli_set)
            for p in paths for sc in (load_scenario(p),) for v in sc.variants
            if wanted is None or v.name in wanted for seed in seeds]


def turn_totals(comparisons: list[TurnComparison]) -> dict[str, int]:
    out = tally(comparisons, ("turns", "turns_equal", "compaction_turns",
                              "compaction_turns_equal"))
    done = [c for c in comparisons if c.not_applicable is None]
    for aspect in ASPECTS:
        out[f"differ_{aspect}"] = sum(d.what == aspect for c in done for d in c.differences)
    return out


def turns_to_json(comparisons: list[TurnComparison]) -> dict[str, Any]:
    return {"totals": turn_totals(comparisons),
            "runs": [{**asdict(c), "agrees": c.agrees} for c in comparisons]}


def format_turn_report(comparisons: list[TurnComparison], pair: Pair) -> str:
    t = turn_totals(comparisons)
    lines = [f"fidelity: the reference harness (strategy={pair.strategy}) against {pair.name}, "
             "turn by turn, the same settings and seeds",
             f"  {'scenario/variant':<44} {'turns=':>7} {'compact=':>8}   costs reference | "
             f"{pair.name} (calls, compactions, summary tokens, true input)"]
    for c in comparisons:
        name = f"{c.scenario}/{c.variant}" + (f" (seed {c.seed})" if c.seed else "")
        if c.not_applicable is not None:
            lines.append(f"  {name:<44} not applicable")
            continue
        cost = " | ".join(", ".join(f"{c.costs[k][side]:,}" if isinstance(c.costs[k][side], int)
                                    else str(c.costs[k][side]) for k in COSTS)
                          for side in (0, 1))
        lines.append(f"  {name:<44} {c.turns_equal:>3}/{c.turns:<3} "
                     f"{c.compaction_turns_equal:>3}/{c.compaction_turns:<4}   {cost}")
    na = [c for c in comparisons if c.not_applicable is not None]
    if na:
        lines.append("not applicable:")
        lines += [f"  {c.scenario}/{c.variant}: {c.not_applicable}" for c in na]
    diffs = [d for c in comparisons for d in c.differences]
    if diffs:
        lines.append(f"differences ({len(diffs)}):")
        lines += [f"  {d.scenario}/{d.variant} seed {d.seed} {d.where} {d.what}: reference "
                  f"{short(d.reference, 90)} | {pair.name} {short(d.other, 90)}" for d in diffs]
    by = ", ".join(f"{a} {t[f'differ_{a}']}" for a in ASPECTS)
    lines.append(
        f"totals: {t['runs']} runs compared ({t['agree']} agree in every turn), "
        f"{t['not_applicable']} not applicable; turns equal in every aspect {t['turns_equal']} "
        f"of {t['turns']}; turns with a compaction {t['compaction_turns']}, the same number in "
        f"both {t['compaction_turns_equal']}; {t['differences']} differences ({by})")
    return "\n".join(lines) + "\n"
