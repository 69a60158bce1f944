"""``serve`` per request against the same model call in process, over a 50-session load.

The bodies come from a 50-session load (``tests/wire/test_load``: question, tool round,
follow-up per session). Then, timed in alternating rounds (least CPU time of each):

- in process: a fresh ``ScenarioServe``; each session's requests, converted from the bodies
  beforehand, through the session's ``WireSession.call`` (what the app calls: endpoint,
  record, flush), session after session;
- on the wire: a fresh server in this process; a client in another process replays the bodies,
  50 sessions at once (each in order), plain and then with ``stream: true``. The CPU time of
  this process is the server's: HTTP, JSON, conversion, threads, and the same model calls.

The ratio is server CPU per request over in-process CPU per call (the issue's target: 2, met
on an idle machine since 2026-12-07, 1.6x to 1.8x; above it, as under load, the test ends as
an expected failure with its figures, after asserting that the ratio did not regress). Requests per
second and p50/p95 latency are the client's wall figures, printed for the record only (they
depend on the machine's load).

    pytest -m benchmark tests/benchmarks/test_serve_bench.py -s
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from harnesslab.adapters.openai_wire import request_from_openai
from harnesslab.run.serve import ScenarioServe
from harnesslab.scenario.loader import load_scenario
from tests.wire.support import FOLLOWUP, serving

from .conftest import collector_paused, report

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

SESSIONS = 50
ROUNDS = 3
LIMIT = 2.0  # serve CPU per request / in-process CPU per call: the target
REGRESSION = 6.0  # measured 2.7 (plain) and 3.9 (streamed) when this benchmark was written

_CLIENT = textwrap.dedent("""
    import asyncio, json, sys, time
    import httpx
    url, path, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    sessions = json.load(open(path))
    lat = []

    async def one(client, k, bodies):
        key = {"Authorization": f"Bearer load-{k}"}
        for body in bodies:
            body = {**body, "stream": stream}
            t0 = time.perf_counter()
            if stream:
                async with client.stream("POST", f"{url}/chat/completions", headers=key,
                                         json=body) as r:
                    assert r.status_code == 200
                    async for _ in r.aiter_bytes():
                        pass
            else:
                r = await client.post(f"{url}/chat/completions", headers=key, json=body)
                assert r.status_code == 200, r.text
            lat.append(time.perf_counter() - t0)

    async def main():
        n = len(sessions)
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(timeout=300, limits=limits) as client:
            t0 = time.perf_counter()
            await asyncio.gather(*(one(client, k, b) for k, b in enumerate(sessions)))
            return time.perf_counter() - t0

    wall = asyncio.run(main())
    print(json.dumps({"wall": wall, "lat": lat}))
""")


def _bodies(tmp_path: Path) -> list[list[dict[str, Any]]]:
    from tests.wire.test_load import _load

    with serving(tmp_path / "capture") as (url, _):
        results, _, _ = asyncio.run(asyncio.wait_for(_load(url, SESSIONS), 600))
    return [[body for body, _ in convo] for convo in results]


def test_serve_request_within_2x_the_in_process_call(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sessions = _bodies(tmp_path)
    requests = sum(len(b) for b in sessions)
    bodies = tmp_path / "bodies.json"
    bodies.write_text(json.dumps(sessions, ensure_ascii=False), encoding="utf-8")
    sc = load_scenario(FOLLOWUP)
    v = next(x for x in sc.variants if x.name == "default")
    rounds = iter(range(10 ** 6))

    def in_process() -> float:
        serve = ScenarioServe(sc, v, source=FOLLOWUP, out_dir=tmp_path / f"in{next(rounds)}")
        reqs = [[request_from_openai(b, session_id=sc.session.id) for b in convo]
                for convo in sessions]
        with collector_paused():
            t0 = time.process_time()
            for k, convo in enumerate(reqs):
                s = serve.sessions.get(f"load-{k}")
                assert s is not None
                for r in convo:
                    s.call(r)
            cpu = time.process_time() - t0
        serve.close()
        return cpu

    def wire(stream: bool) -> tuple[float, dict[str, Any]]:
        with serving(tmp_path / f"wire{next(rounds)}") as (url, serve):
            with collector_paused():
                t0 = time.process_time()
                out = subprocess.run([sys.executable, "-c", _CLIENT, url, str(bodies),
                                      "1" if stream else "0"], capture_output=True, text=True,
                                     timeout=600)
                cpu = time.process_time() - t0
            assert out.returncode == 0, out.stderr[-2000:]
            assert len(serve.writers) == SESSIONS
        return cpu, json.loads(out.stdout)

    found: dict[str, Any] = {"in": float("inf"), "plain": (float("inf"), {}),
                             "stream": (float("inf"), {})}

    def once() -> None:
        for _ in range(ROUNDS):
            found["in"] = min(found["in"], in_process())
            for kind in ("plain", "stream"):
                got = wire(kind == "stream")
                if got[0] < found[kind][0]:
                    found[kind] = got

    benchmark.pedantic(once, rounds=1, iterations=1)
    base = found["in"] / requests * 1e3
    figures: dict[str, float] = {"in_process_ms": base}
    parts = []
    for kind in ("plain", "stream"):
        cpu, client = found[kind]
        lat = sorted(client["lat"])
        ms = cpu / requests * 1e3
        figures.update({f"{kind}_ms": ms, f"{kind}_ratio": ms / base,
                        f"{kind}_rps": len(lat) / client["wall"]})
        parts.append(f"{kind} {ms:.2f} ms ({ms / base:.2f}x), {len(lat) / client['wall']:.0f} "
                     f"requests/s, p50 {lat[len(lat) // 2] * 1e3:.0f} ms, p95 "
                     f"{lat[max(0, round(0.95 * len(lat)) - 1)] * 1e3:.0f} ms")
    report(benchmark, f"serve, {SESSIONS} sessions x {requests // SESSIONS} requests: CPU per "
           f"request in process {base:.2f} ms; on the wire " + "; ".join(parts)
           + f" (limit {LIMIT}x; wall figures depend on the load)", **figures)
    assert figures["plain_ratio"] <= REGRESSION and figures["stream_ratio"] <= REGRESSION
    if max(figures["plain_ratio"], figures["stream_ratio"]) > LIMIT:
        pytest.xfail(f"issue 23 item 5 not met yet: serve/in-process CPU "
                     f"{figures['plain_ratio']:.2f} plain, {figures['stream_ratio']:.2f} "
                     f"streamed (target {LIMIT})")
