"""Sweeps: the grid from a file or the command line, bad input in one line, run keys, rows,
resuming, failed runs as rows, and the executors giving the same table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harnesslab.cli import main
from harnesslab.errors import InputError
from harnesslab.harness.base import HarnessBase
from harnesslab.record.table import load_table
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sweep.plan import plan, run_key, run_sweep
from harnesslab.sweep.rows import ROWS, RowsFile
from harnesslab.sweep.spec import DEFAULT_GRID, SweepSpec, compose_spec, load_sweep, parse_grid

FOLLOWUP_EN = bundled_dir() / "followup-after-filler-en.yaml"


class ExplodingHarness(HarnessBase):
    """A harness whose constructor fails: the run is recorded with the reason."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("boom at start")


def small(out_seeds: tuple[int, ...] = (0,), **grid: list[object]) -> SweepSpec:
    return SweepSpec((FOLLOWUP_EN,), dict(grid or {"strategy": ["structured", "truncate"]}),
                     {}, out_seeds)


# --- the grid ---------------------------------------------------------------------------------

def test_parse_grid_reads_yaml_values() -> None:
    grid = parse_grid(["trigger_ratio=0.5,0.6", "strategy=pinned",
                       "summarizer={profile: lossy, swap: 1.0},{profile: faithful}"])
    assert grid == {"trigger_ratio": [0.5, 0.6], "strategy": ["pinned"],
                    "summarizer": [{"profile": "lossy", "swap": 1.0}, {"profile": "faithful"}]}


