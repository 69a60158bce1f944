"""Judgement while the run goes (judge.live): the checks and metrics a run writes are those a
record read back gives, and a run's record in memory holds only what is still to be judged."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import TurnResult
from harnesslab.judge import live
from harnesslab.judge.checks import CheckOutcome, evaluate_split
from harnesslab.judge.metrics import run_metrics
from harnesslab.messages import DataBlock, Message, Request, message_to_dict
from harnesslab.record import writer as writer_mod
from harnesslab.record.format import Declared, Record, _dumps, _h
from harnesslab.record.writer import RecordWriter
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from tests.benchmarks.scenarios import long_scenario


def _checks(rec: Record) -> list[CheckOutcome]:
    return [CheckOutcome(e["id"], e["kind"], e["step"], e["passed"], e["detail"],
                         e.get("unreadable", "")) for e in rec.of_type("check")]


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))


def test_every_bundled_records_checks_and_metrics_read_back_equal_the_live_ones(
        suite: tuple[Path, list[RunResult]]) -> None:
    """evaluate_split and run_metrics over each finished record (the compactions' true tokens
    recounted from the rebuilt requests) give the checks and metrics judged while it ran."""
    _, results = suite
    scenarios = {p.stem: load_scenario(p) for p in bundled_dir().glob("*.yaml")}
    compared = compacted = 0
    for r in results:
        if r.record is None or r.error is not None:
            continue
        rec = Record.load(r.record)
        checks, skipped = evaluate_split(rec, scenarios[r.scenario])
        assert [c.to_dict() for c in checks] == rec.of_type("check"), r.record
        assert skipped == next((e["checks"] for e in rec.of_type("not_applicable")), [])
        assert _json(run_metrics(rec, checks)) == rec.events[-1]["metrics"], r.record
        compared += 1
        compacted += rec.events[-1]["metrics"]["compactions"] > 0
    assert compared >= 250 and compacted >= 50


class _Spy:
    """What the record in memory holds after each step is judged."""

    def __init__(self) -> None:
        self.events: list[int] = []
        self.requests: list[int] = []
        self.offsets: list[int] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = live.LiveJudge.step_ended

        def step_ended(judge: live.LiveJudge) -> None:
            real(judge)
            rec = judge._writer.record
            self.events.append(len(rec.events))
            self.requests.append(len(rec._refs))
            blobs = rec.blobs
            if isinstance(blobs, writer_mod.FileBlobs):
                self.offsets.append(len(blobs._at) + len(blobs._was))

        monkeypatch.setattr(live.LiveJudge, "step_ended", step_ended)


TURNS = 600  # about 20 messages a turn: several generations of message offsets


def test_a_long_run_holds_only_the_step_under_way(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    spy.install(monkeypatch)
    sc = long_scenario(TURNS)
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path)
    assert r.error is None and r.record is not None
    rec = Record.load(r.record)
    assert len(rec.blobs) > 2 * writer_mod._GENERATION  # more messages than two generations
    # Each step let go of: a few events, the last request, and offsets of two generations and
    # of the live context at most (a few hundred messages here), whatever the run's length.
    assert max(spy.events) <= 8 and max(spy.requests) <= 4
    assert max(spy.offsets) <= 2 * writer_mod._GENERATION + 1000 < len(rec.blobs)
    # and judged as the record read back is
    assert _json(run_metrics(rec, _checks(rec))) == rec.events[-1]["metrics"]
    assert rec.events[-1]["metrics"]["compactions"] >= 5


def test_control_a_record_in_memory_keeps_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a file there is nothing to read a message back from: nothing is let go of."""
    spy = _Spy()
    spy.install(monkeypatch)
    sc = long_scenario(200)
    r = run_variant(sc, sc.variants[0])
    assert r.error is None
    assert max(spy.events) >= 2 * 200


class NotesAside(ReferenceHarness):
    """A harness whose turns after the first end with a call it files as memory work,
    although its settings announce no memory (a user's own memory layer)."""

    turns = 0

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        res = super().turn(text, images)
        self.turns += 1
        if self.turns > 1:  # after the first step was judged and let go of
            req = self.request(messages=(Message.text("user", "remember: " + text),))
            self.call(req, purpose="memory", estimate=self.estimate(req))
        return res


def test_a_memory_call_the_header_did_not_announce_is_judged_from_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read_back: list[bool] = []
    real_load = live.Record.load

    def load(path: Path, *, finished: bool = True) -> Record:
        read_back.append(finished)
        return real_load(path, finished=finished)

    monkeypatch.setattr(live.Record, "load", load)
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    r = run_variant(sc, sc.variants[0], source=path, out_dir=tmp_path,
                    cli_set={"harness": f"{__name__}:NotesAside"})
    assert r.error is None and r.record is not None
    assert read_back == [False]  # from the file: the first step's events were let go of
    rec = Record.load(r.record)
    assert any(e["purpose"] == "memory" for e in rec.of_type("model_call"))
    assert "memory_items" in r.metrics  # the memory metrics, over every call
    assert _json(run_metrics(rec, _checks(rec))) == rec.events[-1]["metrics"]


def _request(msgs: list[Message]) -> Request:
    return Request(system="s", messages=tuple(msgs))


@pytest.mark.parametrize("generation", [4, 1 << 20])
def test_a_message_let_go_of_is_written_again_and_every_request_rebuilds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generation: int) -> None:
    """A message that comes back after its offset was let go of is written a second time (the
    control, a generation larger than the run: once); every request rebuilds exactly, and
    the writer reads a let-go message back from the file."""
    monkeypatch.setattr(writer_mod, "_GENERATION", generation)
    w = RecordWriter({"scenario": "x"}, Declared(), tmp_path / "r.jsonl")
    first = Message.text("user", "the first question", id="q")
    sent = []
    for i in range(12):
        msgs = [Message.text("user", f"filler {i} {k}", id=f"f{i}{k}") for k in range(3)]
        req = _request([first, *msgs] if i in (0, 11) else msgs)
        sent.append(req)
        w.emit({"type": "model_call", "call": i + 1, "request": req})
    h = w.live_hashes()[0]
    assert w.record.blobs[h]["content"][0]["text"] == "the first question"
    gone = "m" + _h(_dumps(message_to_dict(sent[0].messages[1])))  # no longer sent
    assert (gone in w.record.blobs) == (generation > 4)
    assert w.record.blobs[gone]["content"][0]["text"] == "filler 0 0"  # read back either way
    w.emit({"type": "result"})
    w.close()
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    times = sum(1 for ln in lines if '"the first question"' in ln and '"type":"message"' in ln)
    assert times == (2 if generation == 4 else 1)
    rec = Record.load(tmp_path / "r.jsonl")
    assert [rec.request(e["request"]) for e in rec.of_type("model_call")] == sent
