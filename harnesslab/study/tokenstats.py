"""Estimate-versus-truth statistics for text and chat transcripts (``harnesslab tokens``).

Inputs: plain text, a JSON file (an OpenAI-style message list, or an object with ``messages``
and optional ``tools``; any other JSON counts as one JSON text), or JSONL (one message, one
``{"messages": ...}`` conversation, or any JSON value per line). ``-`` reads standard input.
Exactly one trailing newline (``\\n`` or ``\\r\\n``) is stripped from every input, so that
``echo`` and a file saved by an editor give the same count as ``printf '%s'``. Inputs are read
incrementally (``harnesslab.study.transcripts``): memory does not grow with a plain-text or
JSONL input, and of two problems in one input (say a bad line, then a byte that is not UTF-8)
the one met first is reported.

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

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harnesslab.errors import InputError
from harnesslab.messages import (
    Block,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    block_data_count,
    block_texts,
    tools_json,
)
from harnesslab.study.transcripts import (
    CHUNK_BYTES,
    ROLES,
    Format,
    conversation,
    decoded,
    json_like,
    lines,
    open_input,
    openai_message,
    segments,
    sniff,
    strip_newline,
)
from harnesslab.tokens import (
    CHARS4_PER_MESSAGE,
    DATA_BLOCK_TOKENS,
    Chars4Rule,
    Tokenizer,
    get_tokenizer,
)
from harnesslab.tokens.kinds import KINDS, Kind, kind_of, script_counts, script_kind

# --- statistics ------------------------------------------------------------------------------

def _bytes4(n: int) -> int:
    return int(n / 4 + 0.5)  # harnesslab.tokens.bytes4 of a text of n bytes


class _Counts:
    """A tokenizer's counts of recently seen texts. Transcripts repeat their system prompt and
    tool schemas on every line: those are encoded once, in memory that does not grow with the
    input (the texts held are dropped past a bound)."""

    HELD_CHARS = 1 << 20

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._count = tokenizer.count
        self._seen: dict[str, int] = {}
        self._held = 0

    def add(self, pending: list[tuple[list[int], str]], k: int) -> None:
        """Add each piece's count to the k-th token total of its kind."""
        seen, count = self._seen, self._count
        for tokens, text in pending:
            n = seen.get(text)
            if n is None:
                n = count(text)
                self._held += len(text)
                if self._held > self.HELD_CHARS:
                    seen.clear()
                    self._held = len(text)
                seen[text] = n
            tokens[k] += n


@dataclass
class _Tally:
    """Additive figures of a kind's pieces."""

    pieces: int = 0
    bytes: int = 0
    chars: int = 0
    tokens: list[int] = field(default_factory=list)


def _block_pieces(b: Block) -> Iterator[tuple[Kind, str]]:
    if isinstance(b, TextBlock):
        yield script_kind(b.text), b.text
    elif isinstance(b, ToolCallBlock):
        yield "json", b.input
    elif isinstance(b, ToolResultBlock):
        outs = [b.output] if isinstance(b.output, str) else \
            [p.text for p in b.output if isinstance(p, TextBlock)]
        for o in outs:
            yield ("json" if json_like(o) else script_kind(o)), o
    else:
        for t in block_texts(b):
            yield script_kind(t), t


