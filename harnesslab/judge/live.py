"""Judgement while the run goes: each step's checks and its share of the metrics, computed as
the step ends, so that a run's end costs a constant and its record in memory lets go of what
no check or metric needs any more (design: the record stays the source of truth; the same
functions judge a record read back, and the tests compare the two on every bundled record).

A step is judged when the next one starts (a program may still call the model after it
answered, within its step) and the last one when the run ends. What only the whole record can
say keeps every event in memory: a program's compactions, found from its whole request stream
(``judge.observed``), and the memory metrics (``judge.memory_metrics``); a run whose harness
makes a memory call the header did not announce is read back from its file for them.
"""

from __future__ import annotations

from typing import Any

from harnesslab.judge.checks import CheckOutcome, assemble, skipped_kinds, turn_checks
from harnesslab.judge.metrics import Tally, steps_of
from harnesslab.record.format import Record
from harnesslab.record.writer import RecordWriter
from harnesslab.scenario.schema import Scenario, UserStep

# Events every later question may still ask about (restores, sessions opened): few per run.
_KEPT = frozenset({"resume", "session", "instances"})


def _kept(e: dict[str, Any]) -> bool:
    return e["type"] in _KEPT


class LiveJudge:
    """Judges ``writer``'s record of a run of ``sc`` step by step (``RecordWriter.judge``)."""

    def __init__(self, sc: Scenario, writer: RecordWriter) -> None:
        self._sc = sc
        self._writer = writer
        rec = writer.record
        self.tally = Tally(rec)
        self._skip = skipped_kinds(rec)
        self._checks: dict[int, list[CheckOutcome]] = {}  # per user step with checks
        # Only a record on disk can let go of its events: its messages are read back from
        # the file; one in memory is wholly in memory anyway.
        self._release = writer.path is not None and not self.tally.black_box \
            and "memory" not in rec.header.get("harness", {})
        self._released = False
        self._done = 0  # how many of record.events are judged (after a release: all kept)

    def step_ended(self) -> None:
        """Judge every step whose events are all in (the writer moved on to a later one)."""
        rec = self._writer.record
        events = rec.events[self._done:]
        if not events:
            return
        for step, group in steps_of(events):
            self._judge(rec, step, group)
        if self._release and not self.tally.memory_calls:
            rec.release(_kept)
            self._released = True
        self._done = len(rec.events)

    def _judge(self, rec: Record, step: int, events: list[dict[str, Any]]) -> None:
        found: list[CheckOutcome] = []
        sc_step = self._sc.steps[step - 1] if 1 <= step <= len(self._sc.steps) else None
        turn = next((e for e in events if e["type"] == "turn"), None)
        if isinstance(sc_step, UserStep) and turn is not None:
            found = turn_checks(rec, step, sc_step.expect, turn)
        if found:  # only steps with checks hold an entry: a long chat holds none
            self._checks[step] = found
        self.tally.add(rec, step, events, [c for c in found if c.kind not in self._skip],
                       recount=False)

    def finish(self) -> tuple[list[CheckOutcome], list[str], dict[str, Any]]:
        """The run's checks, the ids of those that do not apply, and its metrics: what
        ``evaluate_split`` and ``run_metrics`` give for the finished record."""
        self.step_ended()
        rec = self._writer.record
        checks, skipped = assemble(rec, self._sc, self._checks)
        return checks, skipped, self._metrics(rec, checks)

    def _metrics(self, rec: Record, checks: list[CheckOutcome]) -> dict[str, Any]:
        whole = rec
        if self._released and self.tally.uses_memory(rec):
            # A memory call the header did not announce, after events were let go: the
            # memory metrics read the whole record back from its file.
            assert self._writer.path is not None
            self._writer.flush()
            whole = Record.load(self._writer.path, finished=False)
        return self.tally.result(whole, self._writer.compaction_true)
