"""Bad input to ``harnesslab run`` and ``show``: one line naming the place at fault, exit 2,
nothing run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.scenario.loader import bundled_dir

FOLLOWUP = bundled_dir() / "followup-o1001-zh.yaml"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harnesslab.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_version() -> None:
    p = cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == "harnesslab 0.1.0"


def test_out_naming_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert one_line(cli("run", str(FOLLOWUP), "--out", str(f))) == \
        f"harnesslab run: error: {f}: --out: is a file; expected a folder for the records"


def test_out_unwritable(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = "/proc/harnesslab-out"  # root writes anywhere but /proc
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "out")
    line = one_line(cli("run", str(FOLLOWUP), "--out", target))
    assert line.startswith(f"harnesslab run: error: {target}: --out: cannot write there: ")


def test_out_holding_an_earlier_run(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{}")
    assert "--out: already holds files" in one_line(
        cli("run", str(FOLLOWUP), "--out", str(tmp_path)))


def test_each_run_gets_a_new_folder_and_latest_points_at_it(tmp_path: Path) -> None:
    for _ in range(2):
        p = cli("run", str(FOLLOWUP), "--variant", "default", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
    folders = sorted(d for d in (tmp_path / "runs").iterdir() if not d.is_symlink())
    assert len(folders) == 2
    latest = tmp_path / "runs" / "latest"
    assert latest.is_symlink() and latest.resolve() == folders[-1].resolve()
    import json

    for d in folders:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        assert summary["runs"] == 1  # exactly the runs in its folder


def test_unknown_variant(tmp_path: Path) -> None:
    line = one_line(cli("run", str(FOLLOWUP), "--variant", "nope", "--out", str(tmp_path)))
    assert line.startswith("harnesslab run: error: --variant: no variant 'nope' in the chosen "
                           "scenarios; they have: default, ")
    assert not any(tmp_path.iterdir())


def test_a_set_error_names_set_not_the_scenario(tmp_path: Path) -> None:
    assert one_line(cli("run", str(FOLLOWUP), "--set", "strategy=magic", "--out",
                        str(tmp_path))) == \
        "harnesslab run: error: --set strategy: unknown strategy 'magic'; expected one of " \
        "none, structured, truncate, freeform, offload, pinned, window, codex"


def test_the_variant_at_fault_is_named_whichever_variant_is_chosen(tmp_path: Path) -> None:
    sc = FOLLOWUP.read_text(encoding="utf-8").replace(
        "    set: {estimator: o200k_base}\n", "    set: {estimator: o200k_base, context_size: -1}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(sc, encoding="utf-8")
    want = (f"harnesslab run: error: {bad}:36: variants[1].set.context_size: in variant "
            "'estimator-o200k': Input should be greater than 0")
    assert one_line(cli("run", str(bad), "--out", str(tmp_path / "o"))) == want
    # Choosing another variant still names the one at fault (the file is invalid as a whole).
    assert one_line(cli("run", str(bad), "--variant", "default", "--out",
                        str(tmp_path / "o2"))) == want


def test_binary_scenario_file(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_bytes(b"id: x\n\x00\x01\x02")
    assert one_line(cli("run", str(f))) == (f"harnesslab run: error: {f}:2: a binary file (it "
                                            "holds NUL bytes); expected a YAML scenario")
    f.write_bytes(b"\xff\xfe\x00")
    assert one_line(cli("run", str(f))).startswith(
        f"harnesslab run: error: {f}:1: not a UTF-8 text file")


def test_duplicate_keys_and_lexicon_entries(tmp_path: Path) -> None:
    text = FOLLOWUP.read_text(encoding="utf-8")
    f = tmp_path / "dup.yaml"
    f.write_text(text.replace("locale: zh\n", "locale: zh\nlocale: en\n"), encoding="utf-8")
    line = one_line(cli("run", str(f)))
    assert "locale: duplicate key 'locale' (first at line" in line
    lex = text.index("lexicon:\n") + len("lexicon:\n")
    first_entry = text[lex:text.index("\n", text.index("\n", lex) + 1) + 1]
    f.write_text(text[:lex] + first_entry + text[lex:], encoding="utf-8")
    line = one_line(cli("run", str(f)))
    assert "duplicate lexicon entry '帮我查订单 O-1001 为什么还没到，回答简单一点。'" in line
    assert line.startswith(f"harnesslab run: error: {f}:")


def test_truncated_record_says_so(tmp_path: Path) -> None:
    assert cli("run", str(FOLLOWUP), "--variant", "default", "--out",
               str(tmp_path / "o")).returncode == 0
    rec = tmp_path / "o" / "followup-o1001-zh" / "default" / "seed0.jsonl"
    cut = tmp_path / "cut.jsonl"
    data = rec.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    n = data[:len(data) // 2].count(b"\n") + 1
    assert one_line(cli("show", str(cut))) == (
        f"harnesslab show: error: {cut}:{n}: truncated record: the last line is incomplete (the "
        "run was stopped while writing it); every line before it is intact")


@pytest.mark.parametrize("budget", ["29000", "40000"])
def test_a_codex_budget_at_or_above_its_limit_is_refused(tmp_path: Path, budget: str) -> None:
    # 0.9 x 32768 = 29491.2: the kept user messages alone would trigger compaction again.
    line = one_line(cli("run", str(FOLLOWUP), "--set", "strategy=codex", "--set",
                        f"codex.user_message_budget={int(budget) + 500}", "--out", str(tmp_path)))
    assert line == ("harnesslab run: error: --set: codex.user_message_budget "
                    f"({int(budget) + 500}) must be below the compaction limit (29491.2)")


# --- issue 22: every case a new user met, pinned ----------------------------------------------

SWEEP = ["sweep", "--scenario", "followup-o1001-zh", "--variant", "default", "--executor",
         "serial", "--no-report"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-run sweep folder (copied by each test that damages it)."""
    out = tmp_path_factory.mktemp("swept") / "sw"
    p = cli(*SWEEP, "--grid", "strategy=structured", "--grid", "strategy=truncate",
            "--out", str(out))
    assert p.returncode == 0, p.stderr
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_run_takes_a_bundled_scenario_id(tmp_path: Path) -> None:
    p = cli("run", "followup-o1001-zh", "--variant", "default", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o" / "followup-o1001-zh" / "default" / "seed0.jsonl").is_file()
    assert one_line(cli("run", "no-such-scenario")) == (
        "harnesslab run: error: no-such-scenario: no such file or folder, nor a bundled "
        "scenario id")


def test_sweep_out_naming_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert one_line(cli(*SWEEP, "--out", str(f))) == \
        f"harnesslab sweep: error: {f}: --out: is a file; expected a folder"


def test_sweep_reports_naming_a_file_is_refused_before_anything_runs(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    out = tmp_path / "sw"
    sweep = [a for a in SWEEP if a != "--no-report"]
    assert one_line(cli(*sweep, "--out", str(out), "--reports", str(f))) == \
        f"harnesslab sweep: error: {f}: --reports: is a file; expected a folder"
    assert one_line(cli(*sweep, "--out", str(out), "--report-out", str(f / "r"))) == \
        f"harnesslab sweep: error: {f / 'r'}: --report-out: {f} is a file; expected a folder"
    assert not out.exists()  # nothing ran


def test_a_scenario_given_as_the_sweep_file(tmp_path: Path) -> None:
    assert one_line(cli("sweep", str(FOLLOWUP), "--out", str(tmp_path / "sw"))) == (
        f"harnesslab sweep: error: {FOLLOWUP}:1: a scenario file, not a sweep file: give it as "
        f"--scenario {FOLLOWUP} (a sweep file holds scenarios, variants, seeds, set, grid)")


def test_a_bundled_id_given_as_the_sweep_file(tmp_path: Path) -> None:
    assert one_line(cli("sweep", "followup-o1001-zh", "--out", str(tmp_path / "sw"))) == (
        "harnesslab sweep: error: followup-o1001-zh: a bundled scenario id, not a sweep file: "
        "give it as --scenario followup-o1001-zh (a sweep file holds scenarios, variants, seeds, "
        "set, grid)")
    # The control: a name that is neither stays a file that cannot be read.
    assert one_line(cli("sweep", "no-such-sweep", "--out", str(tmp_path / "sw"))) == (
        "harnesslab sweep: error: no-such-sweep: cannot read: No such file or directory")
    assert not (tmp_path / "sw").exists()


def test_a_repeated_grid_key_sweeps_the_union_of_its_values(swept: Path) -> None:
    from harnesslab.sweep.spec import parse_grid

    assert parse_grid(["strategy=structured", "strategy=truncate,structured",
                       "trigger_ratio=0.6"]) == {"strategy": ["structured", "truncate"],
                                                  "trigger_ratio": [0.6]}
    import pandas as pd

    table = pd.read_parquet(swept / "sweep.parquet")
    assert sorted(table["set.strategy"]) == ["structured", "truncate"]


def test_progress_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    p = cli(*SWEEP, "--grid", "strategy=structured", "--out", str(tmp_path / "sw"))
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == ["sweep: 1 to run, 0 already done",
                                     p.stderr.splitlines()[1]]
    assert p.stderr.splitlines()[1].startswith("sweep: 1/1 runs (100%), 0 with an error, ")


@pytest.mark.parametrize(("executor", "seeds"), [("serial", 12), ("processes", 40)])
def test_ctrl_c_writes_the_table_of_finished_runs_and_says_how_to_resume(
        tmp_path: Path, executor: str, seeds: int) -> None:
    import signal

    out = tmp_path / "sw"
    argv = ["sweep", "--scenario", "brevity-30-turns-zh", "--variant", "default", "--executor",
            executor, "--no-report", "--grid", "strategy=structured", "--seeds", str(seeds),
            "--out", str(out)]
    # Ctrl-C as a terminal sends it: to the bench's whole process group (the bench and its
    # worker processes alike), with the default handler even when these tests were started in
    # the background (where the shell leaves SIGINT ignored, and so would the child).
    proc = subprocess.Popen([sys.executable, "-m", "harnesslab.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    err = [proc.stderr.readline()]  # "N to run"
    err.append(proc.stderr.readline())  # the first progress line: runs have finished
    assert err[1].startswith("sweep: ") and f"/{seeds} runs" in err[1], err
    os.killpg(proc.pid, signal.SIGINT)
    stdout, rest = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, rest)
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest
    last = rest.strip().splitlines()[-1]
    assert last.startswith("harnesslab sweep: interrupted: ") and \
        last.endswith("to resume, run the same command again (finished runs are skipped)")
    import pandas as pd

    kept = len(pd.read_parquet(out / "sweep.parquet"))
    assert 1 <= kept < seeds and f"{kept} of {seeds} runs finished" in last
    again = cli(*argv)
    assert again.returncode == 0, again.stderr
    assert f"{seeds} runs: {seeds - kept} run now, {kept} already done" in again.stdout


@pytest.mark.parametrize("cut", ["line-end", "mid-line"])
def test_a_record_cut_inside_a_sweep_folder_is_done_again(swept: Path, tmp_path: Path,
                                                         cut: str) -> None:
    out = _copy(swept, tmp_path / "sw")
    rec = sorted(out.glob("records/*/*/*/seed0.jsonl"))[0]
    data = rec.read_bytes()
    lines = data.splitlines(keepends=True)
    rec.write_bytes(b"".join(lines[:-1]) if cut == "line-end" else data[:-40])
    p = cli(*SWEEP, "--grid", "strategy=structured", "--grid", "strategy=truncate",
            "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "2 runs: 1 run now, 1 already done, 1 done again (their records were not whole)" \
        in p.stdout
    assert rec.read_bytes() == data  # the same run, the same record
    from harnesslab.sweep.rows import RowsFile

    assert len(RowsFile(out).rows()) == 2
    # And the report, which failed on the cut record before, reads the redone one.
    assert cli("report", str(out), "--reports", str(tmp_path / "r")).returncode == 0


def test_a_corrupt_sweep_table(swept: Path, tmp_path: Path) -> None:
    out = _copy(swept, tmp_path / "sw")
    (out / "sweep.parquet").write_bytes(b"PAR1 not really")
    line = one_line(cli("report", str(out), "--reports", str(tmp_path / "r")))
    assert line.startswith(f"harnesslab report: error: {out / 'sweep.parquet'}: not a readable "
                           "sweep table (")
    assert line.endswith("it is rebuilt from rows.jsonl by running the same harnesslab sweep "
                         "again (finished runs are skipped)")


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rec") / "o"
    assert cli("run", str(FOLLOWUP), "--variant", "default", "--out", str(out)).returncode == 0
    return out / "followup-o1001-zh" / "default" / "seed0.jsonl"


def test_show_of_a_record_cut_at_a_line_end(record: Path, tmp_path: Path) -> None:
    lines = record.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:len(lines) // 2]))
    assert one_line(cli("show", str(cut))) == (
        f"harnesslab show: error: {cut}:{len(lines) // 2}: truncated record: it ends without the "
        "run's result or error (the run was stopped before it finished); every line is intact")
    assert cli("show", str(record)).returncode == 0  # the control: the whole record


def test_show_of_a_record_cut_inside_a_utf8_character(record: Path, tmp_path: Path) -> None:
    data = record.read_bytes()
    at = data.index("帮".encode()) + 1  # inside the character's three bytes
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[:at])
    n = data[:at].count(b"\n") + 1
    assert one_line(cli("show", str(cut))) == (
        f"harnesslab show: error: {cut}:{n}: truncated record: the "
        "last line is incomplete (the run was stopped while writing it); every line before it "
        "is intact")


# --- sessions on a damaged store: one line, exit 2, no file rewritten ---------------------------

@pytest.fixture(scope="module")
def store_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harnesslab.run.runner import run_scenario_file

    out = tmp_path_factory.mktemp("store")
    (r,) = run_scenario_file(bundled_dir() / "alternate-instances-zh.yaml", out_dir=out,
                             variants=["default"])
    assert r.record is not None and r.all_passed
    return r.record.with_suffix(".work")


def _files(root: Path) -> dict[str, bytes]:
    # Less SQLite's -shm: the readers' shared-memory index of the WAL, no content of the store.
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith("-shm")}


@pytest.mark.parametrize("action", ["list", "show", "resume"])
def test_sessions_on_a_torn_sqlite_page(store_work: Path, tmp_path: Path, action: str) -> None:
    work = _copy(store_work, tmp_path / "w")
    db = work / "store" / "sessions.sqlite"
    import sqlite3

    conn = sqlite3.connect(db)  # the index's pages into the main file, as a closed writer leaves
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    assert len(data) >= 3 * 4096
    data[4096:8192] = b"\xa5" * 4096  # the sessions table's page
    db.write_bytes(bytes(data))
    before = _files(work)
    line = one_line(cli("sessions", action, str(work), *(["S-1"] if action != "list" else [])))
    assert line.startswith(f"harnesslab sessions: error: {db}: not a readable SQLite database (")
    assert line.endswith("left as it is (the rollouts under rollouts/ are the sessions' record)")
    assert _files(work) == before


@pytest.mark.parametrize("action", ["list", "show", "resume"])
def test_sessions_on_a_zero_byte_sqlite_file(store_work: Path, tmp_path: Path,
                                            action: str) -> None:
    work = _copy(store_work, tmp_path / "w")
    db = work / "store" / "sessions.sqlite"
    db.write_bytes(b"")
    before = _files(work)
    assert one_line(cli("sessions", action, str(work),
                        *(["S-1"] if action != "list" else []))) == (
        f"harnesslab sessions: error: {db}: an empty file (0 bytes), not an SQLite database; "
        "left as it is (the rollouts under rollouts/ are the sessions' record)")
    assert _files(work) == before and db.stat().st_size == 0


@pytest.mark.parametrize("action", ["list", "show", "resume"])
def test_sessions_on_an_emptied_rollout(store_work: Path, tmp_path: Path, action: str) -> None:
    work = _copy(store_work, tmp_path / "w")
    rollout = work / "store" / "rollouts" / "S-1.jsonl"
    rollout.write_bytes(b"")
    before = _files(work)
    assert one_line(cli("sessions", action, str(work),
                        *(["S-1"] if action != "list" else []))) == (
        f"harnesslab sessions: error: {rollout}: session S-1: sessions.sqlite says rev 4 (4 "
        "turns, 0 compactions), the rollout replays to rev 0 (0 turns, 0 compactions): the "
        "rollout lost revisions it had (it is damaged); nothing shown or resumed from it, and "
        "it is left as it is")
    assert _files(work) == before


def _index_edited(store_work: Path, tmp_path: Path, sql: str) -> Path:
    """A copy of the store whose metadata index had ``sql`` done to it."""
    import sqlite3

    work = _copy(store_work, tmp_path / "w")
    conn = sqlite3.connect(work / "store" / "sessions.sqlite")
    conn.execute(sql)
    conn.commit()
    conn.close()
    return work


def test_sessions_when_sqlite_lags_the_rollout_say_so_and_use_the_rollout(
        store_work: Path, tmp_path: Path) -> None:
    # What a SIGKILL between the rollout's fsync and the index update leaves.
    work = _index_edited(store_work, tmp_path, "UPDATE sessions SET rev = 3, turns = 3 "
                         "WHERE id = 'S-1'")
    before = _files(work)
    note = ("harnesslab sessions: note: session S-1: sessions.sqlite says rev 3 (3 turns, 0 "
            "compactions), the rollout replays to rev 4 (4 turns, 0 compactions); using the "
            "rollout (sessions.sqlite lags it, as after a writer was killed between the two)")
    for action in ("list", "show", "resume"):
        p = cli("sessions", action, str(work), *(["S-1"] if action != "list" else []))
        assert p.returncode == 0, p.stderr
        assert p.stderr.strip() == note
    assert "resumed S-1 (user U-1) at rev 4, 4 turns" in p.stdout
    assert "integrity: ok; sessions.sqlite lags the rollout (rev 3 against 4): resumed from " \
        "the rollout" in p.stdout
    listed = cli("sessions", "list", str(work)).stdout.splitlines()[1].split()
    assert listed[4] == "4" and listed[6] == "4"  # turns and rev as the rollout has them
    assert _files(work) == before
    # The control: an index that agrees says nothing.
    assert cli("sessions", "resume", str(store_work), "S-1").stderr == ""


def test_sessions_whose_index_has_no_row_yet_are_found_from_the_rollout(
        store_work: Path, tmp_path: Path) -> None:
    # What a SIGKILL between the first rollout line and the index's insert leaves.
    work = _index_edited(store_work, tmp_path, "DELETE FROM sessions WHERE id = 'S-1'")
    before = _files(work)
    note = ("harnesslab sessions: note: session S-1: sessions.sqlite says rev 0 (0 turns, 0 "
            "compactions), the rollout replays to rev 4 (4 turns, 0 compactions); using the "
            "rollout (sessions.sqlite lags it, as after a writer was killed between the two)")
    for action in ("list", "show", "resume"):
        p = cli("sessions", action, str(work), *(["S-1"] if action != "list" else []))
        assert p.returncode == 0, p.stderr
        assert p.stderr.strip() == note, action
    assert "resumed S-1 (user U-1) at rev 4, 4 turns" in p.stdout
    listed = cli("sessions", "list", str(work)).stdout.splitlines()[1].split()
    assert listed[:2] == ["S-1", "U-1"] and listed[4] == "4" and listed[6] == "4"
    assert _files(work) == before
    # The control: a rollout that is gone too leaves no session to find.
    (work / "store" / "rollouts" / "S-1.jsonl").unlink()
    assert one_line(cli("sessions", "show", str(work), "S-1")).endswith(
        "SESSION: no session 'S-1'; the store has: none")


# --- mcp --record keeps every tool call on SIGTERM ---------------------------------------------

def test_mcp_record_keeps_every_call_on_sigterm(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import asyncio
    import json
    import signal

    from tests.wire.test_mcp_server import SPOOF, _list_and_call, http_client

    record = tmp_path / "tools.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "harnesslab.cli", "mcp", str(SPOOF),
                             "--record", str(record)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        env = dict(proc.stdout.readline().strip().split("=", 1) for _ in range(2))
        asyncio.run(_list_and_call(http_client(env["HARNESSLAB_MCP_URL"],
                                               env["HARNESSLAB_MCP_TOKEN"]),
                                   [("get_user_profile", {})] * 8))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    events = [json.loads(x) for x in record.read_text(encoding="utf-8").splitlines()]
    assert sum(e["type"] == "tool_call" for e in events) == 8
    assert cli("show", str(record)).returncode == 0  # a live record: no result, not truncated
