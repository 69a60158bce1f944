"""A request's ``tool_choice`` between the three wires and the request's meta.

The meta holds ``("tool_choice", value)``, value ``none``, ``required``, ``forced`` (the
reference harness's: the one tool offered) or an offered tool's name; ``auto`` is the default
and is not written, so a body that sends it gives the same request as one that does not.

Each API spells it its own way (Chat Completions ``"required"`` and
``{"type": "function", "function": {"name": N}}``; Anthropic ``{"type": "any"}`` and
``{"type": "tool", "name": N}``; Responses ``"required"`` and ``{"type": "function", "name":
N}``; both OpenAI APIs' ``allowed_tools`` by its mode). A hosted tool the bench does not have
(Responses' ``file_search``, ``web_search``, ...) is read as ``auto``. Bad input, as the real
APIs reject it: an unknown value, a named tool that is not among the tools, a choice that
needs a tool when none is offered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from harnesslab.errors import InputError
from harnesslab.messages import Request

__all__ = ["choice_from_anthropic", "choice_from_openai", "choice_from_responses",
           "choice_of"]

Meta = tuple[tuple[str, str], ...]
Kind = Literal["none", "required", "named"]


def _meta(kind: str, name: str | None, tools: Sequence[str], field: str) -> Meta:
    if kind == "auto":
        return ()
    if kind == "none":
        return (("tool_choice", "none"),)
    if not tools:
        raise InputError(f"tool_choice {kind!r} needs at least one tool; none is given",
                         field=field)
    if kind == "required":
        return (("tool_choice", "required"),)
    if not isinstance(name, str) or not name:
        raise InputError("expected the name of a tool", field=field)
    if name not in tools:
        raise InputError(f"tool {name!r} is not among the tools ({', '.join(tools)})",
                         field=field)
    return (("tool_choice", name),)


def _allowed(mode: Any, field: str) -> str:
    if mode not in ("auto", "required"):
        raise InputError(f"expected 'auto' or 'required', got {mode!r}", field=field)
    return str(mode)


def _openai_like(raw: Any, tools: Sequence[str], *, nested: bool) -> Meta:
    """Both OpenAI APIs: the same strings; a function named inside ``function`` (Chat
    Completions, ``nested``) or beside ``type`` (Responses); ``allowed_tools`` by its mode."""
    f = "tool_choice"
    if raw is None:
        return ()
    if raw in ("none", "auto", "required"):
        return _meta(raw, None, tools, f)
    if isinstance(raw, Mapping) and isinstance(raw.get("type"), str):
        kind = raw["type"]
        if kind in ("function", "custom"):
            inner = raw.get(kind) if nested else raw
            name = inner.get("name") if isinstance(inner, Mapping) else None
            return _meta("named", name, tools, f"{f}.{kind}.name" if nested else f"{f}.name")
        if kind == "allowed_tools":
            inner = raw.get(kind) if nested else raw
            mode = inner.get("mode") if isinstance(inner, Mapping) else None
            field = f"{f}.allowed_tools.mode" if nested else f"{f}.mode"
            return _meta(_allowed(mode, field), None, tools, f)
        if not nested:
            return ()  # a hosted tool (file_search, web_search, mcp, ...): not the bench's
    raise InputError(f"expected 'none', 'auto', 'required' or a tool to call, got {raw!r}",
                     field=f)


def choice_from_openai(raw: Any, tools: Sequence[str]) -> Meta:
    """Chat Completions' ``tool_choice`` as the request's meta (module docstring)."""
    return _openai_like(raw, tools, nested=True)


def choice_from_responses(raw: Any, tools: Sequence[str]) -> Meta:
    """The Responses API's ``tool_choice`` as the request's meta (module docstring)."""
    return _openai_like(raw, tools, nested=False)


def choice_from_anthropic(raw: Any, tools: Sequence[str]) -> Meta:
    """Anthropic's ``tool_choice`` as the request's meta (module docstring)."""
    f = "tool_choice"
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        kind = raw.get("type")
        if kind in ("auto", "none"):
            return _meta(kind, None, tools, f)
        if kind == "any":
            return _meta("required", None, tools, f)
        if kind == "tool":
            return _meta("named", raw.get("name"), tools, f + ".name")
    raise InputError(f"expected an object whose type is auto, any, tool or none, got {raw!r}",
                     field=f + ".type")


def choice_of(r: Request) -> tuple[Kind, str | None] | None:
    """The choice ``r``'s meta states, to write into a body: None for ``auto``; ``forced``
    is the one tool offered (any tool when there are several)."""
    raw = r.stated("tool_choice")
    if raw is None or raw == "auto" or not r.tools:
        return None
    if raw == "none":
        return "none", None
    if raw in ("required", "any"):
        return "required", None
    if raw == "forced":
        return ("named", r.tools[0].name) if len(r.tools) == 1 else ("required", None)
    return ("named", raw) if any(t.name == raw for t in r.tools) else None