class _FileStats:
    """The figures of one input, accumulated piece by piece as it is read.

    The pieces of a message are exactly the texts the request-level rules count, so a request's
    bytes4 is its pieces' bytes plus 8000 per data block, rounded once, and the tokenizer totals
    are the sums over the kinds.
    """

    BATCH_CHARS = 1 << 20

    def __init__(self, tokenizers: Sequence[Tokenizer]) -> None:
        self.tokenizers = tokenizers
        self.counts = [_Counts(t) for t in tokenizers]
        self.kinds: dict[Kind, _Tally] = {}
        self.messages = 0
        self.data_blocks = 0
        self.has_requests = False
        self.request_bytes4 = self.request_chars4 = 0  # summed over rounded requests
        self.loose_msg_units = 0  # bytes4 units of the messages outside conversations (one request)
        self.loose_bytes = self.loose_chars = 0  # texts outside messages
        self._chars4 = Chars4Rule()
        self._pending: list[tuple[list[int], str]] = []  # (a kind's token counts, a piece)
        self._pending_chars = 0

    def _tally(self, kind: Kind) -> _Tally:
        t = self.kinds.get(kind)
        if t is None:
            t = self.kinds[kind] = _Tally(tokens=[0] * len(self.counts))
        return t

    def piece(self, kind: Kind, text: str) -> int:
        """Count one piece (its tokens with the next batch); its UTF-8 bytes."""
        t = self._tally(kind)
        n = len(text) if text.isascii() else len(text.encode("utf-8"))
        t.pieces += 1
        t.bytes += n
        t.chars += len(text)
        self._pending.append((t.tokens, text))
        self._pending_chars += len(text)
        if self._pending_chars > self.BATCH_CHARS:
            self._flush()
        return n

    def _flush(self) -> None:
        # One tokenizer at a time over a batch of pieces: switching vocabularies at every piece
        # cost some 15 % more CPU in cache misses, and batches of 64K characters still about 10 %
        # more than batches of a million, which keep each vocabulary warm.
        for k, c in enumerate(self.counts):
            c.add(self._pending, k)
        self._pending.clear()
        self._pending_chars = 0

    def loose_text(self, kind: Kind, text: str) -> None:
        self.loose_bytes += self.piece(kind, text)
        self.loose_chars += len(text)

    def plain_text(self, segments: Iterable[str]) -> None:
        """A whole plain-text input as one piece, from segments whose counts add up."""
        n = chars = cjk = latin = 0
        tokens = [0] * len(self.tokenizers)
        for seg in segments:
            n += len(seg.encode("utf-8"))
            chars += len(seg)
            c, lat = script_counts(seg)
            cjk += c
            latin += lat
            for k, tok in enumerate(self.tokenizers):
                tokens[k] += tok.count(seg)
        t = self._tally(kind_of(cjk, latin))
        t.pieces, t.bytes, t.chars, t.tokens = 1, n, chars, tokens
        self.loose_bytes, self.loose_chars = n, chars

    def _message(self, m: Message) -> int:
        """Count a message's pieces; its bytes4 units (bytes, 8000 per data block)."""
        self.messages += 1
        units = 0
        for b in m.content:
            for kind, text in _block_pieces(b):
                units += self.piece(kind, text)
            data = block_data_count(b)
            self.data_blocks += data
            units += data * DATA_BLOCK_TOKENS * 4
        return units

    def _plain_message(self, d: Any) -> tuple[int, int] | None:
        """``message`` for the usual shape, a role and a string content, without building the
        Message (which costs more than all the rest of its statistics); None for other shapes.
        Equal to the general path, which a test holds it to."""
        if type(d) is not dict:
            return None
        role, content = d.get("role"), d.get("content")
        if not isinstance(role, str) or not isinstance(content, str) or d.get("name") \
                or d.get("tool_calls"):
            return None
        role = ROLES.get(role)
        if role is None:
            return None
        self.messages += 1
        if not content:
            return 0, math.ceil(len(role) / 4) + CHARS4_PER_MESSAGE
        kind = ("json" if json_like(content) else script_kind(content)) if role == "tool" \
            else script_kind(content)
        return self.piece(kind, content), \
            math.ceil((len(role) + len(content)) / 4) + CHARS4_PER_MESSAGE

    def message(self, d: Any, where: str) -> tuple[int, int]:
        """Count an OpenAI-style message; its bytes4 units and its chars4."""
        plain = self._plain_message(d)
        if plain is not None:
            return plain
        m = openai_message(d, where)
        return self._message(m), self._chars4.message_units(m)

    def conversation(self, messages: list[Any], tools: list[Any]) -> None:
        """A conversation: counted and rounded on its own."""
        self.has_requests = True
        units = chars4 = 0
        for i, d in enumerate(messages):
            u, c = self.message(d, f"messages[{i}]")
            units += u
            chars4 += c
        schemas = tuple(ToolSchema.from_dict(t) for t in tools)
        if schemas:
            units += self.piece("json", tools_json(schemas))
        self.request_bytes4 += _bytes4(units)
        self.request_chars4 += chars4 + self._chars4.head_units("", "", schemas)

    def loose_message(self, d: Any) -> None:
        """A message outside any conversation: all of them make one request, rounded once."""
        self.has_requests = True
        u, c = self.message(d, "message")
        self.loose_msg_units += u
        self.request_chars4 += c

    def _row(self, t: _Tally, names: Sequence[str]) -> dict[str, Any]:
        row: dict[str, Any] = {"pieces": t.pieces, "bytes": t.bytes, "chars": t.chars,
                               "bytes4": _bytes4(t.bytes), "chars4": math.ceil(t.chars / 4)}
        row.update(zip(names, t.tokens, strict=True))
        return row

    def result(self, path: str, fmt: str, names: Sequence[str]) -> dict[str, Any]:
        self._flush()
        kinds: dict[str, Any] = {}
        for kind in KINDS:
            if kind in self.kinds:
                kinds[kind] = row = self._row(self.kinds[kind], names)
                row["ratio"] = _ratios(row, names)
        tallies = self.kinds.values()
        total = self._row(_Tally(sum(t.pieces for t in tallies), sum(t.bytes for t in tallies),
                                 sum(t.chars for t in tallies),
                                 [sum(t.tokens[k] for t in tallies) for k in range(len(names))]),
                          names)
        if self.has_requests:
            # Request-level rules: AgentScope's bytes4 (one rounding per conversation, 2000 per
            # data block) and LangChain's chars4 (per-message overhead); loose texts add their
            # plain-text estimates.
            total["bytes4"] = self.request_bytes4 + _bytes4(self.loose_msg_units) \
                + _bytes4(self.loose_bytes)
            total["chars4"] = self.request_chars4 + math.ceil(self.loose_chars / 4)
        total["ratio"] = _ratios(total, names)
        return {"path": path, "format": fmt, "messages": self.messages,
                "data_blocks": self.data_blocks, "total": total, "kinds": kinds}


