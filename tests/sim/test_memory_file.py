"""The fake model keeps its own memory file (understanding contract, "A memory file the model
keeps"): through ``memory_write`` (the reference's agentic mode) or, told in its instructions
that it has a file-based memory system at a directory, through a ``Write`` tool taking an
absolute ``file_path`` (AgentScope's AgenticMemoryMiddleware), reading the file first when a
``Read`` tool is offered. Each form has a control: without the instruction, or without the
writing tool, the model writes nothing."""

from __future__ import annotations

import json

from harnesslab.messages import Message, Request, TextBlock, ToolCallBlock, ToolResultBlock, ToolSchema
from harnesslab.sim.intents import Act, Constraint, Intent
from harnesslab.sim.model import FakeModel

ASK = "以后回答都简单一点，别啰嗦。"
MODEL = FakeModel({ASK: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,))})
INSTRUCTIONS = ("You are helpful.\n\n# Auto Memory\n\nYou have a persistent, file-based memory "
                "system at `/agent/Memory`. This directory already exists.")


def _tool(name: str, *props: str) -> ToolSchema:
    return ToolSchema.from_dict({"type": "function", "function": {
        "name": name, "description": "x", "parameters": {
            "type": "object", "properties": {p: {"type": "string"} for p in props},
            "required": list(props)}}})


READ, WRITE = _tool("Read", "file_path"), _tool("Write", "file_path", "content")


def _call(req: Request) -> ToolCallBlock | None:
    blocks = MODEL.reply(req).blocks
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    return calls[0] if calls else None


def test_told_of_a_memory_directory_it_reads_memory_md_then_writes_it() -> None:
    user = Message("user", (TextBlock(ASK),))
    req = Request(system=INSTRUCTIONS, messages=(user,), tools=(READ, WRITE))
    read = _call(req)
    assert read is not None and read.name == "Read"
    assert json.loads(read.input) == {"file_path": "/agent/Memory/MEMORY.md"}
    after_read = (user, Message("assistant", (read,)),
                  Message("user", (ToolResultBlock(read.id, "Read", "(empty file)"),)))
    write = _call(Request(system=INSTRUCTIONS, messages=after_read, tools=(READ, WRITE)))
    assert write is not None and write.name == "Write"
    assert json.loads(write.input) == {"file_path": "/agent/Memory/MEMORY.md",
                                       "content": "[constraint:brevity]"}
    done = (*after_read, Message("assistant", (write,)),
            Message("user", (ToolResultBlock(write.id, "Write", "ok"),)))
    reply = MODEL.reply(Request(system=INSTRUCTIONS, messages=done, tools=(READ, WRITE)))
    assert not any(isinstance(b, ToolCallBlock) for b in reply.blocks)  # once per turn


def test_without_a_read_tool_it_writes_directly() -> None:
    req = Request(system=INSTRUCTIONS, messages=(Message("user", (TextBlock(ASK),)),),
                  tools=(WRITE,))
    write = _call(req)
    assert write is not None and write.name == "Write"


def test_controls_no_instruction_or_no_write_tool_writes_nothing() -> None:
    user = (Message("user", (TextBlock(ASK),)),)
    assert _call(Request(system="You are helpful.", messages=user, tools=(READ, WRITE))) is None
    assert _call(Request(system=INSTRUCTIONS, messages=user, tools=(READ,))) is None
    # A Write tool without file_path and content is not a file-writing tool it knows.
    odd = _tool("Write", "path", "text")
    assert _call(Request(system=INSTRUCTIONS, messages=user, tools=(odd,))) is None


def test_the_reference_form_is_unchanged() -> None:
    mw = _tool("memory_write", "path", "content")
    write = _call(Request(system="x", messages=(Message("user", (TextBlock(ASK),)),),
                          tools=(mw,)))
    assert write is not None and json.loads(write.input) == {
        "path": "MEMORY.md", "content": "[constraint:brevity]"}


# --- a memory extraction over a quoted transcript, answered in mem0's JSON shape -----------------

MEM0_SYSTEM = ("You are a Memory Extractor. Do NOT extract new memories from Existing Memories.\n"
               'Output:\n{"memory": [\n  {"id": "0", "text": "User\'s name is Marcus"}\n]}')
TRANSCRIPT = f"## New Messages\nuser: {ASK}\nassistant: 好的，我记下了。\n\n# Output:"


def _text(req: Request) -> str:
    (b,) = MODEL.reply(req).blocks
    assert isinstance(b, TextBlock)
    return b.text


def test_a_memory_extraction_over_a_quoted_transcript_is_answered_in_mem0s_shape() -> None:
    req = Request(system=MEM0_SYSTEM, messages=(Message("user", (TextBlock(TRANSCRIPT),)),))
    assert json.loads(_text(req)) == {"memory": [{"id": "0", "text": "[constraint:brevity]"}]}


def test_controls_without_the_shape_lines_without_the_ask_the_question() -> None:
    user = (Message("user", (TextBlock(TRANSCRIPT),)),)
    plain = "You are a Memory Extractor. Do NOT extract new memories from Existing Memories."
    assert _text(Request(system=plain, messages=user)) == "[constraint:brevity]"
    # No memory ask in the instructions: the quoted utterance is the question, answered.
    assert _text(Request(system="You are helpful.", messages=user)) != "[constraint:brevity]"
    # The utterance alone is plainly the question, whatever the instructions ask.
    alone = (Message("user", (TextBlock(ASK),)),)
    assert "memory" not in _text(Request(system=MEM0_SYSTEM, messages=alone))
