"""AgentScope's own Ollama model (``OllamaChatModel`` with its ``OllamaChatFormatter``, as its
documentation sets one up) against ``harnesslab serve``'s ``/api/chat``: the calibration of the
Ollama wire by a real framework. AgentScope makes its own call ids (the ollama client drops the
server's) and sends each result as ``{"role": "tool", "tool_name": ...}``: the bench pairs them
as Ollama does, so the model's second round reads the tool result it asked for and no request
is refused as malformed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.messages import ToolCallBlock, ToolResultBlock
from harnesslab.record.format import Record
from tests.adapters.support import AGENTSCOPE_EXTRA
from tests.markers import needs_tokenizers_extra
from tests.wire.support import Q1, run_tool, serving, tool_schemas

pytestmark = [pytest.mark.agentscope, needs_tokenizers_extra]
pytest.importorskip("agentscope", reason=AGENTSCOPE_EXTRA)
pytest.importorskip("ollama", reason="pip install -e '.[dev]'")


async def _rounds(url: str, stream: bool) -> list[Any]:
    from agentscope import message as am
    from agentscope.credential import OllamaCredential
    from agentscope.model import OllamaChatModel

    model = OllamaChatModel(credential=OllamaCredential(host=url.removesuffix("/v1")),
                            model="qwen3", stream=stream,
                            client_kwargs={"headers": {"Authorization": "Bearer k"}})
    tools = [{"type": "function", "function": s} for s in tool_schemas(url, "k")]

    async def ask(msgs: list[Any]) -> Any:
        out = await model(msgs, tools=tools)
        if stream:
            last = None
            async for chunk in out:
                last = chunk
            return last
        return out

    msgs: list[Any] = [am.Msg(name="system", role="system",
                              content=[am.TextBlock(text="You are a support agent.")]),
                       am.Msg(name="user", role="user", content=[am.TextBlock(text=Q1)])]
    first = await ask(msgs)
    calls = [b for b in first.content if isinstance(b, am.ToolCallBlock)]
    results = [am.ToolResultBlock(id=c.id, name=c.name,
                                  output=run_tool(url, "k", c.name, c.input),
                                  state=am.ToolResultState.SUCCESS) for c in calls]
    msgs += [am.Msg(name="agent", role="assistant", content=[*first.content, *results])]
    second = await ask(msgs)
    return [first, second]


@pytest.mark.parametrize("stream", [False, True])
def test_agentscope_ollama_model_gets_its_tool_result_read(tmp_path: Path, stream: bool) -> None:
    with serving(tmp_path) as (url, _):
        first, second = asyncio.run(_rounds(url, stream))
    assert [b.name for b in first.content if b.type == "tool_call"] == ["track_order"]
    text = "".join(b.text for b in second.content if b.type == "text")
    assert "O-1001" in text and "2026-11-30" in text, text
    rec = Record.load(tmp_path / "session1.jsonl")
    assert not rec.of_type("protocol_error")
    made, answered = rec.of_type("model_call")
    seen = rec.request(answered["request"])
    call = next(b for m in seen.messages for b in m.content if isinstance(b, ToolCallBlock))
    result = next(b for m in seen.messages for b in m.content if isinstance(b, ToolResultBlock))
    # The call came back under no id of AgentScope's: the one the model gave it.
    assert call.id == result.id == made["reply"][0]["id"]
    assert json.loads(call.input) == {"order_id": "O-1001"}
    assert answered["annotations"]["reason"] == "fact_after_turn"
