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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.bench.checks import (
    NOT_APPLICABLE_WHY,
    CheckOutcome,
    Verdict,
    answer_call,
    evaluate_split,
    verdict,
)
from harnesslab.bench.doors import harness_context
from harnesslab.bench.instances import Instances
from harnesslab.bench.metrics import run_metrics
from harnesslab.bench.record import Declared
from harnesslab.bench.scenario import (
    AdvanceStep,
    FailRate,
    FillerStep,
    Scenario,
    UserStep,
    Variant,
    load_scenario,
)
from harnesslab.bench.settings import Settings, overridden, resolve_settings
from harnesslab.bench.steps import SessionStep
from harnesslab.bench.writer import RecordWriter
from harnesslab.errors import InputError, NotApplicable
from harnesslab.harness.base import Harness, HarnessContext, HarnessGone, TurnResult
from harnesslab.harness.registry import harness_label, load_harness
from harnesslab.messages import DataBlock, Message, Request
from harnesslab.sim.endpoint import Endpoint, ModelLike
from harnesslab.sim.filler import exchanges, make_filler
from harnesslab.sim.intents import CONSTRAINT_PHRASES
from harnesslab.sim.model import FakeModel, SummarizerProfile
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World, parse_duration
from harnesslab.tokens import CountRule, TokenCache, make_rule

# A 1x1 PNG: what an attached image is (its size never matters to an estimator).
TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
            "AAAABJRU5ErkJggg==")


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
    # The checks this run cannot judge (a real model has no annotations), by id.
    checks_not_applicable: list[str] = field(default_factory=list)

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
                "checks": [c.to_dict() for c in self.checks], "metrics": self.metrics}


def _declared(sc: Scenario) -> Declared:
    d = Declared(ids=sorted([*sc.world.orders, *sc.world.users]))
    for utt, it in sc.lexicon.items():
        for c in it.constraints:
            d.constraints.setdefault(c.value, [*CONSTRAINT_PHRASES[c],
                                               *sc.model.phrases.get(c, [])])
        for cl in it.claims:
            claim = cl.to_claim()
            d.claims.setdefault(f"{claim.kind.value}={claim.value}", []).append(utt)
    return d


def _header(sc: Scenario, source: Path | None, variant: Variant, seed: int, s: Settings,
            world: World) -> dict[str, Any]:
    sha = hashlib.sha256(source.read_bytes()).hexdigest() if source else None
    ages = {t: (a.total_seconds() if (a := world.max_age(t)) is not None else None)
            for t in world.spec.offered()}
    return {
        "scenario": sc.id, "title": sc.title, "locale": sc.locale, "variant": variant.name,
        "seed": seed, "scenario_file": str(source) if source else None,
        "scenario_sha256": sha, "harness_name": harness_label(s.harness.harness),
        "harness": s.harness.model_dump(mode="json"),
        "service": s.service.model_dump(mode="json"), "summarizer": s.summarizer,
        "extractor": s.extractor,
        "phrases": {c.value: list(ws) for c, ws in sc.model.phrases.items()},
        "session_user": sc.session.user, "session_id": sc.session.id,
        "private": {u: [v.phone, v.address] for u, v in sc.world.users.items()},
        "world_ids": sorted([*sc.world.orders, *sc.world.users]), "max_ages": ages,
        "lexicon": {k: v.model_dump(mode="json", exclude_defaults=True)
                    for k, v in sc.lexicon.items()},
        "expects": {str(i): st.expect.model_dump(mode="json", exclude_defaults=True)
                    for i, st in enumerate(sc.steps, start=1) if isinstance(st, UserStep)},
        "expect_fail": [f if isinstance(f, str) else f.model_dump() for f in variant.expect_fail],
        # Only a real model is named: the fake model's records stay as they were.
        **({"model": s.model.header()} if s.model.real else {}),
    }


