"""The fake model's answer in a JSON schema (``sim.schemas.fill``): valid for the schemas
frameworks send (pydantic's, and the OpenAI SDK's strict form of them), the answer in one
place, the place a model would choose."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from harnesslab.judge.checks import json_strings
from harnesslab.messages import Message, Request, TextBlock, ToolCallBlock
from harnesslab.sim.choice import in_format
from harnesslab.sim.schemas import fill


class Plain(BaseModel):
    text: str


class Titled(BaseModel):
    title: str
    answer: str
    confidence: float


class Detail(BaseModel):
    eta: str | None
    late: bool


class Nested(BaseModel):
    mood: Literal["calm", "sorry"]
    detail: Detail
    summary: str
    refs: list[str]
    count: int


class Node(BaseModel):
    label: str
    children: list[Node]
    parent: Node | None


class Deep(BaseModel):
    meta: dict[str, int]
    inner: Plain
    note: str | None = None


class NoText(BaseModel):
    n: int
    flags: list[bool]


MODELS = [Plain, Titled, Nested, Node, Deep]


def _schemas(model: type[BaseModel]) -> list[dict[str, Any]]:
    out = [model.model_json_schema()]
    strict = pytest.importorskip("openai.lib._pydantic").to_strict_json_schema(model)
    return [*out, strict]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@settings(deadline=None, max_examples=50)  # the first example imports the OpenAI SDK
@given(text=st.text(min_size=1, max_size=40).filter(lambda t: t != "calm"))
def test_the_answer_fits_the_schema_once(model: type[BaseModel], text: str) -> None:
    for schema in _schemas(model):
        got = fill(schema, text)
        model.model_validate(got)  # raises if the schema does not accept it
        # The answer once; the only other string an enum's first value.
        assert [s for s in json_strings(got) if s and s != "calm"] == [text]


def test_the_answer_goes_where_a_model_would_put_it() -> None:
    assert fill(Titled.model_json_schema(), "T") == {"title": "", "answer": "T",
                                                     "confidence": 0}
    nested = fill(Nested.model_json_schema(), "T")
    assert nested == {"mood": "calm", "detail": {"eta": None, "late": False}, "summary": "T",
                      "refs": [], "count": 0}
    assert fill(Node.model_json_schema(), "T") == {"label": "T", "children": [],
                                                   "parent": None}
    assert fill(Deep.model_json_schema(), "T")["inner"] == {"text": "T"}
    # No place for text: the first field takes it (the schema broken rather than the answer
    # dropped, so that a harness sees what it asked for went wrong).
    with pytest.raises(ValidationError):
        NoText.model_validate(fill(NoText.model_json_schema(), "T"))


def test_the_control_the_plain_text_fits_none_of_them() -> None:
    for model in MODELS:
        with pytest.raises(ValidationError):
            model.model_validate_json(json.dumps("T"))


def test_a_recursive_schema_of_no_text_ends() -> None:
    tree = {"$defs": {"N": {"type": "object", "properties": {
        "a": {"$ref": "#/$defs/N"}, "b": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}
    assert len(json.dumps(fill(tree, "T"))) < 100_000


def _request(meta: tuple[tuple[str, str], ...]) -> Request:
    return Request("", (Message.text("user", "hi"),), meta=meta)


def test_only_a_text_answer_takes_the_format() -> None:
    fmt = (("response_format", json.dumps({"type": "json_schema", "json_schema": {
        "name": "T", "schema": Titled.model_json_schema()}})),)
    blocks, notes = in_format(_request(fmt), (TextBlock("好的"),), {"kind": "answer"})
    assert Titled.model_validate_json(blocks[0].text).answer == "好的"  # type: ignore[union-attr]
    assert notes == {"kind": "answer", "response_format": "json_schema"}
    call = (ToolCallBlock("c1", "track_order", "{}"),)
    assert in_format(_request(fmt), call, {}) == (call, {})  # a tool call stays a call
    done = (TextBlock('{"title": "", "answer": "x", "confidence": 1}'),)
    assert in_format(_request(fmt), done, {}) == (done, {})  # already JSON
    plain = (TextBlock("好的"),)
    assert in_format(_request(()), plain, {}) == (plain, {})  # the control: none asked
    # JSON mode describing no keys: one "answer" key (the API promises a JSON object).
    loose = (("response_format", json.dumps({"type": "json_object"})),)
    assert in_format(_request(loose), plain, {}) == (
        (TextBlock('{"answer": "好的"}'),), {"response_format": "json_object"})


_JSON_MODE = (("response_format", json.dumps({"type": "json_object"})),)


@pytest.mark.parametrize(("system", "user", "expected"), [
    ("", "Write a joke about cats. Keys of the JSON: `setup` and `punchline`.",
     {"setup": "好的", "punchline": ""}),
    ('The JSON object holds "final_answer" and "sources".', "hi",
     {"final_answer": "好的", "sources": ""}),
    # An example object: its keys, its values' types.
    ('JSON, e.g. {"answer": "...", "confidence": 0.9, "tags": ["a"]}', "hi",
     {"answer": "好的", "confidence": 0, "tags": []}),
    # A schema written after the mention is the schema.
    ("The JSON follows " + json.dumps(Titled.model_json_schema()), "hi",
     {"title": "", "answer": "好的", "confidence": 0}),
    # Names quoted in another paragraph than the mention are not its keys.
    ("JSON only.\n\nThe user's name is 'bob'.", "hi", {"answer": "好的"}),
])
def test_json_mode_writes_the_object_the_instructions_describe(
        system: str, user: str, expected: dict[str, Any]) -> None:
    req = Request(system, (Message.text("user", user),), meta=_JSON_MODE)
    blocks, notes = in_format(req, (TextBlock("好的"),), {})
    assert json.loads(blocks[0].text) == expected  # type: ignore[union-attr]
    assert notes == {"response_format": "json_object"}
    # The control: the same instructions without JSON mode (asking no JSON in words) leave
    # the answer as prose.
    assert in_format(Request(system, req.messages), (TextBlock("好的"),), {})[0] == \
        (TextBlock("好的"),)


@pytest.mark.parametrize(("system", "user", "expected"), [
    # LangChain's json_mode as its docs show it: the keys named in the question.
    ("", "Tell me a joke about cats, respond in JSON with `setup` and `punchline` keys",
     {"setup": "好的", "punchline": ""}),
    ("Always reply in JSON with the keys `answer` and `follow_up`.", "hi",
     {"answer": "好的", "follow_up": ""}),
    ('Format your answer as a JSON object like {"reply": "...", "done": true}', "hi",
     {"reply": "好的", "done": False}),
    ("Your response must be valid JSON.", "hi", {"answer": "好的"}),
    # The controls: JSON named, no reply asked in it.
    ("Tools return JSON with the key `status`.", "hi", None),
    ("Tools return results in JSON.", "hi", None),
    ("Our services provide their data as JSON.", "hi", None),
    ("The order API responds with JSON.", "hi", None),
    ('The last tool result, in JSON: {"status": "in_transit"}', "hi", None),
])
def test_json_asked_for_in_words_is_written(system: str, user: str,
                                            expected: dict[str, Any] | None) -> None:
    req = Request(system, (Message.text("user", user),))
    blocks, notes = in_format(req, (TextBlock("好的"),), {})
    if expected is None:
        assert (blocks, notes) == ((TextBlock("好的"),), {})
        return
    assert json.loads(blocks[0].text) == expected  # type: ignore[union-attr]
    assert notes == {"response_format": "prompt"}
    # Under a text protocol the protocol says how to write the reply: not asked.
    assert in_format(req, (TextBlock("好的"),), {}, prompted=False) == ((TextBlock("好的"),), {})


class Ticket(BaseModel):
    """A typed output whose schema, written out with indent=2, runs past 400 characters."""
    category: Literal["shipping", "billing", "other"]
    priority: int
    summary: str
    order_id: str | None = None
    tags: list[str]


# instructor 1.17's JSON and MD_JSON modes (v2/providers/openai/handlers.py), with
# response_model=Ticket: the schema in the system message; JSON mode adds response_format
# json_object, MD_JSON a last user message asking for a ```json block.
INSTRUCTOR = f"""
As a genius expert, your task is to understand the content and provide
the parsed objects in json that match the following json_schema:\n

