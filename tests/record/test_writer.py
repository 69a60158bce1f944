"""The record writer measures each message once and resumes from the previous request: what it
records of a call (present facts, content kind, images, sha256) must be what the whole request
shows, and what the checks ask later must not depend on what it kept."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harnesslab.messages import DataBlock, Message, Request, TextBlock, dumps, message_images
from harnesslab.record.format import CALL_EVENTS, Declared, Record, content_kind
from harnesslab.record.writer import RecordWriter
from harnesslab.run.runner import RunResult, _declared
from harnesslab.scenario.loader import load_scenario

Suite = tuple[Path, list[RunResult]]


def test_every_call_records_what_its_whole_text_shows(suite: Suite) -> None:
    out, _ = suite
    calls = 0
    for path in sorted(out.glob("*/*/seed*.jsonl")):
        rec = Record.load(path)
        declared = _declared(load_scenario(Path(rec.header["scenario_file"])))
        for e in rec.of_type(*CALL_EVENTS):
            text = rec.request_text(e["request"])
            req = rec.request(e["request"])
            assert e["present"] == declared.present(text), (path, e["call"])
            assert e["kind"] == content_kind(text), (path, e["call"])
            assert e["images"] == sum(1 for m in req.messages for _ in message_images(m))
            calls += 1
    assert calls > 500


def _emit_calls(declared: Declared, requests: list[Request]) -> list[dict[str, object]]:
    w = RecordWriter({}, declared)
    for n, r in enumerate(requests, start=1):
        w.emit({"type": "model_call", "call": n, "request": r})
    return w.record.of_type("model_call")


def test_a_phrase_with_a_line_feed_is_found_across_messages() -> None:
    d = Declared(ids=["O-1001"], constraints={"brevity": ["short\nplease"]},
                 claims={"identity=U-2": ["I am\nU-2"]})
    msgs = (Message.text("user", "short"), Message.text("user", "please O-1001"),
            Message.text("user", "I am"), Message.text("user", "U-2"))
    [e] = _emit_calls(d, [Request(system="", messages=msgs)])
    assert e["present"] == {"ids": ["O-1001"], "constraints": ["brevity"],
                            "claims": ["identity=U-2"]}


def test_requests_that_grow_shrink_and_change_hash_as_their_canonical_json() -> None:
    d = Declared(ids=["O-1001", "O-1002"], constraints={"brevity": ["简单一点"]})
    a, b, c = (Message.text("user", "O-1001 简单一点"), Message.text("assistant", "{\"k\": 1}"),
               Message("user", (TextBlock("O-1002"), DataBlock("image/png", "AAAA"))))
    requests = [Request(system="s", messages=(a,)), Request(system="s", messages=(a, b, c)),
                Request(system="s", summary="O-1002", messages=(c,)),
                Request(system="t", messages=(a, c)), Request(system="s", messages=())]
    for r, e in zip(requests, _emit_calls(d, requests), strict=True):
        ref = e["request"]
        assert ref["sha256"] == hashlib.sha256(dumps(r).encode()).hexdigest()  # type: ignore[index]
        text = "\n".join([r.system, r.summary, *("\n".join(b.text for b in m.content
                                                           if isinstance(b, TextBlock))
                                                 for m in r.messages)])
        assert e["present"] == d.present(text)
        assert e["kind"] == content_kind(text)
        assert e["images"] == sum(1 for m in r.messages for _ in message_images(m))
