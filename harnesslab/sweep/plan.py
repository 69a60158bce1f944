"""Sweeps: a grid of settings x scenarios x variants x seeds, run by an executor, one table row
per run, resumable.

A **cell** is one combination of the grid's values (plus the sweep's fixed ``set``). It is
applied exactly as ``--set`` is: beneath each variant's own settings, so a control keeps what
defines it. Every (scenario, variant, cell) is resolved before anything runs; a bad key, a
value of the wrong type or an empty list is one line naming the sweep file, its line and the
field (or ``--grid``).

Each run has a **run key**: the sha256 of the canonical JSON of the scenario id and its file's
sha256, the variant, the cell's settings and the seed (16 hex digits). Its record is written
under ``OUT/records/<run_key>/``; when it is complete, one JSON line is appended and fsync'd to
``OUT/rows.jsonl`` by the coordinating process. A rerun skips the keys found there, so a sweep
killed at any point loses no finished run and duplicates none (a half-written last line is
dropped and its run done again). The table (``sweep.parquet`` with pyarrow, else
``sweep.csv``) is rebuilt from those lines. The sweep file format: ``harnesslab.sweep.spec``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError
from harnesslab.record.table import MANIFEST, write_table
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Scenario, Variant
from harnesslab.scenario.settings import Settings, resolve_settings
from harnesslab.sweep.rows import RowsFile, SweepTask, run_task, write_shipped
from harnesslab.sweep.spec import SweepSpec


def canonical(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def run_key(scenario_id: str, scenario_sha256: str, variant: str, settings: Mapping[str, Any],
            seed: int) -> str:
    payload = {"scenario": scenario_id, "scenario_sha256": scenario_sha256, "variant": variant,
               "settings": dict(settings), "seed": seed}
    return hashlib.sha256(canonical(payload).encode("utf-8")).hexdigest()[:16]


# --- validation and tasks ---------------------------------------------------------------------

def _culprit(sc: Scenario, variant: Variant, e: InputError, cell: Mapping[str, Any]) -> str:
    """The cell key at fault: the one the error names, else the first that fails alone."""
    if e.field is not None and e.field in cell:
        return e.field
    if e.field and e.field.split(".", 1)[0] in cell:
        return e.field.split(".", 1)[0]
    for k in cell:
        try:
            resolve_settings(sc, variant, {k: cell[k]})
        except InputError:
            return k
    return ""  # only the combination fails


def _cell_error(spec: SweepSpec, e: InputError, cell: Mapping[str, Any], sc: Scenario,
                variant: Variant) -> InputError:
    key = _culprit(sc, variant, e, cell)
    ctx = f" (scenario {sc.id}, variant {variant.name}, cell {canonical(dict(cell))})"
    from_file = spec.source is not None and key not in spec.cli_keys
    src = spec.source if from_file else None
    if key in spec.grid:
        idx = next((i for i, v in enumerate(spec.grid[key])
                    if canonical(v) == canonical(cell[key])), 0)
        if not from_file:
            return InputError(e.problem + ctx, field=f"--grid {key}")
        name = f"grid.{key}[{idx}]"
        return InputError(e.problem + ctx, file=src,
                          line=spec.lines.get(name) or spec.lines.get(f"grid.{key}"), field=name)
    if key in spec.fixed:
        if not from_file:
            return InputError(e.problem + ctx, field=f"--set {key}")
        return InputError(e.problem + ctx, file=src, line=spec.lines.get(f"set.{key}"),
                          field=f"set.{key}")
    # A combination (e.g. reserve_ratio above a swept trigger_ratio): name the grid.
    return InputError(e.problem + ctx, file=spec.source, line=spec.lines.get("grid"),
                      field=e.field or ("grid" if spec.source else "--grid"))


def common_filler_base(sc: Scenario, cells: Sequence[Settings]) -> float | None:
    """What the scenario's ``times_trigger`` fillers multiply in every cell of a variant: the
    grid's largest trigger (trigger_ratio x context_size), so that every cell runs the same
    conversation and even the cell with the largest trigger compacts during it. None when
    the cells agree already (nothing to fix: their runs are those of ``harnesslab run``), the
    scenario has no such filler, or a setting gives a base of its own."""
    from harnesslab.scenario.schema import FillerStep

    if not any(isinstance(st, FillerStep) and st.filler.times_trigger is not None
               for st in sc.steps):
        return None
    if any(s.filler_base is not None for s in cells):
        return None
    triggers = {s.harness.trigger_ratio * s.harness.context_size for s in cells}
    return max(triggers) if len(triggers) > 1 else None


def _domain_bytes(scenario_path: str) -> tuple[str, bytes] | None:
    """The path and bytes of a scenario's domain file, for a worker with no copy of it."""
    domain = load_scenario(scenario_path).compiled_domain
    return None if domain is None else (domain.path, Path(domain.path).read_bytes())


