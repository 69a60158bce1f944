"""One sweep run in a worker, its table row and the durable rows file (the table they make:
``harnesslab.record.table``).

``run_task`` is what an executor runs: a module-level function of plain data (spawn-safe,
picklable for Dask). It returns ``{"row": ..., "timing": ...}``; only the coordinator writes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnesslab.errors import InputError
from harnesslab.record.table import cell_value
from harnesslab.scenario.loader import planned_scenario

if TYPE_CHECKING:

    from harnesslab.run.runner import RunResult


ROWS = "rows.jsonl"
RATES = ("followup_accuracy", "constraint_retention", "entity_fidelity",
         "summary_entity_fidelity", "stale_fact_rate", "wasted_requery_rate",
         "identity_leak_rate", "overflow_rate")
KINDS = ("zh", "en", "mixed", "json")
STATS = ("signed_mean", "mape", "p95")
COUNTS = ("trigger_lateness", "true_input_tokens", "compactions", "summary_tokens",
          "model_calls")


@dataclass(frozen=True)
class SweepTask:
    """One run, as plain data: what a worker process (or a Dask worker) needs to do it."""

    run_key: str
    scenario_path: str
    scenario_sha256: str
    scenario_id: str
    variant: str
    seed: int
    settings: dict[str, Any]
    keys: tuple[str, ...]      # the swept keys, in grid order (the table's set.* columns)
    out_dir: str
    cost: float = 0.0          # a rough size, to start the longest runs first
    # For workers that share no disk with the coordinator: the scenario file's bytes come
    # with the task, and the run's files go back with its row (``run_task``).
    scenario_bytes: bytes | None = None
    ship: bool = False
    grid: tuple[str, ...] = ()  # the keys the grid varies (fixed ones are the ground)
    # A declared domain's file (its sha256 as planned; shipped: its path and bytes).
    domain_sha256: str | None = None
    domain_bytes: tuple[str, bytes] | None = None


def flat_metrics(m: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in RATES:
        r = m.get(name) or {}
        out[name], out[f"{name}_num"], out[f"{name}_den"] = \
            r.get("value"), r.get("num"), r.get("den")
    err = m.get("estimate_error") or {}
    for s in (*STATS, "n"):
        out[f"estimate_error_{s}"] = err.get(s)
    by_kind = m.get("estimate_error_by_kind") or {}
    for k in KINDS:
        e = by_kind.get(k) or {}
        for s in ("signed_mean", "mape", "n"):
            out[f"estimate_error_{k}_{s}"] = e.get(s, 0 if s == "n" else None)
    for name in COUNTS:
        out[name] = m.get(name)
    return out


def make_row(task: SweepTask, result: RunResult, tokenizer: str | None, window: int | None,
             extra: Mapping[str, Any]) -> dict[str, Any]:
    failed = [c.id for c in result.checks if not c.passed and not c.unreadable]
    unread = [c.id for c in result.checks if c.unreadable]
    row: dict[str, Any] = {
        "run_key": task.run_key, "scenario": task.scenario_id, "variant": task.variant,
        "seed": task.seed, "control": result.control, "role": result.role,
        "locale": result.locale,
        "overridden": ",".join(result.overridden),
        "cell": json.dumps(task.settings, ensure_ascii=False, sort_keys=True,
                           separators=(",", ":")),
    }
    for k in task.keys:
        row[f"set.{k}"] = cell_value(task.settings.get(k))
    row.update({k: result.settings.get(k) for k in
                ("harness", "strategy", "context_size", "trigger_ratio", "estimator", "service")})
    row["tokenizer"], row["window"] = tokenizer, window
    row.update({
        "expected": result.expected, "all_passed": result.all_passed,
        "checks": len(result.checks),
        "checks_passed": len(result.checks) - len(failed) - len(unread),
        "failed_checks": ";".join(failed),
        # The bench's fault, not the harness's (docs/understanding.md): shown apart.
        "unreadable_checks": ";".join(unread),
        "unexpected": ";".join(result.verdict.unexpected) if result.verdict else "",
        "error": result.error,
        "record": str(Path(result.record).relative_to(task.out_dir)) if result.record else None,
    })
    row.update(flat_metrics(result.metrics))
    row["facts_tracked"] = extra.get("facts_tracked", 0)
    row["fact_survival"] = json.dumps(extra.get("fact_survival", []))
    # The true size of the small talk the scenario inserted (sized to the trigger, so it grows
    # with trigger_ratio x context_size): the report tells apart cost that comes from it.
    row["filler_tokens"] = extra.get("filler_tokens")
    # How many small-talk exchanges it was: the same count is the same conversation (the
    # filler's text follows the seed), whatever tokenizer counts it.
    row["filler_exchanges"] = extra.get("filler_exchanges")
    return row


def _error_row(task: SweepTask, error: str) -> dict[str, Any]:
    from harnesslab.run.runner import RunResult

    res = RunResult(task.scenario_id, task.variant, task.seed, None, error=error)
    return make_row(task, res, None, None, {})


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one sweep task; any failure is a row with its reason, never an exception.

    A ``ship`` task runs in a private temporary folder of the worker's own disk; its files
    (the record, the harness's work folder) come back as ``"files"``: path relative to the
    out folder -> bytes, for the coordinator to write (``write_shipped``)."""
    if not task.ship:
        return _run_task(task)
    import dataclasses
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="harnesslab-worker-"))
    try:
        result = _run_task(dataclasses.replace(task, out_dir=str(base)))
        run_dir = base / "records" / task.run_key
        result["files"] = {p.relative_to(base).as_posix(): p.read_bytes()
                           for p in sorted(run_dir.rglob("*")) if p.is_file()}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return result


