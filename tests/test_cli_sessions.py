"""``harnesslab sessions list|show|resume STORE_DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.run.runner import run_scenario_file
from harnesslab.scenario.loader import bundled_dir


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sessions")
    (r,) = run_scenario_file(bundled_dir() / "alternate-instances-zh.yaml", out_dir=out,
                             variants=["default"])
    assert r.record is not None and r.all_passed
    return r.record.with_suffix(".work")


def test_list_shows_each_session_with_its_metadata(work: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "list", str(work)]) == 0
    head, row = capsys.readouterr().out.splitlines()
    assert head.split()[:4] == ["session", "user", "created", "updated"]
    # four turns, written at the world's time (the clock door), never the wall clock
    assert row.split()[:7] == ["S-1", "U-1", "2026-11-28T10:00:00+08:00",
                               "2026-11-28T10:00:00+08:00", "4", "0", "4"]
    assert main(["sessions", "list", str(work / "store"), "--json"]) == 0
    (meta,) = json.loads(capsys.readouterr().out)
    assert (meta["id"], meta["turns"], meta["rollout"]) == ("S-1", 4, "rollouts/S-1.jsonl")


def test_show_prints_the_rollout_and_the_state_it_replays_to(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "show", str(work), "S-1"]) == 0
    out = capsys.readouterr().out
    assert out.count(" turn ") == 4
    assert "context (8 messages):" in out and "user: 它什么时候到？" in out
    assert main(["sessions", "show", str(work), "S-1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [x["rev"] for x in data["rollout"]] == [1, 2, 3, 4]
    # each line appends to what the one before kept: the last one holds nothing twice
    assert [x["keep"] for x in data["rollout"]] == [0, 2, 4, 6]


def test_resume_restores_the_session_on_a_fresh_instance(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "resume", str(work), "S-1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("resumed S-1 (user U-1) at rev 4, 4 turns: 8 messages")
    assert "integrity: ok" in out and "fidelity: the restored state equals" in out


def test_resume_of_a_damaged_store_fails(work: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    copy = tmp_path / "w"
    shutil.copytree(work, copy)
    with (copy / "store" / "rollouts" / "S-1.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"rev": 5, "kind"\n')
    assert main(["sessions", "resume", str(copy), "S-1"]) == 1
    assert capsys.readouterr().out.startswith("cannot resume S-1: integrity: S-1.jsonl:5: ")
    assert main(["sessions", "show", str(copy), "S-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harnesslab sessions: error: {copy}/store/rollouts/S-1.jsonl:5: "
                          "not a JSON rollout line (Expecting ':' delimiter")


@pytest.mark.parametrize(("argv", "message"), [
    (["sessions", "resume", "{work}", "S-9"],
     "harnesslab sessions: error: {work}/store: SESSION: no session 'S-9'; the store has: S-1"),
    (["sessions", "show", "{work}"],
     "harnesslab sessions: error: SESSION: sessions show needs a SESSION id"),
    (["sessions", "list", "{tmp}"],
     "harnesslab sessions: error: {tmp}: not a session store: no sessions.sqlite here or in "
     "store/"),
])
def test_bad_input_is_one_line_and_exit_2(work: Path, tmp_path: Path, argv: list[str],
                                          message: str, capsys: pytest.CaptureFixture[str]) -> None:
    fill = {"work": str(work), "tmp": str(tmp_path)}
    assert main([a.format(**fill) for a in argv]) == 2
    assert capsys.readouterr().err == message.format(**fill) + "\n"
    assert not (tmp_path / "store").exists()  # reading never creates a store


def test_resume_needs_the_strategy_the_session_was_served_with(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (r,) = run_scenario_file(bundled_dir() / "restart-after-compaction-zh.yaml", out_dir=tmp_path,
                             variants=["pinned"])
    assert r.record is not None and r.all_passed
    work = str(r.record.with_suffix(".work"))
    # Into the default strategy the pinned board does not come back, and resume says so.
    assert main(["sessions", "resume", work, "S-1"]) == 1
    assert "differs from the rollout's in strategy" in capsys.readouterr().out
    assert main(["sessions", "resume", work, "S-1", "--set", "strategy=pinned"]) == 0
    assert "fidelity: the restored state equals" in capsys.readouterr().out
    assert main(["sessions", "resume", work, "S-1", "--set", "strategy=nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err
