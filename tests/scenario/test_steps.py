"""Session steps (restart, new session, switch, alternate instances, kill): their schema and
what the runner does with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harnesslab.errors import InputError
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import HarnessContext, StateUnsupported
from harnesslab.harness.config import HarnessConfig
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_scenario_file, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import Scenario

RESTART = bundled_dir() / "restart-followup-zh.yaml"
ALTERNATE = bundled_dir() / "alternate-instances-zh.yaml"
KILL = bundled_dir() / "kill-mid-turn-zh.yaml"


class Checkpointed(ReferenceHarness):
    """A harness without a store of its own: the bench's checkpointer restores it."""

    owns_store = False

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        super().__init__(context, config.model_copy(update={"persist": False}))


class Stateless(Checkpointed):
    def save_state(self) -> dict[str, Any]:
        raise StateUnsupported("Stateless keeps no state")


class LosesSummary(Checkpointed):
    def load_state(self, state: Any) -> None:
        super().load_state({**state, "ids": 0})


def _one(path: Path, variant: str, tmp_path: Path | None = None, **kw: Any) -> RunResult:
    (r,) = run_scenario_file(path, variants=[variant], out_dir=tmp_path, **kw)
    return r


def _failed(r: RunResult) -> set[str]:
    return {c.id for c in r.checks if not c.passed}


def _events(r: RunResult, kind: str) -> list[dict[str, Any]]:
    assert r.record is not None
    return Record.load(r.record).of_type(kind)


def test_restart_restores_from_the_store_and_the_session_id_control_does_not(
        tmp_path: Path) -> None:
    ok = _one(RESTART, "default", tmp_path)
    assert ok.error is None and _failed(ok) == set()
    (ev,) = _events(ok, "resume")
    assert ev["applicable"] and ev["fidelity"] and ev["harness_restores"]
    assert ok.metrics["resume_fidelity"] == {"num": 1, "den": 1, "value": 1.0}
    # The store lies beside the record, written by the harness itself.
    store = tmp_path / "restart-followup-zh" / "default" / "seed0.work" / "store"
    assert (store / "sessions.sqlite").exists() and (store / "rollouts" / "S-1.jsonl").exists()
    bad = _one(RESTART, "session-id-only", tmp_path)
    assert bad.expected
    (ev,) = _events(bad, "resume")
    assert ev["fidelity"] is False and "context" in ev["differs"]
    assert bad.metrics["resume_fidelity"]["value"] == 0.0
    assert "s3.resolves" in _failed(bad)


def test_a_harness_without_a_store_is_restored_by_the_bench_through_json() -> None:
    r = _one(RESTART, "default", harness=Checkpointed)
    assert r.error is None and _failed(r) == set()
    # the controls are the deployment's: under them the bench hands the fresh instance nothing
    for control in ("session-id-only", "no-store"):
        bad = _one(RESTART, control, harness=Checkpointed)
        assert bad.expected and "s3.resolves" in _failed(bad)
    # ... and a load_state that drops something is caught by the fidelity check.
    lossy = _one(RESTART, "default", harness=LosesSummary)
    assert _failed(lossy) == {"s2.resume_fidelity"}
    assert "differs in ids" in next(c.detail for c in lossy.checks if c.kind == "resume_fidelity")


def test_a_harness_that_cannot_save_its_state_is_not_applicable_never_a_silent_pass(
        tmp_path: Path) -> None:
    for path in (RESTART, ALTERNATE, KILL):
        r = _one(path, "default", tmp_path, harness=Stateless)
        assert r.not_applicable and not r.expected and r.checks == []
        assert r.error is not None and "the harness's state" in r.error
        assert "Stateless keeps no state" in r.error
    (ev,) = _events(r, "resume")  # the kill's: the record says why
    assert ev["applicable"] is False and ev["reason"].startswith("not applicable: Stateless")


def test_alternate_instances_keep_the_thread_through_the_store(tmp_path: Path) -> None:
    ok = _one(ALTERNATE, "default", tmp_path)
    assert ok.error is None and _failed(ok) == set()
    assert [t["instance"] for t in _events(ok, "turn")] == [0, 1, 0, 1]
    # each instance took the other's turns from the store before serving
    assert len(_events(ok, "session_restored")) == 3
    bad = _one(ALTERNATE, "session-id-only", tmp_path)
    assert bad.expected and {"s3.resolves", "s5.resolves"} <= _failed(bad)
    assert _one(ALTERNATE, "default", harness=Checkpointed).checks == [
        c for c in ok.checks]  # the bench's handoff keeps the thread the same way


