"""Driving a harness through a scenario's steps in the simulated world: user turns, clock
advances, fillers sized to a target, session steps, and the model failures a turn records.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

from harnesslab.adapters.local import LOCAL_MODEL
from harnesslab.errors import NotApplicable, TokenizerUnavailable
from harnesslab.harness.base import Harness, HarnessContext, HarnessGone, TurnResult
from harnesslab.harness.honours import honoured, honours_of
from harnesslab.harnesses.registry import harness_label, load_harness
from harnesslab.judge.checks import UNREADABLE_WHY, answer_call
from harnesslab.messages import DataBlock, Message, Request
from harnesslab.record.writer import RecordWriter
from harnesslab.run.doors import harness_context
from harnesslab.run.instances import Instances
from harnesslab.run.memory_files import place_memory_files
from harnesslab.scenario.memory_files import MemoryFile
from harnesslab.scenario.schema import (
    AdvanceStep,
    FillerStep,
    Scenario,
    UserStep,
)
from harnesslab.scenario.settings import Settings
from harnesslab.scenario.steps import SessionStep
from harnesslab.sim.endpoint import Endpoint, ModelLike
from harnesslab.sim.filler import exchanges, make_filler
from harnesslab.sim.model import FakeModel, SummarizerProfile
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.tools import toolbox_for
from harnesslab.sim.world import World, parse_duration
from harnesslab.tokens import CountRule, TokenCache, make_rule

# A 1x1 PNG: what an attached image is (its size never matters to an estimator).
TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
            "AAAABJRU5ErkJggg==")


def _turn(harness: Harness, text: str, images: tuple[DataBlock, ...]) -> tuple[TurnResult, str]:
    try:
        res = harness.turn(text, images)
    except (HarnessGone, TokenizerUnavailable):
        # Nothing more can be asked of it, or the bench cannot count (a vocabulary loads at
        # its first count): the run fails with the reason, never blamed on the harness.
        raise
    except Exception as e:
        # A harness that crashes fails the turn, with what it raised; the run goes on.
        return TurnResult("", True, f"harness raised {type(e).__name__}: {e}"), \
            traceback.format_exc(limit=8)
    if not isinstance(getattr(res, "text", None), str):
        return TurnResult("", True, f"harness returned {type(res).__name__}, not a TurnResult"), ""
    return res, ""


def _model_failed(writer: RecordWriter, step: int, first: int, last: int,
                  reply: str = "", said: str = "") -> tuple[bool, str, str]:
    """A turn the harness completed still failed when the model's answering reply asked to
    clarify (it could not find the utterance or its referent) or said it could not check (the
    fact it needed was an error): design 3.3, a failed turn, whatever text came back.

    The third value is why the bench, not the harness, is at fault (else ""): the answering
    request holds ``said`` (the turn's words) and the fake model still found no question in
    it, or the call asked for something the fake model does not read (docs/understanding.md).
    """
    replies = [e for e in writer.record.in_step(step, "model_call")
               if first <= e["call"] <= last and e["purpose"] == "reply"]
    answering = answer_call(replies, reply)
    if answering is None:
        return False, "", ""
    ann = answering.get("annotations") or {}
    if ann.get("kind") == "unreadable":
        return True, f"{UNREADABLE_WHY} ({ann.get('reason')})", str(ann.get("reason"))
    if ann.get("kind") == "clarify":
        if ann.get("reason") == "utterance_not_found" and said and \
                said in writer.record.shows(answering["request"], (said,)):
            why = "the request holds the turn's words but the fake model found no question " \
                  "it reads in it"
            return True, f"{UNREADABLE_WHY} ({why})", why
        return True, f"the model asked to clarify ({ann.get('reason')})", ""
    if ann.get("kind") == "answer" and (ann.get("cited") or {}).get("error"):
        return True, "the model could not check (its tool result was an error)", ""
    if ann.get("kind") == "answer" and ann.get("reason") == "tool_not_offered":
        return True, "the model could not check (no tool for it was offered)", ""
    if ann.get("kind") == "answer" and ann.get("unable"):
        # e.g. a result that lacks what the act needs: said so, no value stated
        return True, f"the model could not check ({ann['unable']})", ""
    return False, "", ""


def world_context(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
                  workdir: Path | None = None, clock_offset: timedelta | None = None
                  ) -> tuple[HarnessContext, Endpoint, TokenCache]:
    """What a harness is handed for one run of ``sc`` in ``world``, recording into ``writer``:
    the service and fake model behind the endpoint, the world's tools and clock (off by
    ``clock_offset``: a skewed host, for a harness that does not skew its clock itself)."""
    cache = TokenCache()
    service = SimulatedService(s.service, cache)
    model: ModelLike = FakeModel(
        sc.intents(), seed=seed, summarizer=SummarizerProfile(**s.summarizer),
        extractor=SummarizerProfile(**s.extractor),
        max_ages={t: world.max_age(t) for t in world.offered()},
        phrases={k: tuple(v) for k, v in sc.model.phrases.items()},
        zone=world.clock.now().tzinfo or UTC, domain=sc.compiled_domain)
    if s.model.real:
        from harnesslab.adapters.real_model import OpenAICompatibleModel

        model = OpenAICompatibleModel(s.model, s.service.name)
    endpoint = Endpoint(service, model, writer)
    writer.count_compactions(service.count_aside)
    ctx = harness_context(endpoint, toolbox_for(world, seed), world.clock, writer,
                          session_id=sc.session.id, user_id=sc.session.user, workdir=workdir,
                          cache=cache, clock_offset=clock_offset)
    return ctx, endpoint, cache


def host_clock_offset(cls: Any, s: Settings) -> timedelta | None:
    """``clock_offset_hours`` as the bench applies it: on the clock it hands a harness that does
    not declare the setting (a skewed host); None for one that skews its own clock."""
    hours = s.harness.clock_offset_hours
    label = harness_label(s.harness.harness)
    if not hours or honoured(honours_of(cls, label), "clock_offset_hours"):
        return None
    return timedelta(hours=hours)


def drive(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
          workdir: Path | None, on_step: Callable[[int], None] | None = None,
          admit: Callable[[Harness], None] | None = None,
          memory_files: Sequence[MemoryFile] = ()) -> None:
    """Run the scenario's steps. ``admit`` sees the first instance before any step (it raises
    NotApplicable when the variant does not apply to what the harness declared);
    ``memory_files`` are placed in the workdir before the first instance is built."""
    # A black-box program's calls are served on the wire's event loop when the model is the
    # fake one (adapters.local.LOCAL_MODEL): set for this run's harnesses only.
    local = LOCAL_MODEL.set(not s.model.real)
    try:
        _drive(sc, s, world, writer, seed, workdir, on_step, admit, memory_files)
    finally:
        LOCAL_MODEL.reset(local)


def _drive(sc: Scenario, s: Settings, world: World, writer: RecordWriter, seed: int,
           workdir: Path | None, on_step: Callable[[int], None] | None,
           admit: Callable[[Harness], None] | None, memory_files: Sequence[MemoryFile]) -> None:
    cls = load_harness(s.harness.harness)
    place_memory_files(memory_files, cls, s.harness, workdir, harness_label(s.harness.harness),
                       writer)
    offset = host_clock_offset(cls, s)
    ctx, endpoint, cache = world_context(sc, s, world, writer, seed, workdir, offset)

    def context(session_id: str, user: str) -> HarnessContext:
        if (session_id, user) == (ctx.session.id, ctx.session.user):
            return ctx
        # Another session: the same world, model and workdir; its tools act for its own user.
        return harness_context(endpoint, toolbox_for(world, seed), world.clock, writer,
                               session_id=session_id, user_id=user, workdir=workdir,
                               cache=cache, clock_offset=offset)

    pool = Instances(context, lambda c: cls(c, s.harness), writer, sc.session.id,
                     sc.session.user, checkpoint=s.harness.persist and s.harness.resume == "store")
    try:
        if admit is not None:
            admit(pool.harness)
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
            failed, reason, unreadable = res.failed, res.reason, ""
            if not failed:
                failed, reason, unreadable = _model_failed(writer, i, first, endpoint.calls,
                                                           res.text, step.user)
            event: dict[str, Any] = {
                "type": "turn", "text": step.user, "reply": res.text, "failed": failed,
                "reason": reason, "harness_failed": res.failed, "first_call": first,
                "last_call": endpoint.calls, "now": world.clock.now().isoformat(),
                # which session, user and instance: only where a scenario has several (records
                # of the others stay as they were)
                **(where if sessions else {}),
                # only when it happened: records of readable turns stay as they were
                **({"unreadable": unreadable} if unreadable else {})}
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
                # In that order: the product's rounding is in every record's filler event.
                target = spec.times_trigger * s.filler_base if s.filler_base is not None \
                    else spec.times_trigger * cfg.trigger_ratio * cfg.context_size
                pairs = make_filler(rule, target, locale, seed, start=fillers)
                answered = harness.preload(pairs)
                drawn = len(pairs)
            else:
                assert spec.fill_to is not None
                target = spec.fill_to * cfg.trigger_tokens
                pairs, drawn = _fill_to(harness, rule, target,
                                        exchanges(locale, seed, start=fillers))
                answered = None  # fill_to needs the harness's estimate: it preloads
            fillers += drawn  # exchange ids never repeat, taken or passed over
            msgs: tuple[Message, ...] = tuple(m for p in pairs for m in p)
            est_units = sum(rule.message_units(m) for m in msgs)
            # The run's own service: each filler message is encoded once, here, and its count
            # is still known when the harness sends it.
            true = endpoint.count_aside(Request(system="", messages=msgs))
            writer.emit({"type": "filler", "exchanges": len(pairs), "target": target,
                         "estimate": rule.finalize(est_units), "true_tokens": true,
                         # only from a harness that ran them as turns: preloaded records
                         # stay as they were
                         **({"replies": list(answered)} if answered is not None else {})})
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
