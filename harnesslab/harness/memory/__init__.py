"""Long-term memory modes of the reference harness, behind one registry.

- ``none``: no memory (the default; requests are exactly as without this package).
- ``vector``: Mem0-like. Items per (agent, verified user) in a JSONL store, retrieved by
  similarity to the user's message (hashed character n-grams, ``memory.embed``; top_k,
  threshold) and injected before every model call of the turn at ``memory.position``;
  written back after the reply through an extraction call to the model.
- ``workspace``: ReMe-like. The same items kept as Markdown notes in a per-user file
  workspace, with a ``memory_search`` tool for the model and the same automatic write-back
  and injection.
- ``agentic``: a MEMORY.md index plus topic files in a per-user workspace, maintained by the
  model itself through ``memory_read`` / ``memory_write`` / ``memory_edit``; the index is
  injected at each call.
- ``background``: Codex-like. The turns of a session are queued apart from its history; when
  a later session of the same user starts, queued sessions are turned into items (one
  extraction per queued session) and then retrieved as in ``vector``.

What is remembered is what the model answers to an extraction request (purpose ``memory``);
items are stored verbatim. Every operation is scoped by the verified session user
(``memory.key: verified``); ``named`` keys memory by the user id the model last passed to a
tool, a negative control. Claims the user makes about themselves are stored as unverified
claims and shown as such; nothing promotes them.
"""

from harnesslab.harness.memory.modes import MEMORY_MODES, Memory, make_memory, register_memory

__all__ = ["MEMORY_MODES", "Memory", "make_memory", "register_memory"]
