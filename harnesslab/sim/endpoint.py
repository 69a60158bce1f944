"""The harness's only door to the model: the simulated service admits and bills the request,
then the fake model answers it. Every call, admitted or rejected, becomes a record event;
``estimate`` is the harness's own belief about the request (None when it has none).

The harness gets back the reply's blocks and the billed usage (as a real API returns them); the
fake model's annotations go to the record only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from harnesslab.errors import ContextOverflowError, ProtocolError
from harnesslab.events import EventSink
from harnesslab.messages import Block, Request, Response, TextBlock, ToolCallBlock
from harnesslab.sim.service import SimulatedService


class ReplyLike(Protocol):
    @property
    def blocks(self) -> tuple[Block, ...]: ...

    @property
    def annotations(self) -> Mapping[str, Any]: ...


class ModelLike(Protocol):
    def reply(self, request: Request) -> ReplyLike: ...


class Endpoint:
    def __init__(self, service: SimulatedService, model: ModelLike, sink: EventSink) -> None:
        self.service = service
        self.model = model
        self.sink = sink
        self.calls = 0

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        """Admit, answer, record. Raises ProtocolError or ContextOverflowError (both
        ServiceRejected) when the service rejects; either is recorded, nothing is billed."""
        self.calls += 1
        n = self.calls
        try:
            usage = self.service.admit(request)
        except ProtocolError as e:
            self.sink.emit({"type": "protocol_error", "call": n, "purpose": purpose,
                            "request": request, "estimate": estimate, "problem": e.problem})
            raise
        except ContextOverflowError as e:
            d = e.detail
            self.sink.emit({"type": "overflow", "call": n, "purpose": purpose,
                            "request": request, "estimate": estimate,
                            "true_input": d.true_input, "planned_output": d.planned_output,
                            "limit_name": d.limit_name, "limit": d.limit})
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
                        "reply": reply.blocks, "annotations": dict(reply.annotations)})
        return Response(reply.blocks, usage.input_tokens, output_tokens)