@pytest.mark.parametrize(("item", "message"), [
    ("bogus=1,2", "--grid bogus: unknown setting"),
    ("context_size=8192,big", "--grid context_size: Input should be a valid integer"),
    ("trigger_ratio=", "--grid trigger_ratio: expected a non-empty list of values"),
    ("trigger_ratio=0.6,,0.7", "--grid trigger_ratio: expected a non-empty list of values"),
    ("trigger_ratio=0.6,2.0", "--grid trigger_ratio: Input should be less than or equal to 0.9"),
    ("=1", "--grid: expected KEY=V1,V2"),
])
def test_bad_grid_on_the_command_line_is_one_line_exit_2(
        item: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--scenario", str(FOLLOWUP_EN), "--grid", item, "--out",
                 str(tmp_path / "s"), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("harnesslab sweep: error: ")
    assert message in err
    assert not (tmp_path / "s").exists()  # nothing ran


SWEEP_FILE = """\
scenarios: [{scenario}]
seeds: 2
grid:
  strategy: [structured, truncate]
  trigger_ratio: [0.6, {ratio}]
{extra}"""


@pytest.mark.parametrize(("ratio", "extra", "where", "message"), [
    ("1.5", "", ":5: grid.trigger_ratio[1]: Input should be less than or equal to 0.9", None),
    ("0.7", "  bogus: [1, 2]\n", ":6: grid.bogus", "unknown setting"),
    ("0.7", "  context_size: []\n", ":6: grid.context_size", "expected a non-empty list"),
    ("0.7", "  context_size: 8192\n", ":6: grid.context_size", "expected a non-empty list"),
    ("0.7", "  context_size: [8192, lots]\n", ":6: grid.context_size[1]",
     "Input should be a valid integer"),
    ("0.7", "set: {estimator: nope}\n", ":6: set.estimator", "estimator"),
    ("0.7", "sets: {}\n", ":6: sets", "unknown field"),
])
def test_bad_sweep_file_is_one_line_naming_file_line_field(
        tmp_path: Path, ratio: str, extra: str, where: str, message: str | None,
        capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "sweep.yaml"
    f.write_text(SWEEP_FILE.format(scenario=FOLLOWUP_EN, ratio=ratio, extra=extra),
                 encoding="utf-8")
    code = main(["sweep", str(f), "--out", str(tmp_path / "s"), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"{f}{where}" in err
    if message:
        assert message in err


def test_sweep_file_seeds_and_bundled_ids(tmp_path: Path) -> None:
    f = tmp_path / "sweep.yaml"
    f.write_text("scenarios: [followup-after-filler-en]\nvariants: [default]\nseeds: [3, 5]\n"
                 "set: {reserve_ratio: 0.2}\ngrid: {strategy: [pinned, truncate]}\n",
                 encoding="utf-8")
    spec = load_sweep(f)
    assert spec.seeds == (3, 5) and spec.scenarios == (FOLLOWUP_EN,)
    tasks = plan(spec, tmp_path / "out")
    assert len(tasks) == 4
    assert {t.settings["reserve_ratio"] for t in tasks} == {0.2}
    assert {(t.seed, t.settings["strategy"]) for t in tasks} == \
        {(s, st) for s in (3, 5) for st in ("pinned", "truncate")}


def test_default_sweep_is_at_least_3x3x3x3() -> None:
    spec = compose_spec()
    assert {k: len(v) for k, v in spec.grid.items()} == {k: 3 for k in DEFAULT_GRID}
    assert set(spec.grid) == {"strategy", "trigger_ratio", "context_size"}
    assert len(spec.seeds) >= 3
    # --grid alone sweeps the whole bundled suite over exactly what it names
    adhoc = compose_spec(grid=["trigger_ratio=0.6,0.7"], seeds=2)
    assert adhoc.grid == {"trigger_ratio": [0.6, 0.7]} and adhoc.seeds == (0, 1)
    assert len(adhoc.scenarios) == len(list(bundled_dir().glob("*.yaml")))


def test_run_key_names_scenario_file_variant_cell_and_seed() -> None:
    base = run_key("sc", "a" * 64, "default", {"strategy": "pinned", "context_size": 8192}, 0)
    assert base == run_key("sc", "a" * 64, "default", {"context_size": 8192,
                                                        "strategy": "pinned"}, 0)
    others = {run_key("sc", "b" * 64, "default", {"strategy": "pinned", "context_size": 8192}, 0),
              run_key("sc", "a" * 64, "other", {"strategy": "pinned", "context_size": 8192}, 0),
              run_key("sc", "a" * 64, "default", {"strategy": "pinned", "context_size": 4096}, 0),
              run_key("sc", "a" * 64, "default", {"strategy": "pinned", "context_size": 8192}, 1)}
    assert base not in others and len(others) == 4 and len(base) == 16


# --- running ----------------------------------------------------------------------------------

def test_a_sweep_writes_one_row_per_run_and_resumes(tmp_path: Path) -> None:
    spec = small()
    first = run_sweep(spec, tmp_path, executor="serial")
    df = load_table(tmp_path)
    variants = len(load_scenario(FOLLOWUP_EN).variants)
    assert first.runs == first.done == len(df) == 2 * variants and first.skipped == 0
    assert df["run_key"].is_unique and list(df["run_key"]) == sorted(df["run_key"])
    assert set(df["set.strategy"]) == {"structured", "truncate"}
    # the cell goes beneath the variant: truncate-small-window keeps its own strategy
    own = df[df["variant"] == "truncate-small-window"]
    assert set(own["strategy"]) == {"truncate"} and set(own["overridden"]) == {"strategy"}
    assert df[df["variant"] == "default"].set_index("set.strategy")["strategy"].to_dict() == \
        {"structured": "structured", "truncate": "truncate"}
    assert not [c for c in df.columns if "second" in c or "time" in c.split("_")]
    for rec in df["record"]:
        assert (tmp_path / rec).is_file()
    # the compared default: truncate loses the follow-up, structured keeps it
    d = df[df["variant"] == "default"].set_index("set.strategy")
    assert d.loc["structured", "followup_accuracy"] == 1.0
    assert d.loc["truncate", "followup_accuracy"] == 0.0

    again = run_sweep(spec, tmp_path, executor="serial")
    assert (again.done, again.skipped) == (0, first.runs)
    pd.testing.assert_frame_equal(load_table(tmp_path), df)
    lines = (tmp_path / ROWS).read_text(encoding="utf-8").splitlines()
    assert len(lines) == first.runs


def test_a_half_written_last_row_is_dropped_and_its_run_done_again(tmp_path: Path) -> None:
    spec = small()
    run_sweep(spec, tmp_path, executor="serial")
    whole = load_table(tmp_path)
    rows = tmp_path / ROWS
    data = rows.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    rows.write_bytes(data[:last_start + 40])  # the last line cut short, as by a kill
    again = run_sweep(spec, tmp_path, executor="serial")
    assert again.done == 1
    pd.testing.assert_frame_equal(load_table(tmp_path), whole)
    keys = [json.loads(x)["row"]["run_key"] for x in rows.read_text("utf-8").splitlines()]
    assert len(keys) == len(set(keys)) == len(whole)


def test_a_broken_line_before_the_last_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / ROWS).write_text('{"row": {"run_key": "a"}}\nnot json\n{"row": {"run_key": "b"}}\n',
                                 encoding="utf-8")
    with pytest.raises(InputError, match=r"rows.jsonl:2: not a sweep row"):
        RowsFile(tmp_path)


def test_a_failed_run_is_a_row_with_its_reason(tmp_path: Path) -> None:
    spec = SweepSpec((FOLLOWUP_EN,), {"harness": ["reference",
                                                  f"{__name__}:ExplodingHarness"]},
                     {}, (0,), ("default",))
    out = run_sweep(spec, tmp_path, executor="serial")
    df = load_table(tmp_path).set_index("set.harness")
    assert out.errors == 1 and out.runs == 2
    assert "boom at start" in df.loc[f"{__name__}:ExplodingHarness", "error"]
    assert pd.isna(df.loc["reference", "error"])
    assert df.loc["reference", "all_passed"]


def test_local_processes_give_the_serial_table(tmp_path: Path) -> None:
    spec = small(strategy=["structured", "pinned"], trigger_ratio=[0.6, 0.8])
    run_sweep(spec, tmp_path / "serial", executor="serial")
    run_sweep(spec, tmp_path / "procs", executor="processes", jobs=2)
    pd.testing.assert_frame_equal(load_table(tmp_path / "serial"), load_table(tmp_path / "procs"))


def test_csv_table_when_asked(tmp_path: Path) -> None:
    run_sweep(small(), tmp_path, executor="serial", table_format="csv")
    assert (tmp_path / "sweep.csv").exists() and not (tmp_path / "sweep.parquet").exists()
    df = load_table(tmp_path)
    assert len(df) == 2 * len(load_scenario(FOLLOWUP_EN).variants)
    assert set(df["set.strategy"]) == {"structured", "truncate"}


def test_unknown_executor_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--scenario", str(FOLLOWUP_EN), "--grid", "strategy=pinned",
                 "--executor", "threads", "--out", str(tmp_path), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "--executor: unknown executor 'threads'" in err


# --- killed half-way --------------------------------------------------------------------------

KILL_ARGS = ["--scenario", str(FOLLOWUP_EN), "--scenario", "entity-swap-o1001-o1010-zh",
             "--grid", "strategy=structured,truncate,pinned", "--grid", "trigger_ratio=0.6,0.8",
             "--seeds", "2", "--no-report"]


def _sweep_cmd(out: Path) -> list[str]:
    return [sys.executable, "-m", "harnesslab.cli", "sweep", *KILL_ARGS, "--out", str(out)]


@pytest.mark.slow
def test_sigkill_half_way_then_rerun_gives_the_uninterrupted_table(tmp_path: Path) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run(_sweep_cmd(whole), check=True, capture_output=True, timeout=900)
    total = len(load_table(whole))
    # The whole process group (the sweep and its worker processes) dies at once, mid-run.
    proc = subprocess.Popen(_sweep_cmd(killed), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = killed / ROWS
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if rows.exists() and rows.read_bytes().count(b"\n") >= total // 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = rows.read_bytes().count(b"\n")
    assert 0 < done_before < total, "the kill did not land half-way"
    rerun = subprocess.run(_sweep_cmd(killed), check=True, capture_output=True, text=True,
                           timeout=900)
    assert f"{total} runs: {total - done_before} run now, {done_before} already done" in \
        rerun.stdout
    a = load_table(whole).sort_values("run_key").reset_index(drop=True)
    b = load_table(killed).sort_values("run_key").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    keys = [json.loads(x)["row"]["run_key"] for x in rows.read_text("utf-8").splitlines()]
    assert len(keys) == len(set(keys)) == total


# --- Dask -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_dask_local_cluster_gives_the_local_processes_table(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed", reason="the dask extra: pip install "
                        "'harnesslab[dask]'")
    spec = small(strategy=["structured", "truncate", "pinned"], trigger_ratio=[0.6, 0.8])
    run_sweep(spec, tmp_path / "procs", executor="processes", jobs=2)
    out = run_sweep(spec, tmp_path / "dask", executor="dask", jobs=2)
    assert out.done == out.runs == 6 * len(load_scenario(FOLLOWUP_EN).variants)
    pd.testing.assert_frame_equal(load_table(tmp_path / "procs"), load_table(tmp_path / "dask"))


def test_dask_executor_without_the_extra_names_the_install_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    code = main(["sweep", "--scenario", str(FOLLOWUP_EN), "--grid", "strategy=pinned",
                 "--variant", "default", "--executor", "dask", "--out", str(tmp_path),
                 "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "pip install 'harnesslab[dask]'" in err


def test_a_shipped_task_needs_no_disk_shared_with_the_coordinator(tmp_path: Path) -> None:
    """A worker with neither the scenario file nor the out folder: the scenario comes as
    bytes, the record goes back with the row, the same bytes a local run writes."""
    import dataclasses

    from harnesslab.sweep.rows import run_task, write_shipped

    task = plan(small(), tmp_path / "local")[0]
    local = run_task(task)
    assert "files" not in local and local["row"]["error"] is None
    away = dataclasses.replace(task, scenario_path="/nonexistent/coordinator/it.yaml",
                               out_dir="/nonexistent/out", ship=True,
                               scenario_bytes=Path(task.scenario_path).read_bytes())
    shipped = run_task(away)
    assert shipped["row"]["error"] is None, shipped["row"]["error"]
    assert not Path("/nonexistent").exists()
    assert shipped["row"] == local["row"]
    record = local["row"]["record"]
    assert record in shipped["files"]
    header = json.loads(shipped["files"][record].split(b"\n", 1)[0])
    assert header["scenario_file"] == away.scenario_path  # as planned, read from no disk
    mine = (tmp_path / "local" / record).read_bytes()
    theirs = shipped["files"][record].replace(away.scenario_path.encode(),
                                              task.scenario_path.encode())
    assert theirs == mine
    write_shipped(tmp_path / "coordinator", shipped)
    assert (tmp_path / "coordinator" / record).read_bytes() == shipped["files"][record]
    with pytest.raises(InputError, match="outside the records folder"):
        write_shipped(tmp_path / "coordinator", {"files": {"../evil.txt": b"x"}})


@pytest.mark.slow
def test_dask_workers_with_private_disks_give_the_local_table_and_records(tmp_path: Path) -> None:
    """A LocalCluster whose workers each work in a private temporary folder, reached by its
    scheduler address as a remote cluster is: records and rows land in the coordinator's out
    folder, the same table and the same record bytes as local processes."""
    pytest.importorskip("dask.distributed", reason="the dask extra: pip install "
                        "'harnesslab[dask]'")
    from dask.distributed import Client, LocalCluster

    spec = small(strategy=["structured", "truncate"])
    run_sweep(spec, tmp_path / "procs", executor="processes", jobs=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        def private(dask_worker) -> str:  # type: ignore[no-untyped-def]
            import tempfile

            folder = tempfile.mkdtemp(prefix=f"disk-{dask_worker.name}-", dir=str(tmp_path))
            tempfile.tempdir = folder  # the worker's own disk
            return folder

        disks = client.run(private)
        assert len(set(disks.values())) == 2
        out = run_sweep(spec, tmp_path / "dask", executor="dask",
                        scheduler=cluster.scheduler_address)
    assert out.done == out.runs
    pd.testing.assert_frame_equal(load_table(tmp_path / "procs"), load_table(tmp_path / "dask"))
    records = sorted(p.relative_to(tmp_path / "procs") for p in
                     (tmp_path / "procs" / "records").rglob("*.jsonl"))
    assert records and records == sorted(p.relative_to(tmp_path / "dask") for p in
                                         (tmp_path / "dask" / "records").rglob("*.jsonl"))
    for rel in records:
        assert (tmp_path / "procs" / rel).read_bytes() == (tmp_path / "dask" / rel).read_bytes()
    for folder in disks.values():  # each worker cleaned its own disk after shipping
        assert not any(Path(folder).iterdir())


class Plain(HarnessBase):
    """Declares no setting: a strategy sweep over it would only relabel the same runs."""

    def preload(self, exchanges: Any) -> None:
        pass

    def turn(self, text: str, images: Any = ()) -> Any:
        from harnesslab.harness.base import TurnResult

        return TurnResult("ok")


def test_a_swept_setting_the_harness_does_not_honour_is_not_applicable(tmp_path: Path) -> None:
    spec = SweepSpec(scenarios=(FOLLOWUP_EN,), grid={"strategy": ["structured", "truncate"]},
                     fixed={"harness": "tests.sweep.test_sweep:Plain"}, variants=("default",))
    run_sweep(spec, tmp_path, executor="serial")
    df = load_table(tmp_path)
    assert list(df["error"]) == [
        f"NotApplicable: the sweep cell sets strategy={s}; Plain honours none of: strategy"
        for s in df["set.strategy"]]
