"""The harness instances of one run: which instance serves each user turn, and what the session
steps (``bench.steps``) do to them: restart, new session, switch, alternate instances, a kill
mid-turn.

A harness that keeps its own store (``owns_store = True``, as the reference harness) restores
itself: the bench hands the fresh instance nothing but the session and the workdir. Any other
harness (a user's class, the AgentScope adapter) gets what an external checkpointer would give
it: the last state ``save_state()`` returned, through JSON, into ``load_state()`` (unless the
settings say the deployment keeps no session: ``persist: false`` or ``resume: session_id``, the
controls, under which a fresh instance gets nothing but the session id). A harness
that raises :class:`~harnesslab.harness.base.StateUnsupported` cannot be resumed or handed
over: a ``resume`` event says so and the run stops as not applicable
(:class:`~harnesslab.errors.NotApplicable`, reported n/a apart from passes and failures), never
a silent pass.

Resume fidelity: the state the old instance held (``save_state()`` before a restart; for a
kill, after the last finished turn) compared, as canonical JSON, with the fresh instance's
``save_state()`` once it took over.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from harnesslab.errors import NotApplicable
from harnesslab.events import EventSink
from harnesslab.harness.base import (
    Harness,
    HarnessContext,
    ModelEndpoint,
    StateUnsupported,
    TurnResult,
    context_window,
    count_tokens,
)
from harnesslab.messages import Request, Response
from harnesslab.scenario.steps import (
    InstancesStep,
    KillStep,
    NewSessionStep,
    RestartStep,
    SessionStep,
    SwitchStep,
)

# (session id, user) -> a HarnessContext for a fresh instance of that session
ContextFactory = Callable[[str, str], HarnessContext]
HarnessFactory = Callable[[HarnessContext], Harness]


class InstanceKilled(BaseException):
    """The bench abandons an instance mid-turn. A BaseException, as a SIGKILL is beyond any
    ``except Exception`` a harness has."""


class KillDoor:
    """The model door of one instance, which the bench can arm to kill it before a call."""

    __slots__ = ("__inner", "__left")

    def __init__(self, inner: ModelEndpoint) -> None:
        self.__inner = inner
        self.__left: int | None = None

    def arm(self, at_call: int | None) -> None:
        self.__left = at_call

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        if self.__left is not None:
            self.__left -= 1
            if self.__left <= 0:
                self.__left = None
                raise InstanceKilled
        return self.__inner.call(request, purpose=purpose, estimate=estimate)

    def count_tokens(self, request: Request) -> int:
        """The inner door's token count (a count is no call: it never kills)."""
        return count_tokens(self.__inner, request)

    def context_window(self) -> int | None:
        """The inner door's context window (``harness.base.ModelInfo``)."""
        return context_window(self.__inner)


@dataclass
class _Instance:
    harness: Harness
    door: KillDoor


@dataclass
class _Session:
    id: str
    user: str
    instances: list[_Instance]
    next: int = 0        # the instance that serves the next turn
    last: int = 0        # the instance that last changed the state
    served: bool = False  # a turn was served: a new instance takes the next one
    kill: tuple[int, KillStep] | None = None  # armed for the next turn: (step, spec)


