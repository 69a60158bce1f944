"""What a request's ``tool_choice`` lets the fake model answer with, as a real API enforces it.

A real chat API never returns a tool call under ``none`` and always returns one when a tool is
forced, whatever the model would rather say. The fake model reads the choice from the request's
meta (``("tool_choice", value)``: the reference harness and the adapters write it, the wires
read it from the body) and obeys it in two places: what it sees offered (``offered``: nothing
under ``none``, only the named tool under a named choice), and the form of its reply
(``obey``: a tool call written out as text under ``none``; under a forced choice, text put into
the tool's arguments, a refusal into none of them).

Values: ``auto`` (or none given), ``none``, ``required`` (any tool; Anthropic's ``any``),
``forced`` (the reference harness's: the structured-output tool, else the one tool offered),
or the name of an offered tool. A named tool the request does not offer, or a forced choice
with no tool offered, is read as ``auto`` (the wires reject both as bad input first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from harnesslab.messages import Block, Request, TextBlock, ToolCallBlock, ToolSchema
from harnesslab.sim.draws import call_id
from harnesslab.sim.intents import SUMMARY_TOOL
from harnesslab.sim.notes import tool_parameters
from harnesslab.sim.schemas import (
    asked_schema,
    fill,
    json_object_schema,
    prompted_json,
    prompted_schema,
)

__all__ = ["AUTO", "Choice", "in_format", "obey", "offered", "tool_choice"]


@dataclass(frozen=True, slots=True)
class Choice:
    mode: Literal["auto", "none", "required", "named"]
    name: str | None = None   # the tool, when named


AUTO = Choice("auto")
_NONE = Choice("none")
_REQUIRED = Choice("required")


def tool_choice(request: Request) -> Choice:
    """The request's choice (module docstring)."""
    if not request.meta or not request.tools:
        return AUTO
    raw = request.stated("tool_choice")
    if raw is None or raw == "auto":
        return AUTO
    if raw == "none":
        return _NONE
    if raw in ("required", "any"):
        return _REQUIRED
    names = [t.name for t in request.tools]
    if raw == "forced":
        if SUMMARY_TOOL in names:
            return Choice("named", SUMMARY_TOOL)
        return Choice("named", names[0]) if len(names) == 1 else _REQUIRED
    return Choice("named", raw) if raw in names else AUTO


def offered(request: Request, choice: Choice) -> Request:
    """The request as far as which tools the model may call: none under ``none``, the named
    one under a named choice."""
    if choice.mode == "none":
        return replace(request, tools=())
    if choice.mode == "named":
        return replace(request, tools=tuple(t for t in request.tools if t.name == choice.name))
    return request


def _as_text(call: ToolCallBlock) -> str:
    """A tool call's arguments as the text a model told not to call tools writes instead:
    the string values, one a line (the raw arguments when they are no JSON object)."""
    try:
        args = json.loads(call.input or "{}")
    except json.JSONDecodeError:
        return call.input
    if not isinstance(args, dict):
        return call.input
    return "\n".join(v for v in args.values() if isinstance(v, str) and v) or call.input


def _target(request: Request, choice: Choice, own: frozenset[str]) -> ToolSchema:
    """The tool a forced reply goes through: the named one; under ``required``, the first
    offered tool that is not one of the world's own (a framework's output tool, whose
    arguments are the answer), else the first offered."""
    if choice.mode == "named":
        return next(t for t in request.tools if t.name == choice.name)
    return next((t for t in request.tools if t.name not in own), request.tools[0])


def _parameters(tool: ToolSchema) -> dict[str, Any]:
    """A tool's parameters schema, whole (its ``$defs`` with it; either API's layout)."""
    fn = tool.to_dict().get("function", tool.to_dict())
    params = fn.get("parameters") or fn.get("input_schema") or {}
    return params if isinstance(params, dict) else {}


def obey(request: Request, choice: Choice, blocks: tuple[Block, ...],
         annotations: Mapping[str, Any], serialized: str,
         own: frozenset[str] = frozenset()) -> tuple[tuple[Block, ...], Mapping[str, Any]]:
    """The reply in the form ``choice`` allows. ``serialized`` (the request's text as the fake
    model reads it) seeds a new call's id; ``own``: the world's tool names. A reply that had to
    change says so in its annotations (``tool_choice``)."""
    if choice.mode == "auto":
        return blocks, annotations
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    if choice.mode == "none":
        if not calls:
            return blocks, annotations
        out: tuple[Block, ...] = tuple(TextBlock(_as_text(b)) if isinstance(b, ToolCallBlock)
                                       else b for b in blocks)
        return out, {**annotations, "tool_choice": "none"}
    if calls and (choice.mode == "required" or all(c.name == choice.name for c in calls)):
        return blocks, annotations
    tool = _target(request, choice, own)
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    # A refusal fills nothing: the call a forced model makes when it will not do the task.
    args = {} if annotations.get("kind") == "summary_refused" else \
        fill({"type": "object", **_parameters(tool), "properties": tool_parameters(tool)[0]}, text)
    raw = json.dumps(args, ensure_ascii=False)
    call = ToolCallBlock(call_id(serialized, tool.name, raw), tool.name, raw)
    return (call,), {**annotations, "tool_choice": choice.mode}


def in_format(request: Request, blocks: tuple[Block, ...],
              annotations: Mapping[str, Any], prompted: bool = True
              ) -> tuple[tuple[Block, ...], Mapping[str, Any]]:
    """A text reply in the JSON schema the request's ``response_format`` asks for
    (``sim.schemas``): one text block of the JSON, in place of the first text block, as a
    real API's structured output returns it; else (``prompted``) in the schema its
    instructions ask for in words, as a model following them writes it; else, in JSON mode
    or (``prompted``) asked for JSON in words, as the object its instructions describe. A
    reply that calls a tool, has no text or is already a JSON object stays as it is; one that
    changed says so (``response_format``: ``json_schema``, ``prompt`` or ``json_object``)."""
    # What no format changes is settled first: the instructions are read only for a reply
    # that could take one (most replies of a tool loop are calls).
    if any(isinstance(b, ToolCallBlock) for b in blocks):
        return blocks, annotations
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    if not text:
        return blocks, annotations
    if text.lstrip().startswith("{"):
        try:
            if isinstance(json.loads(text), dict):
                return blocks, annotations
        except ValueError:
            pass
    schema = asked_schema(request) if request.meta else None
    how = "json_schema"
    if schema is None and prompted:
        schema, how = prompted_schema(request), "prompt"
    if schema is None and request.meta:
        schema, how = json_object_schema(request), "json_object"
    if schema is None and prompted:
        schema, how = prompted_json(request), "prompt"
    if schema is None:
        return blocks, annotations
    raw = TextBlock(json.dumps(fill(schema, text), ensure_ascii=False))
    first = next(i for i, b in enumerate(blocks) if isinstance(b, TextBlock))
    out = tuple(b for i, b in enumerate(blocks) if not isinstance(b, TextBlock) or i == first)
    return (tuple(raw if isinstance(b, TextBlock) else b for b in out),
            {**annotations, "response_format": how})
