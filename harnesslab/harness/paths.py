"""A folder a harness's file tools may not leave: every path is relative to it, and ``..``,
absolute paths, NUL bytes and symlinks (in any component, including the last) that lead
outside are refused with :class:`PathEscape` before anything is opened.

The check resolves the path with ``os.path.realpath`` (which follows every symlink that exists)
and requires the result to stay under the root's own real path. A last component that is a
symlink is refused outright, even if it points inside: the file is then opened with
``O_NOFOLLOW``, so a link planted between the check and the open cannot redirect a write.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

__all__ = ["ConfinedDir", "PathEscape"]


class PathEscape(ValueError):
    """A path that would leave the workspace (the file tool's error result says why)."""


class ConfinedDir:
    """Reads and writes text files under ``root`` only."""

    def __init__(self, root: Path) -> None:
        # Created on the first write, so a harness that writes nothing leaves no folder.
        self.root = Path(os.path.realpath(root))

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` under the root, or PathEscape."""
        if not isinstance(rel, str) or not rel.strip():
            raise PathEscape("empty path")
        if "\x00" in rel:
            raise PathEscape(f"path {rel!r} contains a NUL byte")
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or (len(rel) > 1 and rel[1] == ":"):
            raise PathEscape(f"absolute path {rel!r}: paths are relative to the workspace")
        if ".." in pure.parts:
            raise PathEscape(f"path {rel!r} leaves the workspace ('..')")
        joined = self.root.joinpath(*pure.parts)
        real = Path(os.path.realpath(joined))
        if real != self.root and not real.is_relative_to(self.root):
            raise PathEscape(f"path {rel!r} leads outside the workspace (a symlink)")
        if joined.is_symlink():
            raise PathEscape(f"path {rel!r} is a symlink")
        return joined

    def read(self, rel: str) -> str:
        path = self.resolve(rel)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            return f.read()

    def write(self, rel: str, text: str, *, append: bool = False) -> None:
        path = self.resolve(rel)
        self._mkdirs(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
        fd = os.open(path, flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)

    def write_bytes(self, rel: str, data: bytes) -> None:
        path = self.resolve(rel)
        self._mkdirs(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def exists(self, rel: str) -> bool:
        return self.resolve(rel).exists()

    def files(self, rel: str = ".") -> list[str]:
        """Regular files under ``rel`` (relative, sorted); symlinks are not followed."""
        base = self.root if rel in (".", "") else self.resolve(rel)
        if not base.is_dir():
            return []
        out = []
        for dirpath, _dirs, names in os.walk(base, followlinks=False):
            for n in names:
                p = Path(dirpath) / n
                if p.is_file() and not p.is_symlink():
                    out.append(p.relative_to(self.root).as_posix())
        return sorted(out)

    def _mkdirs(self, path: Path) -> None:
        # Each created level is checked again: a symlinked directory met on the way is refused.
        path.mkdir(parents=True, exist_ok=True)
        real = Path(os.path.realpath(path))
        if real != self.root and not real.is_relative_to(self.root):
            raise PathEscape(f"directory {path} leads outside the workspace")
