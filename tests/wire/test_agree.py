"""``harnesslab agree``: recorded requests replayed to a model behind an OpenAI endpoint (the
bench's own serve on loopback), each turn judged by the same answer-level checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.run.runner import run_scenario_file
from harnesslab.scenario.loader import bundled_dir
from harnesslab.study.agree import Replayer, agree, record_paths, summary
from tests.wire.support import FOLLOWUP, serving

pytest.importorskip("openai")

KEY_ENV = "HARNESSLAB_TEST_AGREE_KEY"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every variant of the follow-up scenario, run in-process with the fake model: answers
    that pass, answers that fail (controls), and turns the harness failed (overflow)."""
    out = tmp_path_factory.mktemp("records")
    run_scenario_file(FOLLOWUP, out_dir=out)
    return out


def test_the_served_fake_model_agrees_on_every_turn(records: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(KEY_ENV, "agree-1")
    with serving(tmp_path / "serve") as (url, _):
        code = main(["agree", str(records), "--base-url", url, "--model", "harnesslab",
                     "--api-key-env", KEY_ENV, "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    s = out["summary"]
    # The same fake model behind the wire: the conversion loses nothing the answers need.
    assert s["agreement_rate"] == 1.0
    # Not a vacuous agreement: answers that pass, answers that fail, turns not compared.
    assert 0 < s["fake_passed"] < s["compared"]
    assert s["skipped"] == 2  # window-too-small: the harness failed both turns (overflow)
    failing = {(Path(t["record"]).parent.name, t["step"]): t["fake_failed"]
               for t in out["turns"] if t["fake_failed"]}
    # Judged by the answer alone: its clarifying question is short and calls no tool, so only
    # what it fails to say fails.
    assert failing[("window-2", 2)] == ["s2.mentions", "s2.fresh_fact"]


def test_a_model_that_does_not_know_the_utterances_disagrees(
        records: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # A served fake model of another scenario: the utterances are not in its lexicon, so it
    # asks to clarify; answers the recorded fake model passed now fail.
    monkeypatch.setenv(KEY_ENV, "agree-2")
    default = records / "followup-o1001-zh" / "default" / "seed0.jsonl"
    with serving(tmp_path / "serve", scenario=bundled_dir() / "stale-logistics-en.yaml") \
            as (url, _):
        turns = agree(record_paths([str(default)]), Replayer(url, "harnesslab", KEY_ENV))
        assert main(["agree", str(default), "--base-url", url, "--model", "harnesslab",
                     "--api-key-env", KEY_ENV]) == 0
    assert [t.fake_failed for t in turns] == [[], []]
    assert all(t.real_failed and not t.agrees for t in turns)
    assert "s1.mentions" in turns[0].real_failed
    assert summary(turns)["agreement_rate"] == 0.0
    table = capsys.readouterr().out
    assert "agreement: 0/2 turns = 0.0%" in table and "NO" in table


def test_bad_input_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    assert main(["agree", str(tmp_path / "nope.jsonl"), "--base-url", "http://127.0.0.1:9/v1",
                 "--model", "m", "--api-key-env", KEY_ENV]) == 2
    assert capsys.readouterr().err.strip() == \
        f"harnesslab agree: error: {tmp_path / 'nope.jsonl'}: RECORD: no such record file or folder"
