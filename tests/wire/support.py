"""A scenario's serve on a loopback port for a test, with its records folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError
from harnesslab.messages import Converted, Request
from harnesslab.run.serve import ScenarioServe
from harnesslab.scenario.loader import bundled_dir, load_scenario

FOLLOWUP = bundled_dir() / "followup-o1001-zh.yaml"
Q1 = "帮我查订单 O-1001 为什么还没到，回答简单一点。"


@contextmanager
def serving(out: Path, *, scenario: Path = FOLLOWUP, variant: str = "default",
            cli_set: Mapping[str, Any] | None = None) -> Iterator[tuple[str, ScenarioServe]]:
    sc = load_scenario(scenario)
    v = next(x for x in sc.variants if x.name == variant)
    serve = ScenarioServe(sc, v, source=scenario, out_dir=out, cli_set=cli_set)
    server = serve.server().start()
    try:
        yield server.url, serve
    finally:
        server.stop()
        serve.close()


def tool_schemas(url: str, key: str) -> list[dict[str, Any]]:
    """The session's tool schemas (``function`` objects) from ``GET /harnesslab/tools``."""
    import httpx

    r = httpx.get(f"{url.removesuffix('/v1')}/harnesslab/tools",
                  headers={"Authorization": f"Bearer {key}"})
    return [t["function"] for t in r.json()["tools"]]


def run_tool(url: str, key: str, name: str, arguments: str) -> str:
    """A tool's result text from ``POST /harnesslab/tools/NAME``."""
    import httpx

    r = httpx.post(f"{url.removesuffix('/v1')}/harnesslab/tools/{name}",
                   headers={"Authorization": f"Bearer {key}"}, json={"arguments": arguments})
    out: str = r.json()["content"]
    return out


# Put before a logging wrapper: each program (one per session) logs the bodies it sends to a
# file of its own, named by its session's API key, which opens with its session id.
_LOG_PER_SESSION = """import json as _json, os as _os
_os.environ["SENT_LOG"] = _os.path.join(_os.environ["SENT_DIR"],
                                      _os.environ["OPENAI_API_KEY"] + ".jsonl")
with open(_os.environ["SENT_LOG"], "w") as _f:
    _f.write(_json.dumps({"session": _os.environ["HARNESSLAB_SESSION_ID"]}) + "\\n")
"""


# What the slow stage runs an example program through (CI's budget: the LangGraph example
# over every bundled variant took 8 of its minutes): the scenarios the tests' assertions read,
# a restart, a kill and alternate instances, identity, tool output, images, both locales, and
# the kinds not applicable to a program (a fill_to filler, per-user memory files, a setting
# it does not declare). HARNESSLAB_FULL_SUITE=1 runs the whole bundled suite instead.
REPRESENTATIVE = ("followup-after-filler-zh", "followup-after-filler-en", "stale-logistics-zh",
                  "restart-followup-zh", "alternate-instances-zh", "kill-mid-turn-zh",
                  "spoofed-identity-zh", "tool-output-flood-zh", "image-limit-zh",
                  "reserve-below-head-zh", "memory-note-for-another-user-zh",
                  "failure-reported-zh")