def test_a_kill_loses_only_the_turn_in_flight(tmp_path: Path) -> None:
    r = _one(KILL, "default", tmp_path)
    assert r.error is None and _failed(r) == set()
    turns = _events(r, "turn")
    assert [t.get("killed") for t in turns] == [None, True, None]
    assert "killed before model call 2" in turns[1]["reason"]
    assert r.metrics["turns_lost"] == 1
    # the killed turn's tool ran in the world, but no model call after it was made
    assert turns[1]["first_call"] == turns[1]["last_call"]
    rollout = tmp_path / "kill-mid-turn-zh" / "default" / "seed0.work" / "store" / "rollouts"
    lines = (rollout / "S-1.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2  # turns 1 and 3; the killed turn left nothing


def test_a_kill_after_the_turns_last_call_kills_nothing_and_says_so(tmp_path: Path) -> None:
    sc = _edit(KILL, lambda d: d["steps"].__setitem__(1, {"kill": {"at_call": 9}}), tmp_path)
    r = run_variant(sc, sc.variants[0])
    check = next(c for c in r.checks if c.id == "s2.resume_fidelity")
    assert not check.passed and "no instance was resumed" in check.detail


def _edit(path: Path, change: Any, tmp_path: Path) -> Scenario:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    out = tmp_path / "edited.yaml"
    out.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return load_scenario(out)


def test_a_second_user_interleaved_has_its_own_instance_and_verified_identity(
        tmp_path: Path) -> None:
    def two_users(d: dict[str, Any]) -> None:
        d["world"]["users"]["U-2"] = {"name": "李四", "phone": "13900000002",
                                      "address": "北京市朝阳区建国路1号"}
        d["world"]["orders"]["O-1002"]["user"] = "U-2"
        d["steps"] = [
            {"user": "帮我查订单 O-1001 为什么还没到，回答简单一点。"},
            {"new_session": {"id": "S-2", "user": "U-2"}},
            {"user": "再帮我查一下 O-1002。"},
            {"switch": "S-1"},
            {"user": "那我明天还要等吗？", "expect": {"resolves": {"order": "O-1001"},
                                                  "no_leak": True}},
            {"new_session": {"id": "S-3"}},
            {"user": "那我明天还要等吗？"},
        ]
        d["variants"] = [{"name": "default"}]
    sc = _edit(KILL, two_users, tmp_path)
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path / "out")
    assert r.error is None and _failed(r) == set()
    turns = _events(r, "turn")
    assert [(t["session"], t["user"]) for t in turns] == [
        ("S-1", "U-1"), ("S-2", "U-2"), ("S-1", "U-1"), ("S-3", "U-1")]
    calls = _events(r, "tool_call")
    assert [(c["acting_user"], c["session_user"]) for c in calls] == [
        ("U-1", "U-1"), ("U-2", "U-2")]
    # a new session for the same user starts empty: its follow-up has nothing to refer to
    assert turns[3]["failed"]
    store = r.record.parent / "seed0.work" / "store"  # type: ignore[union-attr]
    assert sorted(p.name for p in (store / "rollouts").iterdir()) == [
        "S-1.jsonl", "S-2.jsonl", "S-3.jsonl"]


@pytest.mark.parametrize(("step", "field", "problem"), [
    ({"switch": "S-9"}, "steps[1].switch", "no open session 'S-9'; expected one of S-1"),
    ({"new_session": {"id": "S-1"}}, "steps[1].new_session.id",
     "session 'S-1' is already open; switch to it instead"),
    ({"new_session": {"id": "S-2", "user": "U-7"}}, "steps[1].new_session.user",
     "unknown user 'U-7'; expected one of U-1"),
    ({"instances": 0}, "steps[1].instances", "greater than or equal to 1"),
    ({"restart": {"fidelty": True}}, "steps[1].restart.fidelty", "unknown field"),
    ({"reboot": True}, "steps[1]", "a step needs one of the keys user, advance, filler, "
     "restart, new_session, switch, instances, kill"),
])
def test_bad_session_steps_name_the_file_line_and_field(
        tmp_path: Path, step: dict[str, Any], field: str, problem: str) -> None:
    def put(d: dict[str, Any]) -> None:
        d["steps"][1] = step
    with pytest.raises(InputError, match=problem) as e:
        _edit(RESTART, put, tmp_path)
    assert e.value.field == field
    assert e.value.file is not None and e.value.file.endswith("edited.yaml")
    assert e.value.line is not None and e.value.line > 1