def _ratios(row: dict[str, Any], tokenizers: Sequence[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for est in ("bytes4", "chars4"):
        for name in tokenizers:
            true = row[name]
            out[f"{est}/{name}"] = round(row[est] / true, 4) if true else None
    return out


def _jsonl(stats: _FileStats, label: str, lines: Iterable[str]) -> None:
    for n, line in enumerate(lines, start=1):
        if not line or line.isspace():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"invalid JSON: {e.msg} (column {e.colno})", file=label,
                             line=n) from None
        try:
            if isinstance(obj, Mapping) and "role" in obj:
                stats.loose_message(obj)
                continue
            conv = conversation(obj)
            if conv is not None:
                stats.conversation(*conv)
        except InputError as e:
            raise InputError(e.problem, file=label, line=n, field=e.field) from None
        if conv is None:
            stats.loose_text("json", line)


def _json(stats: _FileStats, label: str, text: str) -> None:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg} (column {e.colno})", file=label,
                         line=e.lineno) from None
    try:
        conv = conversation(obj)
        if conv is not None:
            stats.conversation(*conv)
    except InputError as e:
        raise InputError(e.problem, file=label, field=e.field) from None
    if conv is None:
        stats.loose_text("json", text)


def file_stats(path: str, tokenizers: Sequence[str], fmt: Format = "auto", *,
               chunk_bytes: int = CHUNK_BYTES,
               loader: Callable[[str], Tokenizer] = get_tokenizer) -> dict[str, Any]:
    """Estimate-versus-truth figures of one input (``-``: standard input), read incrementally;
    raises InputError (file, line and problem, one line) on bad input."""
    label = "<stdin>" if path == "-" else path
    stats = _FileStats([loader(n) for n in tokenizers])
    f = open_input(path)
    try:
        fmt, chunks = sniff(path, fmt, decoded(f, label, chunk_bytes))
        if fmt == "text":
            stats.plain_text(segments(chunks))
        elif fmt == "jsonl":
            _jsonl(stats, label, lines(chunks))
        else:
            _json(stats, label, strip_newline("".join(chunks)))
    finally:
        if path != "-":
            f.close()
    return stats.result(label, fmt, tokenizers)


def format_table(results: list[dict[str, Any]], tokenizers: Sequence[str]) -> str:
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

