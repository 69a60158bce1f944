"""The runner: one scenario variant and seed through the harness under test (the ``harness``
setting: the reference harness by default) against the simulated world, written to a record;
then its checks, verdict and metrics, from the record.

The harness gets only a :class:`~harnesslab.harness.base.HarnessContext` (``bench.doors``).
Which instance serves a turn, and what restart, session, instance and kill steps do, is
``bench.instances``'s.
A run that crashes is a recorded result with its reason; it never stops a suite. A harness that
raises during a turn fails that turn (recorded with the exception) and the run goes on.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError, NotApplicable
from harnesslab.harness.base import Harness
from harnesslab.harness.honours import EVERY, honours_of
from harnesslab.harnesses.registry import harness_label, program_command
from harnesslab.judge.checks import (
    NOT_APPLICABLE_WHY,
    UNREADABLE_WHY,
    CheckOutcome,
    Verdict,
    verdict,
)
from harnesslab.judge.live import LiveJudge
from harnesslab.record.format import Declared
from harnesslab.record.writer import RecordWriter
from harnesslab.run.applicable import inapplicable, world_part_idle
from harnesslab.run.drive import drive
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.memory_files import merged
from harnesslab.scenario.schema import (
    FailRate,
    Scenario,
    UserStep,
    Variant,
    missing_extras,
    skip_reason,
)
from harnesslab.scenario.settings import (
    Settings,
    overridden,
    resolve,
    resolve_settings,
    scenario_layers,
)
from harnesslab.sim.intents import CONSTRAINT_PHRASES
from harnesslab.sim.world import World


@dataclass
class RunResult:
    scenario: str
    variant: str
    seed: int
    record: Path | None
    checks: list[CheckOutcome] = field(default_factory=list)
    verdict: Verdict | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    locale: str = ""
    call_errors: list[float] = field(default_factory=list)  # (estimate - true) / true per call
    settings: dict[str, Any] = field(default_factory=dict)  # the effective key settings
    overridden: list[str] = field(default_factory=list)     # command-line keys the variant set
    control: bool = False                                    # the variant expects failures
    role: str = "baseline"                                   # baseline, control or fix
    rates: list[FailRate] = field(default_factory=list)      # checks failing in some seeds
    not_applicable: bool = False  # the scenario needs what this harness does not expose
    # Why the run was skipped (an extra the variant requires is not installed), or None. A
    # skipped run is also not applicable: neither a pass nor a failure, wherever results go.
    skipped: str | None = None
    # The checks this run cannot judge (a real model has no annotations), by id.
    checks_not_applicable: list[str] = field(default_factory=list)
    # The harness settings the harness declared it honours (["*"]: every one); None before
    # a harness was built.
    honours: list[str] | None = None

    @property
    def checks_unreadable(self) -> list[str]:
        """The checks the bench could not read the request of, as "id: why" (design 3.3)."""
        return self.verdict.unreadable if self.verdict else []

    @property
    def expected(self) -> bool:
        return self.error is None and self.verdict is not None and self.verdict.ok

    @property
    def all_passed(self) -> bool:
        return self.error is None and all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "variant": self.variant, "seed": self.seed,
                "record": str(self.record) if self.record else None, "locale": self.locale,
                "expected": self.expected, "all_passed": self.all_passed, "error": self.error,
                "unexpected": self.verdict.unexpected if self.verdict else [],
                "settings": self.settings, "overridden": self.overridden, "control": self.control,
                "role": self.role, "not_applicable": self.not_applicable,
                "checks_not_applicable": self.checks_not_applicable,
                **({"checks_unreadable": self.checks_unreadable} if self.checks_unreadable
                   else {}),
                **({"skipped": self.skipped} if self.skipped else {}),
                "checks": [c.to_dict() for c in self.checks], "metrics": self.metrics}


def _declared(sc: Scenario) -> Declared:
    domain = sc.compiled_domain
    d = Declared(ids=sorted([*sc.world.orders, *sc.world.users]) if domain is None
                 else sc.make_world().ids(),
                 patterns=None if domain is None else tuple(domain.patterns.values()))
    for utt, it in sc.lexicon.items():
        for c in it.constraints:
            d.constraints.setdefault(c.value, [*CONSTRAINT_PHRASES[c],
                                               *sc.model.phrases.get(c, [])])
        for cl in it.claims:
            claim = cl.to_claim()
            d.claims.setdefault(f"{claim.kind.value}={claim.value}", []).append(utt)
    return d


def _header(sc: Scenario, source: Path | None, variant: Variant, seed: int, s: Settings,
            world: World, source_sha256: str | None = None) -> dict[str, Any]:
    sha = source_sha256 or (hashlib.sha256(source.read_bytes()).hexdigest() if source else None)
    ages = {t: (a.total_seconds() if (a := world.max_age(t)) is not None else None)
            for t in world.offered()}
    return {
        "scenario": sc.id, "title": sc.title, "locale": sc.locale, "variant": variant.name,
        "seed": seed, "scenario_file": str(source) if source else None,
        "scenario_sha256": sha, "harness_name": harness_label(s.harness.harness),
        "harness": s.harness.model_dump(mode="json"),
        "service": s.service.model_dump(mode="json"), "summarizer": s.summarizer,
        "extractor": s.extractor,
        "phrases": {c.value: list(ws) for c, ws in sc.model.phrases.items()},
        "session_user": sc.session.user, "session_id": sc.session.id,
        "private": {u: list(world.private_values(u)) for u in world.users()},
        "world_ids": world.ids(), "max_ages": ages,
        "lexicon": {k: v.model_dump(mode="json", exclude_defaults=True)
                    for k, v in sc.lexicon.items()},
        "expects": {str(i): st.expect.model_dump(mode="json", exclude_defaults=True)
                    for i, st in enumerate(sc.steps, start=1) if isinstance(st, UserStep)},
        "expect_fail": [f if isinstance(f, str) else f.model_dump() for f in variant.expect_fail],
        # Only a real model is named: the fake model's records stay as they were.
        **({"model": s.model.header()} if s.model.real else {}),
        # Only a declared domain is named: the bundled world's records stay as they were.
        **({"domain": sc.compiled_domain.header()} if sc.compiled_domain is not None else {}),
        # Only a sweep's common sizing is named: other records stay as they were.
        **({"filler_base": s.filler_base} if s.filler_base is not None else {}),
    }


def open_record(sc: Scenario, variant: Variant, seed: int, source: Path | None, s: Settings,
                world: World, path: Path | None, source_sha256: str | None = None,
                **extra: Any) -> RecordWriter:
    """A record writer with the run's header (plus ``extra`` header keys) and declared facts."""
    return RecordWriter({**_header(sc, source, variant, seed, s, world, source_sha256),
                         **extra}, _declared(sc), path)


