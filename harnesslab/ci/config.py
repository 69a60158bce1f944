"""The CI configuration of the pytest plugin: ``[tool.harnesslab]`` in a pyproject.toml, or a TOML
file of its own (the same keys at its top level, or under ``[tool.harnesslab]``).

Keys (all optional):

- ``harness``: the harness under test (``mypkg.agent:MyHarness``, ``path/file.py:Class`` relative
  to the config file, or a registered name).
- ``settings``: setting overrides for every scenario variant, beneath each variant's own
  ``set`` (as ``harnesslab run --set``): a control keeps what defines it.
- ``scenarios``: scenario files or folders (relative to the config file), collected beside
  ``testpaths`` when pytest runs from the rootdir without paths (as pytest uses testpaths).
- ``seeds``: a number of seeds (0..K-1) or a list of seeds; ``--harnesslab-seeds K`` wins.
- ``min_pass_rate`` (default 1.0) and ``pass_k`` (default 1): an item passes when pass^k over its
  seeds (tau-bench's unbiased estimator; pass^1 is the plain pass rate) is at least
  ``min_pass_rate``.
- ``quarantine_flaky_rate``: an item that misses the gate with a pass rate strictly between 0
  and 1 and a flakiness (min(passed, failed) / seeds) above this rate is quarantined: reported,
  not failing. Unset: never.
- ``baseline_tolerance`` (default 0): how far a quality rate may move the wrong way against the
  baseline (absolute, 0.05 = five points); ``cost_tolerance`` (unset: cost is reported, never
  failing): the relative growth allowed on cost; ``baseline_alpha`` (default 0.05): the level of
  the paired sign test across seeds.
- ``out``: where records go (relative to the config file); default ``.harnesslab/pytest``
  under pytest's rootdir.

A bad key or value is an :class:`~harnesslab.errors.InputError` naming the file and the key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harnesslab.ci.baseline import Baseline, Tolerance, load_baseline
from harnesslab.ci.gate import Gate
from harnesslab.errors import InputError
from harnesslab.scenario.settings import parse_value, resolve

TABLE = "tool.harnesslab"


class CIConfig(BaseModel):
    """``[tool.harnesslab]``: the module docstring describes each key."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    harness: str | None = Field(default=None, description="The harness under test")
    settings: dict[str, Any] = Field(default_factory=dict, description="Setting overrides, "
                                     "beneath each variant's own")
    scenarios: list[str] = Field(default_factory=list, description="Scenario files or folders")
    seeds: int | list[int] = Field(default=1, description="How many seeds, or which")
    min_pass_rate: float = Field(default=1.0, ge=0, le=1, description="Gate on pass^k")
    pass_k: int = Field(default=1, ge=1, description="k of pass^k")
    quarantine_flaky_rate: float | None = Field(default=None, ge=0, lt=0.5,
                                                description="Quarantine above this flakiness")
    baseline_tolerance: float = Field(default=0.0, ge=0, description="Absolute, on rates")
    cost_tolerance: float | None = Field(default=None, ge=0, description="Relative, on cost")
    baseline_alpha: float = Field(default=0.05, gt=0, lt=1, description="Sign-test level")
    out: str | None = Field(default=None, description="Where records go")

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v: Any) -> Any:
        ok_count = isinstance(v, int) and not isinstance(v, bool) and v >= 1
        ok_list = isinstance(v, list) and bool(v) and len(set(v)) == len(v) and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v)
        if not (ok_count or ok_list):
            raise ValueError(f"expected a number of seeds (a whole number >= 1) or a list of "
                             f"distinct whole numbers >= 0, got {v!r}")
        return v

    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)


def _is_file_spec(spec: str) -> bool:
    where = spec.rpartition(":")[0]
    return bool(where) and (where.endswith(".py") or "/" in where or "\\" in where)


def harness_setting(spec: str, base: Path) -> str:
    """A ``path/file.py:Class`` relative to the config file made absolute; others unchanged."""
    if not _is_file_spec(spec):
        return spec
    where, _, attr = spec.rpartition(":")
    return f"{(base / where).resolve()}:{attr}" if not Path(where).is_absolute() else spec


def _validation_error(e: ValidationError, file: str, prefix: str) -> InputError:
    err = e.errors()[0]
    loc = ""
    for x in err["loc"]:
        if isinstance(x, int):
            loc += f"[{x}]"
        elif x not in ("int", "list[int]"):  # the union branch pydantic names
            loc += ("." if loc else "") + str(x)
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = ("unknown key; expected one of " + ", ".join(CIConfig.model_fields))
    elif err["type"] not in ("value_error",) and "input" in err:
        msg += f" (got {err['input']!r})"
    return InputError(msg, file=file, field=prefix + loc if loc else prefix.rstrip("."))


def parse_config(data: dict[str, Any], file: str, prefix: str = TABLE + ".") -> CIConfig:
    """Validate one table; errors name ``file`` and ``prefix + key``."""
    try:
        return CIConfig.model_validate(data)
    except ValidationError as e:
        raise _validation_error(e, file, prefix) from None


