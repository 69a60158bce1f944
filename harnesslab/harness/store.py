"""The reference harness's session store, as Codex keeps one: an append-only JSONL rollout per
session (the source of truth for resume), an SQLite index of session metadata (WAL), and a
``memory/`` folder for long-term memory files.

Layout under the store folder::

    sessions.sqlite          id, user, created, updated, turns, compactions, last_summary, rev
    rollouts/<session>.jsonl one line per committed change of the session's state
    memory/                  Markdown memory files (the memory modes write them)

A rollout line is ``{"rev", "kind" ("turn" or "preload"), "at", "user", "compactions",
"keep", "append", "state"}``: the state's ``context`` is ``keep`` messages of the previous
line's context plus ``append``; every other key of the state is stored whole. A line is
written with one ``write`` and ``fsync``ed before the metadata is updated, so a process killed
at any point leaves every line whole and loses at most the change in flight; the rollout wins
over the metadata when they disagree. Times come from the harness's clock door, never the
wall clock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_SCHEMA = """CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL,
    turns INTEGER NOT NULL, compactions INTEGER NOT NULL, last_summary TEXT NOT NULL,
    rev INTEGER NOT NULL, rollout TEXT NOT NULL)"""
DB_NAME = "sessions.sqlite"


class StoreCorrupt(ValueError):
    """A whole rollout line that does not parse: the store was damaged from outside (a killed
    writer leaves at most a part line, which is not read)."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")
        self.path, self.line, self.problem = path, line, problem


def _parse(path: Path, line: int, raw: bytes) -> dict[str, Any]:
    try:
        out: dict[str, Any] = json.loads(raw)
    except ValueError as e:
        raise StoreCorrupt(path, line, f"not a JSON rollout line ({e})") from None
    return out


@dataclass(frozen=True)
class SessionMeta:
    """One row of the metadata index."""

    id: str
    user: str
    created: str
    updated: str
    turns: int
    compactions: int
    last_summary: str
    rev: int
    rollout: str


@dataclass(frozen=True)
class Saved:
    """A session's state as of its latest whole rollout line."""

    rev: int
    turns: int
    compactions: int
    state: dict[str, Any]


@dataclass
class _Cursor:
    """How far this store object has read (or written) a session's rollout."""

    offset: int = 0
    lines: int = 0
    rev: int = 0
    turns: int = 0
    compactions: int = 0
    context: list[Any] = field(default_factory=list)
    rest: dict[str, Any] = field(default_factory=dict)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def rollout_name(session_id: str) -> str:
    """The rollout file's name: the id itself when it is a plain name, else its hash (an id
    never becomes a path)."""
    if _SAFE_ID.fullmatch(session_id) and session_id not in (".", ".."):
        return f"{session_id}.jsonl"
    return f"s-{hashlib.sha256(session_id.encode()).hexdigest()[:32]}.jsonl"


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class SessionStore:
    """A store folder, opened by one harness instance. Several may share the folder and take
    turns on a session (alternate instances); two writing one session at the same moment is
    not supported (a load balancer routes a session's turns one at a time)."""

    def __init__(self, root: Path, *, read_only: bool = False) -> None:
        self.root = root
        self.read_only = read_only
        self._cursors: dict[str, _Cursor] = {}
        if read_only:
            # A reader (harnesslab sessions) never creates, converts or repairs anything: a
            # damaged file is reported and left as it is for whoever investigates it.
            self._db = _open_read_only(root / DB_NAME)
            return
        (root / "rollouts").mkdir(parents=True, exist_ok=True)
        self.memory_dir.mkdir(exist_ok=True)
        self._db = sqlite3.connect(root / DB_NAME, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(_SCHEMA)

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    def close(self) -> None:
        self._db.close()

    def rollout_path(self, session_id: str) -> Path:
        return self.root / "rollouts" / rollout_name(session_id)

    # -- reading ----------------------------------------------------------------------------------
    def _read(self, session_id: str) -> _Cursor:
        """Replay the whole lines this object has not seen yet. A trailing part line (a writer
        killed in mid-write, which one ``write`` per line makes unlikely) is not a change."""
        cur = self._cursors.setdefault(session_id, _Cursor())
        path = self.rollout_path(session_id)
        try:
            with path.open("rb") as f:
                f.seek(cur.offset)
                data = f.read()
        except FileNotFoundError:
            return cur
        if len(data) == 0:
            return cur
        end = data.rfind(b"\n") + 1
        for n, raw in enumerate(data[:end].splitlines(), start=cur.lines + 1):
            line = _parse(path, n, raw)
            cur.lines = n
            cur.context = cur.context[:line["keep"]] + line["append"]
            cur.rest = line["state"]
            cur.rev, cur.compactions = line["rev"], line["compactions"]
            cur.turns += line["kind"] == "turn"
        cur.offset += end
        return cur

    def load(self, session_id: str) -> Saved | None:
        """The session's latest state, or None when the store does not know it."""
        cur = self._read(session_id)
        if cur.rev == 0:
            return None
        return Saved(cur.rev, cur.turns, cur.compactions,
                     {**cur.rest, "context": list(cur.context)})

    def rollout(self, session_id: str) -> list[dict[str, Any]]:
        """Every whole line of a session's rollout."""
        path = self.rollout_path(session_id)
        data = path.read_bytes() if path.exists() else b""
        return [_parse(path, n, x)
                for n, x in enumerate(data[:data.rfind(b"\n") + 1].splitlines(), start=1)]

    def sessions(self) -> list[SessionMeta]:
        try:
            rows = self._db.execute("SELECT id, user, created, updated, turns, compactions, "
                                    "last_summary, rev, rollout FROM sessions ORDER BY "
                                    "created, id").fetchall()
        except sqlite3.DatabaseError as e:  # a torn page met past the first read
            raise StoreCorrupt(self.root / DB_NAME, 0, _damaged(e)) from None
        return [SessionMeta(*r) for r in rows]

    def session(self, session_id: str) -> SessionMeta | None:
        return next((m for m in self.sessions() if m.id == session_id), None)

    # -- writing ----------------------------------------------------------------------------------
    def append(self, session_id: str, user: str, state: dict[str, Any], *, kind: str,
               now: datetime, compactions: int) -> int:
        """Commit one change of the session's state; returns its revision."""
        cur = self._read(session_id)  # another instance's lines first: keep counts against them
        context = list(state.get("context", []))
        keep = _common_prefix(cur.context, context)
        rest = {k: v for k, v in state.items() if k != "context"}
        rev = cur.rev + 1
        at = now.isoformat()
        line = (_dumps({"rev": rev, "kind": kind, "at": at, "user": user,
                        "compactions": compactions, "keep": keep, "append": context[keep:],
                        "state": rest}) + "\n").encode("utf-8")
        path = self.rollout_path(session_id)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size > cur.offset:
                os.ftruncate(fd, cur.offset)  # a part line left by a killed writer
            view = memoryview(line)
            while view:  # one write for a regular file; the loop only covers a short write
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        cur.offset += len(line)
        cur.lines += 1
        cur.rev, cur.compactions, cur.context, cur.rest = rev, compactions, context, rest
        cur.turns += kind == "turn"
        summary = str(state.get("summary", ""))
        self._db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE "
            "SET updated=excluded.updated, turns=excluded.turns, "
            "compactions=excluded.compactions, last_summary=excluded.last_summary, "
            "rev=excluded.rev",
            (session_id, user, at, at, cur.turns, compactions, summary, rev,
             str(path.relative_to(self.root))))
        return rev