def plan(spec: SweepSpec, out_dir: str | Path) -> list[SweepTask]:
    """Every run of the sweep, validated: each (scenario, variant, cell) resolves."""
    out = str(Path(out_dir).resolve())
    tasks: list[SweepTask] = []
    cells = spec.cells()
    keys = tuple(dict.fromkeys([*spec.fixed, *spec.grid]))
    for path in spec.scenarios:
        sc = load_scenario(path)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        domain = sc.compiled_domain
        dsha = domain.sha256 if domain is not None else None
        # A run of another domain file is another run (the bundled world's keys unchanged).
        key_sha = sha if dsha is None else hashlib.sha256(f"{sha} {dsha}".encode()).hexdigest()
        variants = [v for v in sc.variants if spec.variants is None or v.name in spec.variants]
        steps = len(sc.steps)
        for v in variants:
            resolved = []
            for cell in cells:
                try:
                    resolved.append(resolve_settings(sc, v, cell))
                except InputError as e:
                    raise _cell_error(spec, e, cell, sc, v) from None
            base = common_filler_base(sc, resolved)
            for cell, s in zip(cells, resolved, strict=True):
                if base is not None and "filler_base" not in cell:
                    cell = {**cell, "filler_base": base}
                cost = float(s.harness.context_size * steps)
                for seed in spec.seeds:
                    tasks.append(SweepTask(run_key(sc.id, key_sha, v.name, cell, seed),
                                           str(path.resolve()), sha, sc.id, v.name, seed,
                                           dict(cell), keys, out, cost, grid=tuple(spec.grid),
                                           domain_sha256=dsha))
    if spec.variants is not None and not tasks:
        raise InputError(f"no scenario has a variant named {', '.join(spec.variants)}",
                         file=spec.source, line=spec.lines.get("variants"),
                         field="variants" if spec.source else "--variant")
    return tasks


def write_manifest(spec: SweepSpec, tasks: Sequence[SweepTask], out: Path) -> None:
    manifest = {"version": 1, "grid": spec.grid, "set": spec.fixed, "seeds": list(spec.seeds),
                "variants": list(spec.variants) if spec.variants is not None else None,
                "keys": list(tasks[0].keys) if tasks else list(spec.grid),
                "scenarios": sorted({t.scenario_id for t in tasks}), "runs": len(tasks),
                "run_keys": sorted(t.run_key for t in tasks)}
    (out / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n",
                                encoding="utf-8")


@dataclass(frozen=True)
class SweepOutcome:
    out: Path
    table: Path
    runs: int        # runs in the sweep
    done: int        # runs done by this invocation
    skipped: int     # runs found finished and skipped
    errors: int      # runs recorded with an error
    seconds: float   # wall time of this invocation (not in the table)
    interrupted: bool = False  # stopped by Ctrl-C: the table holds the runs finished so far
    redone: int = 0  # runs whose row was there but whose record was not whole: done again


