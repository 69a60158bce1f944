"""Tools offered in the prompt: a ReAct loop's text protocol, as the fake model speaks it.

A harness that offers no tools to the API but lists them in its instructions (the system
prompt, a leading system message or the last user message) and asks for
``Action:`` / ``Action Input:`` lines (LlamaIndex's ReActAgent, CrewAI's and LangChain's
classic ReAct prompts, many in-house loops) gets what a model following those instructions
writes: a tool call as ``Thought: ...`` / ``Action: <tool>`` / ``Action Input: <JSON>``, an
answer after the prompt's final-answer marker (``Final Answer:``, else ``Answer:``, else the
plain text). The tools so offered are the world's tools the instructions name (as whole
words); the model decides as if they were offered natively. The harness hands results back
as text (``Observation: ...``), which the reading already takes as the turn's own facts
(``sim.reading``: a tool call written as text, then a user message quoting its result).

A reply written so says so in its annotations (``tool_protocol``: ``react``; its calls as
``text_calls``, by which the judge reads what was called).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from harnesslab.messages import Block, Request, TextBlock, ToolCallBlock, ToolSchema

__all__ = ["answer_of", "as_react", "final_marker", "listed_tools", "with_listed"]

_ACTION = re.compile(r"^[ \t>*`-]*Action[ \t]*:", re.M)
_INPUT = re.compile(r"^[ \t>*`-]*Action[ \t]+Input[ \t]*:", re.M)
_FINAL = re.compile(r"^[ \t>*`-]*Final[ \t]+Answer[ \t]*:", re.M)
_ANSWER = re.compile(r"^[ \t>*`-]*Answer[ \t]*:", re.M)
THOUGHT_CALL = "Thought: I need to use a tool to help me answer the question."
THOUGHT_ANSWER = "Thought: I can answer without using any more tools."


def _instructions(request: Request) -> str:
    """Where a harness states its protocol: the system prompt, a leading system message, and
    the last user message (a classic ReAct prompt is one user message). Not every message:
    this is read on every call that offers no tools, and must not cost the whole context."""
    msgs = request.messages
    first = [msgs[0].plain_text()] if msgs and msgs[0].role == "system" else []
    last = next((m.plain_text() for m in reversed(msgs) if m.role == "user"), "")
    return "\n".join([request.system, *first, last])


def listed_tools(request: Request, world: Iterable[str]) -> tuple[str, ...]:
    """The world's tools a request offers in its prompt, under a ReAct protocol: none when it
    offers tools to the API, or asks for no ``Action:``/``Action Input:`` lines."""
    if request.tools:
        return ()
    text = _instructions(request)
    if "Input" not in text or not (_INPUT.search(text) and _ACTION.search(text)):
        return ()
    return tuple(n for n in sorted(world)
                 if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text))


def with_listed(request: Request, names: tuple[str, ...]) -> Request:
    """The request as the model decides on it: the listed tools offered."""
    return replace(request, tools=tuple(ToolSchema.from_dict({"type": "function", "function": {
        "name": n, "parameters": {"type": "object", "properties": {}}}}) for n in names))


def final_marker(request: Request) -> str | None:
    """The word the prompt wants before a final answer, if any."""
    text = _instructions(request)
    return "Final Answer" if _FINAL.search(text) else "Answer" if _ANSWER.search(text) else None


def as_react(request: Request, blocks: tuple[Block, ...], annotations: Mapping[str, Any]
             ) -> tuple[tuple[Block, ...], Mapping[str, Any]]:
    """A reply in the protocol (module docstring): its first tool call as an action (one
    action a step, as the protocol asks), else its text after the final-answer marker. A
    summary stays as written."""
    if annotations.get("kind") in ("summary", "summary_refused"):
        return blocks, annotations
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    if calls:
        c = calls[0]
        text = f"{THOUGHT_CALL}\nAction: {c.name}\nAction Input: {c.input or '{}'}"
        return (TextBlock(text),), {**annotations, "tool_protocol": "react", "text_calls": [
            {"name": c.name, "input": c.input or "{}"}]}
    said = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    marker = final_marker(request)
    text = f"{THOUGHT_ANSWER}\n{marker}: {said}" if marker else said
    return (TextBlock(text),), {**annotations, "tool_protocol": "react"}


def answer_of(text: str) -> str | None:
    """The final answer in a reply written in the protocol (the text after its last
    final-answer marker), if it has one."""
    found = [m for m in (_FINAL.search(text), *_ANSWER.finditer(text)) if m is not None]
    if not found:
        return None
    return text[max(m.end() for m in found):].strip()