def canonical(state: Any) -> str:
    return json.dumps(state, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def differing_keys(a: Any, b: Any) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(k for k in a.keys() | b.keys() if canonical(a.get(k)) != canonical(b.get(k)))
    return [] if canonical(a) == canonical(b) else ["(state)"]


def _save(h: Harness) -> tuple[dict[str, Any] | None, str]:
    try:
        return json.loads(canonical(h.save_state())), ""
    except StateUnsupported as e:
        return None, str(e) or "state unsupported"


class Instances:
    """The open sessions of a run and their instances; one session is current."""

    def __init__(self, make_context: ContextFactory, make_harness: HarnessFactory,
                 sink: EventSink, session_id: str, user: str, *, checkpoint: bool = True
                 ) -> None:
        self._make_context = make_context
        self._checkpoint = checkpoint  # the bench hands state to harnesses without a store
        self._make_harness = make_harness
        self._sink = sink
        self._sessions: dict[str, _Session] = {}
        self._built: list[Harness] = []  # every instance, to let each go at the end
        self.current = self._open(session_id, user)

    def _fresh(self, session_id: str, user: str) -> _Instance:
        ctx = self._make_context(session_id, user)
        door = KillDoor(ctx.endpoint)
        inst = _Instance(self._make_harness(replace(ctx, endpoint=door)), door)
        self._built.append(inst.harness)
        return inst

    @staticmethod
    def _retire(inst: _Instance) -> None:
        """Stop an instance a restart replaces before its successor starts (a program saves
        and exits first, as a redeploy does); a harness without ``close`` just goes."""
        close = getattr(inst.harness, "close", None)
        if callable(close):
            close()

    def close(self) -> None:
        """Let every instance built go (``close()``, for the harnesses that have one: a
        black-box program, a session on the wire)."""
        for h in self._built:
            close = getattr(h, "close", None)
            if callable(close):
                close()

    def _open(self, session_id: str, user: str) -> _Session:
        s = _Session(session_id, user, [self._fresh(session_id, user)])
        self._sessions[session_id] = s
        return s

    @property
    def harness(self) -> Harness:
        """The instance holding the current session's latest state (filler goes to it)."""
        s = self.current
        return s.instances[s.last].harness

    # -- steps ------------------------------------------------------------------------------------
    def apply(self, step: SessionStep, index: int) -> None:
        s = self.current
        if isinstance(step, RestartStep):
            olds = [_save(i.harness) for i in s.instances]
            state, why = olds[s.last]
            for old in s.instances:
                self._retire(old)
            s.instances = [self._fresh(s.id, s.user) for _ in s.instances]
            s.next = s.last = 0
            for inst in s.instances:
                self._resume(s, inst, state, why, cause="restart", origin=index)
        elif isinstance(step, NewSessionStep):
            spec = step.new_session
            self.current = self._open(spec.id, spec.user or s.user)
            self._sink.emit({"type": "session", "session": spec.id, "user": self.current.user,
                             "opened": True})
        elif isinstance(step, SwitchStep):
            self.current = self._sessions[step.switch]
            self._sink.emit({"type": "session", "session": step.switch,
                             "user": self.current.user, "opened": False})
        elif isinstance(step, InstancesStep):
            n = step.instances
            # Fewer instances: the one holding the latest state stays (first), the others go.
            kept = [s.instances[s.last]] + [x for i, x in enumerate(s.instances) if i != s.last]
            s.instances = kept[:n] + [self._fresh(s.id, s.user) for _ in range(n - len(kept))]
            s.last = 0
            s.next = 1 % n if s.served else 0
            self._sink.emit({"type": "instances", "session": s.id, "count": n})
        elif isinstance(step, KillStep):
            s.kill = (index, step)

    def _resume(self, s: _Session, inst: _Instance, state: dict[str, Any] | None, why: str, *,
                cause: str, origin: int) -> None:
        """Hand ``state`` to a fresh instance (unless it restores itself) and record how
        faithfully it took over."""
        event: dict[str, Any] = {"type": "resume", "cause": cause, "origin": origin,
                                 "session": s.id, "harness_restores": self._restores(inst)}
        expect = getattr(inst.harness, "expect_resume", None)
        if getattr(inst.harness, "resume_from_requests", False) and callable(expect):
            # A black-box program: judged at its first request, from the history it shows.
            expect(state, event, self._sink.emit)
            return
        try:
            if state is not None and self._hands_state(inst):
                inst.harness.load_state(json.loads(canonical(state)))
            after, why_after = _save(inst.harness)
        except StateUnsupported as e:
            after, why_after = None, str(e) or "state unsupported"
        except Exception as e:
            # A harness that cannot load its own state is resumed without it; recorded.
            event["error"] = f"{type(e).__name__}: {e}"
            event["traceback"] = traceback.format_exc(limit=8)
            after, why_after = None, ""
        if state is None or (after is None and why_after):
            self._not_applicable(s, cause, origin, why or why_after)
        else:
            differs = differing_keys(state, after)
            event.update(applicable=True, fidelity=not differs, differs=differs)
        self._sink.emit(event)

    def _not_applicable(self, s: _Session, cause: str, origin: int, why: str) -> None:
        reason = f"not applicable: {why}"
        self._sink.emit({"type": "resume", "cause": cause, "origin": origin, "session": s.id,
                         "harness_restores": False, "applicable": False, "fidelity": None,
                         "reason": reason})
        raise NotApplicable(f"a {cause} (step {origin}) needs the harness's state; {reason}")

    @staticmethod
    def _restores(inst: _Instance) -> bool:
        return bool(getattr(inst.harness, "owns_store", False))

    def _hands_state(self, inst: _Instance) -> bool:
        return self._checkpoint and not self._restores(inst)

    # -- turns ------------------------------------------------------------------------------------
    def serve(self, turn: Callable[[Harness], tuple[TurnResult, str]]
              ) -> tuple[TurnResult, str, dict[str, Any]]:
        """Serve one user turn of the current session by its next instance: the turn's result,
        a traceback (or ""), and what the turn event records about the instances."""
        s = self.current
        k = s.next
        inst = s.instances[k]
        if k != s.last and self._hands_state(inst):
            # Another instance served last: the bench's checkpointer hands its state over.
            state, why = _save(s.instances[s.last].harness)
            if state is None:
                raise NotApplicable(f"alternate instances need the harness's state; {why}")
            inst.harness.load_state(json.loads(canonical(state)))
        info: dict[str, Any] = {"session": s.id, "user": s.user, "instance": k}
        kill, s.kill = s.kill, None
        before: tuple[dict[str, Any] | None, str] = (None, "")
        if kill is not None:
            before = _save(inst.harness)
            if before[0] is None and not self._restores(inst):
                # Nothing could take over: not applicable, before the turn sends anything.
                self._not_applicable(s, "kill", kill[0], before[1])
            inst.door.arm(kill[1].kill.at_call)
        try:
            res, tb = turn(inst.harness)
        except InstanceKilled:
            # The turn in flight is lost; a fresh instance takes the killed one's place.
            assert kill is not None
            fresh = self._fresh(s.id, s.user)
            s.instances[k] = fresh
            self._resume(s, fresh, before[0], before[1], cause="kill", origin=kill[0])
            info["killed"] = True
            res = TurnResult("", True, f"instance killed before model call "
                             f"{kill[1].kill.at_call} (the turn in flight is lost)")
            tb = ""
        else:
            inst.door.arm(None)
            if kill is not None:
                info["killed"] = False  # the turn ended before that call: nothing was killed
        s.last, s.served = k, True
        s.next = (k + 1) % len(s.instances)
        return res, tb, info
