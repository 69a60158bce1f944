"""What a sweep runs: the sweep file (YAML), ``--grid`` values, the default sweep.

Format of a sweep file (all fields optional)::

    scenarios: [followup-after-filler-zh, my/scenarios/]  # files, folders, bundled ids
    variants: [default]            # only these variant names; default: every variant
    seeds: 3                       # seeds 0..2, or a list: [0, 7, 9]
    set: {service: qwen-131k}      # fixed settings for every cell
    grid:                          # the cells: every combination of these values
      strategy: [structured, truncate, pinned]
      trigger_ratio: [0.6, 0.7, 0.8]

Keys are those ``--set`` takes; relative paths are relative to the file's folder. Anything
wrong is one line naming the file, the line and the field.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnesslab.errors import InputError
from harnesslab.scenario.loader import bundled_dir, scenario_paths
from harnesslab.scenario.settings import parse_value

# The default sweep of `harnesslab sweep` with no arguments (README, at the top). The scenarios
# are those where compaction happens, so that strategy, trigger and window change what the
# model sees; the others answer the same under every cell. 4096 is where AgentScope's default
# reserve (0.1 x context_size) no longer holds the head and the newest question; 32768 would
# double the sweep's time and change no outcome that 16384 does not.
DEFAULT_SCENARIOS = ("followup-after-filler-zh", "followup-after-filler-en",
                     "entity-swap-o1001-o1010-zh", "brevity-30-turns-zh")
DEFAULT_GRID: dict[str, list[Any]] = {
    "strategy": ["structured", "truncate", "pinned"],
    "trigger_ratio": [0.6, 0.7, 0.8],
    "context_size": [4096, 8192, 16384],
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


# --- the grid from the command line and from a file ---------------------------------------------

def parse_grid(items: Iterable[str]) -> dict[str, list[Any]]:
    """``--grid KEY=V1,V2`` items: each value a YAML scalar or flow collection. A key given
    twice sweeps the union of its values, in the order given (a value repeated once)."""
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
        have = grid.setdefault(key, [])
        seen = {_canon(v) for v in have}
        for v in values:
            if _canon(v) not in seen:
                seen.add(_canon(v))
                have.append(v)
    return grid


def _canon(v: Any) -> str:
    import json

    return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)


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
        # A bundled id where the sweep file goes is the same slip as a scenario file there.
        if not p.exists() and p.suffix == "" and (bundled_dir() / f"{src}.yaml").is_file():
            raise InputError("a bundled scenario id, not a sweep file: give it as --scenario "
                             f"{src} (a sweep file holds scenarios, variants, seeds, set, grid)",
                             file=src) from None
        raise InputError(f"cannot read: {e.strerror or e}", file=src) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(f"bad YAML: {getattr(e, 'problem', None) or e}", file=src,
                         line=mark.line + 1 if mark else None) from None
    lines = _node_lines(node)
    if isinstance(data, dict) and {"id", "steps"} <= set(data):
        raise InputError("a scenario file, not a sweep file: give it as --scenario "
                         f"{src} (a sweep file holds scenarios, variants, seeds, set, grid)",
                         file=src, line=1)
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