{json.dumps(Ticket.model_json_schema(), indent=2, ensure_ascii=False)}

Make sure to return an instance of the JSON, not the schema itself
"""
MD_JSON = "Return the correct JSON response within a ```json codeblock. not the JSON_SCHEMA"


def test_instructor_json_and_md_json_modes_get_their_model() -> None:
    assert len(json.dumps(Ticket.model_json_schema(), indent=2)) > 400
    user = Message.text("user", "我的包裹还没到")
    for req in (Request(INSTRUCTOR, (user,), meta=_JSON_MODE),
                Request(INSTRUCTOR, (user, Message.text("user", MD_JSON)))):
        blocks, _ = in_format(req, (TextBlock("好的"),), {})
        got = Ticket.model_validate_json(blocks[0].text)  # type: ignore[union-attr]
        assert got.summary == "好的" and got.category == "shipping" and got.tags == []
    # The control: the schema with neither JSON mode nor a sentence asking for JSON.
    bare = Request("Tickets follow this layout: " + json.dumps(Ticket.model_json_schema()),
                   (user,))
    assert in_format(bare, (TextBlock("好的"),), {}) == ((TextBlock("好的"),), {})


class Reply(BaseModel):
    answer: str
    order_id: str | None = None


# LangChain's PydanticOutputParser format instructions (langchain-core 1.x), the schema Reply's:
# a worked example first (its schema and a wrong instance), then the output schema.
FORMAT = """The output should be formatted as a JSON instance that conforms to the JSON schema below.

