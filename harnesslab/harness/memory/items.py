"""Memory items and the per-user item store.

An item records who it belongs to (the verified session user, never a user named in the
chat), the agent, its source (``turn``: what the user said; ``tool:<name>``: a tool's result),
when it was written, when it expires (``None``: never) and whether it must be re-verified
before it is used as current. Items live in one JSONL file per (agent, user) under the
memory folder, so a store read for one user cannot return another's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harnesslab.harness.paths import ConfinedDir

__all__ = ["ItemRecord", "ItemStore", "MemoryItem", "safe_name"]


class ItemRecord(BaseModel):
    """One line of a user's item file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Content hash of user, agent, source and text")
    user: str = Field(description="The verified user the item belongs to")
    agent: str = Field(description="The agent that wrote it")
    session: str = Field(description="The session it was written in")
    source: str = Field(description="turn, or tool:<name> for a tool result")
    kind: str = Field(description="preference, claim (unverified, never promoted) or fact")
    created_at: str = Field(description="ISO-8601 time it was written (the harness's clock)")
    expires_at: str | None = Field(default=None, description="ISO-8601 expiry; null: never")
    reverify: bool = Field(default=False, description="Time-sensitive: show its age and verify "
                           "with a live lookup before using it as current")
    text: str = Field(description="The extraction answer, verbatim")


@dataclass(frozen=True)
class MemoryItem:
    id: str
    user: str
    agent: str
    session: str
    source: str
    kind: str
    created_at: datetime
    expires_at: datetime | None
    reverify: bool
    text: str

    @classmethod
    def make(cls, *, user: str, agent: str, session: str, source: str, kind: str,
             created_at: datetime, expires_at: datetime | None, reverify: bool,
             text: str) -> MemoryItem:
        digest = hashlib.sha256(json.dumps([user, agent, source, kind, text],
                                           ensure_ascii=False).encode()).hexdigest()[:12]
        return cls(f"mem-{digest}", user, agent, session, source, kind, created_at, expires_at,
                   reverify, text)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def to_record(self) -> ItemRecord:
        d = asdict(self)
        d["created_at"] = self.created_at.isoformat(timespec="seconds")
        d["expires_at"] = self.expires_at.isoformat(timespec="seconds") \
            if self.expires_at else None
        return ItemRecord(**d)

    @classmethod
    def from_record(cls, r: ItemRecord) -> MemoryItem:
        return cls(r.id, r.user, r.agent, r.session, r.source, r.kind,
                   datetime.fromisoformat(r.created_at),
                   datetime.fromisoformat(r.expires_at) if r.expires_at else None,
                   r.reverify, r.text)


def _escape(c: str) -> str:
    # A fixed width per range, told apart by what follows the %: two hex digits, or u / U (no
    # hex digit) and four or six. A variable width would let two ids share a name:
    # "a@1bc.com" and "aЁbc.com" were both "a%401bc%2ecom".
    n = ord(c)
    return f"%{n:02x}" if n < 0x100 else f"%u{n:04x}" if n < 0x10000 else f"%U{n:06x}"


def safe_name(name: str) -> str:
    # A user or agent id becomes a file name: anything but ASCII letters, digits, - and _ is
    # escaped, so no id can name a path (``..``, ``/``), and the escape is prefix-free, so no
    # two ids share a name (whose memory a user reads is which folder it is).
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else _escape(c)
                   for c in name) or "%"


class ItemStore:
    """Items per (agent, user): in memory, and in ``<root>/items/<agent>/<user>.jsonl`` when a
    root is given (so another instance over the same folder sees them)."""

    def __init__(self, root: Path | None) -> None:
        self.dir = ConfinedDir(root) if root is not None else None
        self._mem: dict[tuple[str, str], list[MemoryItem]] = {}

    def _rel(self, agent: str, user: str) -> str:
        return f"items/{safe_name(agent)}/{safe_name(user)}.jsonl"

    def items(self, agent: str, user: str) -> list[MemoryItem]:
        if self.dir is None:
            return list(self._mem.get((agent, user), []))
        rel = self._rel(agent, user)
        if not self.dir.exists(rel):
            return []
        out: dict[str, MemoryItem] = {}
        for line in self.dir.read(rel).splitlines():
            if line.strip():
                item = MemoryItem.from_record(ItemRecord.model_validate_json(line))
                out.pop(item.id, None)
                out[item.id] = item  # a rewrite of the same item: the latest wins, moved last
        return list(out.values())

    def add(self, item: MemoryItem) -> bool:
        """Store the item under its own user; False when that exact item is already there."""
        have = self.items(item.agent, item.user)
        if any(h.id == item.id and h.expires_at == item.expires_at for h in have):
            return False
        if self.dir is None:
            self._mem.setdefault((item.agent, item.user), []).append(item)
        else:
            line = item.to_record().model_dump_json() + "\n"
            self.dir.write(self._rel(item.agent, item.user), line, append=True)
        return True