def _damaged(e: BaseException) -> str:
    return (f"not a readable SQLite database ({e}); left as it is (the rollouts under "
            "rollouts/ are the sessions' record)")


def _open_read_only(db: Path) -> sqlite3.Connection:
    """The metadata index opened read-only, checked to be an SQLite file with its table."""
    try:
        size = db.stat().st_size
    except OSError as e:
        raise StoreCorrupt(db, 0, f"cannot read: {e.strerror or e}") from None
    if size == 0:
        # sqlite3 would take an empty file for a new database (and a writer would fill it in).
        raise StoreCorrupt(db, 0, "an empty file (0 bytes), not an SQLite database; left as it "
                           "is (the rollouts under rollouts/ are the sessions' record)")
    # No -wal file: no writer is connected (a WAL writer keeps it while open) and every commit
    # is in the main file, read as immutable so that not even SQLite's -shm/-wal are created.
    # With one, a writer may be live or was killed with commits in it: read through WAL.
    wal = db.with_name(db.name + "-wal").exists()
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?{'mode=ro' if wal else 'immutable=1'}",
                               uri=True, timeout=30)
        conn.execute("SELECT count(*) FROM sessions").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreCorrupt(db, 0, _damaged(e)) from None
    return conn


class StoreLink:
    """One harness instance's tie to its session in a store: which revision it holds, and the
    compactions it counted."""

    def __init__(self, store: SessionStore, session_id: str, user: str, *,
                 restore: bool) -> None:
        self.store, self.session_id, self.user = store, session_id, user
        self.restore = restore
        self.rev = 0
        self.compactions = 0

    def newer(self) -> Saved | None:
        """The store's state when it is newer than the instance's: a fresh instance on a known
        session, or another instance served the last turn. Never without ``restore`` (``resume:
        session_id``, the negative control: a new instance knows only the session id)."""
        if not self.restore:
            return None
        saved = self.store.load(self.session_id)
        return saved if saved is not None and saved.rev != self.rev else None

    def adopted(self, saved: Saved) -> None:
        self.rev, self.compactions = saved.rev, saved.compactions

    def commit(self, state: dict[str, Any], kind: str, now: datetime) -> None:
        self.rev = self.store.append(self.session_id, self.user, state, kind=kind, now=now,
                                     compactions=self.compactions)


def integrity_problems(root: Path) -> list[str]:
    """What is wrong with a store folder: SQLite's integrity check, then every rollout line."""
    problems: list[str] = []
    try:
        db = _open_read_only(root / DB_NAME)
    except StoreCorrupt as e:
        return [f"{DB_NAME}: {e.problem}"]
    try:
        result = [r[0] for r in db.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as e:
        result = [str(e)]
    finally:
        db.close()
    if result != ["ok"]:
        problems.append(f"{DB_NAME}: {'; '.join(result)}")
    for path in sorted((root / "rollouts").glob("*.jsonl")):
        with path.open("rb") as f:
            for n, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n"):
                    problems.append(f"{path.name}:{n}: a part line (no newline)")
                    continue
                try:
                    json.loads(raw)
                except ValueError as e:
                    problems.append(f"{path.name}:{n}: {e}")
    return problems
