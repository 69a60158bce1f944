"""The offloader: compressed context as JSONL, truncated tool results and removed images as
files under the run's workspace, as AgentScope's LocalWorkspace lays them out.

The paths shown to the model are virtual (``/workspace/...``) so that the same run gives the
same requests byte for byte wherever the run folder is. Every real path is confined to the
workspace (``harness.paths``): a session or call id that would lead outside it (``..``, an
absolute path, a symlink) offloads nothing, and the caller keeps its text without a path hint.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from harnesslab.harness.paths import ConfinedDir, PathEscape
from harnesslab.messages import DataBlock, Message, message_to_dict

VIRTUAL_ROOT = "/workspace"


class Offloader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = ConfinedDir(root)

    @staticmethod
    def _rel(virtual: str) -> str:
        return virtual.removeprefix(VIRTUAL_ROOT + "/")

    def offload_context(self, session_id: str, messages: Sequence[Message]) -> str | None:
        """Append the messages as JSON lines to the session's context.jsonl; return its path
        (None when the path would leave the workspace)."""
        virtual = f"{VIRTUAL_ROOT}/sessions/{session_id}/context.jsonl"
        lines = "".join(json.dumps(message_to_dict(m), ensure_ascii=False) + "\n"
                        for m in messages)
        try:
            self.dir.write(self._rel(virtual), lines, append=True)
        except PathEscape:
            return None
        return virtual

    def offload_tool_result(self, session_id: str, call_id: str, text: str) -> str | None:
        base = f"{VIRTUAL_ROOT}/sessions/{session_id}/tool_result-{call_id}"
        virtual, k = f"{base}.txt", 0
        try:
            while self.dir.exists(self._rel(virtual)):
                k += 1
                virtual = f"{base}({k}).txt"
            self.dir.write(self._rel(virtual), text)
        except PathEscape:
            return None
        return virtual

    def offload_data(self, block: DataBlock) -> str | None:
        ext = block.media_type.split("/")[-1].replace("*", "bin") or "bin"
        digest = hashlib.sha256(block.source.encode()).hexdigest()
        virtual = f"{VIRTUAL_ROOT}/data/{digest}.{ext}"
        try:
            try:
                data = base64.b64decode(block.source, validate=True)
            except ValueError:
                data = block.source.encode("utf-8")  # a URL or non-base64 payload
            self.dir.write_bytes(self._rel(virtual), data)
        except PathEscape:
            return None
        return virtual
