"""A scenario's serve on a loopback port for a test, with its records folder."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harnesslab.bench.scenario import bundled_dir, load_scenario
from harnesslab.bench.serve import ScenarioServe

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


def example_through_suite(example: Path, logging: str, tmp: Path, monkeypatch: Any,
                          capsys: Any, *run_args: str) -> tuple[int, dict[tuple[str, str], Any],
                                                                Path]:
    """``harnesslab run`` of the bundled suite with ``example`` as a black-box harness, wrapped
    by ``logging`` (which writes every body it sends to $SENT_LOG); then the check that the
    records hold every request it sent, in order (runs are serial, in summary order). Returns
    the exit code, the summary rows by (scenario, variant) and the records folder."""
    import json

    from harnesslab.adapters.openai_wire import request_from_openai
    from harnesslab.bench.record import CALL_EVENTS, Record
    from harnesslab.cli import main

    monkeypatch.setenv("SENT_LOG", str(tmp / "sent.jsonl"))
    wrapper = tmp / "logging_agent.py"
    wrapper.write_text(logging, encoding="utf-8")
    out = tmp / "out"
    # Serial: the programs append to one log, which must follow the summary's order.
    code = main(["run", "--set", f"harness=cmd:python {wrapper} {example}", *run_args,
                 "--executor", "serial", "--out", str(out), "--json"])
    rows = {(r["scenario"], r["variant"]): r
            for r in json.loads(capsys.readouterr().out)["rows"]}
    sent = [json.loads(x) for x in (tmp / "sent.jsonl").read_text().splitlines()]
    recorded = []
    for scenario, variant in rows:
        rec = Record.load(out / scenario / variant / "seed0.jsonl")
        recorded += [rec.request(e["request"]) for e in rec.events if e["type"] in CALL_EVENTS]
    assert len(sent) == len(recorded) > 100
    for body, req in zip(sent, recorded, strict=True):
        assert request_from_openai(body, session_id=req.session_id) == req
    return code, rows, out


# Why a black-box program cannot run a variant: a scenario that needs the harness's own
# estimate (a fill_to filler), or its state (restarts, alternate instances, kills).
NOT_APPLICABLE_TO_PROGRAMS = ("NotApplicable: filler fill_to needs the harness's own estimate",
                              "harness 'cmd' does not save its state")


def assert_only_not_applicable(rows: Mapping[tuple[str, str], Any]) -> None:
    """No run hung or crashed: every run error is one of :data:`NOT_APPLICABLE_TO_PROGRAMS`."""
    errors = {k: r["errors"] for k, r in rows.items() if r["errors"]}
    assert errors and all(rows[k]["not_applicable"] for k in errors)
    assert all(any(w in e for w in NOT_APPLICABLE_TO_PROGRAMS)
               for es in errors.values() for e in es), errors