def record_whole(path: Path) -> bool:
    """A run's record ends with its result (or its error) on a whole last line: a record cut
    by a kill or a full disk does not, and its run is done again."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - (1 << 20)))
            tail = f.read()
    except OSError:
        return False
    if not tail.endswith(b"\n"):
        return False
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        return json.loads(last).get("type") in ("result", "run_error")
    except (ValueError, AttributeError):
        return False


class Progress:
    """Progress on stderr: tqdm's bar on a terminal; elsewhere (a log, CI) a plain line after
    the first run, then every 10 s or every tenth of the sweep, and at the end."""

    EVERY_SECONDS = 10.0

    def __init__(self, mode: str | None, total: int, initial: int) -> None:
        import sys

        self.mode, self.total, self.count, self.errors = mode, total, initial, 0
        self._stream = sys.stderr
        self._bar: Any = None
        self._t0 = self._last = time.monotonic()
        self._last_count = initial
        self._first = True
        self._step = max(1, (total - initial) // 10)
        if mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=initial, unit="run", desc="sweep",
                             dynamic_ncols=True)
        elif mode == "lines":
            self._line(f"{total - initial} to run, {initial} already done")

    def _line(self, text: str) -> None:
        print(f"sweep: {text}", file=self._stream, flush=True)

    def update(self, row: Mapping[str, Any]) -> None:
        self.count += 1
        self.errors += bool(row.get("error"))
        if self._bar is not None:
            self._bar.set_postfix_str(f"{row['scenario']}", refresh=False)
            self._bar.update()
            return
        if self.mode != "lines":
            return
        now = time.monotonic()
        if (self._first or self.count == self.total or now - self._last >= self.EVERY_SECONDS
                or self.count - self._last_count >= self._step):
            self._first = False
            self._line(f"{self.count}/{self.total} runs ({100 * self.count / self.total:.0f}%)"
                       f", {self.errors} with an error, {now - self._t0:.0f} s")
            self._last, self._last_count = now, self.count

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, executor: str = "processes",
              jobs: int | None = None, scheduler: str | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None,
              progress: bool | str | None = False,
              table_format: str | None = None) -> SweepOutcome:
    """Run what is not done yet of the sweep into ``out_dir``; rebuild its table. ``progress``:
    "bar" (tqdm; True means this too), "lines" (plain lines for a log) or nothing. Ctrl-C stops
    the runs under way, writes the table of the finished ones and returns (``interrupted``)."""
    from harnesslab.run.executors import make_executor, sigint_as_flag

    t0 = time.perf_counter()
    out = Path(out_dir)
    tasks = plan(spec, out)
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(spec, tasks, out)
    rows = RowsFile(out)
    done = rows.keys()
    redo = {r["run_key"] for r in rows.rows() if r["run_key"] in done and r.get("record")
            and not record_whole(out / r["record"])}
    for key in redo:
        rows.redo(key)
    done -= redo
    pending = sorted((t for t in tasks if t.run_key not in done),
                     key=lambda t: (-t.cost, t.run_key))
    bar: Progress | None = None
    interrupted = False
    ran = 0
    if executor == "dask":
        # Dask workers may share no disk with this process (their own machines, or private
        # folders): the scenario's bytes go with each task, the run's files come back with
        # its row, and only this process writes the out folder.
        raw = {p: Path(p).read_bytes() for p in {t.scenario_path for t in pending}}
        doms = {p: _domain_bytes(p) for p in {t.scenario_path for t in pending
                                              if t.domain_sha256 is not None}}
        pending = [dataclasses.replace(t, scenario_bytes=raw[t.scenario_path], ship=True,
                                       domain_bytes=doms.get(t.scenario_path))
                   for t in pending]
    try:
        with make_executor(executor, jobs=jobs, scheduler=scheduler) as ex:
            if pending:  # after the executor is up: a missing extra is the only line
                bar = Progress("bar" if progress is True else progress or None, len(tasks),
                               len(tasks) - len(pending))
            for result in ex.map_unordered(run_task, pending):
                with sigint_as_flag() as late:
                    # A Ctrl-C while a finished run is saved (in the row's fsync, most often)
                    # would leave its row on disk but out of the table written below, and the
                    # interrupted line would count one run fewer than the resume finds done.
                    write_shipped(out, result)
                    rows.append(result)
                ran += 1
                if on_row is not None:
                    on_row(result["row"])
                if bar is not None:
                    bar.update(result["row"])
                if late():
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
    wanted = {t.run_key for t in tasks}
    table_rows = [r for r in rows.rows() if r["run_key"] in wanted]
    with sigint_as_flag() as late:
        # A Ctrl-C now would lose the table of runs already finished: it waits for it.
        table = write_table(table_rows, out, table_format)
    interrupted = interrupted or late()
    return SweepOutcome(out, table, len(tasks), ran, len(tasks) - len(pending),
                        sum(1 for r in table_rows if r.get("error")),
                        time.perf_counter() - t0, interrupted, len(redo))
