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
``sweep.csv``) is rebuilt from those lines. The sweep file format is in the README.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnesslab.bench.scenario import (
    Scenario,
    Variant,
    bundled_dir,
    load_scenario,
    scenario_paths,
)
from harnesslab.bench.settings import parse_value, resolve_settings
from harnesslab.bench.sweep_rows import RowsFile, run_task, write_table
from harnesslab.errors import InputError

MANIFEST = "sweep.json"

# The default sweep of `harnesslab sweep` with no arguments (README: "The main command"). The
# scenarios are those where compaction happens, so that strategy, trigger and window change
# what the model sees; the others answer the same under every cell.
DEFAULT_SCENARIOS = ("followup-after-filler-zh", "followup-after-filler-en",
                     "entity-swap-o1001-o1010-zh", "brevity-30-turns-zh")
DEFAULT_GRID: dict[str, list[Any]] = {
    "strategy": ["structured", "truncate", "pinned"],
    "trigger_ratio": [0.6, 0.7, 0.8],
    "context_size": [8192, 16384, 32768],
}
DEFAULT_SEEDS = 3


class SweepFile(BaseModel):
    """A sweep file (YAML). Paths are relative to the file's folder; a bare name such as
    ``followup-after-filler-zh`` is a bundled scenario."""

    model_config = ConfigDict(extra="forbid")

    scenarios: list[str] | None = Field(default=None, description="Scenario files, folders or "
                                        "bundled scenario ids; default: the bundled suite")
    variants: list[str] | None = Field(default=None, description="Only these variant names "
                                       "(where a scenario has them); default: every variant")
    seeds: int | list[int] = Field(default=1, description="How many seeds (0..N-1), or a list")
    set: dict[str, Any] = Field(default_factory=dict, description="Settings for every cell, "
                                "beneath each variant's own (as --set)")
    grid: dict[str, Any] = Field(default_factory=dict, description="Setting key -> list of "
                                 "values; the cells are every combination")


@dataclass(frozen=True)
class SweepSpec:
    """What to run: resolved scenario files, the grid, fixed settings, seeds."""

    scenarios: tuple[Path, ...]
    grid: dict[str, list[Any]]
    fixed: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    variants: tuple[str, ...] | None = None
    source: str | None = None          # the sweep file, for error messages
    lines: dict[str, int] = field(default_factory=dict)  # "grid.KEY[i]" / "set.KEY" -> line
    cli_keys: tuple[str, ...] = ()     # keys given by --grid / --set (errors name those)

    def cells(self) -> list[dict[str, Any]]:
        keys = list(self.grid)
        return [{**self.fixed, **dict(zip(keys, combo, strict=True))}
                for combo in itertools.product(*(self.grid[k] for k in keys))]


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


