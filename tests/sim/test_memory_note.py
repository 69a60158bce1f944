"""A memory extraction that offers a tool to write the note (understanding contract, "A memory
note written with a tool"; ``harnesslab.sim.notes``): the model writes its extraction with the
offered tool taking ``content``, the values the instructions state as ``param=value`` in the
other parameters, and reads the named note first when a ``read`` tool taking that ``path`` is
offered. Forms drawn from ReMe's auto_memory (its create and update prompts), in neutral
wording; controls: no writing tool (answered in words), nothing to remember (no call), the tool
already called (no second call)."""

from __future__ import annotations

import json

from harnesslab.messages import Message, Request, TextBlock, ToolCallBlock, ToolResultBlock, ToolSchema
from harnesslab.sim.intents import Act, Constraint, Intent
from harnesslab.sim.model import FakeModel

ASK = "以后回答都简单一点，别啰嗦。"
MODEL = FakeModel({ASK: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
                   "谢谢": Intent(Act.CHITCHAT)})
SYSTEM = "You keep notes. Your job is to record key information from conversations as memory."


def _tool(name: str, props: tuple[str, ...], required: tuple[str, ...]) -> ToolSchema:
    return ToolSchema.from_dict({"type": "function", "function": {
        "name": name, "description": "x", "parameters": {
            "type": "object", "properties": {p: {"type": "string"} for p in props},
            "required": list(required)}}})


NEW = _tool("note_new", ("name", "session_id", "date", "content"), ("name", "session_id",
                                                                    "content"))
READ = _tool("read", ("path",), ("path",))
WRITE = _tool("write", ("path", "name", "content"), ("path", "name", "content"))


def _user(said: str, how: str) -> Message:
    return Message("user", (TextBlock(f"# Conversation\n\n[user @ 2026-11-28T10:00]\n{said}\n\n"
                                      f"# Task\n\n{how}"),))


def _calls(req: Request) -> list[ToolCallBlock]:
    return [b for b in MODEL.reply(req).blocks if isinstance(b, ToolCallBlock)]


def test_it_writes_the_extraction_with_the_stated_values() -> None:
    how = "Create it: `note_new name=<name> session_id=S-7 date=2026-11-28 content=<body>`"
    [call] = _calls(Request(system=SYSTEM, messages=(_user(ASK, how),), tools=(NEW,)))
    args = json.loads(call.input)
    assert call.name == "note_new" and args["content"] == "[constraint:brevity]"
    assert args["session_id"] == "S-7" and args["date"] == "2026-11-28"
    assert args["name"].startswith("memory-")  # a placeholder is no value: a stem of its own
    # Control: without a writing tool the extraction is answered in words.
    words = MODEL.reply(Request(system=SYSTEM, messages=(_user(ASK, how),))).blocks
    assert [b.text for b in words if isinstance(b, TextBlock)] == ["[constraint:brevity]"]


def test_nothing_to_remember_writes_nothing_and_a_written_note_is_not_written_again() -> None:
    how = "Create it: `note_new session_id=S-7 content=<body>`"
    assert _calls(Request(system=SYSTEM, messages=(_user("谢谢", how),), tools=(NEW,))) == []
    first = Request(system=SYSTEM, messages=(_user(ASK, how),), tools=(NEW,))
    [call] = _calls(first)
    done = Request(system=SYSTEM, tools=(NEW,), messages=(
        _user(ASK, how), Message("assistant", (call,)),
        Message("user", (ToolResultBlock(call.id, "note_new", "Wrote it"),))))
    assert _calls(done) == []


def test_a_named_note_is_read_first_and_what_it_holds_is_kept() -> None:
    how = "Merge into the note: `read path=daily/n.md`, then `write path=daily/n.md ...`"
    start = Request(system=SYSTEM, messages=(_user(ASK, how),), tools=(READ, WRITE))
    [read] = _calls(start)
    assert (read.name, json.loads(read.input)) == ("read", {"path": "daily/n.md"})
    old = "[fact:track_order order_id=O-1001 status=in_transit eta=2026-11-30]"
    after = Request(system=SYSTEM, tools=(READ, WRITE), messages=(
        _user(ASK, how), Message("assistant", (read,)),
        Message("user", (ToolResultBlock(read.id, "read", old),))))
    [write] = _calls(after)
    args = json.loads(write.input)
    assert write.name == "write" and args["path"] == "daily/n.md"
    assert set(args["content"].splitlines()) == {"[constraint:brevity]", old}
