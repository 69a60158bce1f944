"""Concurrent sessions against one ``serve`` on loopback, bounded in count and time: no request
of one session is ever recorded in, or answered from, another session's state. Prints the
throughput and the p95 latency (wall time on a shared machine: quoted, never asserted)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from harnesslab.adapters.openai_wire import request_from_openai
from harnesslab.messages import dumps
from harnesslab.record.format import Record
from tests.wire.support import Q1, serving

httpx = pytest.importorskip("httpx")

FOLLOW = "那我明天还要等吗？"
TURNS = 3  # per session: question, tool round, follow-up (plus the tool call itself)


async def _session(client: Any, url: str, k: int, lat: list[float]) -> list[tuple[dict[str, Any],
                                                                                 dict[str, Any]]]:
    """One session's conversation; returns (body sent, answer) per chat request, in order."""
    key = {"Authorization": f"Bearer load-{k}"}
    base = url.removesuffix("/v1")
    tools = (await client.get(f"{base}/harnesslab/tools", headers=key)).json()["tools"]
    # The system prompt names the session, so every request of every session differs.
    msgs: list[dict[str, Any]] = [{"role": "system", "content": f"Agent of session {k}."},
                                  {"role": "user", "content": Q1}]
    out = []

    async def ask() -> dict[str, Any]:
        body = {"model": "harnesslab", "messages": list(msgs), "tools": tools}
        t0 = time.perf_counter()
        r = await client.post(f"{url}/chat/completions", headers=key, json=body)
        lat.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.text
        answer: dict[str, Any] = r.json()
        out.append((body, answer))
        return answer

    first = (await ask())["choices"][0]["message"]
    call = first["tool_calls"][0]
    msgs.append(first)
    res = await client.post(f"{base}/harnesslab/tools/{call['function']['name']}", headers=key,
                            json={"arguments": call["function"]["arguments"]})
    msgs.append({"role": "tool", "tool_call_id": call["id"], "content": res.json()["content"]})
    msgs.append((await ask())["choices"][0]["message"])
    msgs.append({"role": "user", "content": FOLLOW})
    await ask()
    return out


async def _load(url: str, n: int) -> tuple[list[Any], list[float], float]:
    lat: list[float] = []
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        t0 = time.perf_counter()
        results = await asyncio.gather(*(_session(client, url, k, lat) for k in range(n)))
        return results, lat, time.perf_counter() - t0


def _sha(body: dict[str, Any]) -> str:
    return hashlib.sha256(dumps(request_from_openai(body, session_id="S-1")).encode()).hexdigest()


def _check(tmp_path: Path, n: int) -> None:
    with serving(tmp_path / "load") as (url, serve):
        cpu = time.process_time()
        results, lat, wall = asyncio.run(asyncio.wait_for(_load(url, n), 600))
        cpu = time.process_time() - cpu
        sessions = len(serve.writers)
    assert sessions == n
    lat.sort()
    p95 = lat[max(0, round(0.95 * len(lat)) - 1)]
    print(f"\nload: {n} sessions x {TURNS} chat requests = {len(lat)} requests in {wall:.2f} s "
          f"wall: {len(lat) / wall:.1f} requests/s, p50 {lat[len(lat) // 2] * 1000:.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms; CPU {cpu / len(lat) * 1000:.1f} ms per request (server "
          "and clients in this one process; wall figures depend on the machine's load)")
    # Each key's record holds exactly its own requests, in the order it sent them ...
    records = [Record.load(p) for p in sorted((tmp_path / "load").glob("session*.jsonl"))]
    by_marker: dict[str, Record] = {}
    for rec in records:
        calls = rec.of_type("model_call")
        markers = {rec.request(c["request"]).system for c in calls}
        assert len(markers) == 1, markers  # one session's requests only
        by_marker[markers.pop()] = rec
    for k, convo in enumerate(results):
        rec = by_marker[f"Agent of session {k}."]
        calls = rec.of_type("model_call")
        assert [c["request"]["sha256"] for c in calls] == [_sha(b) for b, _ in convo]
        # ... its answers are its own calls' (numbered within the session, usage as recorded),
        assert [a["id"].rsplit("-", 1)[1] for _, a in convo] == ["1", "2", "3"]
        assert [a["usage"]["prompt_tokens"] for _, a in convo] == [c["true_input"] for c in calls]
        # ... and its tool ran for its own verified user, once.
        assert [t["acting_user"] for t in rec.of_type("tool_call")] == ["U-1"]
        assert "O-1001" in (convo[-1][1]["choices"][0]["message"]["content"] or "")
    # The answers are those a lone session gets for the same requests: nothing came from
    # another session's state. (A different session, served alone, after the load.)
    replay = results[n // 2]
    with serving(tmp_path / "alone") as (url, _), httpx.Client(timeout=60) as c:
        for body, answer in replay:
            alone = c.post(f"{url}/chat/completions", json=body,
                           headers={"Authorization": "Bearer alone"}).json()
            assert json.dumps(alone["choices"]) == json.dumps(answer["choices"])


def test_a_few_concurrent_sessions_keep_apart(tmp_path: Path) -> None:
    _check(tmp_path, 5)


@pytest.mark.slow
def test_fifty_concurrent_sessions_against_one_serve(tmp_path: Path) -> None:
    _check(tmp_path, 50)