def canonical(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def run_key(scenario_id: str, scenario_sha256: str, variant: str, settings: Mapping[str, Any],
            seed: int) -> str:
    payload = {"scenario": scenario_id, "scenario_sha256": scenario_sha256, "variant": variant,
               "settings": dict(settings), "seed": seed}
    return hashlib.sha256(canonical(payload).encode("utf-8")).hexdigest()[:16]


# --- the grid from the command line and from a file ---------------------------------------------

def parse_grid(items: Iterable[str]) -> dict[str, list[Any]]:
    """``--grid KEY=V1,V2`` items: each value a YAML scalar or flow collection."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"expected KEY=V1,V2,..., got {item!r}", field="--grid")
        if not raw.strip() or re.search(r"(^|,)\s*(,|$)", raw):
            raise InputError(f"expected a non-empty list of values, got {raw!r}",
                             field=f"--grid {key}")
        try:
            values = yaml.safe_load(f"[{raw}]")
        except yaml.YAMLError:
            # Not one flow sequence (e.g. a bare colon): each comma-separated item on its own.
            values = [parse_value(v) for v in raw.split(",")]
        grid[key] = list(values)
    return grid


def _resolve_scenarios(entries: Sequence[str], base: Path, where: str, lines: dict[str, int],
                       source: str | None) -> list[Path]:
    out: list[Path] = []
    for i, entry in enumerate(entries):
        p = Path(entry) if Path(entry).is_absolute() else base / entry
        bundled = bundled_dir() / f"{entry}.yaml"
        if not p.exists() and bundled.exists():
            p = bundled
        if not p.exists():
            raise InputError(f"no such scenario file or folder (nor a bundled scenario id): "
                             f"{entry!r}", file=source, line=lines.get(f"{where}[{i}]"),
                             field=f"{where}[{i}]")
        out += scenario_paths([str(p)])
    return out


def _node_lines(node: yaml.Node | None) -> dict[str, int]:
    """Lines of the top-level keys and of each item under them (``grid.trigger_ratio[2]``)."""
    lines: dict[str, int] = {}
    if not isinstance(node, yaml.MappingNode):
        return lines
    for k, v in node.value:
        top = str(k.value)
        lines[top] = k.start_mark.line + 1
        if isinstance(v, yaml.SequenceNode):
            for i, item in enumerate(v.value):
                lines[f"{top}[{i}]"] = item.start_mark.line + 1
        elif isinstance(v, yaml.MappingNode):
            for k2, v2 in v.value:
                name = f"{top}.{k2.value}"
                lines[name] = k2.start_mark.line + 1
                if isinstance(v2, yaml.SequenceNode):
                    for i, item in enumerate(v2.value):
                        lines[f"{name}[{i}]"] = item.start_mark.line + 1
    return lines


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep file; anything wrong is one line naming the file, the line and the field."""
    p = Path(path)
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8")
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=src) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(f"bad YAML: {getattr(e, 'problem', None) or e}", file=src,
                         line=mark.line + 1 if mark else None) from None
    lines = _node_lines(node)
    if not isinstance(data, dict):
        raise InputError("a sweep file holds a mapping (scenarios, seeds, set, grid)", file=src,
                         line=1)
    try:
        sf = SweepFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"][:2])
        msg = "unknown field; expected scenarios, variants, seeds, set or grid" \
            if err["type"] == "extra_forbidden" else str(err["msg"])
        raise InputError(msg, file=src, line=lines.get(loc) or lines.get(str(err["loc"][0])),
                         field=loc) from None
    grid: dict[str, list[Any]] = {}
    for key, values in sf.grid.items():
        if not isinstance(values, list) or not values:
            raise InputError("expected a non-empty list of values", file=src,
                             line=lines.get(f"grid.{key}"), field=f"grid.{key}")
        grid[key] = values
    if isinstance(sf.seeds, int):
        if sf.seeds < 1:
            raise InputError("expected a positive number of seeds or a list of seeds", file=src,
                             line=lines.get("seeds"), field="seeds")
        seeds = tuple(range(sf.seeds))
    else:
        if not sf.seeds or len(set(sf.seeds)) != len(sf.seeds):
            raise InputError("expected a non-empty list of distinct seeds", file=src,
                             line=lines.get("seeds"), field="seeds")
        seeds = tuple(sf.seeds)
    scenarios = _resolve_scenarios(sf.scenarios, p.parent, "scenarios", lines, src) \
        if sf.scenarios is not None else scenario_paths([str(bundled_dir())])
    if sf.variants is not None and not sf.variants:
        raise InputError("expected a non-empty list of variant names", file=src,
                         line=lines.get("variants"), field="variants")
    return SweepSpec(tuple(scenarios), grid, dict(sf.set), seeds,
                     tuple(sf.variants) if sf.variants is not None else None, src, lines)


def default_spec() -> SweepSpec:
    return SweepSpec(tuple(bundled_dir() / f"{s}.yaml" for s in DEFAULT_SCENARIOS),
                     {k: list(v) for k, v in DEFAULT_GRID.items()}, {},
                     tuple(range(DEFAULT_SEEDS)))


