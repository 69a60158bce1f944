"""The reference harness as a program (``python -m harnesslab.adapters.reference_program``)
through the whole bundled suite against the same suite in process (slow): every check, the
compactions and the summary tokens agree, the compactions found from the requests alone. The
documented differences: a fill_to filler needs the harness's own estimate, and files placed in
the harness's per-user memory folders need folders a program does not expose (both not
applicable to a program), and the compaction counts of the ``truncate`` strategy
(``OUTSIDE``): two truncations with no model call between leave one break in the requests, so
from outside they are fewer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.cli import main
from harnesslab.record.format import Record

pytest.importorskip("starlette")
WRAPPER = "cmd:python -m harnesslab.adapters.reference_program"
# The strategy whose compactions the requests cannot show as the harness counts them
# (docs/black-box.md): two truncations during one filler, with no model call between and no
# call of their own to tell them apart, are one break in the requests.
OUTSIDE = ("truncate",)
# What a program cannot run (docs/black-box.md): a fill_to filler (the harness's own
# estimate), files in per-user memory folders (a program exposes none).
NOT_APPLICABLE = ("fill_to needs the harness's own estimate",
                  "has no memory folder the bench can place them in")


def _runs(out: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    found = {}
    for path in sorted(out.glob("*/*/seed*.jsonl")):
        rec = Record.load(path)
        result = rec.of_type("result")
        errors = rec.of_type("run_error")
        found[(path.parts[-3], path.parts[-2], path.stem)] = {
            "checks": {c["id"]: c["passed"] for c in rec.of_type("check")},
            "metrics": result[0]["metrics"] if result else None,
            "error": errors[0]["error"] if errors else None,
            "strategy": rec.header["harness"]["strategy"]}
    return found


@pytest.mark.slow
def test_the_reference_harness_as_a_program_agrees_with_it_in_process(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["run", "--out", str(tmp_path / "in"), "--json"])
    main(["run", "--set", f"harness={WRAPPER}", "--set", "turn_timeout=300",
          "--out", str(tmp_path / "wire"), "--json"])
    capsys.readouterr()
    inproc, wire = _runs(tmp_path / "in"), _runs(tmp_path / "wire")
    assert inproc.keys() == wire.keys() and len(inproc) > 100
    differs, na, bad = [], [], []
    for key, a in inproc.items():
        b = wire[key]
        if b["error"] and any(w in b["error"] for w in NOT_APPLICABLE):
            na.append(key)
            continue
        if b["error"] is not None or a["error"] is not None:
            bad.append((key, "error", a["error"], b["error"]))
            continue
        if a["checks"] != b["checks"]:
            bad.append((key, "checks", sorted(k for k in a["checks"].keys() | b["checks"].keys()
                                              if a["checks"].get(k) != b["checks"].get(k))))
        for m in ("summary_tokens", "compactions"):
            if a["metrics"][m] != b["metrics"][m]:
                # Never more from outside: the requests show at most what the harness did.
                known = m == "compactions" and a["strategy"] in OUTSIDE \
                    and 0 < b["metrics"][m] < a["metrics"][m]
                (differs if known else bad).append((key, m, a["metrics"][m], b["metrics"][m]))
    print(json.dumps(bad, ensure_ascii=False, indent=1))
    assert bad == []
    assert na, "the fill_to scenarios are not applicable to a program"
    # Black-box rows no longer read 0 compactions.
    assert sum(w["metrics"]["compactions"] for w in wire.values() if w["metrics"]) > 10
    print(json.dumps({"runs": len(inproc), "not_applicable": len(na),
                      "known_differences": differs}, ensure_ascii=False))


def _server(answers: list[list[bytes]]) -> tuple[int, list[bytes]]:
    """A loopback server that, per connection, sends each of its answers after a request and
    then closes (an idle keep-alive timeout); what it read is returned in ``got``."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        for conn_answers in answers:
            conn, _ = listener.accept()
            with conn:
                for answer in conn_answers:
                    got.append(conn.recv(65536))
                    conn.sendall(answer)
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], got


def _ok(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def test_the_wrapper_client_reconnects_once_when_an_idle_connection_was_closed() -> None:
    from harnesslab.adapters.reference_program import _Http

    port, got = _server([[_ok(b'{"n": 1}')], [_ok(b'{"n": 2}')]])
    http = _Http(f"http://127.0.0.1:{port}", "tok")
    assert http.request("GET", "/a") == (200, {"n": 1})
    # The server closed the kept connection: the request was never read, so it goes again.
    assert http.request("POST", "/b", b"{}") == (200, {"n": 2})
    assert got[1].startswith(b"POST /b HTTP/1.1\r\n") and b"Authorization: Bearer tok" in got[1]


def test_the_wrapper_client_never_resends_a_request_that_was_partly_answered() -> None:
    from harnesslab.adapters.reference_program import HttpError, _Http

    port, got = _server([[_ok(b'{"n": 1}'), b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{"]])
    http = _Http(f"http://127.0.0.1:{port}", "tok")
    assert http.request("GET", "/a") == (200, {"n": 1})
    with pytest.raises(HttpError, match="in the middle of an answer"):
        http.request("GET", "/b")
    assert len(got) == 2
