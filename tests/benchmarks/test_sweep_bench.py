"""Sweep throughput (runs per second), serial versus local processes, on the default grid.

By default a slice of it: every scenario, strategy and context size of ``harnesslab sweep``'s
default grid at trigger_ratio 0.7 and seed 0 (a ninth of the runs, the same mix of long and
short ones). ``HARNESSLAB_BENCH_FULL=1`` runs the whole default grid both ways.

    pytest -m benchmark tests/benchmarks/test_sweep_bench.py -s
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pandas as pd
import pytest

from harnesslab.bench.executors import usable_cores
from harnesslab.bench.sweep import run_sweep
from harnesslab.bench.sweep_rows import load_table
from harnesslab.bench.sweep_spec import default_spec

# On an idle 2-core machine local processes reach about 1.7x serial (the issue asks 1.6x); the
# bar here is lower because CI shares its cores with whatever else runs.
MIN_SPEEDUP = 1.25


def test_sweep_throughput_serial_vs_local_processes(tmp_path: Path,
                                                    record_property: pytest.RecordProperty
                                                    ) -> None:
    spec = default_spec()
    if os.environ.get("HARNESSLAB_BENCH_FULL") != "1":
        spec = dataclasses.replace(spec, grid={**spec.grid, "trigger_ratio": [0.7]}, seeds=(0,))
    serial = run_sweep(spec, tmp_path / "serial", executor="serial")
    procs = run_sweep(spec, tmp_path / "procs", executor="processes")
    assert serial.done == procs.done == serial.runs
    pd.testing.assert_frame_equal(load_table(tmp_path / "serial"), load_table(tmp_path / "procs"))
    s_rate, p_rate = serial.runs / serial.seconds, procs.runs / procs.seconds
    speedup = p_rate / s_rate
    print(f"\nsweep throughput on {serial.runs} runs of the default grid: serial "
          f"{s_rate:.2f} runs/s ({serial.seconds:.1f} s), local processes x{usable_cores()} "
          f"{p_rate:.2f} runs/s ({procs.seconds:.1f} s): {speedup:.2f}x")
    record_property("serial_runs_per_s", round(s_rate, 3))
    record_property("processes_runs_per_s", round(p_rate, 3))
    if usable_cores() >= 2:
        assert speedup >= MIN_SPEEDUP
