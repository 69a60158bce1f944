"""Shared pieces for tests that compare against the real AgentScope 2.0.11 package (the
``agentscope`` extra): an offline model that never calls out, and message conversion.
agentscope is imported only when these are called."""

from __future__ import annotations

from typing import Any

import pytest

from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Message,
    Part,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)


def require_agentscope() -> None:
    pytest.importorskip("agentscope", reason="pip install -e '.[agentscope]'")


def offline_model(context_size: int = 32768) -> Any:
    """An AgentScope chat model good for counting and agent internals; a call is a failure."""
    from agentscope.model import ChatModelBase
    from pydantic import BaseModel

    class Params(BaseModel):
        pass

    class Offline(ChatModelBase):  # type: ignore[misc]
        async def _call_api(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the offline model is never called")

    return Offline(credential=None, model="offline", parameters=Params(), stream=False,
                   max_retries=0, context_size=context_size)


def _part(p: Part) -> Any:
    from agentscope import message as am

    if isinstance(p, TextBlock):
        return am.TextBlock(text=p.text)
    return am.DataBlock(source=am.Base64Source(data=p.source, media_type=p.media_type),
                        name=p.name or None)


def _parts(v: str | tuple[Part, ...]) -> Any:
    return v if isinstance(v, str) else [_part(p) for p in v]


def _block(b: Any) -> Any:
    from agentscope import message as am

    if isinstance(b, TextBlock):
        return am.TextBlock(text=b.text)
    if isinstance(b, ThinkingBlock):
        return am.ThinkingBlock(thinking=b.thinking)
    if isinstance(b, HintBlock):
        return am.HintBlock(hint=_parts(b.hint), source=b.source or None)
    if isinstance(b, ToolCallBlock):
        return am.ToolCallBlock(id=b.id, name=b.name, input=b.input)
    if isinstance(b, ToolResultBlock):
        return am.ToolResultBlock(id=b.id, name=b.name, output=_parts(b.output))
    assert isinstance(b, DataBlock)
    return _part(b)


def to_agentscope(m: Message) -> Any:
    """Our message as an AgentScope ``Msg`` with the same counted content and id."""
    from agentscope import message as am

    blocks = list(m.content)
    if m.role == "user":
        # AgentScope's user messages hold text and data only; a hint there (our Codex bridge)
        # is counted the same as text.
        blocks = [TextBlock(b.hint) if isinstance(b, HintBlock) and isinstance(b.hint, str)
                  else b for b in blocks]
    ids = {"id": m.id} if m.id else {}
    return am.Msg(name=m.name or m.role, role=m.role, content=[_block(b) for b in blocks], **ids)
