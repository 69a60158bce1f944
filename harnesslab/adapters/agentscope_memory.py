"""AgentScope's own long-term-memory middlewares behind the adapter (the ``agentscope`` extra):
which one the bench's ``memory`` settings choose, and the bench's side of each.

``memory.mode: agentic`` is ``agentscope.middleware.AgenticMemoryMiddleware``: AgentScope appends
its memory instructions and the user's ``MEMORY.md`` to the system prompt at every reasoning
step, the model keeps the files itself through AgentScope's own ``Read`` / ``Write`` / ``Edit``
tools, and an asynchronous retrieval task may surface topic files as a hint. The bench gives it:

- a **backend** (AgentScope's ``BackendBase``) over one folder per (agent, verified user) in the
  run's workdir (``memory/agentscope/<agent>/<user>/``), seen by AgentScope and the model as the
  virtual ``/agent`` (so requests do not name the run folder, and every user's memory sits at
  the same path: the identity is in which folder the integrator mounts, never in the path the
  model writes). Every path is confined (``harness.paths``); the backend runs no shell. File
  times are the simulated clock's (a written file's mtime is set to it), so AgentScope's
  read-before-write cache and its file listing are deterministic. I/O is synchronous, so the
  event loop's interleaving (the retrieval task against the reply) is the same in every run.
- the **scoping**: the folder is the verified session user's, chosen when the session's agent
  is built. ``memory.key: named`` (keying by the user id the model names) is not expressible:
  AgentScope's middleware has no notion of users; its workdir is fixed at construction.
- **permissions**: allow rules for ``Read``, ``Write`` and ``Edit`` under the memory folder
  only (an unattended integrator's wiring; anything else is asked, and so refused).

What it does not do: invent users, rewrite AgentScope's prompts, or run its retrieval itself.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from agentscope.middleware import AgenticMemoryMiddleware
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.tool import BackendBase, DirEntry, ExecResult

from harnesslab.adapters.agentscope_settings import memory_folder
from harnesslab.harness.paths import ConfinedDir, PathEscape

__all__ = ["FILE_TOOLS", "MEMORY_DIR", "VIRTUAL_WORKDIR", "BenchBackend", "agentic_memory",
           "allow_rules", "memory_folder"]

VIRTUAL_WORKDIR = "/agent"
MEMORY_DIR = "Memory"  # AgentScope's default memory_dir
FILE_TOOLS = ("Read", "Write", "Edit")


class BenchBackend(BackendBase):  # type: ignore[misc]
    """AgentScope's file backend over one confined folder, mounted at ``VIRTUAL_WORKDIR``
    (module docstring). A path outside the mount is an error to the tool (PermissionError),
    never a read or write elsewhere."""

    def __init__(self, root: Path, now: Callable[[], datetime]) -> None:
        self.dir = ConfinedDir(root)
        self.now = now

    # -- the mount -------------------------------------------------------------------------
    def _rel(self, path: str) -> str:
        norm = posixpath.normpath(path)
        if norm == VIRTUAL_WORKDIR:
            return "."
        if not norm.startswith(VIRTUAL_WORKDIR + "/"):
            raise PermissionError(f"{path}: outside {VIRTUAL_WORKDIR}")
        return norm[len(VIRTUAL_WORKDIR) + 1:]

    def _real(self, path: str) -> Path:
        rel = self._rel(path)
        if rel == ".":
            return self.dir.root
        try:
            return self.dir.resolve(rel)
        except PathEscape as e:
            raise PermissionError(str(e)) from None

    def _virtual(self, real: Path) -> str:
        rel = real.relative_to(self.dir.root).as_posix()
        return VIRTUAL_WORKDIR if rel == "." else f"{VIRTUAL_WORKDIR}/{rel}"

    # -- the primitives ----------------------------------------------------------------------
    async def exec_shell(self, command: list[str], *, cwd: str | None = None,
                         timeout: float | None = None) -> ExecResult:
        # No shell: the memory tools need none, and a command would reach the host.
        return ExecResult(exit_code=126, stdout=b"", stderr=b"no shell in the bench's backend")

    async def read_file(self, path: str) -> bytes:
        real = self._real(path)
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    async def write_file(self, path: str, data: bytes) -> None:
        rel = self._rel(path)
        try:
            self.dir.write_bytes(rel, data)
        except PathEscape as e:
            raise PermissionError(str(e)) from None
        # The simulated clock's time, not the host's: AgentScope's caches and listings read it.
        t = self.now().timestamp()
        os.utime(self.dir.resolve(rel), (t, t), follow_symlinks=False)

    async def getcwd(self) -> str:
        return VIRTUAL_WORKDIR

    async def expanduser(self, path: str) -> str:
        return path

    async def file_exists(self, path: str) -> bool:
        try:
            return self._real(path).exists()
        except PermissionError:
            return False

    async def is_dir(self, path: str) -> bool:
        try:
            return self._real(path).is_dir()
        except PermissionError:
            return False

    async def list_dir(self, path: str, *, recursive: bool = False) -> list[str]:
        real = self._real(path)
        if recursive:
            rel = real.relative_to(self.dir.root).as_posix()
            return [self._virtual(self.dir.root / f) for f in self.dir.files(rel)]
        return sorted(os.listdir(real))

    async def scandir(self, path: str) -> list[DirEntry]:
        try:
            real = self._real(path)
            names = sorted(os.listdir(real))
        except OSError:
            return []
        out = []
        for n in names:
            st = os.lstat(real / n)
            is_dir = (real / n).is_dir() and not (real / n).is_symlink()
            out.append(DirEntry(name=n, is_dir=is_dir, size_bytes=None if is_dir
                                else st.st_size, mtime=st.st_mtime))
        return out

    async def stat(self, path: str) -> DirEntry | None:
        try:
            real = self._real(path)
            st = os.lstat(real)
        except OSError:
            return None
        is_dir = real.is_dir()
        return DirEntry(name=posixpath.basename(path), is_dir=is_dir,
                        size_bytes=None if is_dir else st.st_size, mtime=st.st_mtime)

    async def stat_mtime(self, path: str) -> float | None:
        try:
            return os.lstat(self._real(path)).st_mtime
        except OSError:
            return None

    async def delete_path(self, path: str) -> None:
        real = self._real(path)
        if real == self.dir.root:
            raise PermissionError("the memory folder itself is not deleted")
        if real.is_file() or real.is_symlink():
            real.unlink(missing_ok=True)


def allow_rules() -> dict[str, list[Any]]:
    """Allow rules for AgentScope's file tools under the memory folder, and nowhere else."""
    pattern = f"{VIRTUAL_WORKDIR}/{MEMORY_DIR}/**"
    return {name: [PermissionRule(tool_name=name, rule_content=pattern,
                                  behavior=PermissionBehavior.ALLOW, source="bench")]
            for name in FILE_TOOLS}


def agentic_memory(backend: BenchBackend) -> tuple[Any, list[Any]]:
    """AgentScope's AgenticMemoryMiddleware over ``backend``, and the file tools it tells the
    model to use (AgentScope's own, on the same backend)."""
    from agentscope.tool import Edit, Read, Write

    middleware = AgenticMemoryMiddleware(workdir=VIRTUAL_WORKDIR, memory_dir=MEMORY_DIR,
                                         backend=backend)
    return middleware, [Read(backend=backend), Write(backend=backend), Edit(backend=backend)]
