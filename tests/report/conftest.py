"""One small sweep and its report, built once per session for the report tests.

Its scenarios: entity-swap (bundled) and a copy of followup-after-filler-en whose title and
follow-up utterance carry markup (``<script>``...), to show it is escaped wherever it appears.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from harnesslab.record.table import load_table
from harnesslab.report.html import write_report
from harnesslab.scenario.loader import bundled_dir
from harnesslab.sweep.plan import run_sweep
from harnesslab.sweep.spec import SweepSpec

FOLLOWUP = "So do I still have to wait tomorrow?"
MARKUP_TITLE = '<script>document.title="pwned"</script> <b>bold</b> & "quoted" follow-up'
MARKUP_UTTERANCE = FOLLOWUP + " <script>window.pwned = 1</script>"
GRID = {"strategy": ["structured", "truncate"], "context_size": [4096, 8192],
        "trigger_ratio": [0.6, 0.8]}


def markup_scenario(folder: Path) -> Path:
    text = (bundled_dir() / "followup-after-filler-en.yaml").read_text(encoding="utf-8")
    text = text.replace("id: followup-after-filler-en", "id: markup-followup-en")
    text = text.replace(text.splitlines()[1], f"title: '{MARKUP_TITLE}'")
    text = text.replace(f'"{FOLLOWUP}"', f'"{MARKUP_UTTERANCE}"')
    path = folder / "markup-followup-en.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass(frozen=True)
class SmallSweep:
    dir: Path
    df: pd.DataFrame
    report: Path


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory: pytest.TempPathFactory) -> SmallSweep:
    root = tmp_path_factory.mktemp("small-sweep")
    spec = SweepSpec((markup_scenario(root), bundled_dir() / "entity-swap-o1001-o1010-zh.yaml"),
                     GRID, {}, (0,))
    out = root / "sweep"
    run_sweep(spec, out, executor="serial")
    written = write_report(out, out=root / "report")
    return SmallSweep(out, load_table(out), written.path)
