"""judge.observed's look-up of grown messages by content agrees with trying every pair."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harnesslab.judge.observed import _grew, _grown_into
from harnesslab.messages import DataBlock, Message, TextBlock, ToolCallBlock

# Few distinct blocks, so that prefixes and data-only edits are common.
_BLOCKS = st.sampled_from([TextBlock("a"), TextBlock("b"), ToolCallBlock("c1", "f", "{}"),
                           DataBlock("image/png", "x"), DataBlock("image/png", "y")])
_MESSAGES = st.builds(lambda role, content: Message(role, tuple(content)),
                      st.sampled_from(["user", "assistant"]), st.lists(_BLOCKS, max_size=4))


class _Rec:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = {f"m{i}": m for i, m in enumerate(messages)}

    def message(self, h: str) -> Message:
        return self.messages[h]


@given(st.lists(_MESSAGES, min_size=1, max_size=8), st.data())
def test_grown_into_is_grew_against_every_added_message(messages: list[Message],
                                                        data: Any) -> None:
    rec: Any = _Rec(messages)
    added = data.draw(st.lists(st.sampled_from(sorted(rec.messages)), unique=True))
    grown = _grown_into(rec, added)
    for h in rec.messages:
        assert grown(h) == any(_grew(rec, h, x) for x in added)


def test_a_message_grown_in_place_or_edited_in_its_data_is_found_and_another_is_not() -> None:
    rec: Any = _Rec([Message("assistant", (TextBlock("a"),)),
                     Message("assistant", (TextBlock("a"), ToolCallBlock("c1", "f", "{}"))),
                     Message("user", (DataBlock("image/png", "x"), TextBlock("b"))),
                     Message("user", (TextBlock("b"),)),
                     Message("user", (TextBlock("a"),))])
    assert _grown_into(rec, ["m1"])("m0")      # grown in place
    assert _grown_into(rec, ["m3"])("m2")      # its image dropped
    assert not _grown_into(rec, ["m4"])("m0")  # the same text from another role
    assert not _grown_into(rec, ["m3"])("m0")
