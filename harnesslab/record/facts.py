"""Fact survival through compactions, from the per-call fact presence a record keeps.

Every model call lists the declared facts its request shows (``present``: ids, constraints,
claims). A fact is named ``O-1001``, ``constraint:brevity`` or ``claim:identity=U-2``.

``survival`` = for each applied compaction k (in order), the share of the facts shown by the
reply calls before the first compaction that the first reply call after compaction k still
shows. A compaction with no reply call after it (the run ended) has no value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harnesslab.record.format import Record


def fact_names(present: Mapping[str, Sequence[str]] | None) -> list[str]:
    if not present:
        return []
    return [*(f"constraint:{c}" for c in present.get("constraints", [])),
            *present.get("ids", []), *(f"claim:{c}" for c in present.get("claims", []))]


@dataclass(frozen=True)
class FactTimeline:
    calls: list[int]                 # reply call numbers, in order
    facts: list[str]                 # every fact any reply call showed, in first-seen order
    present: list[set[str]]          # per reply call
    compactions: list[int]           # per applied compaction: how many reply calls preceded it


def timeline(rec: Record) -> FactTimeline:
    calls: list[int] = []
    present: list[set[str]] = []
    facts: dict[str, None] = {}
    compactions: list[int] = []
    for e in rec.events:
        if e["type"] in ("model_call", "overflow") and e.get("purpose") == "reply":
            names = fact_names(e.get("present"))
            calls.append(e["call"])
            present.append(set(names))
            facts.update(dict.fromkeys(names))
        elif e["type"] == "compaction" and e.get("applied"):
            compactions.append(len(calls))
    return FactTimeline(calls, list(facts), present, compactions)


def survival(tl: FactTimeline) -> tuple[int, list[float]]:
    """(how many facts are tracked, the survival share after each compaction)."""
    if not tl.compactions:
        return 0, []
    before: set[str] = set().union(*tl.present[:tl.compactions[0]])
    if not before:
        return 0, []
    out = []
    for k in tl.compactions:
        if k < len(tl.present):
            out.append(len(before & tl.present[k]) / len(before))
    return len(before), out


def record_survival(rec: Record) -> dict[str, Any]:
    tracked, shares = survival(timeline(rec))
    return {"facts_tracked": tracked, "fact_survival": shares}
