"""Tool names a harness decorates: the world's tools offered under a framework's namespace
(Semantic Kernel's ``plugin-function``, an MCP client's ``server__tool`` or ``mcp__srv__tool``,
``functions.tool``) are read as the world's tools, and called by the name offered.

A real model calls ``shop-track_order`` as readily as ``track_order``: the name it is given is
the tool. The fake model decides in the world's names (its domain's needs name them), so a
request is read with each decorated name taken back to the world's, and the reply's tool calls
carry the offered name again. An offered name is a world tool's when it ends with that name
after a separator (``-``, ``.``, ``_``, ``:``, ``/``), the longest such name winning, and the
world's own name is not offered beside it (then that one is the tool). Any other name is left
as it is: a tool the world does not have stays one the fake model never calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from harnesslab.messages import Block, Message, Request, ToolCallBlock, ToolResultBlock, ToolSchema

__all__ = ["aliases", "as_offered", "as_world"]

_SEPARATORS = frozenset("-.:_/")


def aliases(tools: tuple[ToolSchema, ...], world: frozenset[str]) -> dict[str, str]:
    """Offered name -> the world tool's name, for the offered tools named otherwise (empty
    when every offered name is the world's or none is one of its tools decorated)."""
    if all(t.name in world for t in tools):
        return {}  # the common case: the harness offers the world's tools by their names
    offered = {t.name for t in tools}
    out: dict[str, str] = {}
    for t in tools:
        name = t.name
        if name in world:
            continue
        best = max((w for w in world if w not in offered and len(name) > len(w)
                    and name.endswith(w) and name[-len(w) - 1] in _SEPARATORS),
                   key=len, default=None)
        # Two offered names for one world tool: the first offered is the one called.
        if best is not None and best not in out.values():
            out[name] = best
    return out


def _renamed(b: Block, names: Mapping[str, str]) -> Block:
    if isinstance(b, ToolCallBlock | ToolResultBlock) and b.name in names:
        return replace(b, name=names[b.name])
    return b


def _message(m: Message, names: Mapping[str, str]) -> Message:
    content = tuple(_renamed(b, names) for b in m.content)
    if all(a is b for a, b in zip(content, m.content, strict=True)):
        return m  # most messages: the same object (the reader's layout keeps it by identity)
    return replace(m, content=content)


def as_world(request: Request, names: Mapping[str, str]) -> Request:
    """``request`` with the decorated names of ``names`` taken back to the world's: its tools,
    the calls and results in its messages, and a tool choice that names one."""
    return replace(
        request,
        tools=tuple(replace(t, name=names[t.name]) if t.name in names else t
                    for t in request.tools),
        messages=tuple(_message(m, names) for m in request.messages),
        meta=tuple((k, names.get(v, v)) if k == "tool_choice" else (k, v)
                   for k, v in request.meta))


def as_offered(blocks: tuple[Block, ...], names: Mapping[str, str]) -> tuple[Block, ...]:
    """A reply's tool calls by the names the request offered (``names``: offered -> world)."""
    back = {w: o for o, w in names.items()}
    return tuple(replace(b, name=back[b.name]) if isinstance(b, ToolCallBlock)
                 and b.name in back else b for b in blocks)
