"""Record format 2 (compact: messages by content hash, requests as deltas) is lossless: the
file reads back as exactly the record the run held in memory, a gzip copy reads the same,
``harnesslab show`` prints the same from both, and version 1 records still read."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.messages import dumps
from harnesslab.record.format import CALL_EVENTS, FULL_EVERY, RECORD_VERSION, Record
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sim.service import ServiceProfile, SimulatedService

V1 = Path(__file__).parent / "data" / "record-v1.jsonl"  # written by harnesslab at version 1


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Record, Path]:
    sc = load_scenario(bundled_dir() / "brevity-30-turns-zh.yaml")
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path_factory.mktemp("fmt"))
    assert r.error is None and r.record is not None
    return Record.load(r.record), r.record


def test_the_file_reads_back_as_the_record_in_memory(tmp_path: Path) -> None:
    from harnesslab.run import runner

    sc = load_scenario(bundled_dir() / "brevity-30-turns-zh.yaml")
    kept: list[Record] = []
    emitted: list[dict[str, object]] = []  # every event as the run held it (judge.live lets
    real = runner.RecordWriter              # go of them step by step)

    class Keeping(real):  # type: ignore[misc, valid-type]
        def emit(self, event: dict[str, object]) -> None:
            super().emit(event)
            emitted.append(self.record.events[-1])

        def close(self) -> None:
            kept.append(self.record)
            super().close()

    runner.RecordWriter = Keeping  # type: ignore[misc]
    try:
        r = run_variant(sc, sc.variants[0], out_dir=tmp_path)
    finally:
        runner.RecordWriter = real  # type: ignore[misc]
    assert r.record is not None
    loaded, memory = Record.load(r.record), kept[0]
    assert loaded.header == memory.header and loaded.header["version"] == RECORD_VERSION == 2
    assert loaded.events == emitted and len(memory.events) < len(emitted)
    assert loaded.blobs == memory.blobs
    refs = [e["request"] for e in loaded.events if "request" in e]
    assert [ref["n"] for ref in refs] == list(range(1, len(refs) + 1))
    # Most requests are stored as a delta, and most deltas name no hash at all.
    text = r.record.read_text(encoding="utf-8")
    assert sum("keep" in ref for ref in refs) > len(refs) // 2
    assert text.count('"new":') > len(refs) // 2 and '"type":"message"' in text


def test_every_request_rebuilds_exactly(run: tuple[Record, Path]) -> None:
    rec, _ = run
    svc = SimulatedService(ServiceProfile.model_validate(rec.header["service"]))
    calls = rec.of_type(*CALL_EVENTS)
    assert len(calls) > 30 and rec.of_type("compaction")
    # Any order: a request rebuilds from the record alone, not from what was asked before.
    for e in [*reversed(calls), *calls[::7]]:
        req = rec.request(e["request"])
        assert hashlib.sha256(dumps(req).encode()).hexdigest() == e["request"]["sha256"]
        assert svc.count_input(req) == e["true_input"]


def test_full_lists_bound_the_deltas_applied(tmp_path: Path) -> None:
    from tests.benchmarks.scenarios import long_scenario

    sc = long_scenario(FULL_EVERY + 20, filler=None, context_size=100000)
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path)
    assert r.record is not None
    rec = Record.load(r.record)
    refs = [e["request"] for e in rec.events if "request" in e]
    assert [ref["n"] for ref in refs if "messages" in ref] == [1, FULL_EVERY + 1]
    for ref in (refs[-1], refs[FULL_EVERY - 1]):  # the most deltas, the last before a list
        req = rec.request(ref)
        assert hashlib.sha256(dumps(req).encode()).hexdigest() == ref["sha256"]


def test_a_gzip_record_reads_and_shows_the_same(run: tuple[Record, Path], tmp_path: Path) -> None:
    rec, path = run
    gz = tmp_path / "seed0.jsonl.gz"
    with path.open("rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    packed = Record.load(gz)
    assert (packed.header, packed.events, packed.blobs) == (rec.header, rec.events, rec.blobs)
    last = max(e["call"] for e in rec.of_type(*CALL_EVENTS))
    shown = [subprocess.run([sys.executable, "-m", "harnesslab.cli", "show", str(p), "--call",
                             str(last)], capture_output=True, text=True, timeout=300)
             for p in (path, gz)]
    assert shown[0].returncode == 0 and shown[0].stdout == shown[1].stdout
    assert "O-1001 现在到哪了？" in shown[0].stdout and "true input" in shown[0].stdout


def test_version_1_records_still_read() -> None:
    rec = Record.load(V1)
    assert rec.header["version"] == 1
    svc = SimulatedService(ServiceProfile.model_validate(rec.header["service"]))
    calls = rec.of_type(*CALL_EVENTS)
    assert len(calls) >= 3
    for e in calls:
        req = rec.request(e["request"])
        assert hashlib.sha256(dumps(req).encode()).hexdigest() == e["request"]["sha256"]
        assert svc.count_input(req) == e["true_input"]
        assert rec.request_text(e["request"])


def test_version_2_writes_the_same_run_as_version_1(tmp_path: Path) -> None:
    """The same scenario run now: the same requests, replies and checks as the v1 file."""
    old = Record.load(V1)
    sc = load_scenario(bundled_dir() / "stale-logistics-en.yaml")
    variant = next(v for v in sc.variants if v.name == old.header["variant"])
    r = run_variant(sc, variant, out_dir=tmp_path)
    assert r.record is not None
    new = Record.load(r.record)

    def view(rec: Record) -> list[dict[str, object]]:
        return [{**e, "request": rec.request(e["request"])} if "request" in e else e
                for e in rec.events]

    assert view(new) == view(old)


@pytest.mark.parametrize(("lines", "message"), [
    (['{"type": "message", "data": {"role": "user", "content": []}}',
      '{"type": "model_call", "request": {"n": 1, "messages": []}}',
      '{"type": "model_call", "request": {"n": 2, "keep": 0, "new": 3}}'],
     r"rec\.jsonl:4: request\.new: request 2 adds the 3 messages before it, but 0 are there"),
    (['{"type": "model_call", "request": {"n": 1, "keep": 0, "add": []}}'],
     r"rec\.jsonl:2: request: request 1 has neither its messages nor a delta"),
])
def test_a_broken_delta_is_one_line(tmp_path: Path, lines: list[str], message: str) -> None:
    p = tmp_path / "rec.jsonl"
    p.write_text("\n".join([json.dumps({"type": "header", "version": 2}), *lines]) + "\n",
                 encoding="utf-8")
    with pytest.raises(InputError, match=message):
        Record.load(p)


def test_a_file_that_is_not_gzip_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "rec.jsonl.gz"
    p.write_text("not gzip", encoding="utf-8")
    with pytest.raises(InputError, match=r"rec\.jsonl\.gz: not a readable gzip file"):
        Record.load(p)
