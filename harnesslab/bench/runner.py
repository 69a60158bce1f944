"""The runner: one scenario variant and seed through the reference harness against the
simulated world, written to a record; then its checks, verdict and metrics, from the record.

A run that crashes is a recorded result with its reason; it never stops a suite.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.bench.checks import CheckOutcome, Verdict, evaluate, verdict
from harnesslab.bench.metrics import run_metrics
from harnesslab.bench.record import Declared, RecordWriter
from harnesslab.bench.scenario import (
    AdvanceStep,
    FillerStep,
    Scenario,
    UserStep,
    Variant,
    load_scenario,
)
from harnesslab.bench.settings import Settings, resolve_settings
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.messages import DataBlock, Message, Request
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.filler import exchanges, make_filler
from harnesslab.sim.intents import CONSTRAINT_PHRASES
from harnesslab.sim.model import FakeModel, SummarizerProfile
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.tools import TOOLS, ToolBox
from harnesslab.sim.world import World, parse_duration
from harnesslab.tokens import TokenCache

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
            for t in TOOLS}
    return {
        "scenario": sc.id, "title": sc.title, "locale": sc.locale, "variant": variant.name,
        "seed": seed, "scenario_file": str(source) if source else None,
        "scenario_sha256": sha, "harness": s.harness.model_dump(mode="json"),
        "service": s.service.model_dump(mode="json"), "summarizer": s.summarizer,
        "session_user": sc.session.user, "session_id": sc.session.id,
        "private": {u: [v.phone, v.address] for u, v in sc.world.users.items()},
        "world_ids": sorted([*sc.world.orders, *sc.world.users]), "max_ages": ages,
        "lexicon": {k: v.model_dump(mode="json", exclude_defaults=True)
                    for k, v in sc.lexicon.items()},
        "expects": {str(i): st.expect.model_dump(mode="json", exclude_defaults=True)
                    for i, st in enumerate(sc.steps, start=1) if isinstance(st, UserStep)},
        "expect_fail": variant.expect_fail,
    }


def record_path(out_dir: Path, scenario: str, variant: str, seed: int) -> Path:
    return out_dir / scenario / variant / f"seed{seed}.jsonl"


def run_variant(sc: Scenario, variant: Variant, *, seed: int = 0, source: Path | None = None,
                out_dir: Path | None = None, cli_set: Mapping[str, Any] | None = None,
                on_step: Callable[[int], None] | None = None) -> RunResult:
    """Run one variant with one seed. Bad settings raise InputError before anything runs.
    ``on_step`` is called after each step with its number (progress, benchmarks)."""
    settings = resolve_settings(sc, variant, cli_set)
    world = World(sc.world)
    path = record_path(out_dir, sc.id, variant.name, seed) if out_dir else None
    writer = RecordWriter(_header(sc, source, variant, seed, settings, world), _declared(sc),
                          path)
    result = RunResult(sc.id, variant.name, seed, path, locale=sc.locale)
    try:
        _drive(sc, settings, world, writer, seed, path.parent if path else None, on_step)
        result.checks = evaluate(writer.record, sc)
        for c in result.checks:
            writer.emit(c.to_dict())
        result.verdict = verdict(result.checks, variant)
        result.metrics = run_metrics(writer.record, result.checks)
        result.call_errors = [(e["estimate"] - e["true_input"]) / e["true_input"]
                              for e in writer.record.of_type("model_call") if e["true_input"]]
        writer.emit({"type": "result", "expected": result.verdict.ok,
                     "unexpected": result.verdict.unexpected, "metrics": result.metrics})
    except Exception as e:
        result.error = f"{type(e).__name__}: {e}"
        writer.emit({"type": "run_error", "error": result.error,
                     "traceback": traceback.format_exc(limit=8)})
    finally:
        writer.close()
    return result


def _drive(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
           workdir: Path | None, on_step: Callable[[int], None] | None = None) -> None:
    cache = TokenCache()
    service = SimulatedService(s.service, cache)
    model = FakeModel(sc.intents(), seed=seed, summarizer=SummarizerProfile(**s.summarizer),
                      max_ages={t: world.max_age(t) for t in TOOLS},
                      phrases={k: tuple(v) for k, v in sc.model.phrases.items()})
    endpoint = Endpoint(service, model, writer)
    harness = ReferenceHarness(s.harness, endpoint, ToolBox(world), world.clock, writer,
                               session_id=sc.session.id, user_id=sc.session.user,
                               workdir=workdir, cache=cache)
    fillers = 0
    for i, step in enumerate(sc.steps, start=1):
        writer.step = i
        if isinstance(step, UserStep):
            images = tuple(DataBlock("image/png", TINY_PNG, name=f"photo-{i}-{k + 1}.png")
                           for k in range(step.images))
            res = harness.turn(step.user, images)
            writer.emit({"type": "turn", "text": step.user, "reply": res.text,
                         "failed": res.failed, "reason": res.reason,
                         "first_call": res.first_call, "last_call": res.last_call,
                         "now": world.clock.now().isoformat()})
        elif isinstance(step, AdvanceStep):
            world.clock.advance(parse_duration(step.advance))
            writer.emit({"type": "advance", "by": step.advance,
                         "now": world.clock.now().isoformat()})
        elif isinstance(step, FillerStep):
            cfg, spec = s.harness, step.filler
            locale = spec.locale or sc.locale
            if spec.times_trigger is not None:
                target = spec.times_trigger * cfg.trigger_ratio * cfg.context_size
                pairs = make_filler(harness.rule, target, locale, seed, start=fillers)
                for pair in pairs:
                    harness.inject(pair)
                    harness.maintain()
            else:
                assert spec.fill_to is not None
                target = spec.fill_to * cfg.trigger_tokens
                pairs = []
                for pair in exchanges(locale, seed, start=fillers):
                    now = harness.estimate(harness.request())
                    adds = harness.rule.finalize(sum(harness.rule.message_units(m)
                                                     for m in pair))
                    if now + adds >= target:
                        break
                    harness.inject(pair)
                    pairs.append(pair)
            fillers += len(pairs)
            msgs: tuple[Message, ...] = tuple(m for p in pairs for m in p)
            est_units = sum(harness.rule.message_units(m) for m in msgs)
            true = SimulatedService(s.service, cache).count_input(Request(system="", messages=msgs))
            writer.emit({"type": "filler", "exchanges": len(pairs), "target": target,
                         "estimate": harness.rule.finalize(est_units), "true_tokens": true})
        if on_step is not None:
            on_step(i)


def run_scenario_file(path: Path, *, seeds: Iterable[int] = (0,), out_dir: Path | None = None,
                      cli_set: Mapping[str, Any] | None = None,
                      variants: Iterable[str] | None = None) -> list[RunResult]:
    sc = load_scenario(path)
    wanted = set(variants) if variants is not None else None
    return [run_variant(sc, v, seed=seed, source=path, out_dir=out_dir, cli_set=cli_set)
            for v in sc.variants if wanted is None or v.name in wanted for seed in seeds]
