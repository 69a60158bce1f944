"""``memory_files``: files placed in the reference harness's per-user memory folders before the
first step (what a deployment's workspace holds), recorded; a harness whose folders the bench
cannot know is not applicable; bad input is one line naming file, line and field, exit 2 (the
loader's messages for each bad entry: tests/scenario/test_scenario.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harnesslab.harness.base import HarnessBase, TurnResult
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.memory_files import MemoryFile, merged
from tests.scenario.test_scenario import GOOD, write

SEEDED = GOOD.replace("lexicon:", """\
memory_files:
  - {user: U-1, path: notes/2026-11-20.md, dir: true}
  - {user: U-1, path: MEMORY.md, text: "[constraint:brevity]"}
lexicon:""")
ANOTHER = bundled_dir() / "memory-note-for-another-user-zh.yaml"


class Elsewhere(HarnessBase):
    """A harness with memory of its own somewhere the bench does not know."""

    name = "elsewhere"
    honours = frozenset({"*"})

    def turn(self, text: str, images: object = ()) -> TurnResult:
        return TurnResult("ok")


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    p = write(tmp_path, SEEDED.replace("path: MEMORY.md,", "path: ../MEMORY.md,"))
    proc = subprocess.run([sys.executable, "-m", "harnesslab.cli", "run", str(p), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "memory_files[1].path" in proc.stderr


def test_a_variants_file_replaces_the_scenarios_at_the_same_place() -> None:
    a = MemoryFile(user="U-1", path="MEMORY.md", text="a")
    b = MemoryFile(user="U-1", path="notes/x.md", hex="ff fe")
    c = MemoryFile(user="U-1", path="MEMORY.md", dir=True)
    assert merged([a, b], [c]) == [c, b]
    assert b.data() == b"\xff\xfe" and b.kind == "bytes" and c.data() == b""


def test_files_are_placed_where_the_reference_harness_reads_them(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, SEEDED))
    r = run_variant(sc, sc.variants[0], out_dir=tmp_path / "runs",
                    cli_set={"memory": "agentic"})
    assert r.error is None, r.error
    folder = r.record.with_suffix(".work") / "memory" / "files" / "assistant" / "U-1"
    assert (folder / "notes" / "2026-11-20.md").is_dir()
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == "[constraint:brevity]"
    events = [json.loads(line) for line in r.record.read_text(encoding="utf-8").splitlines()]
    placed = [e for e in events if e["type"] == "memory_files"]
    assert [(f["path"], f["kind"]) for f in placed[0]["files"]] == [
        ("notes/2026-11-20.md", "dir"), ("MEMORY.md", "text")]
    # the agentic mode read the placed index into the first request
    reads = [e for e in events if e["type"] == "memory_read"]
    assert reads[0]["items"][0]["text"] == "[constraint:brevity]"


def test_a_harness_without_known_memory_folders_is_not_applicable(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, SEEDED))
    r = run_variant(sc, sc.variants[0],
                    cli_set={"harness": "tests.run.test_memory_files:Elsewhere"})
    assert r.not_applicable and not r.checks
    assert "memory_files" in (r.error or "") and "has no memory folder" in (r.error or ""), \
        r.error


def test_another_users_note_is_not_read_and_the_leak_check_can_fail() -> None:
    sc = load_scenario(ANOTHER)
    by_name = {v.name: v for v in sc.variants}
    ok = run_variant(sc, by_name["default"])
    checks = {c.id: c.passed for c in ok.checks}
    assert checks["s1.no_leak"] and checks["s1.max_chars"] and checks["s2.no_leak"]
    # the control: the same address in a note recorded as this user's is read, and seen
    bad = run_variant(sc, by_name["note-mislabeled"])
    checks = {c.id: c.passed for c in bad.checks}
    assert not checks["s1.no_leak"] and not checks["s2.no_leak"]