def test_a_kill_must_be_followed_by_a_user_turn(tmp_path: Path) -> None:
    def end(d: dict[str, Any]) -> None:
        d["steps"] = [*d["steps"][:1], {"kill": None}]
        d["variants"] = [{"name": "default"}]
    with pytest.raises(InputError, match="a kill applies to the next user turn") as e:
        _edit(KILL, end, tmp_path)
    assert e.value.field == "steps[1].kill"


def test_restart_and_kill_need_no_expectations_of_their_own(tmp_path: Path) -> None:
    def no_check(d: dict[str, Any]) -> None:
        d["steps"][1] = {"restart": {"fidelity": False}}
        d["variants"] = [{"name": "default"}]
    sc = _edit(RESTART, no_check, tmp_path)
    r = run_variant(sc, sc.variants[0])
    assert all(c.kind != "resume_fidelity" for c in r.checks)


def test_the_same_run_writes_the_same_record_and_store_byte_for_byte(tmp_path: Path) -> None:
    a = _one(KILL, "default", tmp_path / "a")
    b = _one(KILL, "default", tmp_path / "b")
    assert a.record is not None and b.record is not None
    assert a.record.read_bytes() == b.record.read_bytes()
    rollout = Path("store") / "rollouts" / "S-1.jsonl"
    assert (a.record.with_suffix(".work") / rollout).read_bytes() == \
        (b.record.with_suffix(".work") / rollout).read_bytes()
    # a rerun into the same folder starts from an empty store, not from the last run's
    again = _one(KILL, "default", tmp_path / "a")
    assert again.record is not None and again.record.read_bytes() == a.record.read_bytes()


def test_fewer_instances_keep_the_one_with_the_latest_state(tmp_path: Path) -> None:
    def shrink(d: dict[str, Any]) -> None:
        # O-1001 by the first instance, O-1002 by the second; one instance left: "it" is O-1002
        d["steps"] = [{"instances": 3}, d["steps"][1], d["steps"][3], {"instances": 1},
                      d["steps"][4]]
        d["variants"] = [{"name": "default"}]
    sc = _edit(ALTERNATE, shrink, tmp_path)
    for n, harness in enumerate(("reference", "tests.scenario.test_steps:Checkpointed")):
        r = run_variant(sc, sc.variants[0], cli_set={"harness": harness},
                        out_dir=tmp_path / str(n))
        assert r.error is None and _failed(r) == set(), (harness, r.checks)
        assert [t["instance"] for t in _events(r, "turn")] == [0, 1, 0]


def test_a_scenario_without_session_steps_writes_no_store(tmp_path: Path) -> None:
    r = _one(bundled_dir() / "followup-o1001-zh.yaml", "default", tmp_path)
    assert r.all_passed and "resume_fidelity" not in r.metrics
    assert [p.name for p in tmp_path.rglob("*") if p.name in ("store", "sessions.sqlite")
            or p.suffix == ".work"] == []


def test_persist_on_any_scenario_gives_each_run_a_store_of_its_own(tmp_path: Path) -> None:
    results = run_scenario_file(bundled_dir() / "followup-o1001-zh.yaml", seeds=[0, 1],
                                variants=["default"], out_dir=tmp_path,
                                cli_set={"persist": True})
    for r in results:
        assert r.all_passed and _events(r, "session_restored") == []
        assert r.record is not None
        assert (r.record.with_suffix(".work") / "store" / "rollouts" / "S-1.jsonl").exists()


def test_show_tells_the_session_steps(tmp_path: Path) -> None:
    from harnesslab.record.show import show_overview

    r = _one(KILL, "session-id-only", tmp_path)
    assert r.record is not None
    text = show_overview(Record.load(r.record))
    assert "  kill (step 2): S-1 resumed on a fresh instance, fidelity differs in context" in text
    ok = _one(ALTERNATE, "default", tmp_path)
    assert ok.record is not None
    assert "step 1: S-1 served by 2 instances\n" in show_overview(Record.load(ok.record))