def open_record(sc: Scenario, variant: Variant, seed: int, source: Path | None, s: Settings,
                world: World, path: Path | None, **extra: Any) -> RecordWriter:
    """A record writer with the run's header (plus ``extra`` header keys) and declared facts."""
    return RecordWriter({**_header(sc, source, variant, seed, s, world), **extra},
                        _declared(sc), path)


def record_path(out_dir: Path, scenario: str, variant: str, seed: int) -> Path:
    return out_dir / scenario / variant / f"seed{seed}.jsonl"


KEY_SETTINGS = ("harness", "strategy", "context_size", "trigger_ratio", "estimator", "service")


def key_settings(s: Settings) -> dict[str, Any]:
    """The settings a results table shows for each run."""
    h = s.harness
    return {"harness": harness_label(h.harness), "strategy": h.strategy,
            "context_size": h.context_size, "trigger_ratio": h.trigger_ratio,
            "estimator": h.estimator, "service": s.service.name}


def run_variant(sc: Scenario, variant: Variant, *, seed: int = 0, source: Path | None = None,
                out_dir: Path | None = None, cli_set: Mapping[str, Any] | None = None,
                on_step: Callable[[int], None] | None = None) -> RunResult:
    """Run one variant with one seed. Bad settings raise InputError before anything runs.

    ``cli_set`` (the command line, or a sweep cell) goes beneath the variant's own settings.
    ``on_step`` is called after each step with its number (progress, benchmarks)."""
    settings = resolve_settings(sc, variant, cli_set)
    world = World(sc.world.with_tools(settings.tools))
    path = record_path(out_dir, sc.id, variant.name, seed) if out_dir else None
    writer = open_record(sc, variant, seed, source, settings, world, path)
    result = RunResult(sc.id, variant.name, seed, path, locale=sc.locale,
                       settings=key_settings(settings), overridden=overridden(variant, cli_set),
                       control=bool(variant.expect_fail), role=variant.kind,
                       rates=variant.fail_rates)
    # On for session steps (settings.scenario_layers) and for long-term memory.
    own = settings.harness.persist or settings.harness.memory.mode != "none"
    workdir: Path | None = None
    if own or path is not None:
        # The run's own folder for the harness's files (offloaded context, store, memory),
        # shared by its instances, fresh each run: never files another seed or variant wrote,
        # and never one folder for two runs of a parallel `harnesslab run`.
        workdir = run_workdir(path)
    try:
        _drive(sc, settings, world, writer, seed, workdir, on_step)
        result.checks, result.checks_not_applicable = evaluate_split(writer.record, sc)
        for c in result.checks:
            writer.emit(c.to_dict())
        if result.checks_not_applicable:
            writer.emit({"type": "not_applicable", "checks": result.checks_not_applicable,
                         "why": NOT_APPLICABLE_WHY})
        result.verdict = verdict(result.checks, variant, result.checks_not_applicable)
        result.metrics = run_metrics(writer.record, result.checks)
        result.call_errors = [(e["estimate"] - e["true_input"]) / e["true_input"]
                              for e in writer.record.of_type("model_call")
                              if e["true_input"] and e["estimate"] is not None]
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


def _turn(harness: Harness, text: str, images: tuple[DataBlock, ...]) -> tuple[TurnResult, str]:
    try:
        res = harness.turn(text, images)
    except HarnessGone:
        raise  # nothing more can be asked of it: the run fails with the reason
    except Exception as e:
        # A harness that crashes fails the turn, with what it raised; the run goes on.
        return TurnResult("", True, f"harness raised {type(e).__name__}: {e}"), \
            traceback.format_exc(limit=8)
    if not isinstance(getattr(res, "text", None), str):
        return TurnResult("", True, f"harness returned {type(res).__name__}, not a TurnResult"), ""
    return res, ""


