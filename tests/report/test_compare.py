"""``harnesslab report A B``: paired deltas on shared runs and an exact sign test."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.report.compare import compare, sign_test
from harnesslab.scenario.loader import bundled_dir
from harnesslab.sweep.plan import run_sweep
from harnesslab.sweep.spec import SweepSpec

FOLLOWUP_EN = bundled_dir() / "followup-after-filler-en.yaml"
LOSSY = {"profile": "lossy", "drop": {"constraint": 1.0}}


def test_sign_test_is_the_exact_binomial() -> None:
    assert sign_test(0, 0) is None
    assert sign_test(3, 3) == 1.0
    assert sign_test(0, 5) == pytest.approx(2 / 32)
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(2, 8) == pytest.approx(2 * sum(math.comb(10, i) for i in range(3)) / 1024)


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    grid = {"strategy": ["structured", "truncate"]}
    run_sweep(SweepSpec((FOLLOWUP_EN,), grid, {}, (0, 1), ("default",)), root / "a",
              executor="serial")
    # B: the same cells with a summarizer that drops the constraint at every compaction.
    run_sweep(SweepSpec((FOLLOWUP_EN,), grid, {"summarizer": LOSSY}, (0, 1), ("default",)),
              root / "b", executor="serial")
    return root / "a", root / "b"


def test_compare_pairs_runs_and_tests_the_deltas(two_sweeps: tuple[Path, Path]) -> None:
    a, b = two_sweeps
    c = compare(a, b)
    assert c["pairs"] == 4 and c["only_a"] == c["only_b"] == 0
    q = next(o for o in c["overall"] if o["metric"] == "quality")
    # structured loses the constraint under the lossy summary (both seeds); truncate had
    # already lost it: two pairs down, two tied.
    assert (q["up"], q["down"], q["ties"]) == (0, 2, 2)
    assert q["p"] == pytest.approx(0.5) and q["delta"] < 0
    cells = {x["cell"]: x for x in c["cells"]}
    assert set(cells) == {"strategy=structured", "strategy=truncate"}
    assert cells["strategy=structured"]["quality"]["down"] == 2
    assert cells["strategy=truncate"]["quality"]["ties"] == 2
    same = compare(a, a)
    assert all(o["up"] == o["down"] == 0 and o["p"] is None for o in same["overall"])


def test_report_two_sweeps_writes_the_comparison(two_sweeps: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_sweeps
    assert main(["report", str(a), str(b), "--report-out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "Over 4 paired runs, B − A: quality" in out
    text = (tmp_path / "cmp" / "index.html").read_text(encoding="utf-8")
    block = re.search(r'id="plot-compare-overall">(.*?)</script>', text, re.S)
    assert block and json.loads(block.group(1)) == compare(a, b)["overall"]


def test_sweeps_sharing_no_run_are_one_line(two_sweeps: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = two_sweeps
    other = tmp_path / "other"
    run_sweep(SweepSpec((FOLLOWUP_EN,), {"strategy": ["pinned"]}, {}, (0,), ("default",)), other,
              executor="serial")
    assert main(["report", str(a), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "share no compared run" in err