def record_path(out_dir: Path, scenario: str, variant: str, seed: int) -> Path:
    return out_dir / scenario / variant / f"seed{seed}.jsonl"


KEY_SETTINGS = ("harness", "strategy", "context_size", "trigger_ratio", "estimator", "service")


def key_settings(s: Settings) -> dict[str, Any]:
    """The settings a results table shows for each run. A black-box program reads none of the
    reference harness's own settings (strategy, context size, trigger, estimator): they show
    as "-" for it; the service is the world's and applies to every harness."""
    h = s.harness
    own = program_command(h.harness) is None
    return {"harness": harness_label(h.harness), "strategy": h.strategy if own else None,
            "context_size": h.context_size if own else None,
            "trigger_ratio": h.trigger_ratio if own else None,
            "estimator": h.estimator if own else None, "service": s.service.name}


def run_variant(sc: Scenario, variant: Variant, *, seed: int = 0, source: Path | None = None,
                out_dir: Path | None = None, cli_set: Mapping[str, Any] | None = None,
                on_step: Callable[[int], None] | None = None,
                source_sha256: str | None = None,
                swept: Iterable[str] = ()) -> RunResult:
    """Run one variant with one seed. Bad settings raise InputError before anything runs.

    ``cli_set`` (the command line, or a sweep cell) goes beneath the variant's own settings;
    ``swept``: its keys a sweep varies (a swept setting the harness does not honour makes the
    run not applicable).
    ``on_step`` is called after each step with its number (progress, benchmarks).
    ``source_sha256``: the source file's sha256 as planned, for a worker without the file."""
    settings = resolve_settings(sc, variant, cli_set)
    if missing := missing_extras(variant.requires):
        # Not run, and no record: what it would test needs a package this install lacks.
        why = skip_reason(missing)
        return RunResult(sc.id, variant.name, seed, None, locale=sc.locale,
                         settings=key_settings(settings), overridden=overridden(variant, cli_set),
                         control=bool(variant.expect_fail), role=variant.kind,
                         # the prefix sweeps and reports file not-applicable runs by
                         error=f"NotApplicable: skipped: {why}", not_applicable=True,
                         skipped=why)
    world = sc.make_world(settings.tools)
    path = record_path(out_dir, sc.id, variant.name, seed) if out_dir else None
    writer = open_record(sc, variant, seed, source, settings, world, path, source_sha256)
    result = RunResult(sc.id, variant.name, seed, path, locale=sc.locale,
                       settings=key_settings(settings), overridden=overridden(variant, cli_set),
                       control=bool(variant.expect_fail), role=variant.kind,
                       rates=variant.fail_rates)
    # On for session steps (settings.scenario_layers) and for long-term memory.
    files = merged(sc.memory_files, variant.memory_files)
    own = settings.harness.persist or settings.harness.memory.mode != "none" or bool(files)
    workdir: Path | None = None
    if own or path is not None:
        # The run's own folder for the harness's files (offloaded context, store, memory),
        # shared by its instances, fresh each run: never files another seed or variant wrote,
        # and never one folder for two runs of a parallel `harnesslab run`.
        workdir = run_workdir(path)
    label = harness_label(settings.harness.harness)
    declared: list[frozenset[str]] = []

    def admit(harness: Harness) -> None:
        # What the harness declared decides whether this variant applies to it; recorded for
        # every harness but the reference one (whose records stay as they were).
        try:
            d = honours_of(harness, label)
        except ValueError as e:
            raise InputError(str(e), field="harness") from None
        declared.append(d)
        result.honours = sorted(d)
        if EVERY in d:
            return
        writer.emit({"type": "honours", "harness": label, "settings": sorted(d)})
        base = resolve([*scenario_layers(sc), cli_set or {}]).harness
        cell = {k: v for k, v in (cli_set or {}).items() if k in set(swept)}
        why = inapplicable(variant, d, label, base, settings.harness, cell)
        if why is not None:
            raise NotApplicable(why)

    # Each step judged as the next starts (judge.live): the record is judged as it is written.
    judge = writer.judge = LiveJudge(sc, writer)
    try:
        drive(sc, settings, world, writer, seed, workdir, on_step, admit, files)
        checks, not_applicable, metrics = judge.finish()
        writer.judge = None
        idle = world_part_idle(variant, declared[0], label, judge.tally.kinds) \
            if declared else None
        if idle is not None:
            raise NotApplicable(idle)  # judged, but no verdict: nothing of it is reported
        result.checks, result.checks_not_applicable = checks, not_applicable
        for c in result.checks:
            writer.emit(c.to_dict())
        if result.checks_not_applicable:
            writer.emit({"type": "not_applicable", "checks": result.checks_not_applicable,
                         "why": NOT_APPLICABLE_WHY})
        result.verdict = verdict(result.checks, variant, result.checks_not_applicable)
        if result.verdict.unreadable:
            writer.emit({"type": "unreadable", "checks": result.verdict.unreadable,
                         "why": UNREADABLE_WHY})
        result.metrics = metrics
        result.call_errors = judge.tally.call_errors
        writer.emit({"type": "result", "expected": result.verdict.ok,
                     "unexpected": result.verdict.unexpected, "metrics": result.metrics})
    except Exception as e:
        result.error = f"{type(e).__name__}: {e}"
        result.not_applicable = isinstance(e, NotApplicable)
        writer.emit({"type": "run_error", "error": result.error,
                     "traceback": traceback.format_exc(limit=8)})
    finally:
        writer.close()
        if workdir is not None and path is None:
            shutil.rmtree(workdir, ignore_errors=True)
        elif workdir is not None and not any(workdir.iterdir()):
            workdir.rmdir()  # a harness that wrote no file leaves no folder
    return result


