"""A sweep over a declared domain's scenario: it resumes only runs of the same domain file,
and a worker with no copy of the files runs it from the bytes shipped with the task."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from harnesslab.record.table import load_table
from harnesslab.sweep.plan import _domain_bytes, plan, run_sweep
from harnesslab.sweep.rows import run_task
from harnesslab.sweep.spec import SweepSpec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "helpdesk"


def copy(to: Path) -> Path:
    shutil.copytree(EXAMPLE, to)
    return to / "vpn-ticket-followup-zh.yaml"


def spec(path: Path) -> SweepSpec:
    return SweepSpec(scenarios=(path,), grid={"strategy": ["structured", "truncate"]},
                     variants=("default",))


def test_a_changed_domain_file_is_not_resumed_as_done(tmp_path: Path) -> None:
    sc = copy(tmp_path / "hd")
    first = run_sweep(spec(sc), tmp_path / "out", executor="serial")
    assert (first.done, first.runs) == (2, 2)
    keys = set(load_table(tmp_path / "out")["run_key"])
    again = run_sweep(spec(sc), tmp_path / "out", executor="serial")
    assert again.done == 0  # the control: the same files, nothing to do
    domain = sc.with_name("helpdesk.domain.yaml")
    domain.write_text(domain.read_text(encoding="utf-8").replace("max_age: 2h", "max_age: 3h", 1),
                      encoding="utf-8")
    changed = run_sweep(spec(sc), tmp_path / "out", executor="serial")
    assert changed.done == 2
    assert not keys & set(load_table(tmp_path / "out")["run_key"])


def test_a_worker_without_the_files_runs_the_shipped_bytes(tmp_path: Path) -> None:
    sc = copy(tmp_path / "hd")
    local = run_sweep(spec(sc), tmp_path / "local", executor="serial")
    assert local.done == 2
    (task, *_) = plan(spec(sc), tmp_path / "shipped")
    shipped = dataclasses.replace(task, scenario_bytes=sc.read_bytes(), ship=True,
                                  domain_bytes=_domain_bytes(task.scenario_path))
    shutil.rmtree(tmp_path / "hd")  # the worker's disk has neither file
    result = run_task(shipped)
    assert result["row"]["error"] is None
    (rel, body), = [(k, v) for k, v in result["files"].items() if k.endswith("seed0.jsonl")]
    assert (tmp_path / "local" / rel).read_bytes() == body
    # The control: the same task without the domain's bytes cannot load its domain.
    bare = run_task(dataclasses.replace(shipped, domain_bytes=None))
    assert "no domain file 'helpdesk.domain.yaml'" in bare["row"]["error"]