def _model_failed(writer: RecordWriter, step: int, first: int, last: int,
                  reply: str = "") -> tuple[bool, str]:
    """A turn the harness completed still failed when the model's answering reply asked to
    clarify (it could not find the utterance or its referent) or said it could not check (the
    fact it needed was an error): design 3.3, a failed turn, whatever text came back."""
    replies = [e for e in writer.record.in_step(step, "model_call")
               if first <= e["call"] <= last and e["purpose"] == "reply"]
    answering = answer_call(replies, reply)
    if answering is None:
        return False, ""
    ann = answering.get("annotations") or {}
    if ann.get("kind") == "clarify":
        return True, f"the model asked to clarify ({ann.get('reason')})"
    if ann.get("kind") == "answer" and (ann.get("cited") or {}).get("error"):
        return True, "the model could not check (its tool result was an error)"
    if ann.get("kind") == "answer" and ann.get("reason") == "tool_not_offered":
        return True, "the model could not check (no tool for it was offered)"
    if ann.get("kind") == "answer" and ann.get("unable"):
        # e.g. a result that lacks what the act needs: said so, no value stated
        return True, f"the model could not check ({ann['unable']})"
    return False, ""


def world_context(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
                  workdir: Path | None = None) -> tuple[HarnessContext, Endpoint, TokenCache]:
    """What a harness is handed for one run of ``sc`` in ``world``, recording into ``writer``:
    the service and fake model behind the endpoint, the world's tools and clock."""
    cache = TokenCache()
    service = SimulatedService(s.service, cache)
    model: ModelLike = FakeModel(
        sc.intents(), seed=seed, summarizer=SummarizerProfile(**s.summarizer),
        extractor=SummarizerProfile(**s.extractor),
        max_ages={t: world.max_age(t) for t in world.spec.offered()},
        phrases={k: tuple(v) for k, v in sc.model.phrases.items()})
    if s.model.real:
        from harnesslab.bench.real_model import OpenAICompatibleModel

        model = OpenAICompatibleModel(s.model, s.service.name)
    endpoint = Endpoint(service, model, writer)
    ctx = harness_context(endpoint, ToolBox(world, seed=seed), world.clock, writer,
                          session_id=sc.session.id, user_id=sc.session.user, workdir=workdir,
                          cache=cache)
    return ctx, endpoint, cache


def _drive(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
           workdir: Path | None, on_step: Callable[[int], None] | None = None) -> None:
    ctx, endpoint, cache = world_context(sc, s, world, writer, seed, workdir)
    cls = load_harness(s.harness.harness)

    def context(session_id: str, user: str) -> HarnessContext:
        if (session_id, user) == (ctx.session.id, ctx.session.user):
            return ctx
        # Another session: the same world, model and workdir; its tools act for its own user.
        return harness_context(endpoint, ToolBox(world, seed=seed), world.clock, writer,
                               session_id=session_id, user_id=user, workdir=workdir,
                               cache=cache)

    pool = Instances(context, lambda c: cls(c, s.harness), writer, sc.session.id,
                     sc.session.user, checkpoint=s.harness.persist and s.harness.resume == "store")
    try:
        _steps(sc, s, world, writer, seed, pool, endpoint, cache, on_step)
    finally:
        # Harnesses that hold resources (a black-box program, its session on the wire) let
        # them go when the run ends, however it ends.
        pool.close()


