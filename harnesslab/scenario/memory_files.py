"""Files a scenario places in the harness's per-user memory folders before its first step: what
a deployment's memory workspace holds from earlier weeks (notes copied in by hand, a damaged
restore), for the memory modes that keep files (workspace notes, agentic MEMORY.md)."""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["MemoryFile", "merged"]


class MemoryFile(BaseModel):
    """One file or folder in one user's memory folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(description="The world user whose memory folder holds it")
    path: str = Field(description="A path relative to that folder, with / between parts, "
                      "e.g. MEMORY.md or notes/2026-11-20.md")
    text: str | None = Field(default=None, description="The file's text (written as UTF-8)")
    hex: str | None = Field(default=None, description="Instead: the file's bytes in hex "
                            "(spaces allowed), e.g. for bytes that are not UTF-8")
    dir: bool = Field(default=False, description="Instead: an empty folder at this path "
                      "(a folder where a file is expected)")

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        pure = PurePosixPath(v)
        if not v.strip() or "\\" in v or "\x00" in v or pure.is_absolute() or \
                any(p in ("..", ".") for p in v.split("/")) or "" in v.split("/"):
            raise ValueError(f"path {v!r} must be relative to the user's memory folder, with "
                             "no '.', '..', empty or absolute parts")
        return v

    @field_validator("hex")
    @classmethod
    def _hex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                bytes.fromhex(v)
            except ValueError:
                raise ValueError(f"hex {v!r} is not pairs of hex digits") from None
        return v

    @model_validator(mode="after")
    def _one(self) -> MemoryFile:
        if sum((self.text is not None, self.hex is not None, self.dir)) != 1:
            raise ValueError("give exactly one of text, hex or dir: true")
        return self

    @property
    def kind(self) -> str:
        return "dir" if self.dir else "text" if self.text is not None else "bytes"

    def data(self) -> bytes:
        """The file's bytes (empty for a folder)."""
        if self.text is not None:
            return self.text.encode()
        return bytes.fromhex(self.hex) if self.hex is not None else b""


def merged(*layers: list[MemoryFile]) -> list[MemoryFile]:
    """The files of every layer (the scenario's, then a variant's), a later one replacing an
    earlier one at the same user and path, in the order they were first given."""
    out: dict[tuple[str, str], MemoryFile] = {}
    for layer in layers:
        for f in layer:
            out[(f.user, f.path)] = f
    return list(out.values())
