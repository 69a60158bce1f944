"""Tools offered in the answer's JSON schema (``sim.schema_tools``): a request that offers no
tools to the API but asks for a tool call as structured output (BeeAI's fallback) gets the
call the model would make, written in the schema; the protocol check counts those tools as
offered."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from harnesslab.messages import Request, TextBlock
from harnesslab.sim.model import ModelReply
from harnesslab.sim.schema_tools import schema_tools

from .test_model import ASK_1001, SYSTEM, model, track, user


class OrderArgs(BaseModel):
    order_id: str | None = None
    user_id: str | None = None


class FinalArgs(BaseModel):
    response: str = Field(description="The final answer")


def _call(name: str, args: type[BaseModel]) -> type[BaseModel]:
    # As BeeAI's generate_tool_union_schema builds each branch.
    return create_model(name, __config__=ConfigDict(extra="forbid", title=name),
                        name=(Literal[name], Field(description="Tool Name")),  # type: ignore[valid-type]
                        parameters=(args, Field(description="Tool Parameters")))


TRACK, FINAL, KB = _call("track_order", OrderArgs), _call("final_answer", FinalArgs), \
    _call("search_kb", OrderArgs)


class Wrapped(BaseModel):
    item: TRACK | FINAL | KB  # type: ignore[valid-type]


def asking(schema: dict[str, Any], *messages: Any) -> Request:
    fmt = {"type": "json_schema", "json_schema": {"name": "ToolCall", "schema": schema}}
    return Request(SYSTEM, tuple(messages), meta=(("response_format", json.dumps(fmt)),))


def text(r: ModelReply) -> str:
    (b,) = r.blocks
    assert isinstance(b, TextBlock)
    return b.text


@pytest.mark.parametrize("schema", [Wrapped.model_json_schema(),
                                    RootModel[list[TRACK | FINAL]].model_json_schema()],  # type: ignore[valid-type]
                         ids=["wrapped", "parallel"])
def test_a_lookup_and_an_answer_in_the_schemas_form(schema: dict[str, Any]) -> None:
    r = model().reply(asking(schema, user(ASK_1001)))
    got = json.loads(text(r))
    call = got["item"] if isinstance(got, dict) else got[0]
    assert call == {"name": "track_order", "parameters": {"order_id": "O-1001"}}
    assert r.annotations["tool_protocol"] == "schema"
    assert r.annotations["text_calls"] == [{"name": "track_order",
                                            "input": '{"order_id": "O-1001"}'}]
    # The result comes back as an ordinary tool message: the answer goes into final_answer.
    done = json.loads(text(model().reply(asking(schema, user(ASK_1001), track()))))
    final = done["item"] if isinstance(done, dict) else done[0]
    assert final["name"] == "final_answer" and "2026-11-29" in final["parameters"]["response"]


def test_the_control_a_schema_of_no_tool_call_is_an_answer_format() -> None:
    class Reply(BaseModel):
        name: str
        answer: str

    assert schema_tools(asking(Reply.model_json_schema(), user(ASK_1001))) is None
    r = model().reply(asking(Reply.model_json_schema(), user(ASK_1001)))
    assert r.annotations.get("reason") == "tool_not_offered"  # no tool offered anywhere
    assert json.loads(text(r))["answer"]
