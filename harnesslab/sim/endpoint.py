"""The harness's only door to the model: the simulated service admits and bills the request,
then the fake model answers it. Every call, admitted or rejected, becomes a record event;
``estimate`` is the harness's own belief about the request (None when it has none).

The harness gets back the reply's blocks, as strings a JSON decoder made (equal, never the fake
model's own objects), and the billed usage, as a real API returns them; the
fake model's annotations go to the record only.

Equal messages reach the bench as one object (``SameMessages``): the service's counter, the
protocol check, the fake model's reading and the record writer keep their per-message work by
identity, and a request that came over a wire (decoded afresh each call, history and all) would
otherwise cost all of it again for every message it resends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from operator import is_
from typing import Any, Protocol

from harnesslab.errors import ContextOverflowError, ProtocolError
from harnesslab.events import EventSink
from harnesslab.messages import (
    Block,
    Message,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolSchema,
)
from harnesslab.sim.service import SimulatedService


class ReplyLike(Protocol):
    @property
    def blocks(self) -> tuple[Block, ...]: ...

    @property
    def annotations(self) -> Mapping[str, Any]: ...


class ModelLike(Protocol):
    def reply(self, request: Request) -> ReplyLike: ...


class SameMessages:
    """Maps each message to the first equal one seen (by content: role, blocks, name, id), and
    a request's tool schemas to the last equal ones. A harness in process resends the very
    objects, which pass by identity without being hashed; only the others are looked up.

    It keeps the messages of the last request and of the work since (fillers counted aside);
    once it holds twice the last request and more, those no longer sent are let go, as the
    token counter lets go of its counts."""

    def __init__(self) -> None:
        self._by_content: dict[Message, Message] = {}
        self._last: tuple[Message, ...] = ()
        self._tools: tuple[ToolSchema, ...] = ()

    def messages(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """``messages`` with each replaced by the first equal one seen."""
        # The prefix of the last request's very objects (identity only, in C: comparing equal
        # copies field by field would cost what looking them up does).
        same = list(map(is_, self._last, messages))
        k = same.index(False) if False in same else len(same)
        if k == len(messages):
            return messages
        seen = self._by_content.setdefault
        rest = [seen(m, m) for m in messages[k:]]
        if all(map(is_, rest, messages[k:])):
            return messages
        return (*messages[:k], *rest)

    def request(self, r: Request) -> Request:
        """``r`` with its messages and tools replaced by equal ones seen before."""
        messages = self.messages(r.messages)
        tools = r.tools
        if tools is not self._tools and tools == self._tools:
            tools = self._tools
        self._tools = tools
        self._last = messages
        if len(self._by_content) > 2 * len(messages) + 1024:
            self._by_content = {m: m for m in messages}
        if messages is r.messages and tools is r.tools:
            return r
        return replace(r, messages=messages, tools=tools)


class Endpoint:
    def __init__(self, service: SimulatedService, model: ModelLike, sink: EventSink) -> None:
        self.service = service
        self.model = model
        self.sink = sink
        self.calls = 0
        self.same = SameMessages()

    def count_aside(self, request: Request) -> int:
        """The true count of messages the bench made outside a call (a filler's, before the
        harness sends them): noted as seen, so that the harness's equal copies of them reuse
        the count."""
        return self.service.count_aside(replace(request,
                                                messages=self.same.messages(request.messages)))

    def context_window(self) -> int:
        """The service's true window (``harness.base.ModelInfo``): what a model server states
        of its model."""
        return self.service.profile.window

    def count_tokens(self, request: Request) -> int:
        """What the APIs' token counting endpoints answer: the input tokens the service would
        bill for ``request``; nothing admitted (no limit, no protocol check), billed or
        recorded, and the next call in sequence still counts only its new messages."""
        return self.count_aside(request)

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        """Admit, answer, record. Raises ProtocolError or ContextOverflowError (both
        ServiceRejected) when the service rejects; either is recorded, nothing is billed."""
        request = self.same.request(request)
        self.calls += 1
        n = self.calls
        # The server's own truncation (Responses ``truncation: "auto"``, Ollama's default,
        # which keeps system messages): the model sees, and the record keeps, the request as
        # truncated, with how many messages were dropped.
        cut: dict[str, int] = {}
        if request.meta and (how := request.stated("truncation")) in ("auto", "keep_system"):
            request, dropped = self.service.fit(request, keep_system=how == "keep_system")
            cut = {"truncated": dropped} if dropped else {}
        try:
            usage = self.service.admit(request)
        except ProtocolError as e:
            self.sink.emit({"type": "protocol_error", "call": n, "purpose": purpose,
                            "request": request, "estimate": estimate, "problem": e.problem,
                            **cut})
            raise
        except ContextOverflowError as e:
            d = e.detail
            self.sink.emit({"type": "overflow", "call": n, "purpose": purpose,
                            "request": request, "estimate": estimate,
                            "true_input": d.true_input, "planned_output": d.planned_output,
                            "limit_name": d.limit_name, "limit": d.limit, **cut})
            raise
        try:
            reply = self.model.reply(request)
        except ContextOverflowError as e:
            # A real model's own window (bench.real_model): recorded as the service's would be.
            self.sink.emit({"type": "overflow", "call": n, "purpose": purpose,
                            "request": request, "estimate": estimate,
                            "true_input": usage.input_tokens,
                            "planned_output": usage.planned_output,
                            "limit_name": e.detail.limit_name, "limit": None})
            raise
        out_text = "".join(
            b.text if isinstance(b, TextBlock) else
            (b.name + b.input) if isinstance(b, ToolCallBlock) else "" for b in reply.blocks)
        output_tokens = self.service.count_output(out_text)
        self.sink.emit({"type": "model_call", "call": n, "purpose": purpose, "request": request,
                        "estimate": estimate, "true_input": usage.input_tokens,
                        "planned_output": usage.planned_output, "output_tokens": output_tokens,
                        "reply": reply.blocks, "annotations": dict(reply.annotations), **cut})
        return Response(tuple(_decoded(b) for b in reply.blocks), usage.input_tokens,
                        output_tokens)


def _fresh(s: str) -> str:
    return s.encode("utf-8").decode("utf-8")


def _decoded(b: Block) -> Block:
    """The block as a provider's JSON reply decodes to: equal strings, never the fake model's
    own objects. A tool name the fake model copied from the request would otherwise be the
    harness's interned literal, and a harness that tests it with ``is`` would pass here and
    fail against every real API (the tool never runs)."""
    if isinstance(b, ToolCallBlock):
        return ToolCallBlock(_fresh(b.id), _fresh(b.name), _fresh(b.input))
    if isinstance(b, TextBlock):
        return TextBlock(_fresh(b.text))
    if isinstance(b, ThinkingBlock):
        return ThinkingBlock(_fresh(b.thinking))
    return b
