"""Notices of removed conversation (``sim.notices``, the ``notes_removed`` check): a harness's
truncation notice in any common wording is read, wherever the harness puts it but a tool
result; a summary's wording, a user's request to delete something and a tool's truncation are
not."""

from __future__ import annotations

import pytest

from harnesslab.judge.checks import removal_noted
from harnesslab.messages import Message, Request, ToolCallBlock, ToolResultBlock
from harnesslab.sim.notices import removal_notices


@pytest.mark.parametrize("text", [
    "<system-info>Some earlier messages were truncated for limited context.</system-info>",
    "[12 earlier messages omitted]",
    "Older turns have been removed to fit the context window.",
    "Removed 3 messages from the conversation history.",
    "Note: the conversation history was trimmed.",
    "之前的部分对话已被截断。",
    "已删除部分早期消息。",
])
def test_a_removal_notice_in_any_common_wording_is_read(text: str) -> None:
    assert removal_notices(text), text


@pytest.mark.parametrize("text", [
    "Here is a summary of the conversation so far:",
    "The user removed the item from the cart.",
    "Old messages. They were truncated.",   # across two sentences
    "请帮我删除订单 O-1001。",
    "The remaining content has been omitted for limited context.",  # a tool output's cut
    "Your current context contains 300 tokens; it will be compressed at 3000.",
])
def test_other_sentences_are_not_notices(text: str) -> None:
    assert not removal_notices(text), text


def request(system: str = "", summary: str = "", *messages: Message) -> Request:
    return Request(system=system, summary=summary,
                   messages=(*messages, Message.text("user", "O-1001 现在到哪了？")), tools=(),
                   output_budget=512)


def test_the_check_reads_the_notice_in_any_part_of_the_request_but_a_tool_result() -> None:
    notice = "Some earlier messages were truncated for limited context."
    assert removal_noted(request(summary=notice)) == "Some earlier messages were truncated"
    assert removal_noted(request(system="You help.\n[3 earlier messages omitted]"))
    assert removal_noted(request("", "", Message.text("assistant", "之前的部分对话已被截断。")))
    # The control: the same words as a tool's output are not the harness's notice.
    call = ToolCallBlock("c1", "search_kb", '{"query": "x"}')
    result = ToolResultBlock("c1", "search_kb", '{"text": "' + notice + '"}')
    tool_round = (Message("assistant", (call,)), Message("tool", (result,)))
    assert removal_noted(request("You help.", "", *tool_round)) is None
    assert removal_noted(request("You help.")) is None
