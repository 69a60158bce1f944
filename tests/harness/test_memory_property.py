"""Property: over random interleavings of users, sessions, restarts (fresh instances on a
session), clock advances and memory writes, no request ever contains another user's memory
or private data."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnesslab.harness.agent import ReferenceHarness
from tests.harness import memory_support as ms
from tests.harness.memory_support import PRIVATE, Deployment

UTTERANCES = (ms.SHORT, ms.WHERE_1, ms.WHERE_2, ms.WAIT, ms.ADDRESS, ms.LISI, ms.OWN, ms.RETURNS)
USERS = ("U-1", "U-2")

op = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(USERS), st.integers(0, 2),
              st.sampled_from(UTTERANCES)),
    st.tuples(st.just("restart"), st.sampled_from(USERS), st.integers(0, 2), st.just("")),
    st.tuples(st.just("advance"), st.sampled_from(USERS), st.sampled_from((1, 13, 25)),
              st.just("")),
)


def _items_by_user(d: Deployment) -> dict[str, set[str]]:
    """Every item the model gave in an extraction, under the verified user who asked."""
    out: dict[str, set[str]] = {u: set() for u in USERS}
    for e in d.calls("memory"):
        user = d.users[e["request"].session_id]
        for b in e["reply"]:
            for v in json.loads(getattr(b, "input", "{}") or "{}").values():
                out[user].update(ln.strip() for ln in v.splitlines() if ln.strip())
    return out


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mode=st.sampled_from(("vector", "workspace", "background", "agentic")),
       position=st.sampled_from(("start", "before_question")),
       ops=st.lists(op, min_size=1, max_size=14))
def test_no_request_ever_contains_another_users_memory(
        mode: str, position: str, ops: list[tuple[str, str, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Deployment(Path(tmp), {"memory": {"mode": mode, "position": position}})
        live: dict[str, ReferenceHarness] = {}
        for kind, user, n, text in ops:
            if kind == "advance":
                d.advance(n)
                continue
            sid = f"s-{user}-{n}"
            if kind == "restart" or sid not in live:
                live[sid] = d.open(sid, user)
            if kind == "turn":
                live[sid].turn(text)
        assert _violations(d) == []


def _violations(d: Deployment) -> list[tuple[str, str, str]]:
    """(user, purpose, what) for every request that shows another user's memory item or
    private value, and every reported read of another user's items."""
    items = _items_by_user(d)
    out = []
    for user, purpose, text in d.requests():
        others = {i for u, its in items.items() if u != user for i in its} - items[user]
        out += [(user, purpose, i) for i in others if i in text]
        out += [(user, purpose, v) for other, values in PRIVATE.items() if other != user
                for v in values if v in text]
    out += [(r["user"], "memory_read", i["user"]) for r in d.sink.of_type("memory_read")
            for i in r["items"] if i["user"] != r["user"]]
    return out


def test_the_property_can_fail_memory_keyed_by_the_named_user(tmp_path: Path) -> None:
    d = Deployment(tmp_path, {"memory": {"mode": "vector", "key": "named"}})
    d.open("s-2", "U-2").turn(ms.ADDRESS)
    u1 = d.open("s-1", "U-1")
    u1.turn(ms.LISI)
    u1.turn(ms.WHERE_1)
    assert ("U-1", "reply", PRIVATE["U-2"][1]) in _violations(d)