def run_workdir(record: Path | None) -> Path:
    """An empty folder for one run's harness files: beside the record (``seed<N>.work``) or,
    without one, a temporary folder the run removes."""
    if record is None:
        return Path(tempfile.mkdtemp(prefix="harnesslab-run-"))
    work = record.with_suffix(".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def harness_spec(harness: str | type | Callable[..., Any]) -> str:
    """The ``harness`` setting for a name, a spec string, or a class (module:qualname)."""
    if isinstance(harness, str):
        return harness
    module, name = getattr(harness, "__module__", None), getattr(harness, "__qualname__", None)
    if not module or not name or "<locals>" in name:
        raise InputError("a harness class must be importable (defined at module level)",
                         field="harness")
    return f"{module}:{name}"


def run_scenario_file(path: Path, *, seeds: Iterable[int] = (0,), out_dir: Path | None = None,
                      cli_set: Mapping[str, Any] | None = None,
                      variants: Iterable[str] | None = None,
                      harness: str | type | None = None) -> list[RunResult]:
    """Run every variant (or the named ones) of one scenario file for each seed. ``harness``
    (a name, ``module:Class``, ``path.py:Class`` or a class) is the harness under test."""
    sc = load_scenario(path)
    settings = dict(cli_set or {})
    if harness is not None:
        settings["harness"] = harness_spec(harness)
    names = [v.name for v in sc.variants]
    wanted = list(variants) if variants is not None else names
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise InputError(f"no variant {unknown[0]!r}; expected one of {', '.join(names)}",
                         file=str(path), field="--variant")
    return [run_variant(sc, v, seed=seed, source=path, out_dir=out_dir, cli_set=settings)
            for v in sc.variants if v.name in wanted for seed in seeds]


@dataclass(frozen=True)
class PlannedRun:
    """One run of ``harnesslab run`` as plain data, for a worker process: the scenario file
    (loaded again there; its sha256 as planned), the variant, the seed, the command line's
    settings, the out folder. ``index`` puts results back in the order a serial run gives."""

    index: int
    scenario_path: str
    scenario_sha256: str
    variant: str
    seed: int
    cli_set: dict[str, Any]
    out_dir: str
    domain_sha256: str | None = None  # a declared domain's file, as planned


def run_planned(task: PlannedRun) -> tuple[int, RunResult]:
    """Run one planned run (module level, so an executor's worker can call it). A worker
    loads each scenario file once, as a sweep's do."""
    from harnesslab.scenario.loader import planned_scenario

    path = Path(task.scenario_path)
    sc = planned_scenario(task.scenario_path, task.scenario_sha256,
                          domain_sha256=task.domain_sha256)
    variant = next(v for v in sc.variants if v.name == task.variant)
    return task.index, run_variant(sc, variant, seed=task.seed, source=path,
                                   out_dir=Path(task.out_dir), cli_set=task.cli_set)
