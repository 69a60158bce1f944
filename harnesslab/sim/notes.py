"""A memory extraction that offers a tool to write the note (docs/understanding.md, "A memory
note written with a tool"): the fake model writes its extraction with the tool instead of
answering it in words, as a model told to record memories with a file tool does.

Read, never the instruction's wording: which offered tool takes a ``content`` parameter (the
note's body), which of its other required parameters the instructions give a value for in the
common ``param=value`` form (a value in ``<...>`` is a placeholder, not a value), and whether a
reading tool taking the same ``path`` is offered (then the note is read first, once, and what
it holds is kept: the extraction reads the whole request, the read result included, but a
result of the request's own tools is no fact about the conversation). A
required parameter without a stated value gets a stem derived from the content (``name``-like
parameters must be filenames) so that two different notes never share one.
"""

from __future__ import annotations

import hashlib
import json
import re

from harnesslab.messages import Request, ToolCallBlock, ToolSchema

__all__ = ["note_call", "tool_parameters"]

_READ_NAMES = ("read", "Read", "read_file")


def tool_parameters(tool: ToolSchema) -> tuple[dict[str, object], list[str]]:
    """A tool schema's properties and required names (either API's layout)."""
    fn = tool.to_dict().get("function", tool.to_dict())
    params = fn.get("parameters") or fn.get("input_schema") or {}
    props = params.get("properties") if isinstance(params, dict) else None
    required = params.get("required") if isinstance(params, dict) else None
    return (props if isinstance(props, dict) else {},
            [r for r in required if isinstance(r, str)] if isinstance(required, list) else [])


def _stated(text: str, key: str) -> str | None:
    """The value the instructions give ``key`` as ``key=value`` (not a ``<placeholder>``)."""
    for m in re.finditer(rf"(?<![\w-]){re.escape(key)}=([^\s`<>{{}}]+)", text):
        return m.group(1).rstrip(".,;:)")
    return None


def _calls(request: Request, since: int) -> list[tuple[str, dict[str, object]]]:
    out = []
    for m in request.messages[since + 1:]:
        for b in m.content:
            if isinstance(b, ToolCallBlock):
                try:
                    args = json.loads(b.input or "{}")
                except json.JSONDecodeError:
                    continue
                if isinstance(args, dict):
                    out.append((b.name, args))
    return out


def note_call(request: Request, instructions: str, index: int | None,
              content: str) -> tuple[str, str] | None:
    """The next tool call (name, JSON arguments) that writes ``content`` as a memory note, or
    None: no note-writing tool is offered, or it was called already in this request (after
    message ``index``, the one holding the instruction and the transcript)."""
    writer = next((t for t in request.tools if "content" in tool_parameters(t)[0]), None)
    if writer is None:
        return None
    props, required = tool_parameters(writer)
    since = -1 if index is None else index
    calls = _calls(request, since)
    if any(name == writer.name for name, _ in calls):
        return None
    args: dict[str, object] = {}
    stem = "memory-" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:8]
    for key, spec in props.items():
        if key == "content":
            continue
        value = _stated(instructions, key)
        if value is not None:
            args[key] = value
        elif key in required and isinstance(spec, dict) and spec.get("type") == "string":
            args[key] = stem
    path = args.get("path")
    if isinstance(path, str) and _stated(instructions, "path") == path:
        reader = next((t for t in request.tools if t.name in _READ_NAMES
                       and "path" in tool_parameters(t)[0]), None)
        if reader is not None and not any(n == reader.name and a.get("path") == path
                                          for n, a in calls):
            return reader.name, json.dumps({"path": path}, ensure_ascii=False)
    # The results of this request's own tools (the note it read or wrote) are no fact about the
    # conversation: only the lines they hold are kept.
    own = tuple(f"[fact:{t.name} " for t in request.tools)
    args["content"] = "\n".join(ln for ln in content.splitlines() if not ln.startswith(own))
    return writer.name, json.dumps(args, ensure_ascii=False)
