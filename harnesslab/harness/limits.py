"""Limits applied to what enters or stays in the context: AgentScope's tool_result_limit
truncation at save time (§2.5), Codex's head+tail tool-output truncation, and the image limit
(§2.9)."""

from __future__ import annotations

import re

from harnesslab.harness.offload import Offloader
from harnesslab.harness.prompts import Prompts
from harnesslab.messages import (
    Block,
    DataBlock,
    HintBlock,
    History,
    Message,
    Part,
    TextBlock,
    ToolResultBlock,
)
from harnesslab.tokens import Bytes4Rule

# A data block's source is base64 data or a URL; base64 never contains a scheme's "://".
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _tokens(parts: tuple[Part, ...]) -> int:
    """count_tokens([AssistantMsg(content=parts)], None): AgentScope's estimator."""
    rule = Bytes4Rule()
    return rule.finalize(rule.message_units(Message("assistant", parts)))


def truncate_tool_result(output: str, limit: int, prompts: Prompts, *, session_id: str,
                         call_id: str, offloader: Offloader | None) -> tuple[str | tuple[Part, ...], bool]:
    """AgentScope ``_split_tool_result_for_compression``: keep a result within ``limit``
    estimated tokens, cutting the boundary text block by the character proportion of its
    remaining budget and appending the truncation marker. Returns (output, truncated)."""
    parts: tuple[Part, ...] = (TextBlock(output),)
    total = _tokens(parts)
    if total <= limit:
        return output, False
    # The largest prefix of blocks that stays under the limit; block 0 is never tested.
    i = 1
    while i < len(parts) and _tokens(parts[:i + 1]) < limit:
        i += 1
    kept: list[Part] = list(parts[:i - 1]) if i > 1 else []
    boundary = parts[i - 1]
    remaining = limit - (_tokens(tuple(kept)) if kept else 0)
    dropped_text = ""
    if isinstance(boundary, TextBlock):
        block_tokens = _tokens((boundary,))
        n_chars = int(remaining / block_tokens * len(boundary.text)) if block_tokens else 0
        kept.append(TextBlock(boundary.text[:n_chars]))
        dropped_text = boundary.text[n_chars:]
    reference = ""
    if offloader is not None:
        path = offloader.offload_tool_result(session_id, call_id, dropped_text)
        if path is not None:  # None: the call id would lead outside the workspace
            reference = prompts.tool_truncated_file.format(path=path)
    marker = prompts.tool_truncated.replace("{R}", reference)
    if kept and isinstance(kept[-1], TextBlock):
        kept[-1] = TextBlock(kept[-1].text + marker)
    else:
        kept.append(TextBlock(marker))
    if len(kept) == 1 and isinstance(kept[0], TextBlock):
        return kept[0].text, True
    return tuple(kept), True


def head_tail_truncate(output: str, limit: int) -> tuple[str, bool]:
    """Codex-style: keep the head and the tail within ``limit`` estimated tokens."""
    rule = Bytes4Rule()
    n = rule.finalize(len(output.encode("utf-8")))
    if n <= limit:
        return output, False
    keep = int(limit / n * len(output))
    head, tail = output[:keep // 2], output[len(output) - keep // 2:]
    return f"{head}\n…{n - limit} tokens truncated…\n{tail}", True


def limit_images(context: History, max_images: int, prompts: Prompts,
                 offloader: Offloader | None) -> tuple[History, int]:
    """Keep the newest ``max_images`` image blocks; replace older ones with a reminder (a hint
    at top level of a non-user message, a text block otherwise)."""
    positions: list[tuple[int, int, int]] = []  # (message, block, part or -1)
    for mi, m in enumerate(context):
        for bi, b in enumerate(m.content):
            if isinstance(b, DataBlock) and b.is_image:
                positions.append((mi, bi, -1))
            elif isinstance(b, ToolResultBlock | HintBlock):
                parts = b.output if isinstance(b, ToolResultBlock) else b.hint
                if not isinstance(parts, str):
                    positions += [(mi, bi, pi) for pi, p in enumerate(parts)
                                  if isinstance(p, DataBlock) and p.is_image]
    excess = len(positions) - max_images
    if excess <= 0:
        return context, 0

    def reminder(block: DataBlock) -> str:
        name = f"named '{block.name}' " if block.name else ""
        if _URL_RE.match(block.source):
            # AgentScope points at a URL source as it is; only inline data is offloaded.
            return prompts.image_offloaded.format(name=name, url=block.source)
        url = offloader.offload_data(block) if offloader is not None else None
        if url is not None:
            return prompts.image_offloaded.format(name=name, url=url)
        return prompts.image_removed.format(name=name)

    new = context
    by_message: dict[int, list[tuple[int, int]]] = {}
    for mi, bi, pi in positions[:excess]:
        by_message.setdefault(mi, []).append((bi, pi))
    for mi, spots in by_message.items():
        m = new[mi]
        blocks: list[Block] = list(m.content)
        for bi, pi in spots:
            b = blocks[bi]
            if pi < 0:
                assert isinstance(b, DataBlock)
                text = reminder(b)
                blocks[bi] = TextBlock(text) if m.role == "user" else HintBlock(text)
            else:
                assert isinstance(b, ToolResultBlock | HintBlock)
                src = b.output if isinstance(b, ToolResultBlock) else b.hint
                assert not isinstance(src, str)
                new_parts: list[Part] = list(src)
                p = new_parts[pi]
                assert isinstance(p, DataBlock)
                new_parts[pi] = TextBlock(reminder(p))
                blocks[bi] = (ToolResultBlock(b.id, b.name, tuple(new_parts), b.is_error)
                              if isinstance(b, ToolResultBlock)
                              else HintBlock(tuple(new_parts), b.source))
        new = new.replaced(mi, Message(m.role, tuple(blocks), name=m.name, id=m.id))
    return new, excess

