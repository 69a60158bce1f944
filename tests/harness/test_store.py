"""The session store: rollout lines, metadata, part lines, ids as file names; and the property
that a session restores to exactly the state it saved, over random interleavings of users,
sessions, restarts, alternate instances and kills."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnesslab.harness.store import SessionStore, integrity_problems, rollout_name
from harnesslab.record.format import Record
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import Scenario

T0 = datetime(2026, 11, 28, 10, tzinfo=timezone(timedelta(hours=8)))


def _state(context: list[Any], summary: str = "") -> dict[str, Any]:
    return {"version": 1, "summary": summary, "ids": len(context), "context": context,
            "strategy": {"board": ["x"]}}


def test_lines_append_to_the_kept_prefix_and_a_rewrite_stores_the_whole_context(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    a, b, c = {"role": "user", "n": 1}, {"role": "assistant", "n": 2}, {"role": "user", "n": 3}
    store.append("S-1", "U-1", _state([a, b]), kind="turn", now=T0, compactions=0)
    store.append("S-1", "U-1", _state([a, b, c]), kind="turn", now=T0, compactions=0)
    store.append("S-1", "U-1", _state([c], "sum"), kind="preload", now=T0 + timedelta(hours=1),
                 compactions=1)
    lines = store.rollout("S-1")
    assert [(x["keep"], len(x["append"])) for x in lines] == [(0, 2), (2, 1), (0, 1)]
    fresh = SessionStore(tmp_path / "store").load("S-1")
    assert fresh is not None
    assert (fresh.rev, fresh.turns, fresh.compactions) == (3, 2, 1)
    assert fresh.state == _state([c], "sum")
    (meta,) = store.sessions()
    assert (meta.user, meta.created, meta.updated, meta.turns, meta.last_summary) == (
        "U-1", T0.isoformat(), (T0 + timedelta(hours=1)).isoformat(), 2, "sum")
    assert integrity_problems(tmp_path / "store") == []


def test_two_store_objects_see_each_others_lines(tmp_path: Path) -> None:
    one, two = SessionStore(tmp_path), SessionStore(tmp_path)
    one.append("S-1", "U-1", _state([1]), kind="turn", now=T0, compactions=0)
    two.append("S-1", "U-1", _state([1, 2]), kind="turn", now=T0, compactions=0)
    one.append("S-1", "U-1", _state([1, 2, 3]), kind="turn", now=T0, compactions=0)
    assert [x["keep"] for x in one.rollout("S-1")] == [0, 1, 2]
    saved = two.load("S-1")
    assert saved is not None and saved.state["context"] == [1, 2, 3] and saved.rev == 3


def test_a_part_line_is_no_change_and_the_next_write_replaces_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.append("S-1", "U-1", _state([1]), kind="turn", now=T0, compactions=0)
    with store.rollout_path("S-1").open("ab") as f:
        f.write(b'{"rev": 2, "kind": "tu')  # a writer killed in mid-write
    assert integrity_problems(tmp_path) == ["S-1.jsonl:2: a part line (no newline)"]
    fresh = SessionStore(tmp_path)
    saved = fresh.load("S-1")
    assert saved is not None and saved.rev == 1
    fresh.append("S-1", "U-1", _state([1, 2]), kind="turn", now=T0, compactions=0)
    assert integrity_problems(tmp_path) == []
    assert [x["rev"] for x in fresh.rollout("S-1")] == [1, 2]


def test_a_session_id_never_becomes_a_path() -> None:
    assert rollout_name("S-1") == "S-1.jsonl"
    for bad in ("../x", "/etc/passwd", "..", "a/b", "", "x" * 200):
        name = rollout_name(bad)
        assert name.startswith("s-") and "/" not in name and name.endswith(".jsonl")


# --- the property, through the runner ---------------------------------------------------------

BASE = load_scenario(bundled_dir() / "kill-mid-turn-zh.yaml")
UTTERANCES = list(BASE.lexicon)
OPS = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(UTTERANCES)),
    st.tuples(st.just("restart"), st.none()),
    st.tuples(st.just("new_session"), st.sampled_from([None, "U-2"])),
    st.tuples(st.just("switch"), st.integers(0, 5)),
    st.tuples(st.just("instances"), st.integers(1, 3)),
    st.tuples(st.just("kill"), st.integers(1, 3)),
    st.tuples(st.just("advance"), st.sampled_from(["2h", "1d"])),
    st.tuples(st.just("filler"), st.sampled_from([0.5, 1.5])),
)


def _scenario(ops: list[tuple[str, Any]], harness: dict[str, Any] | None = None) -> Scenario:
    data = BASE.model_dump(mode="json", exclude_defaults=True)
    data["harness"] = harness or {}
    data["world"]["users"]["U-2"] = {"name": "李四", "phone": "13900000002",
                                     "address": "北京市朝阳区建国路1号"}
    data["world"]["orders"]["O-1002"]["user"] = "U-2"
    steps: list[dict[str, Any]] = []
    sessions = ["S-1"]
    for kind, arg in ops:
        if kind == "user":
            steps.append({"user": arg})
        elif kind == "restart":
            steps.append({"restart": {}})
        elif kind == "new_session":
            sessions.append(f"S-{len(sessions) + 1}")
            steps.append({"new_session": {"id": sessions[-1], **({"user": arg} if arg else {})}})
        elif kind == "switch":
            steps.append({"switch": sessions[arg % len(sessions)]})
        elif kind == "instances":
            steps.append({"instances": arg})
        elif kind == "kill":
            steps += [{"kill": {"at_call": arg}}, {"user": UTTERANCES[arg % len(UTTERANCES)]}]
        elif kind == "filler":
            steps.append({"filler": {"times_trigger": arg}})
        else:
            steps.append({"advance": arg})
    # End by restarting every session: its last state must come back too.
    for sid in sessions:
        steps += [{"switch": sid}, {"restart": {}}]
    data["steps"] = steps
    data["variants"] = [{"name": "default"}]
    return Scenario.model_validate(data)


# A small window compacts after filler or a few turns, so summaries, pinned boards and Codex's
# usage counters are part of what must come back.
HARNESS = st.sampled_from([{"context_size": 2048}, {"context_size": 2048, "strategy": "pinned"},
                           {"context_size": 2048, "strategy": "codex"},
                           {"context_size": 2048, "strategy": "structured"}])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=12), HARNESS)
def test_restore_of_save_is_the_state_over_random_interleavings(
        ops: list[tuple[str, Any]], harness: dict[str, Any]) -> None:
    sc = _scenario(ops, harness)
    r = run_variant(sc, sc.variants[0])
    assert r.error is None
    assert r.record is None
    resumes = [c for c in r.checks if c.kind == "resume_fidelity"]
    restarts = sum(1 for s in sc.steps if getattr(s, "restart", None) is not None)
    kills = [c for c in resumes if "no instance was resumed" in c.detail]
    # every restart, and every kill that came before a model call, restored exactly
    assert all(c.passed for c in resumes if c not in kills), [c.detail for c in resumes]
    assert len(resumes) >= restarts
    assert r.metrics["resume_fidelity"]["num"] == r.metrics["resume_fidelity"]["den"] > 0


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=10))
def test_every_turn_is_served_for_its_own_sessions_verified_user(tmp_path_factory: Any,
                                                                 ops: list[tuple[str, Any]]
                                                                 ) -> None:
    sc = _scenario(ops)
    out = tmp_path_factory.mktemp("interleave")
    r = run_variant(sc, sc.variants[0], out_dir=out)
    assert r.record is not None
    rec = Record.load(r.record)
    owner, current = {"S-1": "U-1"}, "S-1"
    for s in sc.steps:
        spec = getattr(s, "new_session", None)
        if spec is not None:  # a new session without a user is the current user's
            owner[spec.id] = spec.user or owner[current]
        current = spec.id if spec is not None else getattr(s, "switch", None) or current
    for t in rec.of_type("turn"):
        assert t["user"] == owner[t["session"]]
    for call in rec.of_type("tool_call"):
        assert call["acting_user"] == call["session_user"]
    store = r.record.with_suffix(".work") / "store"
    assert integrity_problems(store) == []
    rows = {m.id: m for m in SessionStore(store).sessions()}
    for sid, meta in rows.items():
        assert meta.user == owner[sid]
        lines = [json.loads(x) for x in
                 (store / meta.rollout).read_text(encoding="utf-8").splitlines()]
        assert {x["user"] for x in lines} == {owner[sid]}


def test_a_restart_after_compaction_restores_the_summary_and_the_pinned_board(
        tmp_path: Path) -> None:
    ops = [("user", UTTERANCES[0]), ("filler", 1.5), ("restart", None)]
    sc = _scenario(ops, {"context_size": 2048, "strategy": "pinned"})
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path)
    assert r.metrics["compactions"] >= 1 and r.metrics["resume_fidelity"]["value"] == 1.0
    assert r.record is not None
    saved = SessionStore(r.record.with_suffix(".work") / "store").load("S-1")
    assert saved is not None and saved.compactions == r.metrics["compactions"]
    assert saved.state["summary"] and saved.state["strategy"]["board"]
