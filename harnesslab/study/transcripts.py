"""Reading the inputs of ``harnesslab tokens`` incrementally: UTF-8 text in chunks, its lines,
cuts that no tokenizer's token spans, the input format, and OpenAI-style chat messages.

Memory stays independent of the input's size for plain text and JSONL; a JSON document (and an
input whose format can only be told from its whole text) is read whole.
"""

from __future__ import annotations

import codecs
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO, Literal

from harnesslab.errors import InputError
from harnesslab.messages import (
    Block,
    DataBlock,
    Message,
    Part,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

Format = Literal["auto", "text", "json", "jsonl"]
CHUNK_BYTES = 1 << 16
# str.splitlines' line boundaries; "\r\n" counts as one.
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_SNIFF_CHARS = 1 << 20


# --- text in chunks ----------------------------------------------------------------------------

def open_input(path: str) -> BinaryIO:
    """The input's bytes: standard input for ``-``, else the file (InputError if unreadable)."""
    if path == "-":
        stdin: Any = sys.stdin
        raw: BinaryIO = getattr(stdin, "buffer", stdin)
        return raw
    try:
        return open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=path) from None


def decoded(f: BinaryIO, label: str, size: int = CHUNK_BYTES) -> Iterator[str]:
    """The input's text, read ``size`` bytes at a time; a character split between two reads is
    completed by the next one. A byte that is not UTF-8 is named by its offset in the input."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    read = 0  # bytes read so far
    while True:
        try:
            data = f.read(size)
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=label) from None
        if isinstance(data, str):  # a text stream put in place of standard input
            data = data.encode("utf-8")
        held = len(decoder.getstate()[0])  # bytes of an unfinished character from the last read
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise InputError(f"not UTF-8 text (byte {read - held + e.start})", file=label) from None
        read += len(data)
        if text:
            yield text
        if not data:
            return


def strip_newline(text: str) -> str:
    """Exactly one trailing newline is a transport artefact (echo, heredocs, an editor's final
    newline), not content: every input loses it."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def _whole_crlf(chunks: Iterable[str]) -> Iterator[str]:
    """The chunks, with a final "\\r" moved to the next chunk: "\\r\\n" is never cut."""
    carry = ""
    for chunk in chunks:
        chunk = carry + chunk
        carry = "\r" if chunk.endswith("\r") else ""
        if carry:
            chunk = chunk[:-1]
        if chunk:
            yield chunk
    if carry:
        yield carry


def lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of the concatenated chunks, exactly as ``str.splitlines`` cuts the whole."""
    held: list[str] = []  # the start of a line not yet ended
    for chunk in _whole_crlf(chunks):
        parts = chunk.splitlines()
        tail = parts.pop() if chunk[-1] not in _BREAKS else ""
        for p in parts:
            if held:
                p = "".join(held) + p
                held = []
            yield p
        if tail:
            held.append(tail)
    if held:
        yield "".join(held)


def _last_cut(text: str) -> int:
    i = text.rfind("\n", 0, len(text) - 1)
    while i >= 0:
        if text[i + 1].isalnum():
            return i + 1
        i = text.rfind("\n", 0, i)
    return -1


def segments(chunks: Iterable[str]) -> Iterator[str]:
    """The text (one trailing newline stripped) in pieces whose token counts add up to the
    whole's, under every tokenizer of ``harnesslab.tokens``.

    A piece ends after a line feed followed by a letter or digit. No pre-tokenizer token spans
    that point: in the o200k, cl100k, Qwen and DeepSeek splitting patterns a line feed is
    followed inside a token only by whitespace, "\\r", "\\n" or "/", and matching resumes
    at the letter as it would at the start of a text. NFC normalisation (Qwen) never composes
    across a line feed. Text with no such point is held until one comes.
    """
    held: list[str] = []
    for chunk in chunks:
        cut = _last_cut(chunk)
        if cut < 0:
            held.append(chunk)
            continue
        held.append(chunk[:cut])
        yield "".join(held)
        held = [chunk[cut:]]
    yield strip_newline("".join(held))


# --- the format --------------------------------------------------------------------------------

def json_like(text: str) -> bool:
    s = text.strip()
    if not s or s[0] not in "[{":
        return False
    try:
        json.loads(s)
    except ValueError:
        return False
    return True


def sniff(path: str, fmt: Format, chunks: Iterator[str]) -> tuple[Format, Iterator[str]]:
    """The input's format, and its text from the start. ``auto`` goes by the file suffix,
    else by the text: JSON when the whole text parses, JSONL when it does not and has several
    lines, plain text when it does not start with "[" or "{".

    Without reading the whole: a first line that parses by itself, ended by a line feed and
    followed by more content, makes the whole text fail to parse ("extra data"), so the input
    is JSONL. Any other text starting with "[" or "{" is read whole and decided as above.
    """
    if fmt != "auto":
        return fmt, chunks
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl", chunks
    if suffix == ".json":
        return "json", chunks
    if suffix in (".txt", ".md", ".text"):
        return "text", chunks
    seen = ""
    for chunk in chunks:
        seen += chunk
        body = seen.lstrip()
        if body and body[0] not in "[{":
            return "text", chain([seen], chunks)
        first = body.splitlines(keepends=True)[0] if body else ""
        if body[len(first):].strip():
            if first.endswith("\n") and json_like(first):
                return "jsonl", chain([seen], chunks)
            break
        if len(seen) > _SNIFF_CHARS:  # a first line this long: decide on the whole text
            break
    # The trailing newline is left for the reader to strip: these rules ignore it.
    whole = seen + "".join(chunks)
    if whole.lstrip()[:1] not in ("[", "{"):
        return "text", iter([whole])
    guess: Format = "json" if json_like(whole) else "jsonl" if "\n" in whole.strip() else "json"
    return guess, iter([whole])


# --- OpenAI-style messages ---------------------------------------------------------------------

def _openai_parts(content: Any) -> tuple[Part, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if not isinstance(content, list):
        raise InputError("expected a string, a list of parts or null", field="content")
    parts: list[Part] = []
    for p in content:
        if isinstance(p, str):
            parts.append(TextBlock(p))
        elif isinstance(p, Mapping) and p.get("type") in ("text", "input_text", "output_text"):
            parts.append(TextBlock(str(p.get("text", ""))))
        elif isinstance(p, Mapping) and p.get("type") in ("image_url", "image", "input_image"):
            url = p.get("image_url")
            src = url.get("url", "") if isinstance(url, Mapping) else str(url or "")
            parts.append(DataBlock("image/*", src))
        else:
            parts.append(TextBlock(json.dumps(p, ensure_ascii=False)))
    return tuple(parts)


# OpenAI's roles and the harnesslab role each one becomes.
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool", "function": "tool"}


def openai_message(d: Any, where: str) -> Message:
    """An OpenAI chat message (role, content, tool_calls, tool_call_id, name) as a Message;
    ``where`` names it in errors."""
    try:
        return _openai_message(d)
    except InputError as e:
        raise InputError(e.problem, field=f"{where}.{e.field}" if e.field else where) from None


def _openai_message(d: Any) -> Message:
    if not isinstance(d, Mapping):
        raise InputError("expected a message object")
    raw_role = d.get("role")
    role = ROLES.get(raw_role) if isinstance(raw_role, str) else None
    if role is None:
        raise InputError(f"unknown role {raw_role!r}; expected system, developer, user, "
                         "assistant, tool or function", field="role")
    parts = _openai_parts(d.get("content"))
    name = str(d.get("name") or "")
    if role == "tool":
        block = ToolResultBlock(str(d.get("tool_call_id") or ""), name,
                                parts[0].text if len(parts) == 1 and isinstance(parts[0], TextBlock)
                                else parts)
        return Message("tool", (block,))
    calls = d.get("tool_calls")
    if not calls:
        return Message(role, parts, name=name)  # type: ignore[arg-type]
    blocks: list[Block] = list(parts)
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise InputError("expected {id, function: {name, arguments}}", field=f"tool_calls[{i}]")
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        blocks.append(ToolCallBlock(str(call.get("id") or ""), fn["name"], args))
    return Message(role, tuple(blocks), name=name)  # type: ignore[arg-type]


def conversation(obj: Any) -> tuple[list[Any], list[Any]] | None:
    """The messages and tool schemas (both unread) if ``obj`` is a transcript: a message list
    or an object with ``messages`` (and optional ``tools``); else None."""
    if isinstance(obj, Mapping) and isinstance(obj.get("messages"), list):
        tools = obj.get("tools") or []
        if not isinstance(tools, list):
            raise InputError("expected a list of tool schemas", field="messages.tools")
        return obj["messages"], tools
    if isinstance(obj, list) and obj and all(isinstance(m, Mapping) and "role" in m for m in obj):
        return obj, []
    return None
