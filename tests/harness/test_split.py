"""AgentScope's split of the context for compaction (semantics spec §2.4), in Bytes4Rule units:
every text below is ASCII, so its units are its length in bytes and a count is
int(bytes / 4 + 0.5) of the prefix (system + summary + tools) plus the kept blocks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.harness.split import Split, split_context
from harnesslab.messages import (
    Block,
    HintBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from harnesslab.tokens import Bytes4Rule
from tests.agentscope_support import offline_model, require_agentscope, to_agentscope
from tests.harness.support import rig

RULE = Bytes4Rule()
HEAD = 40  # bytes of system prompt + summary + tool schemas: 10 tokens


def split(context: list[Message], budget: float, head: int = HEAD) -> Split:
    return split_context(context, head, budget, RULE.message_units, RULE.finalize)


def text(n: int, ch: str = "x") -> TextBlock:
    return TextBlock(ch * n)


def call(cid: str, n: int) -> ToolCallBlock:
    return ToolCallBlock(cid, "track_order", "c" * n)


def result(cid: str, n: int) -> ToolResultBlock:
    return ToolResultBlock(cid, "track_order", "r" * n)


def msg(role: str, *blocks: Block, name: str = "", id: str = "") -> Message:
    return Message(role, tuple(blocks), name=name, id=id)  # type: ignore[arg-type]


def test_boundary_message_split_text_kept_call_and_result_compressed() -> None:
    # The spec's reserve 0.5 / context 1500 example, in small numbers: budget 45 tokens (180
    # bytes). Suffix counts from the end: 20, 30, then 60 >= 45 at the assistant message [call,
    # result, text]: it is the boundary. Inside it, text: (40+40+80)/4 = 40 <= 45, kept;
    # result+text: 200/4 = 50 > 45: the result and everything before it is compressed.
    u0 = msg("user", text(40), id="u0")
    a1 = msg("assistant", call("c1", 40), result("c1", 40), text(40, "t"), name="bot", id="a1")
    u2 = msg("user", text(40), id="u2")
    a3 = msg("assistant", text(40), id="a3")
    s = split([u0, a1, u2, a3], 45)
    assert s.to_compress == (u0, msg("assistant", call("c1", 40), result("c1", 40), name="bot",
                                     id="a1"))
    assert s.to_keep == (msg("assistant", text(40, "t"), name="bot", id="a1"), u2, a3)


def test_message_level_stops_at_greater_or_equal() -> None:
    # Suffix [u1] is 40 + 38 = 78 bytes, int(19.5 + 0.5) = 20 >= 20: u1 is the boundary and
    # a0 is compressed whole. With a strict ">" the walk would go on to a0 and keep its 1-byte
    # block "z" (79 bytes still count 20).
    a0 = msg("assistant", text(40), TextBlock("z"), id="a0")
    u1 = msg("user", text(38), id="u1")
    s = split([a0, u1], 20)
    assert s == Split((a0,), (u1,))
    # One token more of budget and the whole context fits: nothing to compress.
    assert split([a0, u1], 30.25) == Split((), (a0, u1))


def test_block_level_stops_at_strictly_greater() -> None:
    # m1's blocks: c alone 80/4 = 20 <= 30, b + c 120/4 = 30 is not > 30: both kept, the whole
    # boundary message stays; m0 is compressed.
    m0 = msg("user", text(40), id="m0")
    m1 = msg("assistant", text(40, "b"), text(40, "c"), id="m1")
    assert split([m0, m1], 30) == Split((m0,), (m1,))
    # Just under 30 the block b no longer fits.
    s = split([m0, m1], 29.9)
    assert s.to_compress == (m0, msg("assistant", text(40, "b"), id="m1"))
    assert s.to_keep == (msg("assistant", text(40, "c"), id="m1"),)


def test_rounding_is_applied_once_over_the_whole_count() -> None:
    # Three 1-byte blocks: each alone rounds to 0 tokens, but AgentScope rounds the sum once:
    # c: 41 bytes -> int(10.25 + 0.5) = 10, kept; b + c: 42 bytes -> int(10.5 + 0.5) = 11 > 10.9.
    m = msg("assistant", TextBlock("a"), TextBlock("b"), TextBlock("c"), id="m")
    s = split([m], 10.9)
    assert s.to_compress == (msg("assistant", TextBlock("a"), TextBlock("b"), id="m"),)
    assert s.to_keep == (msg("assistant", TextBlock("c"), id="m"),)


def test_split_halves_keep_id_and_name() -> None:
    m = msg("assistant", text(40, "a"), text(40, "b"), name="agent-7", id="reply-1")
    s = split([m], 25)
    (head,), (tail,) = s.to_compress, s.to_keep
    assert (head.role, head.name, head.id, head.content) == ("assistant", "agent-7", "reply-1",
                                                             (text(40, "a"),))
    assert (tail.role, tail.name, tail.id, tail.content) == ("assistant", "agent-7", "reply-1",
                                                             (text(40, "b"),))


def test_pairing_moves_a_kept_result_whose_call_is_compressed() -> None:
    # Budget 25 (100 bytes). Suffix [a] = 40 + 96 = 136 bytes = 34 >= 25: a is the boundary.
    # Inside it text (48 bytes = 12) and result + text (56 bytes = 14) fit, the call (136 bytes
    # = 34) does not: the cut falls between call and result, and the result follows its call
    # to the compressed side.
    u = msg("user", text(40), id="u")
    a = msg("assistant", call("c1", 80), result("c1", 8), text(8, "t"), id="a")
    s = split([u, a], 25)
    assert s.to_compress == (u, msg("assistant", call("c1", 80), result("c1", 8), id="a"))
    assert s.to_keep == (msg("assistant", text(8, "t"), id="a"),)


def test_pairing_moves_the_cut_past_the_unpaired_result() -> None:
    # Blocks [call c1, call c2, result c2, result c1, text]: the cut falls after c1's call
    # (40 + 16 = 56 bytes = 14 <= 15; with the call 96 bytes = 24 > 15). c1's result is kept
    # without its call, so the cut moves to just after it: c2's pair, which lies in between,
    # is compressed too (AgentScope moves the cut, it does not pick blocks out).
    a = msg("assistant", call("c1", 40), call("c2", 4), result("c2", 4), result("c1", 4),
            text(4), id="a")
    s = split([a], 15)
    assert s.to_compress == (msg("assistant", call("c1", 40), call("c2", 4), result("c2", 4),
                                 result("c1", 4), id="a"),)
    assert s.to_keep == (msg("assistant", text(4), id="a"),)


def test_pairing_compresses_what_lies_between_call_and_result() -> None:
    # [call c1, text X, result c1, text Y], cut after the call: X goes with the pair.
    a = msg("assistant", call("c1", 40), text(4, "X"), result("c1", 4), text(4, "Y"), id="a")
    s = split([a], 13)  # X + result + Y: 52 bytes = 13 <= 13; with the call 92 = 23 > 13
    assert s.to_compress == (msg("assistant", call("c1", 40), text(4, "X"), result("c1", 4),
                                 id="a"),)
    assert s.to_keep == (msg("assistant", text(4, "Y"), id="a"),)


def test_pairing_repeats_until_stable() -> None:
    # Moving the cut past c2's result splits c1's pair, so it moves again past c1's result.
    a = msg("assistant", call("c2", 40), call("c1", 4), result("c2", 4), result("c1", 4),
            text(4), id="a")
    s = split([a], 15)
    assert s.to_compress == (msg("assistant", call("c2", 40), call("c1", 4), result("c2", 4),
                                 result("c1", 4), id="a"),)
    assert s.to_keep == (msg("assistant", text(4), id="a"),)


def test_pairing_compresses_a_result_whose_call_is_in_an_earlier_message() -> None:
    # a1 alone is 52 bytes = 13 >= 13: it is the boundary and fits whole at block level, but
    # its result's call is not kept with it, so the cut moves past the result.
    a0 = msg("assistant", call("c0", 40), id="a0")
    a1 = msg("assistant", text(4, "a"), result("c0", 4), text(4, "b"), id="a1")
    assert split([a0, a1], 13) == Split(
        (a0, msg("assistant", text(4, "a"), result("c0", 4), id="a1")),
        (msg("assistant", text(4, "b"), id="a1"),))


def test_pairing_leaves_paired_results() -> None:
    a = msg("assistant", text(40), call("c1", 4), result("c1", 4), text(4), id="a")
    s = split([a], 15)  # call + result + text: 52 bytes = 13 <= 15; with the text 92 = 23
    assert s.to_compress == (msg("assistant", text(40), id="a"),)
    assert s.to_keep == (msg("assistant", call("c1", 4), result("c1", 4), text(4), id="a"),)


def test_pairing_can_empty_the_kept_half() -> None:
    a = msg("assistant", call("c1", 40), result("c1", 8), id="a")
    s = split([a], 13)  # result alone: 48 bytes = 12 <= 13; call + result 88 = 22 > 13
    assert s == Split((a,), ())


def test_everything_fits_returns_nothing_to_compress() -> None:
    ctx = [msg("user", text(40)), msg("assistant", text(40))]
    assert split(ctx, 30.01) == Split((), tuple(ctx))   # 120 bytes = 30 < 30.01
    assert split([], 0) == Split((), ())


def test_budget_zero_compresses_everything() -> None:
    ctx = [msg("user", text(4), id="u"), msg("assistant", HintBlock("h"), call("c", 4),
                                             result("c", 4), text(4), id="a")]
    assert split(ctx, 0) == Split(tuple(ctx), ())


def test_prefix_over_budget_keeps_nothing_not_even_the_newest_user_message() -> None:
    ctx = [msg("user", text(4), id="u0"), msg("assistant", text(4), id="a0"),
           msg("user", TextBlock("the question just received"), id="u1")]
    # System + summary + tools = 400 bytes = 100 tokens > budget 50.
    assert split(ctx, 50, head=400) == Split(tuple(ctx), ())


def test_data_blocks_count_2000_tokens() -> None:
    from harnesslab.messages import DataBlock

    img = DataBlock("image/png", "AAAA")
    u = msg("user", text(4), img, id="u")
    a = msg("assistant", text(40), id="a")
    # a alone: 80 bytes = 20 <= 2000; with the image 2020 + 1 (4 bytes) > 2000.
    assert split([u, a], 2000) == Split((u,), (a,))
    # 8084 bytes = 2021 >= 2021: u is the boundary, but at block level 2021 is not > 2021, so
    # all of it is kept; under 2021.5 no message reaches the budget at all. Both keep it all.
    assert split([u, a], 2021) == Split((), (u, a))
    assert split([u, a], 2021.5) == Split((), (u, a))
    assert split([u, a], 2020.9) == Split((msg("user", text(4), id="u"),), (msg("user", img, id="u"), a))


# --- against a brute-force reading of the rule -----------------------------------------------

def _reference(context: list[Message], budget: float, head: int) -> tuple[list[tuple[int, int]],
                                                                         list[tuple[int, int]]]:
    """(message, block) positions compressed and kept, by the rule as the spec states it:
    the boundary is the newest message whose suffix count reaches the budget; within it keep
    the longest block suffix whose count is not above it, then move the cut past any kept
    tool result whose call is not kept with it, until stable."""
    def count(units: int) -> int:
        return RULE.finalize(head + units)

    units = [[RULE.message_units(Message("user", (b,))) for b in m.content] for m in context]
    boundary, suffix = -1, 0
    for i in range(len(context) - 1, -1, -1):
        if count(suffix + sum(units[i])) >= budget:
            boundary = i
            break
        suffix += sum(units[i])
    every = [(i, j) for i, m in enumerate(context) for j in range(len(m.content))]
    if boundary < 0:
        return [], every
    blocks = context[boundary].content
    keep_from = len(blocks)
    tail = suffix
    for j in range(len(blocks) - 1, -1, -1):
        if count(tail + units[boundary][j]) > budget:
            break
        tail += units[boundary][j]
        keep_from = j
    cut = keep_from - 1
    while True:  # AgentScope's loop, transcribed (:2986-3024)
        remain: dict[str, int] = {}
        for j in range(len(blocks) - 1, cut, -1):
            b = blocks[j]
            if isinstance(b, ToolResultBlock):
                remain[b.id] = j
            elif isinstance(b, ToolCallBlock):
                remain.pop(b.id, None)
        if not remain:
            break
        cut = max(remain.values())
    keep_from = cut + 1
    kept = [(i, j) for i, j in every if i > boundary or (i == boundary and j >= keep_from)]
    return [p for p in every if p not in kept], kept


def _positions(context: list[Message], part: tuple[Message, ...]) -> list[tuple[int, int]]:
    out = []
    for m in part:
        (i,) = [k for k, c in enumerate(context) if c.id == m.id]
        blocks = list(context[i].content)
        out += [(i, blocks.index(b)) for b in m.content]
    return out


_kinds = st.tuples(st.sampled_from("tcr"), st.sampled_from(["k0", "k1", "k2"]),
                   st.text(alphabet="ab中", min_size=0, max_size=12))


def _block(kind: str, key: str, body: str) -> Block:
    if kind == "c":
        return ToolCallBlock(key, "track_order", body)
    if kind == "r":
        return ToolResultBlock(key, "track_order", body)
    return TextBlock(body)


@settings(max_examples=400, deadline=None)
@given(contents=st.lists(st.lists(_kinds, min_size=1, max_size=5), min_size=0, max_size=5),
       head=st.integers(0, 60), budget=st.floats(0, 40, allow_nan=False))
def test_split_matches_the_rule(contents: list[list[tuple[str, str, str]]], head: int,
                                budget: float) -> None:
    # Distinct texts per block so a block's position can be recovered from its value.
    context = [Message("user" if i % 2 == 0 else "assistant",
                       tuple(_block(k, key, f"{i}.{j}:{body}")
                             for j, (k, key, body) in enumerate(blocks)),
                       id=f"m{i}") for i, blocks in enumerate(contents)]
    s = split(context, budget, head)
    compressed, kept = _reference(context, budget, head)
    assert _positions(context, s.to_compress) == compressed
    assert _positions(context, s.to_keep) == kept
    kept_units = sum(RULE.message_units(m) for m in s.to_keep)
    assert not s.to_keep or RULE.finalize(head + kept_units) <= budget


# --- through the harness: the prefix is its system prompt, summary and tool schemas ------------

def test_harness_split_counts_system_summary_and_tools() -> None:
    h = rig(tools=("track_order",)).harness
    head = RULE.head_units(h.system, "", h.tool_schemas)
    assert RULE.finalize(head) == 127
    u = msg("user", text(40), id="u")
    a = msg("assistant", call("c1", 40), result("c1", 40), text(40, "t"), id="a")
    h.inject([u, a])
    # 127 + 10 (text) = 137 and 127 + 20 (result, text) = 147: a budget of 140 keeps the text.
    s = h.split(140)
    assert s.to_compress == (u, msg("assistant", call("c1", 40), result("c1", 40), id="a"))
    assert s.to_keep == (msg("assistant", text(40, "t"), id="a"),)
    # A summary is part of the prefix: 40 more bytes (10 tokens) and the text no longer fits.
    h.summary = "s" * 40
    assert h.split(140) == Split((u, a), ())
    assert h.split(160) == Split((u, msg("assistant", call("c1", 40), result("c1", 40), id="a")),
                                 (msg("assistant", text(40, "t"), id="a"),))


# --- against the real package (the agentscope extra) --------------------------------------------

@pytest.fixture(scope="module")
def agentscope_split() -> Callable[[list[Message], float, int], Split]:
    """AgentScope 2.0.11's own ``Agent._split_context_for_compression``, on our messages."""
    require_agentscope()
    from agentscope.agent import Agent

    def from_am(m: Any) -> Message:
        blocks: list[Block] = []
        for b in m.content:
            if b.type == "tool_call":
                blocks.append(ToolCallBlock(b.id, b.name, b.input))
            elif b.type == "tool_result":
                blocks.append(ToolResultBlock(b.id, b.name, b.output))
            else:
                blocks.append(TextBlock(b.text))
        return Message(m.role, tuple(blocks), id=m.id)

    def run(context: list[Message], budget: float, head: int) -> Split:
        agent = Agent(name="agent", system_prompt="s" * head, model=offline_model())
        agent.state.context = [to_agentscope(m) for m in context]
        comp, keep = asyncio.run(agent._split_context_for_compression(budget, []))
        return Split(tuple(from_am(m) for m in comp), tuple(from_am(m) for m in keep))

    return run


@pytest.mark.slow
@pytest.mark.agentscope
@settings(max_examples=300, deadline=None)
@given(contents=st.lists(st.lists(_kinds, min_size=1, max_size=5), min_size=0, max_size=5),
       head=st.integers(0, 60), budget=st.floats(0, 40, allow_nan=False))
def test_split_equals_agentscope(agentscope_split: Callable[[list[Message], float, int], Split],
                                 contents: list[list[tuple[str, str, str]]], head: int,
                                 budget: float) -> None:
    # User messages hold text only, as AgentScope's Msg requires.
    context = []
    for i, blocks in enumerate(contents):
        content = tuple(_block(k, key, f"{i}.{j}:{body}")
                        for j, (k, key, body) in enumerate(blocks))
        role = "user" if i % 2 == 0 and all(isinstance(b, TextBlock) for b in content) \
            else "assistant"
        context.append(Message(role, content, id=f"m{i}"))  # type: ignore[arg-type]
    assert split(context, budget, head) == agentscope_split(context, budget, head)
