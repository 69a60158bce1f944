"""What the bench adds to the harness it measures: a full bench turn (reference harness,
simulated service, fake model, record, checks and metrics) against the reference harness
alone doing the same turns.

The harness alone: a fresh ``ReferenceHarness`` whose model endpoint replays, call by call,
the replies (and billed usage) a bench run gave it, whose tools replay that run's tool results,
fed the same user turns and filler. No service, fake model, record or judgement: what is left is
the system under test. Both are timed in one run, interleaved, least CPU time of the repeats.
The issue's target is at most 2; until it is met the test asserts only that the ratio did not
regress and then ends as an expected failure, with its figures.

    pytest -m benchmark tests/benchmarks/test_overhead_bench.py -s
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import HarnessContext, Session, TurnResult
from harnesslab.messages import (
    DataBlock,
    Message,
    Request,
    Response,
    ToolOutcome,
    ToolSchema,
    block_from_dict,
)
from harnesslab.record.format import Record
from harnesslab.run.doors import ClockDoor
from harnesslab.run.runner import run_variant
from harnesslab.scenario.schema import Scenario
from harnesslab.scenario.settings import resolve_settings
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World

from .conftest import cpu_min, report
from .scenarios import long_scenario

TURNS = 200
LIMIT = 2.0  # full bench turn / the reference harness alone: the target
# Measured 9-11 when this benchmark was written (the issue: 6-8.3); 7.4-7.6 on chat and 6.0
# on filler since the bench's reading, record and judgement became incremental (docs/performance.md).
REGRESSION = 10.0
TAPE: list[tuple[str, Any]] = []  # what the bench handed the harness, in order


class Taped(ReferenceHarness):
    """The reference harness, noting every input the bench gives it (to feed it again)."""

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        TAPE.append(("turn", (text, tuple(images))))
        return super().turn(text, images)

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> None:
        TAPE.append(("preload", [tuple(p) for p in exchanges]))
        super().preload(exchanges)


class _Replies:
    def __init__(self, calls: list[tuple[Any, int, int]]) -> None:
        self._calls: Iterator[tuple[Any, int, int]] = iter(calls)
        self.left = len(calls)

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        self.left -= 1
        blocks, inp, out = next(self._calls)
        return Response(blocks, inp, out)


class _Tools:
    def __init__(self, schemas: tuple[ToolSchema, ...], outcomes: list[ToolOutcome]) -> None:
        self._schemas, self._outcomes = schemas, iter(outcomes)

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def run(self, name: str, arguments: str, acting_user: str) -> ToolOutcome:
        return next(self._outcomes)


class _Nowhere:
    def emit(self, event: dict[str, Any]) -> None:
        pass


def _replies(rec: Record) -> list[tuple[Any, int, int]]:
    return [(tuple(block_from_dict(b) for b in e["reply"]), e["true_input"], e["output_tokens"])
            for e in rec.of_type("model_call")]


def harness_alone(sc: Scenario, rec: Record, tape: list[tuple[str, Any]]) -> int:
    """Replay the conversation to a fresh reference harness; the number of user turns."""
    settings = resolve_settings(sc, sc.variants[0], None)
    world = World(sc.world.with_tools(settings.tools))
    replies = _replies(rec)
    model = _Replies(replies)
    tools = _Tools(ToolBox(world).schemas(),
                   [ToolOutcome(e["result"], e["is_error"]) for e in rec.of_type("tool_call")])
    ctx = HarnessContext(model, tools, ClockDoor(world.clock), _Nowhere(),
                         Session(sc.session.id, sc.session.user))
    h = ReferenceHarness(ctx, settings.harness)
    turns = 0
    for kind, data in tape:
        if kind == "turn":
            h.turn(*data)
            turns += 1
        else:
            h.preload(data)
    assert model.left == 0, f"the harness made {len(replies) - model.left} of {len(replies)} calls"
    return turns


# Chat alone (the context grows turn by turn, compacted at 2048), and with filler before
# every turn on a 32k context.
SCENARIOS = {"chat": (None, 2048), "filler": (0.02, 32768)}


@pytest.mark.parametrize("kind", SCENARIOS)
def test_bench_turn_within_2x_the_reference_harness_alone(benchmark, tmp_path: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    sc = long_scenario(TURNS, *SCENARIOS[kind])
    v = sc.variants[0]
    TAPE.clear()
    taped = run_variant(sc, v, out_dir=tmp_path / "taped", cli_set={"harness": f"{__name__}:Taped"})
    assert taped.error is None and taped.record is not None, taped.error
    tape = list(TAPE)
    rec = Record.load(taped.record)
    assert not rec.of_type("overflow", "protocol_error")
    assert len(rec.of_type("compaction")) >= 2  # long enough to compact, more than once
    assert sum(1 for k, _ in tape if k == "turn") == TURNS

    def bench() -> None:
        r = run_variant(sc, v, out_dir=tmp_path / "bench")
        assert r.error is None

    def alone() -> None:
        assert harness_alone(sc, rec, tape) == TURNS

    bench()
    alone()  # first-use costs
    found: dict[str, float] = {}

    def once() -> None:
        found["bench"], found["alone"] = cpu_min(bench, alone, repeats=5)

    benchmark.pedantic(once, rounds=1, iterations=1)
    b, a = found["bench"] / TURNS * 1e3, found["alone"] / TURNS * 1e3
    ratio = b / a
    report(benchmark, f"{kind}, {TURNS} turns: CPU per turn, full bench {b:.3f} ms, reference "
           f"harness alone {a:.3f} ms, ratio {ratio:.2f} (limit {LIMIT})",
           bench_ms=b, alone_ms=a, ratio=ratio, limit=LIMIT)
    assert ratio <= REGRESSION
    if ratio > LIMIT:
        pytest.xfail(f"issue 23 item 1 not met yet: bench/harness CPU per turn {ratio:.2f} "
                     f"on {kind} (target {LIMIT})")
