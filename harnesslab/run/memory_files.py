"""Placing a scenario's ``memory_files`` in the harness's per-user memory folders before the
first step, as a deployment's workspace holds them (docs/scenarios.md, "Memory files").

Only a harness whose memory folders the bench knows can be seeded: the reference harness (and
its subclasses: the zoo's bugs, the mutants), whose folder for a user is the one its memory
modes read (``MemoryFiles(workdir / "memory", agent).folder(user)``). For any other harness
the run is not applicable, with the reason: the files would be placed where nothing reads
them, and a pass would mean nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnesslab.errors import NotApplicable
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.memory.files import MemoryFiles
from harnesslab.record.writer import RecordWriter
from harnesslab.scenario.memory_files import MemoryFile

__all__ = ["place_memory_files"]


def place_memory_files(files: Sequence[MemoryFile], cls: Any, cfg: HarnessConfig,
                       workdir: Path | None, label: str, writer: RecordWriter) -> None:
    """Write ``files`` into the run's workdir where ``cls`` keeps each user's memory, and
    record what was placed; NotApplicable for a harness whose folders the bench cannot know."""
    if not files:
        return
    if not (isinstance(cls, type) and issubclass(cls, ReferenceHarness)):
        raise NotApplicable(f"the scenario places files in the harness's per-user memory "
                            f"folders (memory_files); {label} has no memory folder the bench "
                            f"can place them in")
    assert workdir is not None  # the runner gives a run with memory files its own folder
    folders = MemoryFiles(workdir / "memory", cfg.memory.agent_id)
    placed = []
    for f in files:
        target = folders.folder(f.user).root.joinpath(*f.path.split("/"))
        if f.dir:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.data())
        placed.append({"user": f.user, "path": f.path, "kind": f.kind,
                       "sha256": hashlib.sha256(f.data()).hexdigest() if not f.dir else None})
    writer.emit({"type": "memory_files", "files": placed})
