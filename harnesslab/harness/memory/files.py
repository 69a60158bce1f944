"""The file side of memory: one confined folder per (agent, user), the model's memory tools
over it (``memory_read``, ``memory_write``, ``memory_edit``, ``memory_search``), Markdown notes
(the workspace mode's items), MEMORY.md (the agentic mode's index) and the queue of finished
turns (the background mode).

A tool path is relative to the user's folder; ``..``, absolute paths and symlinks that lead
outside it are an error result (``harness.paths``), never a read or write. A user's folder is
named by the verified user (hex-escaped), so no argument the model passes reaches another's.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from harnesslab.harness.memory.items import ItemRecord, MemoryItem, safe_name
from harnesslab.harness.paths import ConfinedDir, PathEscape
from harnesslab.messages import (
    Message,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    message_from_dict,
    message_to_dict,
)

__all__ = ["MEMORY_TOOLS", "MemoryFiles"]

_PATH = {"type": "string", "description": "A path relative to your memory folder, e.g. "
         "MEMORY.md or topics/preferences.md"}
MEMORY_TOOLS: dict[str, dict[str, Any]] = {
    "memory_read": {"description": "Read a file of your long-term memory folder.",
                    "properties": {"path": _PATH}, "required": ["path"]},
    "memory_write": {"description": "Write (replace) a file of your long-term memory folder.",
                     "properties": {"path": _PATH, "content": {"type": "string"}},
                     "required": ["path", "content"]},
    "memory_edit": {"description": "Replace one exact occurrence of old with new in a memory "
                    "file.", "properties": {"path": _PATH, "old": {"type": "string"},
                                            "new": {"type": "string"}},
                    "required": ["path", "old", "new"]},
    "memory_search": {"description": "Search your long-term memory notes about this user.",
                      "properties": {"query": {"type": "string"}}, "required": ["query"]},
}
_NOTE_RE = re.compile(r"<!-- memory (\{.*\}) -->$")


def _schema(name: str) -> ToolSchema:
    spec = MEMORY_TOOLS[name]
    return ToolSchema.from_dict({"type": "function", "function": {
        "name": name, "description": spec["description"],
        "parameters": {"type": "object", "properties": spec["properties"],
                       "required": spec["required"]}}})


class MemoryFiles:
    def __init__(self, root: Path | None, agent: str) -> None:
        if root is None:
            # No workdir: a private folder for this instance, removed with it.
            self._tmp = tempfile.TemporaryDirectory(prefix="harnesslab-memory-")
            root = Path(self._tmp.name)
        self.root = root / "files" / safe_name(agent)

    def folder(self, user: str) -> ConfinedDir:
        return ConfinedDir(self.root / safe_name(user))

    @staticmethod
    def schemas(names: Iterable[str]) -> tuple[ToolSchema, ...]:
        return tuple(_schema(n) for n in names)

    # -- the model's tools --------------------------------------------------------------------
    def run(self, call: ToolCallBlock, user: str, now: datetime,
            search: Callable[[str], list[str]] | None) -> ToolResultBlock:
        """One memory tool call for ``user``; every failure is an error result."""
        as_of = now.isoformat(timespec="seconds")

        def result(payload: dict[str, Any], error: bool = False) -> ToolResultBlock:
            body = {"tool": call.name, "as_of": as_of, **payload}
            return ToolResultBlock(call.id, call.name, json.dumps(body, ensure_ascii=False),
                                   error)

        try:
            args = json.loads(call.input) if call.input.strip() else {}
        except json.JSONDecodeError:
            args = None
        if not isinstance(args, dict) or not all(
                isinstance(args.get(k), str) for k in MEMORY_TOOLS[call.name]["required"]):
            return result({"code": "bad_request", "error": "arguments must be a JSON object "
                           f"with {', '.join(MEMORY_TOOLS[call.name]['required'])}"}, True)
        d = self.folder(user)
        try:
            if call.name == "memory_search":
                hits = search(args["query"]) if search is not None else []
                return result({"results": hits})
            if call.name == "memory_read":
                return result({"path": args["path"], "content": d.read(args["path"])})
            if call.name == "memory_write":
                d.write(args["path"], args["content"])
                return result({"path": args["path"], "written": len(args["content"])})
            text = d.read(args["path"])
            if text.count(args["old"]) != 1 or not args["old"]:
                return result({"code": "bad_request", "error": "old must occur exactly once"},
                              True)
            d.write(args["path"], text.replace(args["old"], args["new"]))
            return result({"path": args["path"], "edited": True})
        except PathEscape as e:
            return result({"code": "forbidden", "error": str(e)}, True)
        except FileNotFoundError:
            return result({"code": "not_found", "error": f"no file {args.get('path')!r}"}, True)
        except (IsADirectoryError, NotADirectoryError, UnicodeDecodeError, OSError) as e:
            return result({"code": "bad_request", "error": type(e).__name__}, True)

    # -- workspace notes ---------------------------------------------------------------------
    def notes(self, user: str) -> list[MemoryItem]:
        d = self.folder(user)
        out: dict[str, MemoryItem] = {}
        for rel in d.files("notes"):
            for line in d.read(rel).splitlines():
                m = _NOTE_RE.search(line)
                if m:
                    item = MemoryItem.from_record(ItemRecord.model_validate_json(m.group(1)))
                    if item.user == user:  # a note copied in by hand for another user is not read
                        out[item.id] = item
        return list(out.values())

    def add_note(self, item: MemoryItem) -> bool:
        if any(n.id == item.id for n in self.notes(item.user)):
            return False
        rel = f"notes/{item.created_at.date().isoformat()}.md"
        d = self.folder(item.user)
        line = f"- {item.text} <!-- memory {item.to_record().model_dump_json()} -->\n"
        head = "" if d.exists(rel) else f"# {item.created_at.date().isoformat()}\n\n"
        d.write(rel, head + line, append=True)
        return True

    # -- agentic index -----------------------------------------------------------------------
    def index(self, user: str) -> str:
        d = self.folder(user)
        try:
            return d.read("MEMORY.md").strip() if d.exists("MEMORY.md") else ""
        except (PathEscape, OSError):
            return ""  # a MEMORY.md planted as a symlink is not followed

    # -- background queue --------------------------------------------------------------------
    def enqueue(self, user: str, session: str, turn: tuple[Message, ...]) -> None:
        line = json.dumps([message_to_dict(m) for m in turn], ensure_ascii=False) + "\n"
        self.folder(user).write(f"queue/{safe_name(session)}.jsonl", line, append=True)

    def pending(self, user: str, *, exclude: str) -> list[tuple[str, list[tuple[Message, ...]]]]:
        d = self.folder(user)
        out = []
        for rel in d.files("queue"):
            session = rel.removeprefix("queue/").removesuffix(".jsonl")
            if session == safe_name(exclude):
                continue
            turns = [tuple(message_from_dict(x) for x in json.loads(line))
                     for line in d.read(rel).splitlines() if line.strip()]
            out.append((session, turns))
        return out

    def done(self, user: str, session: str) -> None:
        self.folder(user).resolve(f"queue/{session}.jsonl").unlink(missing_ok=True)
