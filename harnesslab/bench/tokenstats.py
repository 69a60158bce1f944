"""Estimate-versus-truth statistics for text and chat transcripts (``harnesslab tokens``).

Inputs: plain text, a JSON file (an OpenAI-style message list, or an object with ``messages``
and optional ``tools``; any other JSON counts as one JSON text), or JSONL (one message, one
``{"messages": ...}`` conversation, or any JSON value per line). ``-`` reads standard input.
Exactly one trailing newline (``\\n`` or ``\\r\\n``) is stripped from every input, so that
``echo`` and a file saved by an editor give the same count as ``printf '%s'``.

Content kinds, per text piece (a message's text, a tool call's arguments, a tool result, the
tool schemas, or a whole plain-text file):

- ``json``: tool schemas, tool-call arguments, a tool result or JSONL value that parses as a
  JSON object or array, and a JSON file that is not a transcript;
- otherwise by script: ``cjk`` = CJK ideographs, kana, hangul and CJK/full-width punctuation,
  ``latin`` = other alphabetic characters; share = cjk / (cjk + latin);
  ``zh`` when share >= 0.8, ``en`` when share <= 0.2 (or no letters at all), else ``mixed``.

Per kind, ``bytes4`` and ``chars4`` apply their plain-text rules to the kind's concatenated
texts (``int(bytes/4 + 0.5)``, ``ceil(chars/4)``) and each tokenizer's count is summed over the
pieces. The file total applies the request-level rules (``harnesslab.tokens``): AgentScope's
bytes4 over all counted texts plus 2000 per data block, LangChain's chars4 with its per-message
overhead, and each tokenizer summed over the same texts. Ratios are estimate / true.
"""

from __future__ import annotations

import array
import json
import re
import string
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from harnesslab.errors import InputError
from harnesslab.messages import (
    Block,
    DataBlock,
    Message,
    Part,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    block_data_count,
    block_texts,
    tools_json,
)
from harnesslab.tokens import (
    Bytes4Rule,
    Chars4Rule,
    TokenCache,
    TokenizerRule,
    bytes4,
    chars4,
    count_request,
)

Kind = Literal["zh", "en", "mixed", "json"]
KINDS: tuple[Kind, ...] = ("zh", "en", "mixed", "json")
Format = Literal["auto", "text", "json", "jsonl"]


# CJK and full-width punctuation (3000-303F), kana (3040-30FF), ideographs (3400-9FFF, F900-FAFF,
# 20000-2FA1F), hangul syllables (AC00-D7AF) and half/full-width forms (FF00-FFEF).
_CJK_RUN = re.compile("[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
                      "\U00020000-\U0002fa1f]+")
_ASTRAL_RUN = re.compile("[\U00010000-\U0010ffff]+")
_ASCII_LETTERS = string.ascii_letters.encode("ascii")


def _char_class(chars: str) -> str:
    """A regex character class of ``chars`` (sorted, distinct), with runs as ranges."""
    out: list[str] = []
    i = 0
    while i < len(chars):
        j = i
        while j + 1 < len(chars) and ord(chars[j + 1]) == ord(chars[j]) + 1:
            j += 1
        out.append(re.escape(chars[i]) if i == j else f"{re.escape(chars[i])}-{re.escape(chars[j])}")
        i = j + 1
    return f"[{''.join(out)}]+"