def example_through_suite(example: Path, logging: str, tmp: Path, monkeypatch: Any,
                          capsys: Any, *run_args: str) -> tuple[int, dict[tuple[str, str], Any],
                                                                Path]:
    """``harnesslab run`` of :data:`REPRESENTATIVE` (the whole bundled suite with
    ``HARNESSLAB_FULL_SUITE=1``) on all cores with ``example`` as a black-box harness, wrapped
    by ``logging`` (which writes every body it sends to $SENT_LOG, one file per program); then
    the check that each session's record holds every request its program sent, in order.
    Returns the exit code, the summary rows by (scenario, variant) and the records folder."""
    import json
    import os
    from collections import Counter

    from harnesslab.adapters.openai_wire import request_from_openai
    from harnesslab.cli import main
    from harnesslab.messages import dumps
    from harnesslab.record.format import CALL_EVENTS, Record
    from harnesslab.scenario.loader import bundled_dir

    sent_dir = tmp / "sent"
    sent_dir.mkdir()
    monkeypatch.setenv("SENT_DIR", str(sent_dir))
    wrapper = tmp / "logging_agent.py"
    wrapper.write_text(_LOG_PER_SESSION + logging, encoding="utf-8")
    out = tmp / "out"
    which = [] if os.environ.get("HARNESSLAB_FULL_SUITE") == "1" else \
        [str(bundled_dir() / f"{name}.yaml") for name in REPRESENTATIVE]
    code = main(["run", *which, "--set", f"harness=cmd:python {wrapper} {example}", *run_args,
                 "--out", str(out), "--json"])
    rows = {(r["scenario"], r["variant"]): r
            for r in json.loads(capsys.readouterr().out)["rows"]}
    sent = []  # per program: the requests its bodies make, in the order it sent them
    for log in sorted(sent_dir.iterdir()):
        head, *bodies = [json.loads(x) for x in log.read_text().splitlines()]
        if bodies:
            sent.append([request_from_openai(b, session_id=head["session"]) for b in bodies])
    recorded = []  # per run and session: the requests its record holds, in order
    for scenario, variant in rows:
        rec = Record.load(out / scenario / variant / "seed0.jsonl")
        by_session: dict[str, list[Any]] = {}
        for e in rec.events:
            if e["type"] in CALL_EVENTS:
                req = rec.request(e["request"])
                by_session.setdefault(req.session_id, []).append(req)
        recorded += by_session.values()
    # The records hold every request the programs sent, and nothing else, but the call a kill
    # step refuses: the bench SIGKILLs the program at that call instead of answering it, so it
    # is no model call (as in process). Each such request is the last its program sent, and
    # there are exactly as many as the records' killed turns.
    sent_n = Counter(dumps(r) for seq in sent for r in seq)
    recorded_n = Counter(dumps(r) for seq in recorded for r in seq)
    assert recorded_n - sent_n == Counter()
    cut = sent_n - recorded_n
    killed = sum(1 for scenario, variant in rows for t in
                 Record.load(out / scenario / variant / "seed0.jsonl").of_type("turn")
                 if t.get("killed"))
    assert sum(cut.values()) == killed
    assert set(cut) <= {dumps(seq[-1]) for seq in sent}
    assert sum(1 for seq in sent if dumps(seq[-1]) in cut) >= sum(cut.values())
    sent = [seq[:-1] if dumps(seq[-1]) in cut else seq for seq in sent]
    assert sum(map(len, sent)) >= 2 * len(sent)  # the programs sent more than a request each
    # ...each program's in the order it sent them, in one session's record (the instances of
    # an alternate-instances run take turns in one session).
    for seq in sent:
        assert any(_in_order(seq, r) for r in recorded), \
            f"no session's record holds the {len(seq)} requests a program sent, in order"
    return code, rows, out


def _in_order(part: list[Any], whole: list[Any]) -> bool:
    """``part`` is a subsequence of ``whole``."""
    rest = iter(whole)
    return all(any(x == y for y in rest) for x in part)


# Why a black-box program cannot run a variant: a scenario that needs the harness's own
# estimate (a fill_to filler), variants defined by settings it does not declare, or files
# placed in per-user memory folders a program does not expose. Restarts,
# alternate instances and kills do run (a fresh process on the same session and workdir),
# judged from the requests.
NOT_APPLICABLE_TO_PROGRAMS = ("NotApplicable: filler fill_to needs the harness's own estimate",
                              # variants defined by settings the program does not declare
                              "honours none of: ",
                              "asked for no summary or extraction, so the fake model's",
                              "has no memory folder the bench can place them in")


def assert_only_not_applicable(rows: Mapping[tuple[str, str], Any]) -> None:
    """No run hung or crashed: every run error is one of :data:`NOT_APPLICABLE_TO_PROGRAMS`."""
    errors = {k: r["errors"] for k, r in rows.items() if r["errors"]}
    assert errors and all(rows[k]["not_applicable"] for k in errors)
    assert all(any(w in e for w in NOT_APPLICABLE_TO_PROGRAMS)
               for es in errors.values() for e in es), errors


def converts_as_alone(convert: Callable[..., Request], bodies: Sequence[tuple[dict[str, Any], int]],
                      wrap: Callable[[list[Any]], dict[str, Any]]) -> None:
    """Convert a session's bodies one after the other with the last one kept
    (``messages.Converted``): each must equal the body converted alone, and a refused one
    must be refused alike (naming the same field) and change nothing. ``bodies``: each body
    with how much of the last good body's messages goes before its own (0: none; K: from
    index K - 1 on, 1 being the whole history resent); ``wrap`` makes a body of messages."""
    last, prev = Converted(), None
    for body, keep in bodies:
        msgs = body["messages"]
        if prev is not None and keep:  # a resent history with the new messages after it
            msgs = prev[keep - 1:] + msgs
        whole = {**body, **wrap(msgs)}
        try:
            alone = convert(whole, session_id="s")
        except InputError as e:
            try:
                convert(whole, session_id="s", last=last)
            except InputError as again:
                assert again.field == e.field
            else:
                raise AssertionError("refused alone, converted after the last") from None
            continue
        assert convert(whole, session_id="s", last=last) == alone
        prev = msgs
