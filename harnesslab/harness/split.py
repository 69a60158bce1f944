"""AgentScope 2.0.x's split of the context for compaction (semantics spec §2.4), exactly:
keep the longest suffix, at block granularity inside the boundary message, such that
system + summary + tool schemas + kept <= the reserve budget.

1. Message level: walking from the newest message back, the boundary is the first message
   at which ``count(prefix + context[i:]) >= budget``; the messages after it are kept whole.
   If every suffix stays under the budget, nothing is split off (the caller then retries with
   a budget of 0).
2. Block level inside the boundary message: walking its blocks back, stop at the first block
   ``b`` at which ``count(prefix + blocks[b:] + kept) > budget`` (strictly greater); blocks
   after ``b`` are kept, the rest compressed. Both halves keep the message's id and name.
3. Pairing: while the kept part of the boundary message holds a tool result whose call is not
   kept with it, the cut moves to just after that result (so whatever lies between the call
   and the result is compressed too).

Unfinished tool calls never exist here: the reference harness runs every call's tool before
the next compaction check, so step 2 of the original (protecting unfinished calls) is moot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harnesslab.messages import Message, ToolCallBlock, ToolResultBlock


@dataclass(frozen=True)
class Split:
    to_compress: tuple[Message, ...]
    to_keep: tuple[Message, ...]


def split_context(context: Sequence[Message], head_units: int, budget: float,
                  units: Callable[[Message], int], finalize: Callable[[int], int], *,
                  pair: bool = True) -> Split:
    """Split by AgentScope's rule; ``units``/``finalize`` are the estimator's counting rule.
    ``pair=False`` skips step 3 (only the bug zoo does that)."""
    n = len(context)
    suffix = 0
    boundary = -1
    for i in range(n - 1, -1, -1):
        suffix += units(context[i])
        if finalize(head_units + suffix) >= budget:
            boundary = i
            break
    if boundary < 0:
        return Split((), tuple(context))
    m = context[boundary]
    kept_units = suffix - units(m)
    blocks = m.content
    cut = -1  # blocks[:cut + 1] are compressed; -1: none of the boundary message
    for b in range(len(blocks) - 1, -1, -1):
        tail = Message(m.role, blocks[b:], name=m.name, id=m.id)
        if finalize(head_units + units(tail) + kept_units) > budget:
            cut = b
            break
    # Pairing, as AgentScope does it: while the kept part of the boundary message holds a tool
    # result whose call is not kept with it, move the cut to just after that result.
    while pair:
        unpaired: dict[str, int] = {}
        for j in range(len(blocks) - 1, cut, -1):
            block = blocks[j]
            if isinstance(block, ToolResultBlock):
                unpaired[block.id] = j
            elif isinstance(block, ToolCallBlock):
                unpaired.pop(block.id, None)
        if not unpaired:
            break
        cut = max(unpaired.values())
    head_blocks = blocks[:cut + 1]
    tail_blocks = blocks[cut + 1:]
    to_compress = list(context[:boundary])
    if head_blocks:
        to_compress.append(m if not tail_blocks else
                           Message(m.role, head_blocks, name=m.name, id=m.id))
    to_keep: list[Message] = []
    if tail_blocks:
        to_keep.append(m if not head_blocks else
                       Message(m.role, tail_blocks, name=m.name, id=m.id))
    to_keep += context[boundary + 1:]
    return Split(tuple(to_compress), tuple(to_keep))
