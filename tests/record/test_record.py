"""Records are the product: every call of every bundled record rebuilds byte for byte, and the
fake model's reply is a function of the rebuilt request alone."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.messages import block_to_dict, dumps
from harnesslab.record.format import Declared, Record
from harnesslab.run.runner import RunResult, run_scenario_file
from harnesslab.scenario.loader import bundled_dir
from harnesslab.scenario.schema import IntentSpec
from harnesslab.sim.intents import Constraint
from harnesslab.sim.model import FakeModel, SummarizerProfile
from harnesslab.sim.service import ServiceProfile, SimulatedService

Suite = tuple[Path, list[RunResult]]


def _records(out: Path) -> list[Path]:
    return sorted(out.glob("*/*/seed*.jsonl"))


def test_every_call_rebuilds_to_its_sha256_and_true_count(suite: Suite) -> None:
    out, _ = suite
    calls = 0
    for path in _records(out):
        rec = Record.load(path)
        svc = SimulatedService(ServiceProfile.model_validate(rec.header["service"]))
        for e in rec.of_type("model_call", "overflow"):
            req = rec.request(e["request"])
            assert hashlib.sha256(dumps(req).encode()).hexdigest() == e["request"]["sha256"]
            assert svc.count_input(req) == e["true_input"], (path, e["call"])
            calls += 1
    assert calls > 500


def test_replies_depend_only_on_the_request(suite: Suite) -> None:
    """A fresh fake model, built from the header alone (lexicon, seed, summarizer, extractor,
    extra phrases, max ages), gives every recorded reply again from the rebuilt request."""
    out, _ = suite
    for path in _records(out):
        rec = Record.load(path)
        h = rec.header
        lexicon = {k: IntentSpec.model_validate(v).to_intent() for k, v in h["lexicon"].items()}
        ages = {t: (timedelta(seconds=s) if s is not None else None)
                for t, s in h["max_ages"].items()}
        model = FakeModel(lexicon, seed=h["seed"],
                          summarizer=SummarizerProfile(**h["summarizer"]),
                          extractor=SummarizerProfile(**h["extractor"]), max_ages=ages,
                          phrases={Constraint(c): tuple(ws) for c, ws in h["phrases"].items()})
        for e in reversed(rec.of_type("model_call")):  # any order: no hidden state
            reply = model.reply(rec.request(e["request"]))
            assert [block_to_dict(b) for b in reply.blocks] == e["reply"], (path, e["call"])


def test_same_inputs_same_record_byte_for_byte(tmp_path: Path) -> None:
    path = bundled_dir() / "followup-after-filler-zh.yaml"
    run_scenario_file(path, out_dir=tmp_path / "a")
    run_scenario_file(path, out_dir=tmp_path / "b")
    a, b = _records(tmp_path / "a"), _records(tmp_path / "b")
    assert len(a) == len(b) > 3
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes()


@pytest.mark.parametrize(("content", "message"), [
    ("", "empty record"),
    ('{"type": "blob"}\n', "the first line is not a header"),
    ('{"type": "header", "version": 99}\n', "record version 99 is not supported"),
    ('{"type": "header", "version": 1}\n{oops\n', r"rec\.jsonl:2: invalid JSON"),
])
def test_bad_records_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "rec.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        Record.load(p)


def test_declared_ids_are_found_anchored_as_the_model_reads_them() -> None:
    d = Declared(ids=["O-7731", "U-1"])
    assert d.present("采购单 PO-7731 已入库，U-12 处理")["ids"] == []
    assert d.present("订单O-7731 由 U-1 处理")["ids"] == ["O-7731", "U-1"]
    # An id given as an example (tool documentation a framework writes into its prompt) is
    # not present, as the fake model does not read it as one; the control: stated, it is.
    assert d.present("order_id: The order id, e.g. O-7731; user_id, 例如 U-1")["ids"] == []
    assert d.present("order_id: The order id O-7731; user_id U-1")["ids"] == ["O-7731", "U-1"]


def test_checks_and_metrics_recomputed_from_every_record_equal_the_run_s(suite: Suite) -> None:
    """The run judges with what it noted while it went (which messages show private values,
    the true count of each compaction's request); a record read back from its file, with
    none of that, gives the same checks and metrics."""
    from harnesslab.judge.checks import evaluate_split
    from harnesslab.judge.metrics import run_metrics
    from harnesslab.scenario.loader import load_scenario

    _, results = suite
    judged = lateness = leaks = 0
    for r in results:
        if r.record is None or r.error is not None:
            continue
        rec = Record.load(r.record)
        sc = load_scenario(Path(rec.header["scenario_file"]))
        checks, _ = evaluate_split(rec, sc)
        assert [c.to_dict() for c in checks] == [c.to_dict() for c in r.checks], r.record
        assert run_metrics(rec, checks) == r.metrics, r.record
        assert rec.of_type("result")[0]["metrics"] == r.metrics
        judged += 1
        lateness += r.metrics["trigger_lateness"] is not None
        leaks += r.metrics["identity_leak_rate"]["num"] > 0
    # Both shortcuts were taken, and could have differed.
    assert judged > 100 and lateness > 20 and leaks > 3, (judged, lateness, leaks)


def test_a_wrong_live_count_would_change_the_metric(suite: Suite) -> None:
    """The control: trigger lateness does use the counts the run passes in."""
    from harnesslab.judge.metrics import run_metrics

    _, results = suite
    r = next(r for r in results if r.record and r.metrics.get("trigger_lateness"))
    rec = Record.load(r.record)  # type: ignore[arg-type]
    n = r.metrics["compactions"]
    assert run_metrics(rec, r.checks, [1] * n)["trigger_lateness"] != r.metrics["trigger_lateness"]