def _steps(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
           pool: Instances, endpoint: Endpoint, cache: TokenCache,
           on_step: Callable[[int], None] | None) -> None:
    # Filler is sized in the configured estimator (the harness's own belief, design 3.6).
    rule = make_rule(s.harness.estimator, cache)
    fillers = 0
    sessions = any(isinstance(st, SessionStep) for st in sc.steps)
    for i, step in enumerate(sc.steps, start=1):
        writer.step = i
        if isinstance(step, UserStep):
            images = tuple(DataBlock("image/png", TINY_PNG, name=f"photo-{i}-{k + 1}.png")
                           for k in range(step.images))
            first = endpoint.calls + 1
            res, tb, where = pool.serve(lambda h: _turn(h, step.user, images))  # noqa: B023
            failed, reason = res.failed, res.reason
            if not failed:
                failed, reason = _model_failed(writer, i, first, endpoint.calls, res.text)
            event: dict[str, Any] = {
                "type": "turn", "text": step.user, "reply": res.text, "failed": failed,
                "reason": reason, "harness_failed": res.failed, "first_call": first,
                "last_call": endpoint.calls, "now": world.clock.now().isoformat(),
                # which session, user and instance: only where a scenario has several (records
                # of the others stay as they were)
                **(where if sessions else {})}
            if tb:
                event["traceback"] = tb
            writer.emit(event)
        elif isinstance(step, AdvanceStep):
            world.clock.advance(parse_duration(step.advance))
            writer.emit({"type": "advance", "by": step.advance,
                         "now": world.clock.now().isoformat()})
        elif isinstance(step, SessionStep):
            pool.apply(step, i)
        elif isinstance(step, FillerStep):
            harness = pool.harness
            cfg, spec = s.harness, step.filler
            locale = spec.locale or sc.locale
            if spec.times_trigger is not None:
                target = spec.times_trigger * cfg.trigger_ratio * cfg.context_size
                pairs = make_filler(rule, target, locale, seed, start=fillers)
                harness.preload(pairs)
                drawn = len(pairs)
            else:
                assert spec.fill_to is not None
                target = spec.fill_to * cfg.trigger_tokens
                pairs, drawn = _fill_to(harness, rule, target,
                                        exchanges(locale, seed, start=fillers))
            fillers += drawn  # exchange ids never repeat, taken or passed over
            msgs: tuple[Message, ...] = tuple(m for p in pairs for m in p)
            est_units = sum(rule.message_units(m) for m in msgs)
            true = SimulatedService(s.service, cache).count_input(Request(system="", messages=msgs))
            writer.emit({"type": "filler", "exchanges": len(pairs), "target": target,
                         "estimate": rule.finalize(est_units), "true_tokens": true})
        if on_step is not None:
            on_step(i)


# How many exchanges in a row a fill_to filler passes over (each too large for the room left)
# before it stops: the room left is then smaller than nearly every exchange, whatever the seed,
# so a scenario sized to the trigger gets there in every seed.
FILL_TRIES = 32


def _fill_to(harness: Harness, rule: CountRule, target: float,
             stream: Iterator[tuple[Message, Message]]) -> tuple[list[tuple[Message, Message]],
                                                                int]:
    """Preload exchanges from ``stream`` while the harness's own estimate of its whole context
    stays below ``target``, passing over one that would reach it; the exchanges taken and how
    many were drawn."""
    pairs: list[tuple[Message, Message]] = []
    drawn = misses = 0
    now = _context_estimate(harness)  # read again only when a preload changed it
    for pair in stream:
        drawn += 1
        if now + rule.finalize(sum(rule.message_units(m) for m in pair)) >= target:
            misses += 1
            if misses == FILL_TRIES:
                break
            continue
        harness.preload([pair])
        pairs.append(pair)
        before, now, misses = now, _context_estimate(harness), 0
        if now <= before:
            break  # the harness does not accumulate (a window): it never fills
    return pairs, drawn


def _context_estimate(harness: Harness) -> int:
    now = harness.context_estimate()
    if now is None:
        raise NotApplicable("filler fill_to needs the harness's own estimate "
                            "(Harness.context_estimate returned None)")
    return now


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


def run_planned(task: PlannedRun) -> tuple[int, RunResult]:
    """Run one planned run (module level, so an executor's worker can call it). A worker
    loads each scenario file once, as a sweep's do."""
    from harnesslab.bench.sweep_rows import planned_scenario

    path = Path(task.scenario_path)
    sc = planned_scenario(task.scenario_path, task.scenario_sha256)
    variant = next(v for v in sc.variants if v.name == task.variant)
    return task.index, run_variant(sc, variant, seed=task.seed, source=path,
                                   out_dir=Path(task.out_dir), cli_set=task.cli_set)
