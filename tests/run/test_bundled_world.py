"""What the bundled suite shows about the world and the scenario language: the reference harness
never breaks the chat protocol, seeds matter (a pass^5 below its pass^1), the reserve
boundary of one scenario really falls inside a tool round, and the new scenarios' checks each
fail under a control about their own concern."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harness import agent
from harnesslab.harness.split import Split, split_context
from harnesslab.messages import Message, ToolCallBlock, ToolResultBlock
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_scenario_file
from harnesslab.run.suite import summarize
from harnesslab.scenario.loader import bundled_dir

Suite = tuple[Path, list[RunResult]]
# The scenarios this part of the suite added: each of their checks must fail under a control
# that is about it, not only under one that rejects every call.
NEW = ("new-id-after-compaction-zh", "claim-across-compaction-zh",
       "reserve-boundary-in-tool-round-zh", "constraints-by-lexicon-zh",
       "tool-result-over-reserve-zh", "order-by-item-zh", "tool-unavailable-then-works-zh",
       "cancelled-order-zh")
REJECT_ALL = ("service-rejects-all", "window-too-small")


def test_the_reference_harness_never_breaks_the_protocol(suite: Suite) -> None:
    out, _ = suite
    records = sorted(out.glob("*/*/seed*.jsonl"))
    assert len(records) > 90
    broken = [p for p in records if Record.load(p).of_type("protocol_error")]
    assert not broken


def test_each_new_check_fails_under_a_control_of_its_own_concern(suite: Suite) -> None:
    _, results = suite
    seen: dict[str, set[str]] = defaultdict(set)
    failed: dict[str, set[str]] = defaultdict(set)
    for r in results:
        if r.scenario not in NEW:
            continue
        for c in r.checks:
            seen[r.scenario].add(c.id)
            if not c.passed and r.variant not in REJECT_ALL:
                failed[r.scenario].add(c.id)
    assert set(seen) == set(NEW)
    offenders = {s: sorted(seen[s] - failed[s]) for s in NEW if seen[s] - failed[s]}
    assert not offenders


@pytest.mark.parametrize(("scenario", "variant"), [
    ("new-id-after-compaction-zh", "lossy-swap-half"),
    ("constraints-by-lexicon-zh", "summary-drops-constraints-half"),
])
def test_seeds_matter_pass_hat_5_below_pass_hat_1(scenario: str, variant: str) -> None:
    results = run_scenario_file(bundled_dir() / f"{scenario}.yaml", seeds=range(5),
                                variants=[variant])
    (row,) = summarize(results)["rows"]
    assert row["expected"], row["unexpected"]
    assert 0 < row["pass_hat_k"]["1"] < 1
    assert row["pass_hat_k"]["5"] < row["pass_hat_k"]["1"]


def test_the_reserve_boundary_falls_inside_a_tool_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before AgentScope's pairing step the kept tail starts with a tool result whose call is
    compressed; the pairing moves the cut past it. Without it, the service would reject."""
    cuts: list[tuple[Split, Split]] = []

    def spy(context: Sequence[Message], head: int, budget: float,
            units: Callable[[Message], int], finalize: Callable[[int], int]) -> Split:
        paired = split_context(context, head, budget, units, finalize)
        cuts.append((_unpaired(context, head, budget, units, finalize), paired))
        return paired

    monkeypatch.setattr(agent, "split_context", spy)
    (r,) = run_scenario_file(bundled_dir() / "reserve-boundary-in-tool-round-zh.yaml",
                             variants=["default"])
    assert r.all_passed
    (unpaired, paired), = cuts
    first = unpaired.to_keep[0]
    assert isinstance(first.content[0], ToolResultBlock)
    assert not any(isinstance(b, ToolCallBlock) for b in first.content)
    assert _kinds(paired.to_keep[0]) == ["TextBlock"]


def _kinds(m: Message) -> list[str]:
    return [type(b).__name__ for b in m.content]


def _unpaired(context: Sequence[Message], head: int, budget: float, units: Any,
              finalize: Any) -> Split:
    """split_context's cut before its pairing step (the same walk, without the last loop)."""
    suffix, boundary = 0, -1
    for i in range(len(context) - 1, -1, -1):
        suffix += units(context[i])
        if finalize(head + suffix) >= budget:
            boundary = i
            break
    m = context[boundary]
    kept = suffix - units(m)
    cut = -1
    for b in range(len(m.content) - 1, -1, -1):
        if finalize(head + units(Message(m.role, m.content[b:])) + kept) > budget:
            cut = b
            break
    tail = Message(m.role, m.content[cut + 1:], id=m.id)
    return Split(tuple(context[:boundary]), (tail, *context[boundary + 1:]))