As an example, for the schema {"properties": {"foo": {"title": "Foo", "description": "a list of strings", "type": "array", "items": {"type": "string"}}}, "required": ["foo"]}
the object {"foo": ["bar", "baz"]} is a well-formatted instance of the schema. The object {"properties": {"foo": ["bar", "baz"]}} is not well-formatted.

Here is the output schema:
```
SCHEMA
```""".replace("SCHEMA", json.dumps(Reply.model_json_schema()))  # noqa: E501


def plain_first(ask: str, text: str) -> str:
    from .test_model import model, req, track, user

    got = model().reply(req(user(f"{text}\n{ask}"), track()))
    assert "response_format" not in got.annotations
    return got.blocks[0].text  # type: ignore[union-attr, no-any-return]


def test_a_schema_asked_for_in_words_shapes_the_answer() -> None:
    from .test_model import ASK_1001, model, req, track, user

    prompt = f"Answer the user query.\n{FORMAT}\n{ASK_1001}"
    first = model().reply(req(user(prompt)))
    assert isinstance(first.blocks[0], ToolCallBlock)  # a lookup is still a tool call
    done = model().reply(req(user(prompt), track()))
    got = Reply.model_validate_json(done.blocks[0].text)  # type: ignore[union-attr]
    assert "2026-11-29" in got.answer and got.order_id is None
    assert done.annotations["response_format"] == "prompt"
    # In the system prompt, the same.
    system = model().reply(Request("Current time: 2026-11-28T10:00:00+08:00\n" + FORMAT,
                                   (user(ASK_1001), track())))
    assert Reply.model_validate_json(system.blocks[0].text).answer == got.answer  # type: ignore[union-attr]
    # The controls: the schema with no sentence asking the answer in it, and the ask followed
    # only by the worked example's wrong instance (no schema), leave the answer as prose.
    # (The second still asks for JSON, which the answer then is, but in no schema: a JSON
    # ask in words, ``prompted_json``.)
    for text in ("Our order records follow this schema: " + json.dumps(
            Reply.model_json_schema()), FORMAT.split("\n", 1)[0]
            + ' {"properties": {"foo": ["bar", "baz"]}}'):
        plain = model().reply(req(user(f"{text}\n{ASK_1001}"), track()))
        with pytest.raises(ValidationError):
            Reply.model_validate_json(plain.blocks[0].text)  # type: ignore[union-attr]
    assert not plain_first(ASK_1001, "Our order records follow this schema: "
                           + json.dumps(Reply.model_json_schema())).startswith("{")
