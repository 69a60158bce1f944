"""The harness interface: what the bench needs from a system under test, and the narrow,
one-way things a harness is handed, as a real harness has them (design 2).

A harness is handed a :class:`HarnessContext`:

- ``endpoint``: model calls. ``call(request, purpose=..., estimate=...)`` returns the reply's
  blocks and the billed usage, or raises :class:`~harnesslab.errors.ServiceRejected` as a
  real API answers 400 (``ContextOverflowError``: too long; ``ProtocolError``: a malformed
  conversation, such as a tool result without its call). ``estimate`` is the harness's own
  belief about the request's size (``None`` when it has none); the bench records it next to
  the true count. ``count_tokens(request)`` (:class:`TokenCounting`) is the API's token
  counting endpoint (Anthropic's ``count_tokens``, OpenAI's ``responses/input_tokens``): the
  input tokens the service would bill for the request, nothing admitted, billed or recorded.
- ``tools``: ``schemas()`` and ``run(name, arguments_json, acting_user)``. A failing tool is a
  result (``is_error``), never an exception. Who the tool acts for is the harness's choice:
  the verified session user, unless the harness trusts what the model passed.
- ``clock``: ``now()`` only; the world's time, which the harness cannot move.
- ``sink``: ``emit(event)`` only; what the harness wants recorded (compactions, hints).
- ``session``: the session id and the user the server verified.
- ``workdir``: a folder of its own for files (offloaded context, a session store), or None.

Nothing else: no scenario, no expectations, no lexicon, no world, no fake model. The bench
records every model call and every tool run itself, so a harness that emits nothing is still
measured on everything visible in its requests, tool runs and replies.

Restarts, alternate instances and kills (``bench.steps``) build fresh instances on the same
session and workdir. A harness whose class sets ``owns_store = True`` restores itself from its
own store there (the reference harness); any other gets its last :meth:`Harness.save_state`,
through JSON, in :meth:`Harness.load_state`.

A harness class is built as ``cls(context, config)`` where ``config`` is the resolved
:class:`~harnesslab.harness.config.HarnessConfig` (context_size, trigger_ratio, ... ; a harness
may ignore what it has no use for). It answers :class:`Harness`; :class:`HarnessBase` gives
the optional parts a default.

A harness says which harness settings it honours (``honours``, ``harnesslab.harness.honours``):
``HarnessBase`` declares none, so a variant defined by ``strategy``, ``tools`` or any other
harness setting is not applicable to it (reported apart from failures, with the reason) until
it declares that setting, e.g. ``honours = frozenset({"strategy", "codex.*"})``. The world's
settings (service, summarizer and extractor profiles, failing tools, the clock) apply to every
harness whatever it declares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harnesslab.events import EventSink
from harnesslab.messages import DataBlock, Message, Request, Response, ToolOutcome, ToolSchema

if TYPE_CHECKING:
    from harnesslab.harness.config import HarnessConfig
    from harnesslab.tokens import TokenCache

__all__ = ["Clock", "EventSink", "Harness", "HarnessBase", "HarnessContext", "HarnessGone",
           "ModelEndpoint",
           "Session", "StateUnsupported", "TokenCounting", "ToolExecutor", "TurnResult",
           "count_tokens"]


class ModelEndpoint(Protocol):
    """The model, behind the service that enforces its true limits."""

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response: ...


@runtime_checkable
class TokenCounting(Protocol):
    """An endpoint that also counts, as the APIs' token counting endpoints do (module
    docstring); the bench's endpoints all do, a harness's own stand-in need not."""

    def count_tokens(self, request: Request) -> int: ...


@runtime_checkable
class ModelInfo(Protocol):
    """An endpoint that says how large its model's context window is, as a model server's
    model information does (Ollama's ``/api/show``; None: it does not know); the bench's
    endpoints all do."""

    def context_window(self) -> int | None: ...


def context_window(endpoint: object) -> int | None:
    """``endpoint``'s context window (the doors that wrap an endpoint pass it on through this);
    None when it says none."""
    return endpoint.context_window() if isinstance(endpoint, ModelInfo) else None


def count_tokens(endpoint: object, request: Request) -> int:
    """``endpoint``'s token count of ``request`` (the doors that wrap an endpoint pass the
    count on through this); NotImplementedError when it offers none."""
    if not isinstance(endpoint, TokenCounting):
        raise NotImplementedError("this endpoint offers no token count")
    return endpoint.count_tokens(request)


class ToolExecutor(Protocol):
    """The business tools, run on behalf of the acting user the harness names."""

    def schemas(self) -> tuple[ToolSchema, ...]: ...

    def run(self, name: str, arguments: str, acting_user: str) -> ToolOutcome: ...


class Clock(Protocol):
    """Read-only time."""

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class Session:
    id: str
    user: str  # verified by the server, never by anything said in the chat


@dataclass(frozen=True)
class HarnessContext:
    """Everything a harness is handed (module docstring)."""

    endpoint: ModelEndpoint
    tools: ToolExecutor
    clock: Clock
    sink: EventSink
    session: Session
    workdir: Path | None = None
    cache: TokenCache | None = None  # a shared tokenizer cache: speed only, never semantics


@dataclass(frozen=True)
class TurnResult:
    """A harness's answer to one user turn. ``failed`` with a short ``reason`` when it could not
    answer (overflow, a failed compaction, too many iterations)."""

    text: str
    failed: bool = False
    reason: str = ""


class StateUnsupported(NotImplementedError):
    """The harness cannot save or restore its state (restart scenarios report it)."""


class HarnessGone(RuntimeError):
    """The harness under test can no longer answer at all (a black-box program that hung, died
    or wrote garbage): unlike a failed turn, the run stops here, recorded with this reason."""


@runtime_checkable
class Harness(Protocol):
    """A system under test, serving one verified session."""

    name: str

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        """Take one user message (with attached images) and return the reply."""
        ...

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> Sequence[str] | None:
        """Put earlier exchanges into the session as if they had happened (no model call for
        them), each followed by the harness's own maintenance (the checks it would run before
        its next model call, compaction included). The bench's filler uses this. A harness
        that can only run them as turns (a program that cannot preload) returns its replies,
        which the record keeps: they tell, from outside, which calls answered the filler."""
        ...

    def context_estimate(self) -> int | None:
        """The harness's own estimate of its next request, or None when it keeps none."""
        ...

    def save_state(self) -> dict[str, Any]:
        """Everything needed to resume this session on a fresh instance, as JSON-able data."""
        ...

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`save_state` returned."""
        ...


class HarnessBase:
    """A convenient base: keeps the context and config, and gives the optional parts of
    :class:`Harness` a default (no estimate; state unsupported)."""

    name = "custom"
    # The harness settings this harness reads and acts on (module docstring); none by default.
    honours: frozenset[str] = frozenset()

    def __init__(self, context: HarnessContext, config: HarnessConfig) -> None:
        self.ctx = context
        self.config = config

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        raise NotImplementedError

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> Sequence[str] | None:
        raise NotImplementedError

    def context_estimate(self) -> int | None:
        return None

    def save_state(self) -> dict[str, Any]:
        raise StateUnsupported(f"harness {self.name!r} does not save its state")

    def load_state(self, state: Mapping[str, Any]) -> None:
        raise StateUnsupported(f"harness {self.name!r} does not restore a state")
