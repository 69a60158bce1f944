"""Limits on what enters or stays in the context: tool_result_limit truncation (semantics spec
§2.5), Codex's head+tail truncation, and the image limit (§2.9)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.harness.limits import head_tail_truncate, limit_images, truncate_tool_result
from harnesslab.harness.offload import Offloader
from harnesslab.harness.prompts import DEFAULT
from harnesslab.messages import (
    Block,
    DataBlock,
    HintBlock,
    History,
    Message,
    TextBlock,
    ToolResultBlock,
)
from harnesslab.tokens import bytes4
from tests.agentscope_support import offline_model, require_agentscope
from tests.harness.support import TRACE, results, rig

MARKER = ("\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for "
          "limited context.</system-reminder>")


def truncate(output: str, limit: int, offloader: Offloader | None = None,
             call_id: str = "call_1") -> tuple[str, bool]:
    kept, truncated = truncate_tool_result(output, limit, DEFAULT, session_id="s1",
                                           call_id=call_id, offloader=offloader)
    assert isinstance(kept, str)  # a string result stays a string
    return kept, truncated


# --- tool_result_limit ---------------------------------------------------------------------------

def test_marker_text_is_agentscopes() -> None:
    assert DEFAULT.tool_truncated.replace("{R}", "") == MARKER
    assert len(MARKER) == 111
    assert bytes4(MARKER) == 28


def test_verified_example_1821_chars_455_tokens_limit_50_keeps_200() -> None:
    output = "".join(chr(ord("a") + i % 26) for i in range(1821))
    assert bytes4(output) == 455
    kept, truncated = truncate(output, 50)
    assert truncated is True
    assert kept == output[:200] + MARKER          # int(50 / 455 x 1821) = int(200.1) = 200


def test_proportion_is_in_characters_while_tokens_come_from_bytes() -> None:
    output = "中" * 600                             # 1800 bytes = 450 tokens
    kept, _ = truncate(output, 50)
    assert kept == "中" * 66 + MARKER               # int(50 / 450 x 600) = 66 characters


def test_results_within_the_limit_are_untouched() -> None:
    exact = "x" * 201                                # int(50.25 + 0.5) = 50 tokens == limit
    assert truncate(exact, 50) == (exact, False)
    over = "x" * 202                                 # int(50.5 + 0.5) = 51 > 50
    assert truncate(over, 50) == ("x" * 198 + MARKER, True)   # int(50 / 51 x 202) = 198
    assert truncate("", 1) == ("", False)


def test_offloader_reference_and_files(tmp_path: Path) -> None:
    off = Offloader(tmp_path)
    output = "".join(chr(ord("a") + i % 26) for i in range(1821))
    kept, _ = truncate(output, 50, off, call_id="call_7")
    path = "/workspace/sessions/s1/tool_result-call_7.txt"
    assert kept == output[:200] + (
        "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited "
        f"context. You can refer to the file in '{path}' for the truncated content if needed."
        "</system-reminder>")
    assert (tmp_path / "sessions/s1/tool_result-call_7.txt").read_text(encoding="utf-8") == \
        output[200:]
    # The same call id again: (1), then (2).
    for k in (1, 2):
        kept, _ = truncate(output, 50, off, call_id="call_7")
        assert f"'/workspace/sessions/s1/tool_result-call_7({k}).txt'" in kept
        assert (tmp_path / f"sessions/s1/tool_result-call_7({k}).txt").exists()
    # A result within the limit writes nothing.
    assert truncate("short", 50, off, call_id="call_8") == ("short", False)
    assert not (tmp_path / "sessions/s1/tool_result-call_8.txt").exists()


@settings(max_examples=200, deadline=None)
@given(output=st.text(min_size=0, max_size=400), limit=st.integers(1, 120))
def test_truncation_rule(output: str, limit: int) -> None:
    kept, truncated = truncate(output, limit)
    n = bytes4(output)
    if n <= limit:
        assert (kept, truncated) == (output, False)
    else:
        assert truncated is True
        assert kept == output[:int(limit / n * len(output))] + MARKER


def test_truncation_happens_when_the_result_is_saved() -> None:
    r = rig(tools=("get_logistics_trace",), tool_result_limit=100)
    r.harness.turn(TRACE)
    (ev,) = r.tools()
    full = ev["result"]
    n = bytes4(full)
    assert (ev["truncated"], n) == (True, 804)
    (res,) = results(r.harness.context)
    assert res.output == full[:int(100 / n * len(full))] + MARKER
    # The model's next request holds the truncated result, never the full one.
    assert results(r.calls()[-1]["request"].messages) == [res]


# --- Codex head + tail ---------------------------------------------------------------------------

def test_head_tail_truncate_keeps_head_and_tail() -> None:
    output = "a" * 400 + "b" * 400                    # 800 bytes = 200 tokens
    assert head_tail_truncate(output, 50) == \
        ("a" * 100 + "\n…150 tokens truncated…\n" + "b" * 100, True)   # keep int(50/200 x 800)
    assert head_tail_truncate(output, 200) == (output, False)


def test_codex_strategy_uses_head_tail_truncation() -> None:
    r = rig(tools=("get_logistics_trace",), strategy="codex",
            codex={"tool_output_limit": 100})
    r.harness.turn(TRACE)
    (ev,) = r.tools()
    (res,) = results(r.harness.context)
    assert ev["truncated"] is True
    assert res.output == head_tail_truncate(ev["result"], 100)[0]
    assert "tokens truncated" in str(res.output)


# --- images --------------------------------------------------------------------------------------

PNG = base64.b64encode(b"\x89PNG fake image bytes").decode()


def img(name: str = "", source: str = PNG) -> DataBlock:
    return DataBlock("image/png", source, name=name)


def removed(name: str = "") -> str:
    named = f"named '{name}' " if name else ""
    return f"<system-reminder>The image {named}is removed to free up context space.</system-reminder>"


def _context() -> History:
    return History.of([
        Message("user", (TextBlock("look"), img("x.png")), name="alice", id="u1"),
        Message("assistant", (img(), ToolResultBlock("c1", "camera", (TextBlock("shot"), img("t.png")),
                                                     is_error=True),
                              HintBlock((img("h.png"), TextBlock("hint")), source="mem")),
                id="a1"),
        Message("user", (img("y.png"),), id="u2"),
    ])


def test_images_newest_kept_older_replaced() -> None:
    new, n = limit_images(_context(), 2, DEFAULT, None)
    assert n == 3
    assert list(new) == [
        # top level of a user message: a text block
        Message("user", (TextBlock("look"), TextBlock(removed("x.png"))), name="alice", id="u1"),
        Message("assistant", (
            HintBlock(removed()),            # top level of a non-user message: a hint
            ToolResultBlock("c1", "camera", (TextBlock("shot"), TextBlock(removed("t.png"))),
                            is_error=True),  # inside a tool result: a text block
            HintBlock((img("h.png"), TextBlock("hint")), source="mem")), id="a1"),
        Message("user", (img("y.png"),), id="u2"),
    ]


def test_images_in_hints_are_counted_and_replaced_by_text() -> None:
    new, n = limit_images(_context(), 1, DEFAULT, None)
    assert n == 4
    assert new[1].content[2] == HintBlock((TextBlock(removed("h.png")), TextBlock("hint")),
                                          source="mem")
    assert new[2] == Message("user", (img("y.png"),), id="u2")


def test_images_within_the_limit_are_untouched() -> None:
    ctx = _context()
    assert limit_images(ctx, 5, DEFAULT, None) == (ctx, 0)
    assert limit_images(ctx, 5, DEFAULT, None)[0] is ctx
    zero, n = limit_images(ctx, 0, DEFAULT, None)
    assert n == 5
    assert zero[2] == Message("user", (TextBlock(removed("y.png")),), id="u2")


def test_non_image_data_blocks_are_never_limited() -> None:
    pdf = DataBlock("application/pdf", PNG, name="a.pdf")
    ctx = History.of([Message("user", (pdf, img("a.png"), pdf))])
    new, n = limit_images(ctx, 0, DEFAULT, None)
    assert n == 1
    assert new[0].content == (pdf, TextBlock(removed("a.png")), pdf)


def test_offloaded_image_reminder(tmp_path: Path) -> None:
    ctx = History.of([Message("assistant", (img("x.png"),)), Message("user", (img(),))])
    new, _ = limit_images(ctx, 0, DEFAULT, Offloader(tmp_path))
    digest = hashlib.sha256(PNG.encode()).hexdigest()
    url = f"/workspace/data/{digest}.png"
    assert new[0].content == (HintBlock(
        f"<system-reminder>The image named 'x.png' is offloaded into {url}, you can refer to it "
        "when needed.</system-reminder>"),)
    assert new[1].content == (TextBlock(
        f"<system-reminder>The image is offloaded into {url}, you can refer to it when needed."
        "</system-reminder>"),)
    assert (tmp_path / "data" / f"{digest}.png").read_bytes() == b"\x89PNG fake image bytes"


def test_url_image_points_at_its_url_without_an_offloader() -> None:
    ctx = History.of([Message("user", (img("cat.jpg", "https://example.com/cat.jpg"),))])
    new, _ = limit_images(ctx, 0, DEFAULT, None)
    assert new[0].content == (TextBlock(
        "<system-reminder>The image named 'cat.jpg' is offloaded into https://example.com/cat.jpg, "
        "you can refer to it when needed.</system-reminder>"),)


def test_harness_limits_images_before_every_compaction_check() -> None:
    r = rig(max_image_num=1)
    h = r.harness
    h.turn("Thanks!", images=(img("1.png"), img("2.png")))
    assert r.types()[0] == "image_limit"
    assert r.sink.of_type("image_limit") == [{"type": "image_limit", "removed": 1}]
    assert h.context[0].content == (TextBlock("Thanks!"), TextBlock(removed("1.png")),
                                    img("2.png"))
    # The model's request already had the reminder; the next turn's image pushes 2.png out.
    assert r.calls()[0]["request"].messages[0] == h.context[0]
    h.turn("Thanks!", images=(img("3.png"),))
    contents = [m.content for m in h.context]
    assert contents[0] == (TextBlock("Thanks!"), TextBlock(removed("1.png")),
                           TextBlock(removed("2.png")))
    assert contents[2] == (TextBlock("Thanks!"), img("3.png"))


# --- against the real package (the agentscope extra) --------------------------------------------

@pytest.fixture(scope="module")
def agentscope_agent() -> Callable[[int, int], Any]:
    """A factory of AgentScope 2.0.11 agents with a given tool_result_limit / max_image_num."""
    require_agentscope()
    from agentscope.agent import Agent, ContextConfig

    def make(tool_result_limit: int, max_image_num: int) -> Any:
        return Agent(name="agent", system_prompt="s", model=offline_model(),
                     context_config=ContextConfig(
            tool_result_limit=tool_result_limit, max_image_num=max_image_num))

    return make


@pytest.mark.slow
@pytest.mark.agentscope
@settings(max_examples=200, deadline=None)
@given(output=st.text(min_size=1, max_size=400), limit=st.integers(1, 120))
def test_truncation_equals_agentscope(agentscope_agent: Callable[[int, int], Any], output: str,
                                      limit: int) -> None:
    from agentscope import message as am

    agent = agentscope_agent(limit, 5)
    # As _execute_tool_call builds it: the output normalised to a list of text blocks.
    block = am.ToolResultBlock(id="c1", name="t", output=[am.TextBlock(text=output)])
    reserved, offloaded = asyncio.run(agent._split_tool_result_for_compression(block))
    ours, truncated = truncate(output, limit)
    assert truncated is (offloaded is not None)
    if offloaded is None:
        assert ours == output
    else:
        texts = [b.text for b in reserved.output]
        expected = (texts[-1] if texts else "") + MARKER
        assert ours == expected
        assert "".join(b.text for b in offloaded.output) == output[len(ours) - len(MARKER):]


_image = st.tuples(st.sampled_from(["", "a.png", "b.jpg"]), st.booleans())


@pytest.mark.slow
@pytest.mark.agentscope
@settings(max_examples=150, deadline=None)
@given(layout=st.lists(st.tuples(st.sampled_from(["user", "assistant"]),
                                 st.lists(st.tuples(st.sampled_from(["img", "text", "result",
                                                                     "hint"]), _image),
                                          min_size=1, max_size=4)),
                       min_size=1, max_size=4),
       keep=st.integers(0, 6))
def test_image_limit_equals_agentscope(agentscope_agent: Callable[[int, int], Any],
                                       layout: list[tuple[str, list[tuple[str, tuple[str, bool]]]]],
                                       keep: int) -> None:
    from agentscope import message as am

    def image(name: str, url: bool) -> tuple[DataBlock, Any]:
        if url:
            src = f"https://example.com/{name or 'x.png'}"
            return (DataBlock("image/png", src, name=name),
                    am.DataBlock(source=am.URLSource(url=src, media_type="image/png"),
                                 name=name or None))
        return (DataBlock("image/png", PNG, name=name),
                am.DataBlock(source=am.Base64Source(data=PNG, media_type="image/png"),
                             name=name or None))

    ours: list[Message] = []
    theirs: list[Any] = []
    for role, blocks in layout:
        mine: list[Block] = []
        real: list[Any] = []
        for kind, (name, url) in blocks:
            if role == "user" and kind in ("result", "hint"):
                kind = "img"  # a user message holds text and data only
            d, ad = image(name, url)
            if kind == "img":
                mine.append(d)
                real.append(ad)
            elif kind == "text":
                mine.append(TextBlock("t"))
                real.append(am.TextBlock(text="t"))
            elif kind == "result":
                mine.append(ToolResultBlock("c", "cam", (TextBlock("r"), d)))
                real.append(am.ToolResultBlock(id="c", name="cam",
                                               output=[am.TextBlock(text="r"), ad]))
            else:
                mine.append(HintBlock((d, TextBlock("h"))))
                real.append(am.HintBlock(hint=[ad, am.TextBlock(text="h")]))
        ours.append(Message(role, tuple(mine)))  # type: ignore[arg-type]
        theirs.append(am.Msg(name=role, role=role, content=real))

    agent = agentscope_agent(50000, keep)
    agent.state.context = theirs
    asyncio.run(agent._limit_context_images(agent.context_config))
    new, _ = limit_images(History.of(ours), keep, DEFAULT, None)

    def shape(b: Any) -> Any:
        t = b.type
        if t == "text":
            return ("text", b.text)
        if t == "data":
            return ("data", b.name or "")
        if t == "hint":
            return ("hint", b.hint if isinstance(b.hint, str) else [shape(p) for p in b.hint])
        return ("result", [shape(p) for p in b.output])

    def our_shape(b: Any) -> Any:
        if isinstance(b, TextBlock):
            return ("text", b.text)
        if isinstance(b, DataBlock):
            return ("data", b.name)
        if isinstance(b, HintBlock):
            return ("hint", b.hint if isinstance(b.hint, str) else [our_shape(p) for p in b.hint])
        assert isinstance(b, ToolResultBlock) and not isinstance(b.output, str)
        return ("result", [our_shape(p) for p in b.output])

    assert [[our_shape(b) for b in m.content] for m in new] == \
        [[shape(b) for b in m.content] for m in agent.state.context]
