"""Bad input to ``harnesslab run`` and ``show``: one line naming the place at fault, exit 2,
nothing run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.scenario.loader import bundled_dir

FOLLOWUP = bundled_dir() / "followup-o1001-zh.yaml"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harnesslab.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_version() -> None:
    p = cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == "harnesslab 0.1.0"


def test_out_naming_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert one_line(cli("run", str(FOLLOWUP), "--out", str(f))) == \
        f"harnesslab run: error: {f}: --out: is a file; expected a folder for the records"


def test_out_unwritable(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = "/proc/harnesslab-out"  # root writes anywhere but /proc
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "out")
    line = one_line(cli("run", str(FOLLOWUP), "--out", target))
    assert line.startswith(f"harnesslab run: error: {target}: --out: cannot write there: ")


def test_out_holding_an_earlier_run(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{}")
    assert "--out: already holds files" in one_line(
        cli("run", str(FOLLOWUP), "--out", str(tmp_path)))


def test_each_run_gets_a_new_folder_and_latest_points_at_it(tmp_path: Path) -> None:
    for _ in range(2):
        p = cli("run", str(FOLLOWUP), "--variant", "default", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
    folders = sorted(d for d in (tmp_path / "runs").iterdir() if not d.is_symlink())
    assert len(folders) == 2
    latest = tmp_path / "runs" / "latest"
    assert latest.is_symlink() and latest.resolve() == folders[-1].resolve()
    import json

    for d in folders:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        assert summary["runs"] == 1  # exactly the runs in its folder


def test_unknown_variant(tmp_path: Path) -> None:
    line = one_line(cli("run", str(FOLLOWUP), "--variant", "nope", "--out", str(tmp_path)))
    assert line.startswith("harnesslab run: error: --variant: no variant 'nope' in the chosen "
                           "scenarios; they have: default, ")
    assert not any(tmp_path.iterdir())


def test_a_set_error_names_set_not_the_scenario(tmp_path: Path) -> None:
    assert one_line(cli("run", str(FOLLOWUP), "--set", "strategy=magic", "--out",
                        str(tmp_path))) == \
        "harnesslab run: error: --set strategy: unknown strategy 'magic'; expected one of " \
        "none, structured, truncate, freeform, offload, pinned, window, codex"


def test_the_variant_at_fault_is_named_whichever_variant_is_chosen(tmp_path: Path) -> None:
    sc = FOLLOWUP.read_text(encoding="utf-8").replace(
        "    set: {estimator: o200k_base}\n", "    set: {estimator: o200k_base, context_size: -1}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(sc, encoding="utf-8")
    want = (f"harnesslab run: error: {bad}:36: variants[1].set.context_size: in variant "
            "'estimator-o200k': Input should be greater than 0")
    assert one_line(cli("run", str(bad), "--out", str(tmp_path / "o"))) == want
    # Choosing another variant still names the one at fault (the file is invalid as a whole).
    assert one_line(cli("run", str(bad), "--variant", "default", "--out",
                        str(tmp_path / "o2"))) == want


def test_binary_scenario_file(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_bytes(b"id: x\n\x00\x01\x02")
    assert one_line(cli("run", str(f))) == (f"harnesslab run: error: {f}:2: a binary file (it "
                                            "holds NUL bytes); expected a YAML scenario")
    f.write_bytes(b"\xff\xfe\x00")
    assert one_line(cli("run", str(f))).startswith(
        f"harnesslab run: error: {f}:1: not a UTF-8 text file")


def test_duplicate_keys_and_lexicon_entries(tmp_path: Path) -> None:
    text = FOLLOWUP.read_text(encoding="utf-8")
    f = tmp_path / "dup.yaml"
    f.write_text(text.replace("locale: zh\n", "locale: zh\nlocale: en\n"), encoding="utf-8")
    line = one_line(cli("run", str(f)))
    assert "locale: duplicate key 'locale' (first at line" in line
    lex = text.index("lexicon:\n") + len("lexicon:\n")
    first_entry = text[lex:text.index("\n", text.index("\n", lex) + 1) + 1]
    f.write_text(text[:lex] + first_entry + text[lex:], encoding="utf-8")
    line = one_line(cli("run", str(f)))
    assert "duplicate lexicon entry '帮我查订单 O-1001 为什么还没到，回答简单一点。'" in line
    assert line.startswith(f"harnesslab run: error: {f}:")


def test_truncated_record_says_so(tmp_path: Path) -> None:
    assert cli("run", str(FOLLOWUP), "--variant", "default", "--out",
               str(tmp_path / "o")).returncode == 0
    rec = tmp_path / "o" / "followup-o1001-zh" / "default" / "seed0.jsonl"
    cut = tmp_path / "cut.jsonl"
    data = rec.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    n = data[:len(data) // 2].count(b"\n") + 1
    assert one_line(cli("show", str(cut))) == (
        f"harnesslab show: error: {cut}:{n}: truncated record: the last line is incomplete (the "
        "run was stopped while writing it); every line before it is intact")


@pytest.mark.parametrize("budget", ["29000", "40000"])
def test_a_codex_budget_at_or_above_its_limit_is_refused(tmp_path: Path, budget: str) -> None:
    # 0.9 x 32768 = 29491.2: the kept user messages alone would trigger compaction again.
    line = one_line(cli("run", str(FOLLOWUP), "--set", "strategy=codex", "--set",
                        f"codex.user_message_budget={int(budget) + 500}", "--out", str(tmp_path)))
    assert line == ("harnesslab run: error: --set: codex.user_message_budget "
                    f"({int(budget) + 500}) must be below the compaction limit (29491.2)")