@cache
def _other_letters() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Runs of the letters (``str.isalpha``) outside ASCII and the CJK ranges: one pattern for
    the Basic Multilingual Plane, one above it. Built once from the running Python's Unicode
    database, so that they agree with ``str.isalpha`` exactly. Two patterns, because ``re``
    tests the part of a class above U+FFFF one range at a time on every character it rejects."""
    every = array.array("I", range(0x80, 0x110000)).tobytes().decode(
        f"utf-32-{sys.byteorder[0]}e", "surrogatepass")
    # \w without digits and "_" holds every letter and a few other numerics: a C-level pass
    # narrows 1.1 million code points to those candidates.
    letters = _CJK_RUN.sub("", "".join(c for run in re.findall(r"[^\W\d_]+", every)
                                       for c in run if c.isalpha()))
    high = next((i for i, c in enumerate(letters) if c > "\uffff"), len(letters))
    return re.compile(_char_class(letters[:high])), re.compile(_char_class(letters[high:]))


def _ascii_letters(text: str) -> int:
    data = text.encode("utf-8", "surrogatepass")
    return len(data) - len(data.translate(None, _ASCII_LETTERS))


def _script_counts(text: str) -> tuple[int, int]:
    """(CJK characters, other letters) of ``text``, by C-level string operations only."""
    if text.isascii():
        return 0, _ascii_letters(text)
    rest = _CJK_RUN.sub("", text)
    cjk = len(text) - len(rest)
    latin = _ascii_letters(rest)
    if not rest.isascii():
        bmp, astral = _other_letters()
        latin += sum(map(len, bmp.findall(rest)))
        high = "".join(_ASTRAL_RUN.findall(rest))
        if high:
            latin += sum(map(len, astral.findall(high)))
    return cjk, latin


def _kind(cjk: int, latin: int) -> Kind:
    if cjk + latin == 0:
        return "en"
    share = cjk / (cjk + latin)
    return "zh" if share >= 0.8 else "en" if share <= 0.2 else "mixed"


def script_kind(text: str) -> Kind:
    """zh / en / mixed by the share of CJK among letters (module docstring)."""
    return _kind(*_script_counts(text))


def _json_like(text: str) -> bool:
    s = text.strip()
    if not s or s[0] not in "[{":
        return False
    try:
        json.loads(s)
    except ValueError:
        return False
    return True


@dataclass
class Source:
    """One input, read into a transcript (messages and tools) or loose texts."""

    path: str
    format: str
    requests: list[Request] = field(default_factory=list)
    loose: list[tuple[Kind, str]] = field(default_factory=list)  # texts outside messages


# --- reading ---------------------------------------------------------------------------------

def _openai_parts(content: Any, where: str) -> tuple[Part, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if not isinstance(content, list):
        raise InputError("expected a string, a list of parts or null", field=where)
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


def openai_message(d: Any, where: str) -> Message:
    """An OpenAI chat message (role, content, tool_calls, tool_call_id, name) as a Message."""
    if not isinstance(d, Mapping):
        raise InputError("expected a message object", field=where)
    raw_role = d.get("role")
    role = {"developer": "system", "function": "tool"}.get(str(raw_role), raw_role)
    if role not in ("system", "user", "assistant", "tool"):
        raise InputError(f"unknown role {d.get('role')!r}; expected system, developer, user, "
                         "assistant, tool or function", field=f"{where}.role")
    parts = _openai_parts(d.get("content"), f"{where}.content")
    name = str(d.get("name") or "")
    if role == "tool":
        block = ToolResultBlock(str(d.get("tool_call_id") or ""), name,
                                parts[0].text if len(parts) == 1 and isinstance(parts[0], TextBlock)
                                else parts)
        return Message("tool", (block,))
    blocks: list[Block] = list(parts)
    for i, call in enumerate(d.get("tool_calls") or []):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise InputError("expected {id, function: {name, arguments}}",
                             field=f"{where}.tool_calls[{i}]")
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        blocks.append(ToolCallBlock(str(call.get("id") or ""), fn["name"], args))
    return Message(role, tuple(blocks), name=name)  # type: ignore[arg-type]


def _conversation(obj: Any, where: str) -> Request | None:
    """A transcript if ``obj`` is a message list or an object with ``messages``; else None."""
    tools: list[Any] = []
    if isinstance(obj, Mapping) and isinstance(obj.get("messages"), list):
        msgs, tools = obj["messages"], obj.get("tools") or []
        where = f"{where}messages"
    elif isinstance(obj, list) and obj and all(isinstance(m, Mapping) and "role" in m
                                              for m in obj):
        msgs, where = obj, f"{where}messages"
    else:
        return None
    if not isinstance(tools, list):
        raise InputError("expected a list of tool schemas", field=f"{where}.tools")
    messages = tuple(openai_message(m, f"{where}[{i}]") for i, m in enumerate(msgs))
    schemas = tuple(ToolSchema.from_dict(t) for t in tools)
    return Request(system="", messages=messages, tools=schemas)


def _json_error(path: str, e: json.JSONDecodeError, line_offset: int = 0) -> InputError:
    return InputError(f"invalid JSON: {e.msg} (column {e.colno})", file=path,
                      line=e.lineno + line_offset)


def parse_source(path: str, text: str, fmt: Format = "auto") -> Source:
    if fmt == "auto":
        suffix = Path(path).suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            fmt = "jsonl"
        elif suffix == ".json":
            fmt = "json"
        elif suffix in (".txt", ".md", ".text"):
            fmt = "text"
        elif text.lstrip()[:1] in ("[", "{"):
            fmt = "json" if _json_like(text) else \
                "jsonl" if "\n" in text.strip() else "json"
        else:
            fmt = "text"
    src = Source(path, fmt)
    if fmt == "text":
        src.loose.append((script_kind(text), text))
    elif fmt == "json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise _json_error(path, e) from None
        try:
            conv = _conversation(obj, "")
        except InputError as e:
            raise InputError(e.problem, file=path, field=e.field) from None
        if conv is None:
            src.loose.append(("json", text))
        else:
            src.requests.append(conv)
    else:
        loose_msgs: list[Message] = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"invalid JSON: {e.msg} (column {e.colno})", file=path,
                                 line=n) from None
            try:
                if isinstance(obj, Mapping) and "role" in obj:
                    loose_msgs.append(openai_message(obj, "message"))
                    continue
                conv = _conversation(obj, "")
            except InputError as e:
                raise InputError(e.problem, file=path, line=n, field=e.field) from None
            if conv is None:
                src.loose.append(("json", line))
            else:
                src.requests.append(conv)
        if loose_msgs:
            src.requests.insert(0, Request(system="", messages=tuple(loose_msgs)))
    return src


def read_source(path: str, fmt: Format = "auto", stdin: Any = None) -> Source:
    """Read one input; raises InputError (file and problem, one line) on bad input."""
    if path == "-":
        import sys

        stream = stdin if stdin is not None else sys.stdin
        raw = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
        data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
        label = "<stdin>"
    else:
        label = path
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte {e.start})", file=label) from None
    # Exactly one trailing newline is a transport artefact (echo, heredocs, an editor's final
    # newline), not content: standard input and plain-text files lose it.
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    return parse_source(label, text, fmt)


# --- pieces and statistics ---------------------------------------------------------------------

def _block_pieces(b: Block) -> Iterator[tuple[Kind, str]]:
    if isinstance(b, TextBlock):
        yield script_kind(b.text), b.text
    elif isinstance(b, ToolCallBlock):
        yield "json", b.input
    elif isinstance(b, ToolResultBlock):
        outs = [b.output] if isinstance(b.output, str) else \
            [p.text for p in b.output if isinstance(p, TextBlock)]
        for o in outs:
            yield ("json" if _json_like(o) else script_kind(o)), o
    else:
        for t in block_texts(b):
            yield script_kind(t), t


def pieces(src: Source) -> Iterator[tuple[Kind, str]]:
    for req in src.requests:
        for m in req.messages:
            for b in m.content:
                yield from _block_pieces(b)
        if req.tools:
            yield "json", tools_json(req.tools)
    yield from src.loose


def _data_blocks(src: Source) -> int:
    return sum(block_data_count(b) for r in src.requests for m in r.messages for b in m.content)


def _row(texts: list[str], tokenizers: list[str], cache: TokenCache) -> dict[str, Any]:
    joined = "".join(texts)
    row: dict[str, Any] = {
        "pieces": len(texts),
        "bytes": len(joined.encode("utf-8")),
        "chars": len(joined),
        "bytes4": bytes4(joined),
        "chars4": chars4(joined),
    }
    for name in tokenizers:
        tok = cache.tokenizer(name)
        row[name] = sum(tok.count(t) for t in texts)
    return row


def _ratios(row: dict[str, Any], tokenizers: list[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for est in ("bytes4", "chars4"):
        for name in tokenizers:
            true = row[name]
            out[f"{est}/{name}"] = round(row[est] / true, 4) if true else None
    return out


def file_stats(src: Source, tokenizers: list[str], cache: TokenCache) -> dict[str, Any]:
    by_kind: dict[Kind, list[str]] = {}
    for kind, text in pieces(src):
        by_kind.setdefault(kind, []).append(text)
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        if kind in by_kind:
            row = _row(by_kind[kind], tokenizers, cache)
            row["ratio"] = _ratios(row, tokenizers)
            kinds[kind] = row
    all_texts = [t for k in KINDS for t in by_kind.get(k, [])]
    total = _row(all_texts, tokenizers, cache)
    data = _data_blocks(src)
    messages = sum(len(r.messages) for r in src.requests)
    if src.requests:
        # Request-level rules: AgentScope's bytes4 (one rounding over the whole transcript,
        # 2000 per data block) and LangChain's chars4 (per-message overhead), summed over
        # conversations; loose texts add their plain-text estimates.
        loose = [t for _, t in src.loose]
        total["bytes4"] = sum(count_request(Bytes4Rule(), r) for r in src.requests) \
            + (bytes4("".join(loose)) if loose else 0)
        total["chars4"] = sum(count_request(Chars4Rule(), r) for r in src.requests) \
            + (chars4("".join(loose)) if loose else 0)
        for name in tokenizers:
            rule = TokenizerRule(cache.tokenizer(name), image_tokens=0)
            total[name] = sum(count_request(rule, r) for r in src.requests) \
                + sum(cache.tokenizer(name).count(t) for t in loose)
    total["ratio"] = _ratios(total, tokenizers)
    return {"path": src.path, "format": src.format, "messages": messages, "data_blocks": data,
            "total": total, "kinds": kinds}


def format_table(results: list[dict[str, Any]], tokenizers: list[str]) -> str:
    """A plain-text table: one block per file, a row per kind and a total row."""
    head = ["kind", "pieces", "bytes", "bytes4", "chars4"]
    for name in tokenizers:
        head += [name, "b4/true", "c4/true"]
    lines: list[str] = []
    for res in results:
        extra = f", {res['messages']} messages" if res["messages"] else ""
        extra += f", {res['data_blocks']} data blocks" if res["data_blocks"] else ""
        lines.append(f"{res['path']} ({res['format']}{extra})")
        rows = [head]
        for label, row in [*res["kinds"].items(), ("total", res["total"])]:
            cells = [label, str(row["pieces"]), str(row["bytes"]), str(row["bytes4"]),
                     str(row["chars4"])]
            for name in tokenizers:
                r = row["ratio"]
                cells += [str(row[name]), _fmt(r[f"bytes4/{name}"]), _fmt(r[f"chars4/{name}"])]
            rows.append(cells)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for r in rows:
            lines.append("  " + "  ".join(c.rjust(w) if i else c.ljust(w)
                                          for i, (c, w) in enumerate(zip(r, widths, strict=True))))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"