def read_config(path: Path, *, explicit: bool) -> tuple[CIConfig, str] | None:
    """The config in ``path`` and the prefix its keys are named with in errors.

    A pyproject.toml without ``[tool.harnesslab]`` gives None; so does a missing file, unless
    it was named explicitly (``--harnesslab-config``)."""
    if not path.is_file():
        if explicit:
            raise InputError("no such file", file=str(path), field="--harnesslab-config")
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", file=str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"bad TOML: {e}", file=str(path)) from None
    table = data.get("tool", {}).get("harnesslab") if isinstance(data.get("tool"), dict) else None
    if table is not None:
        if not isinstance(table, dict):
            raise InputError("expected a table", file=str(path), field=TABLE)
        return parse_config(table, str(path)), TABLE + "."
    if not explicit:
        return None
    return parse_config(data, str(path), ""), ""


def check_paths(cfg: CIConfig, base: Path, file: str, prefix: str) -> list[Path]:
    """The ``scenarios`` entries as paths; each must exist."""
    out = []
    for i, raw in enumerate(cfg.scenarios):
        p = (base / raw).resolve()
        if not p.exists():
            raise InputError(f"no such file or folder: {raw} (relative to {base})", file=file,
                             field=f"{prefix}scenarios[{i}]")
        out.append(p)
    return out


@dataclass(frozen=True)
class CIOptions:
    """The plugin's command-line options (None / empty: not given)."""

    config: str | None = None
    seeds: int | None = None
    set: Sequence[str] = ()
    out: str | None = None
    baseline: str | None = None
    save_baseline: str | None = None


@dataclass(frozen=True)
class CIRun:
    """A session's resolved configuration: the config file, then the command line."""

    cli_set: dict[str, Any]          # settings for every variant (beneath each one's own)
    seeds: list[int]
    out: Path
    gate: Gate
    tolerance: Tolerance
    config_file: str | None = None
    scenario_paths: list[Path] = field(default_factory=list)
    baseline: Baseline | None = None
    baseline_path: Path | None = None
    save_path: Path | None = None


def _cli_sets(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {item!r}", field="--harnesslab-set")
        out[key.strip()] = parse_value(value)
    return out


def _validate_settings(merged: Mapping[str, Any], from_cli: Mapping[str, Any],
                       file: str | None, prefix: str, harness_key: bool) -> None:
    try:
        resolve([merged])
    except InputError as e:
        head = (e.field or "").split(".", 1)[0]
        if any(k.split(".", 1)[0] == head for k in from_cli):
            raise InputError(e.problem, field=f"--harnesslab-set {e.field}") from None
        where = prefix + "harness" if head == "harness" and harness_key else \
            f"{prefix}settings.{e.field}"
        raise InputError(e.problem, file=file, field=where) from None


def resolve_ci(opts: CIOptions, rootdir: Path, cwd: Path) -> CIRun:
    """The config (``opts.config``, else ``[tool.harnesslab]`` in ``rootdir``'s pyproject.toml,
    else defaults) with the command line over it; every bad key or value is an InputError."""
    path = (cwd / opts.config) if opts.config else rootdir / "pyproject.toml"
    found = read_config(path, explicit=bool(opts.config))
    cfg, prefix = found if found else (CIConfig(), TABLE + ".")
    file = str(path) if found else None
    base = path.parent.resolve()
    settings = dict(cfg.settings)
    if cfg.harness is not None:
        if "harness" in settings:
            raise InputError("the harness is given twice (harness and settings.harness)",
                             file=file, field=prefix + "harness")
        settings["harness"] = cfg.harness
    if isinstance(settings.get("harness"), str):
        settings["harness"] = harness_setting(settings["harness"], base)
    from_cli = _cli_sets(opts.set)
    merged = {**settings, **from_cli}
    _validate_settings(merged, from_cli, file, prefix, cfg.harness is not None)
    seeds = list(range(opts.seeds)) if opts.seeds else cfg.seed_list()
    if cfg.pass_k > len(seeds):
        raise InputError(f"pass_k = {cfg.pass_k} needs at least {cfg.pass_k} seeds; this run has "
                         f"{len(seeds)} (seeds, or --harnesslab-seeds)", file=file,
                         field=prefix + "pass_k")
    if opts.out:
        out = cwd / opts.out
    elif cfg.out:
        out = base / cfg.out
    else:
        out = rootdir / ".harnesslab" / "pytest"
    baseline_path = cwd / opts.baseline if opts.baseline else None
    return CIRun(
        merged, seeds, out, Gate(cfg.min_pass_rate, cfg.pass_k, cfg.quarantine_flaky_rate),
        Tolerance(cfg.baseline_tolerance, cfg.cost_tolerance, cfg.baseline_alpha), file,
        check_paths(cfg, base, file or str(path), prefix),
        load_baseline(baseline_path) if baseline_path else None, baseline_path,
        cwd / opts.save_baseline if opts.save_baseline else None)