def write_shipped(out: Path, result: Mapping[str, Any]) -> None:
    """Write the files a ``ship`` task brought back under ``out`` (before its row, so that a
    row always has its record). A path that would leave ``out`` is refused."""
    files: Mapping[str, bytes] = result.get("files") or {}
    root = out.resolve()
    for rel in files:
        target = (root / rel).resolve()
        if not target.is_relative_to(root / "records"):
            raise InputError(f"a worker sent a file outside the records folder: {rel!r}",
                             field="--executor")
    run_dirs = {Path(rel).parts[1] for rel in files}
    for key in run_dirs:  # a killed earlier attempt left files: start clean
        shutil.rmtree(root / "records" / key, ignore_errors=True)
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _run_task(task: SweepTask) -> dict[str, Any]:
    from harnesslab.record.facts import record_survival
    from harnesslab.record.format import Record
    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.settings import resolve_settings

    t0 = time.perf_counter()  # timing only: kept out of the table and the record
    try:
        sc = planned_scenario(task.scenario_path, task.scenario_sha256, task.scenario_bytes,
                              task.domain_sha256, task.domain_bytes)
        variant = next(v for v in sc.variants if v.name == task.variant)
        run_dir = Path(task.out_dir) / "records" / task.run_key
        # A run killed half-way left files (offloaded context is appended to): start clean.
        shutil.rmtree(run_dir, ignore_errors=True)
        result = run_variant(sc, variant, seed=task.seed, source=Path(task.scenario_path),
                             out_dir=run_dir, cli_set=task.settings,
                             source_sha256=task.scenario_sha256, swept=task.grid)
        s = resolve_settings(sc, variant, task.settings)
        extra: dict[str, Any] = {}
        if result.record and result.error is None:
            rec = Record.load(result.record)
            extra = {**record_survival(rec),
                     "filler_tokens": sum(e.get("true_tokens", 0) for e in rec.of_type("filler")),
                     "filler_exchanges": sum(e.get("exchanges", 0)
                                             for e in rec.of_type("filler"))}
        row = make_row(task, result, s.service.tokenizer, s.service.window, extra)
    except Exception as e:
        row = _error_row(task, f"{type(e).__name__}: {e}")
    return {"row": row, "timing": {"seconds": time.perf_counter() - t0, "pid": os.getpid()}}


class RowsFile:
    """``OUT/rows.jsonl``: one line per finished run, appended and fsync'd by one writer.

    A line is ``{"row": {...}, "timing": {...}}``. A last line cut short by a kill is dropped
    on open (its run is done again); a broken line before the last is bad input. A key's last
    line wins (a run done again because its record was not whole)."""

    def __init__(self, out: Path) -> None:
        self.path = out / ROWS
        self._rows: dict[str, dict[str, Any]] = {}
        self._timings: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        good = 0
        lines = data.split(b"\n")
        for n, raw in enumerate(lines, start=1):
            last = n == len(lines)
            if not raw.strip():
                good += len(raw) + (0 if last else 1)
                continue
            try:
                obj = json.loads(raw)
                key = obj["row"]["run_key"]
            except (ValueError, KeyError, TypeError):
                if last or all(not x.strip() for x in lines[n:]):
                    break  # cut short by a kill: drop it, the run is done again
                raise InputError("not a sweep row (a broken line before the last)",
                                 file=str(self.path), line=n) from None
            if last:
                break  # no newline yet: the write was not finished
            # The last line of a key wins: a run done again (its record was not whole) is
            # appended after the row it replaces.
            self._rows[key] = obj["row"]
            self._timings[key] = obj.get("timing", {})
            good += len(raw) + 1
        if good < len(data):
            with self.path.open("r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())

    def keys(self) -> set[str]:
        return set(self._rows)

    def rows(self) -> list[dict[str, Any]]:
        return list(self._rows.values())

    def timings(self) -> dict[str, dict[str, Any]]:
        return dict(self._timings)

    def redo(self, key: str) -> None:
        """Forget a finished run (its record is not whole): it is done again and appended."""
        self._rows.pop(key, None)
        self._timings.pop(key, None)

    def append(self, result: Mapping[str, Any]) -> None:
        key = result["row"]["run_key"]
        if key in self._rows:
            return
        # Keys in the row's own order: it is the table's column order.
        line = json.dumps({"row": result["row"], "timing": result.get("timing", {})},
                          ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._rows[key] = dict(result["row"])
        self._timings[key] = dict(result.get("timing", {}))
