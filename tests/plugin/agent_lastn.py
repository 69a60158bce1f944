"""A user's own harness, copied into temporary projects by the plugin tests (the README's LastN,
with fewer messages): it sends only the newest messages and never summarises. The fix,
``pin_first = True``, also keeps the first exchange, where the user stated the task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harnesslab import (
    ContextOverflowError,
    DataBlock,
    HarnessBase,
    Message,
    Request,
    TextBlock,
    ToolResultBlock,
    TurnResult,
)


class LastN(HarnessBase):
    name = "last-n"
    keep = 6           # messages sent with each request
    pin_first = False  # the fix: keep the first exchange too

    def __init__(self, context: Any, config: Any) -> None:
        super().__init__(context, config)
        self.messages: list[Message] = []
        self.first_exchange = 0  # messages of the first turn, once it is over

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> None:
        for exchange in exchanges:
            self.messages.extend(exchange)

    def window(self) -> tuple[Message, ...]:
        head = self.messages[:self.first_exchange] if self.pin_first else []
        tail = self.messages[len(head):][-self.keep:]
        while tail and tail[0].role == "tool":  # never a result without its call
            tail = tail[1:]
        return (*head, *tail)

    @staticmethod
    def estimate(request: Request) -> int:
        # A crude belief about the request's size: characters / 4.
        texts = [m.plain_text() for m in request.messages]
        return (len(request.system) + sum(map(len, texts))) // 4

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        self.messages.append(Message("user", (TextBlock(text), *images)))
        try:
            return self._answer()
        finally:
            self.first_exchange = self.first_exchange or len(self.messages)

    def _answer(self) -> TurnResult:
        for _ in range(8):
            request = Request(system="You are a customer-service assistant.",
                              messages=self.window(), tools=self.ctx.tools.schemas(),
                              session_id=self.ctx.session.id)
            try:
                reply = self.ctx.endpoint.call(request, estimate=self.estimate(request))
            except ContextOverflowError:
                return TurnResult("", failed=True, reason="overflow")
            self.messages.append(Message("assistant", reply.blocks))
            if not reply.tool_calls:
                return TurnResult(reply.text)
            results = []
            for call in reply.tool_calls:
                out = self.ctx.tools.run(call.name, call.input, self.ctx.session.user)
                results.append(ToolResultBlock(call.id, call.name, out.text, out.is_error))
            self.messages.append(Message("tool", tuple(results)))
        return TurnResult("", failed=True, reason="max_iters")