def compose_spec(file: str | None = None, *, grid: Iterable[str] = (),
                 fixed: Mapping[str, Any] | None = None, scenarios: Sequence[str] = (),
                 variants: Sequence[str] = (), seeds: int | None = None,
                 first_seed: int = 0) -> SweepSpec:
    """The command line's sweep: the file's (or, with nothing else given, the default sweep),
    with ``--grid`` keys replacing or adding grid keys, ``--set`` adding fixed settings, and
    ``--scenario``, ``--variant``, ``--seeds`` replacing what the file says."""
    cli_grid = parse_grid(grid)
    if file is not None:
        spec = load_sweep(file)
    elif not cli_grid and not scenarios:
        spec = default_spec()
    else:
        spec = SweepSpec(tuple(scenario_paths([str(bundled_dir())])), {})
    paths = spec.scenarios
    if scenarios:
        paths = tuple(_resolve_scenarios(scenarios, Path.cwd(), "--scenario", {}, None))
    return SweepSpec(
        paths, {**spec.grid, **cli_grid}, {**spec.fixed, **dict(fixed or {})},
        tuple(range(first_seed, first_seed + seeds)) if seeds is not None else
        tuple(s + first_seed for s in spec.seeds),
        tuple(variants) if variants else spec.variants, spec.source, spec.lines,
        tuple([*cli_grid, *(fixed or {})]))


# --- validation and tasks ---------------------------------------------------------------------

def _culprit(sc: Scenario, variant: Variant, e: InputError, cell: Mapping[str, Any]) -> str:
    """The cell key at fault: the one the error names, else the first that fails alone."""
    if e.field in cell:
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


def plan(spec: SweepSpec, out_dir: str | Path) -> list[SweepTask]:
    """Every run of the sweep, validated: each (scenario, variant, cell) resolves."""
    out = str(Path(out_dir).resolve())
    tasks: list[SweepTask] = []
    cells = spec.cells()
    keys = tuple(dict.fromkeys([*spec.fixed, *spec.grid]))
    for path in spec.scenarios:
        sc = load_scenario(path)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        variants = [v for v in sc.variants if spec.variants is None or v.name in spec.variants]
        steps = len(sc.steps)
        for v in variants:
            for cell in cells:
                try:
                    s = resolve_settings(sc, v, cell)
                except InputError as e:
                    raise _cell_error(spec, e, cell, sc, v) from None
                cost = float(s.harness.context_size * steps)
                for seed in spec.seeds:
                    tasks.append(SweepTask(run_key(sc.id, sha, v.name, cell, seed),
                                           str(path.resolve()), sha, sc.id, v.name, seed,
                                           dict(cell), keys, out, cost))
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


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, executor: str = "processes",
              jobs: int | None = None, scheduler: str | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None,
              progress: bool = False, table_format: str | None = None) -> SweepOutcome:
    """Run what is not done yet of the sweep into ``out_dir``; rebuild its table."""
    from harnesslab.bench.executors import make_executor

    t0 = time.perf_counter()
    out = Path(out_dir)
    tasks = plan(spec, out)
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(spec, tasks, out)
    rows = RowsFile(out)
    done = rows.keys()
    pending = sorted((t for t in tasks if t.run_key not in done),
                     key=lambda t: (-t.cost, t.run_key))
    bar = None
    if progress and pending:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), initial=len(tasks) - len(pending), unit="run",
                   desc="sweep", dynamic_ncols=True)
    try:
        with make_executor(executor, jobs=jobs, scheduler=scheduler) as ex:
            for result in ex.map_unordered(run_task, pending):
                rows.append(result)
                if on_row is not None:
                    on_row(result["row"])
                if bar is not None:
                    bar.set_postfix_str(f"{result['row']['scenario']}", refresh=False)
                    bar.update()
    finally:
        if bar is not None:
            bar.close()
    wanted = {t.run_key for t in tasks}
    table_rows = [r for r in rows.rows() if r["run_key"] in wanted]
    table = write_table(table_rows, out, table_format)
    return SweepOutcome(out, table, len(tasks), len(pending), len(tasks) - len(pending),
                        sum(1 for r in table_rows if r.get("error")),
                        time.perf_counter() - t0)
