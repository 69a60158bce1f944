"""The Responses API's server-side compaction (``POST /v1/responses/compact``) through the
official SDK: one recorded model call with Codex's compaction prompt; the answer is the user
messages and one opaque ``compaction`` item; a later request carrying it back is answered
from the summary (the follow-up still knows the order; without it, not: the control). A
compaction item this server did not make is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnesslab.adapters.responses_wire import (
    COMPACTION_PROMPT,
    SUMMARY_BRIDGE,
    compaction_item,
    compaction_summary,
)
from harnesslab.record.format import Record
from tests.wire.support import Q1, run_tool, serving, tool_schemas

openai = pytest.importorskip("openai")

Q2 = "那我明天还要等吗？"


def _answer(client: Any, url: str, history: list[Any]) -> Any:
    tools = [{"type": "function", **s} for s in tool_schemas(url, "k")]
    for _ in range(4):
        resp = client.responses.create(model="m", input=history, tools=tools, store=False)
        history += [o.model_dump(exclude_none=True) for o in resp.output]
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            return resp
        history += [{"type": "function_call_output", "call_id": c.call_id,
                     "output": run_tool(url, "k", c.name, c.arguments)} for c in calls]
    raise AssertionError("no answer in 4 requests")


def test_compaction_keeps_what_the_follow_up_needs(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        history: list[Any] = [{"role": "user", "content": Q1}]
        _answer(client, url, history)
        compacted = client.responses.compact(model="m", input=history)
        # (warnings off: the SDK types every output message as the assistant's)
        after = _answer(client, url, [*[o.model_dump(exclude_none=True, warnings=False)
                                        for o in compacted.output],
                                      {"role": "user", "content": Q2}])
        alone = _answer(client, url, [{"role": "user", "content": Q2}])  # the control
    assert compacted.object == "response.compaction"
    assert [o.type for o in compacted.output] == ["message", "compaction"]
    assert compacted.output[0].content[0].text == Q1 and compacted.usage.input_tokens > 0
    assert "O-1001" in after.output_text and "2026-11-30" in after.output_text
    assert "O-1001" not in alone.output_text
    rec = Record.load(tmp_path / "session1.jsonl")
    calls = rec.of_type("model_call")
    asked = rec.request(calls[2]["request"])  # the compaction pass: recorded as a call
    assert asked.messages[-1].content[0].text == COMPACTION_PROMPT  # type: ignore[union-attr]
    seen = rec.request(calls[3]["request"])
    bridge = seen.messages[1].content[0].text  # type: ignore[union-attr]
    assert bridge.startswith(SUMMARY_BRIDGE) and "O-1001" in bridge


def test_a_compaction_item_from_elsewhere_is_refused(tmp_path: Path) -> None:
    ours = compaction_item("摘要", id="cmp_1")
    assert compaction_summary(ours["encrypted_content"]) == "摘要"
    assert compaction_summary("gAAAAABforeign") is None  # the control: not ours
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="m", input=[
                {"type": "compaction", "id": "cmp_x", "encrypted_content": "gAAAAABforeign"},
                {"role": "user", "content": Q2}])
        ok = client.responses.create(model="m", input=[ours, {"role": "user", "content": Q2}])
    assert json.loads(e.value.response.text)["error"]["param"] == "input[0].encrypted_content"
    assert ok.output_text
