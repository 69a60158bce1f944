from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harnesslab.errors import InputError
from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    block_from_dict,
    canonical_json,
    dumps,
    message_from_dict,
    message_to_dict,
    request_from_dict,
    request_to_dict,
)

texts = st.text(max_size=40)
parts = st.one_of(texts, st.lists(st.one_of(
    st.builds(TextBlock, texts),
    st.builds(DataBlock, st.sampled_from(["image/png", "audio/wav"]), texts, texts),
), max_size=3).map(tuple))
blocks = st.one_of(
    st.builds(TextBlock, texts),
    st.builds(ThinkingBlock, texts),
    st.builds(DataBlock, st.sampled_from(["image/png", "application/pdf"]), texts, texts),
    st.builds(HintBlock, parts, texts),
    st.builds(ToolCallBlock, texts, texts, texts),
    st.builds(ToolResultBlock, texts, texts, parts, st.booleans()),
)
messages = st.builds(Message, st.sampled_from(["system", "user", "assistant", "tool"]),
                     st.lists(blocks, max_size=5).map(tuple), texts, texts)
schemas = st.builds(lambda n, d: ToolSchema.from_dict(
    {"type": "function", "function": {"name": n, "description": d, "parameters": {}}}),
    texts, texts)


@given(messages)
def test_message_json_round_trip_is_lossless(m: Message) -> None:
    assert message_from_dict(message_to_dict(m)) == m


@given(st.builds(Request, texts, st.lists(messages, max_size=4).map(tuple), texts,
                 st.lists(schemas, max_size=2).map(tuple),
                 st.one_of(st.none(), st.integers(1, 10**6)), texts))
def test_request_json_round_trip_is_lossless(r: Request) -> None:
    back = request_from_dict(request_to_dict(r))
    assert back == r
    assert dumps(back) == dumps(r)


def test_unknown_block_type_is_named() -> None:
    with pytest.raises(InputError, match=r"content\[0\]\.type: unknown block type 'video'"):
        message_from_dict({"role": "user", "content": [{"type": "video"}]})


def test_unknown_role_is_named() -> None:
    with pytest.raises(InputError, match=r"message\.role: unknown role 'robot'"):
        message_from_dict({"role": "robot", "content": []})


def test_hint_parts_reject_tool_calls() -> None:
    with pytest.raises(InputError, match="only text and data blocks"):
        block_from_dict({"type": "hint", "hint": [{"type": "tool_call", "id": "1", "name": "x",
                                                   "input": "{}"}]})


def test_tool_schema_keeps_exact_agentscope_json() -> None:
    s = ToolSchema.from_dict({"type": "function", "function": {"name": "查", "parameters": {}}})
    assert s.json == '{"type": "function", "function": {"name": "查", "parameters": {}}}'
    assert s.name == "查"


def test_decoded_reuses_the_messages_a_resent_history_decoded_to() -> None:
    from harnesslab.messages import Decoded, message_to_dict, request_from_dict

    def body(msgs: list[Message]) -> dict[str, object]:
        # Fresh dicts each time, as a wire's JSON body decodes to.
        return {"system": "s", "messages": [message_to_dict(m) for m in msgs]}

    h = [Message.text("user", f"u{i}") if i % 2 == 0 else Message.text("assistant", f"a{i}")
         for i in range(12)]
    d = Decoded()
    first = request_from_dict(body(h[:8]), d).messages
    grown = request_from_dict(body(h[:10]), d).messages
    assert all(a is b for a, b in zip(first, grown[:8], strict=True))
    assert grown[8:] == tuple(h[8:10]) and grown[8] is not h[8]
    # A window that slid on (the oldest dropped) is found again where it starts now.
    slid = request_from_dict(body(h[4:12]), d).messages
    assert all(a is b for a, b in zip(grown[4:10], slid[:6], strict=True))
    assert slid == tuple(h[4:12])
    # Without it every message is decoded again: equal, never the same objects.
    plain = request_from_dict(body(h[4:12])).messages
    assert plain == slid and not any(a is b for a, b in zip(plain, slid, strict=True))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12)


@given(_JSON)
def test_canonical_json_is_json_dumps_with_the_records_options(value: object) -> None:
    # The encoder made once must write what json.dumps writes: every record hash is made of it.
    assert canonical_json(value) == json.dumps(value, ensure_ascii=False, sort_keys=True,
                                               separators=(",", ":"))


def test_canonical_json_refuses_what_json_dumps_refuses() -> None:
    with pytest.raises(TypeError):
        canonical_json({"a": object()})
