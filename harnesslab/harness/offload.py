"""The offloader: compressed context as JSONL, truncated tool results and removed images as
files under the run's workspace, as AgentScope's LocalWorkspace lays them out.

The paths shown to the model are virtual (``/workspace/...``) so that the same run gives the
same requests byte for byte wherever the run folder is.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from harnesslab.messages import DataBlock, Message, message_to_dict

VIRTUAL_ROOT = "/workspace"


class Offloader:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _real(self, virtual: str) -> Path:
        return self.root / virtual.removeprefix(VIRTUAL_ROOT + "/")

    def offload_context(self, session_id: str, messages: Sequence[Message]) -> str:
        """Append the messages as JSON lines to the session's context.jsonl; return its path."""
        virtual = f"{VIRTUAL_ROOT}/sessions/{session_id}/context.jsonl"
        path = self._real(virtual)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            for m in messages:
                f.write(json.dumps(message_to_dict(m), ensure_ascii=False) + "\n")
        return virtual

    def offload_tool_result(self, session_id: str, call_id: str, text: str) -> str:
        base = f"{VIRTUAL_ROOT}/sessions/{session_id}/tool_result-{call_id}"
        virtual, k = f"{base}.txt", 0
        while self._real(virtual).exists():
            k += 1
            virtual = f"{base}({k}).txt"
        path = self._real(virtual)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return virtual

    def offload_data(self, block: DataBlock) -> str:
        ext = block.media_type.split("/")[-1].replace("*", "bin") or "bin"
        digest = hashlib.sha256(block.source.encode()).hexdigest()
        virtual = f"{VIRTUAL_ROOT}/data/{digest}.{ext}"
        path = self._real(virtual)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.write_bytes(base64.b64decode(block.source, validate=True))
        except ValueError:
            path.write_text(block.source, encoding="utf-8")  # a URL or non-base64 payload
        return virtual
