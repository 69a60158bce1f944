"""File tools stay in their workspace: every escape attempt (``..``, absolute paths, symlinks in
any component, NUL bytes, backslashes) through the memory tools and the offloader ends as a tool
error or no file, and nothing outside the workspace is read, created or changed."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harnesslab.harness.memory.files import MemoryFiles
from harnesslab.harness.offload import Offloader
from harnesslab.harness.paths import ConfinedDir, PathEscape
from harnesslab.messages import Message, TextBlock, ToolCallBlock

NOW = datetime(2026, 11, 30, 10, tzinfo=UTC)
SECRET = "outside secret"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[MemoryFiles, Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    files = MemoryFiles(tmp_path / "mem", "assistant")
    user_dir = files.folder("U-1").root
    user_dir.mkdir(parents=True)
    (user_dir / "ok.md").write_text("inside")
    # Planted links: a file link and a directory link pointing outside, and a link inside.
    os.symlink(outside / "secret.txt", user_dir / "link.md")
    os.symlink(outside, user_dir / "linkdir")
    os.symlink(user_dir / "ok.md", user_dir / "inner-link.md")
    return files, user_dir, outside


def _call(name: str, **args: str) -> ToolCallBlock:
    return ToolCallBlock("call_1", name, json.dumps(args))


ESCAPES = [
    ("memory_read", {"path": "../../../outside/secret.txt"}),
    ("memory_read", {"path": "notes/../../U-2/MEMORY.md"}),
    ("memory_read", {"path": "/etc/passwd"}),
    ("memory_read", {"path": "link.md"}),                      # file symlink to outside
    ("memory_read", {"path": "linkdir/secret.txt"}),           # directory symlink to outside
    ("memory_read", {"path": "inner-link.md"}),                # a symlink at all (last part)
    ("memory_read", {"path": "..\\..\\..\\outside\\secret.txt"}),
    ("memory_read", {"path": "ok.md\x00../../x"}),
    ("memory_write", {"path": "../../../outside/new.txt", "content": "x"}),
    ("memory_write", {"path": "linkdir/new.txt", "content": "x"}),   # write through a dir link
    ("memory_write", {"path": "link.md", "content": "overwritten"}),  # write through a file link
    ("memory_write", {"path": str(Path("/tmp") / "harnesslab-escape.txt"), "content": "x"}),
    ("memory_write", {"path": "C:\\Windows\\x.txt", "content": "x"}),
    ("memory_edit", {"path": "link.md", "old": "outside", "new": "pwned"}),
    ("memory_edit", {"path": "../../../outside/secret.txt", "old": "outside", "new": "pwned"}),
    ("memory_write", {"path": "", "content": "x"}),
]


@pytest.mark.parametrize(("name", "args"), ESCAPES, ids=[f"{n}:{a['path']!r}" for n, a in ESCAPES])
def test_memory_tool_escapes_are_tool_errors(setup: tuple[MemoryFiles, Path, Path], name: str,
                                             args: dict[str, str]) -> None:
    files, _, outside = setup
    tmp_root = outside.parent
    before = _snapshot(tmp_root)
    res = files.run(_call(name, **args), "U-1", NOW, None)
    assert res.is_error
    body = json.loads(res.output if isinstance(res.output, str) else "")
    assert body["code"] in ("forbidden", "bad_request")
    assert SECRET not in res.output
    assert _snapshot(tmp_root) == before  # nothing written or changed anywhere
    assert not Path("/tmp/harnesslab-escape.txt").exists()
    assert (outside / "secret.txt").read_text() == SECRET


def test_at_least_ten_escape_attempts_and_symlinks_among_them() -> None:
    assert len(ESCAPES) >= 10
    assert sum("link" in a["path"] for _, a in ESCAPES) >= 5


def test_the_same_tools_work_inside(setup: tuple[MemoryFiles, Path, Path]) -> None:
    files, user_dir, _ = setup
    assert not files.run(_call("memory_write", path="topics/a.md", content="hello"),
                         "U-1", NOW, None).is_error
    assert not files.run(_call("memory_edit", path="topics/a.md", old="hello", new="hi"),
                         "U-1", NOW, None).is_error
    res = files.run(_call("memory_read", path="topics/a.md"), "U-1", NOW, None)
    assert json.loads(str(res.output))["content"] == "hi"
    assert (user_dir / "topics" / "a.md").read_text() == "hi"


def test_an_edit_needs_its_old_text_exactly_once(setup: tuple[MemoryFiles, Path, Path]) -> None:
    """memory_edit replaces text that occurs exactly once: an ambiguous or absent `old` is a
    tool error that changes nothing (the fake model never edits, so no scenario reaches this:
    harnesslab/study/equivalents.yaml lists the branch out of the mutation score)."""
    files, user_dir, _ = setup
    files.run(_call("memory_write", path="a.md", content="ship ship"), "U-1", NOW, None)
    for old in ("ship", "plane", ""):
        res = files.run(_call("memory_edit", path="a.md", old=old, new="x"), "U-1", NOW, None)
        assert res.is_error, old
        assert json.loads(str(res.output))["code"] == "bad_request"
    assert (user_dir / "a.md").read_text() == "ship ship"
    res = files.run(_call("memory_edit", path="a.md", old="ship ship", new="boat"), "U-1", NOW, None)
    assert not res.is_error
    assert (user_dir / "a.md").read_text() == "boat"


def test_one_users_tools_never_reach_another_users_folder(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path, "assistant")
    files.run(_call("memory_write", path="MEMORY.md", content="U-2's notes"), "U-2", NOW, None)
    res = files.run(_call("memory_read", path="../U-2/MEMORY.md"), "U-1", NOW, None)
    assert res.is_error and "U-2's notes" not in str(res.output)
    # A user id that looks like a path names a folder of its own, not a way out.
    files.run(_call("memory_write", path="x.md", content="y"), "../U-2", NOW, None)
    assert files.index("U-2") == "U-2's notes"
    assert all(p.is_relative_to(tmp_path) for p in tmp_path.rglob("*"))


def test_offloader_ids_that_would_escape_offload_nothing(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "run" / "workspace"
    off = Offloader(ws)
    msgs = [Message("user", (TextBlock("hi"),))]
    assert off.offload_context("../../../outside", msgs) is None
    # A leading slash inside the virtual path stays a folder name under the workspace.
    off.offload_context("/abs", msgs)
    assert (ws / "sessions" / "abs" / "context.jsonl").exists()
    (ws / "sessions" / "abs" / "context.jsonl").unlink()
    (ws / "sessions" / "abs").rmdir()
    (ws / "sessions").rmdir()
    assert off.offload_tool_result("s1", "../../../../outside/x", "dropped") is None
    os.symlink(outside, ws / "sessions")
    assert off.offload_context("s1", msgs) is None          # sessions/ is a link outside
    assert off.offload_tool_result("s1", "call_1", "dropped") is None
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "abs").exists()
    # An ordinary offload still works.
    (ws / "sessions").unlink()
    assert off.offload_context("s1", msgs) == "/workspace/sessions/s1/context.jsonl"


def test_confined_dir_accepts_plain_relative_paths(tmp_path: Path) -> None:
    d = ConfinedDir(tmp_path / "root")
    d.write("a/b/c.txt", "x")
    assert d.read("a/b/c.txt") == "x"
    assert d.files() == ["a/b/c.txt"]
    with pytest.raises(PathEscape, match="leaves the workspace"):
        d.resolve("a/../../b")
