"""The record writer measures each message once and resumes from the previous request: what it
records of a call (present facts, content kind, images, sha256) must be what the whole request
shows, and what the checks ask later must not depend on what it kept."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harnesslab.messages import (
    DataBlock,
    Message,
    Request,
    TextBlock,
    ToolResultBlock,
    dumps,
    message_images,
    readable,
)
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
            assert e["present"] == declared.present(readable(text)), (path, e["call"])
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


def test_what_json_escapes_is_shown_all_the_same(tmp_path: Path) -> None:
    """A value escaped as JSON (json.dumps' default) is shown to the model as written out:
    present, and a leak, both as the writer noted it and read back from the file."""
    d = Declared(ids=["O-1001"], constraints={"brevity": ["简单一点"]})
    value = "上海市浦东新区"
    escaped = json.dumps({"message": "O-1001 回答简单一点", "address": value})
    assert "简单" not in escaped and value not in escaped
    plain = Request(system="s", messages=(Message.text("user", "O-1001 nothing private"),))
    shown = Request(system="s", messages=(Message.text("user", escaped),))
    path = tmp_path / "r.jsonl"
    w = RecordWriter({"private": {"U-2": [value]}}, d, path)
    for n, r in enumerate((plain, shown), start=1):
        w.emit({"type": "model_call", "call": n, "request": r})
    w.close()
    live = w.record.of_type("model_call")
    assert [e["present"]["constraints"] for e in live] == [[], ["brevity"]]
    assert [w.record.shows(e["request"], (value,)) for e in live] == [frozenset(), {value}]
    back = Record.load(path, finished=False)
    assert [back.shows(e["request"], (value,)) for e in back.of_type("model_call")] == \
        [frozenset(), {value}]


def test_the_facts_a_writer_noted_are_those_the_file_gives(tmp_path: Path) -> None:
    """A live record answers ``facts`` from what the writer noted per message; the same record
    read back from its file reads the messages. Both give the successful JSON-object results,
    in order, and nothing else (an error, a list, text, a result cut mid-JSON)."""
    ok1, ok2 = '{"tool": "track_order", "status": "in_transit"}', '{"tool": "get_order", "id": 2}'
    results = [ok1, '{"tool": "track_order", "error": "not_found"}', "[1, 2]", "no JSON",
               '{"tool": "get_order"', ok2]
    msgs = [Message("tool", (ToolResultBlock(f"c{n}", "track_order", out),))
            for n, out in enumerate(results)]
    msgs.insert(1, Message.text("user", ok1))  # a result quoted as text is no tool result
    requests = [Request(system="s", messages=tuple(msgs[:k])) for k in range(1, len(msgs) + 1)]
    requests.append(Request(system="s", messages=tuple(msgs[3:])))
    path = tmp_path / "r.jsonl"
    w = RecordWriter({}, Declared(), path)
    for n, r in enumerate(requests, start=1):
        w.emit({"type": "model_call", "call": n, "request": r})
    w.close()
    read = Record.load(path, finished=False)
    assert read._facts_in is None and w.record._facts_in is not None
    live = [w.record.facts(e["request"]) for e in w.record.of_type("model_call")]
    assert live == [read.facts(e["request"]) for e in read.of_type("model_call")]
    assert live[-2] == [json.loads(ok1), json.loads(ok2)] and live[-1] == [json.loads(ok2)]
    assert live[0] == live[1] == [json.loads(ok1)]
