"""``model=openai-compatible``: the reference harness under a model behind an OpenAI endpoint,
here the bench's own ``serve`` on loopback (no network). Answer-level checks apply; the checks
that need the fake model's annotations are reported not applicable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnesslab.errors import InputError
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_scenario_file
from harnesslab.run.table import format_results
from harnesslab.scenario.loader import bundled_dir
from harnesslab.scenario.settings import resolve
from tests.wire.support import FOLLOWUP, serving

pytest.importorskip("openai")

STALE = bundled_dir() / "stale-logistics-zh.yaml"
KEY_ENV = "HARNESSLAB_TEST_MODEL_KEY"


def real(url: str, **extra: Any) -> dict[str, Any]:
    return {"model": "openai-compatible", "model.base_url": url, "model.model": "harnesslab",
            "model.api_key_env": KEY_ENV, **extra}


def run_real(path: Path, variant: str, tmp: Path, monkeypatch: pytest.MonkeyPatch,
             key: str = "run-1") -> tuple[RunResult, RunResult]:
    """The same variant under the served model and under the in-process fake model."""
    monkeypatch.setenv(KEY_ENV, key)
    with serving(tmp / "serve", scenario=path, variant=variant) as (url, _):
        [r] = run_scenario_file(path, variants=[variant], cli_set=real(url),
                                out_dir=tmp / "real")
    [f] = run_scenario_file(path, variants=[variant], out_dir=tmp / "fake")
    return r, f


def test_answer_level_checks_apply_and_annotation_checks_are_not_applicable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r, f = run_real(FOLLOWUP, "default", tmp_path, monkeypatch)
    assert r.error is None and r.expected
    assert r.checks_not_applicable == ["s2.resolves"]
    kinds = sorted({c.kind for c in r.checks})
    assert kinds == ["called", "fresh_fact", "max_chars", "mentions", "not_called"]
    assert all(c.passed for c in r.checks)
    # The served fake model saw the same requests, so it gave the same replies.
    rec, fake = Record.load(r.record), Record.load(f.record)
    assert [t["reply"] for t in rec.of_type("turn")] == [t["reply"] for t in fake.of_type("turn")]
    assert rec.header["model"]["kind"] == "openai-compatible"
    assert "run-1" not in r.record.read_text()  # the key itself is never recorded
    assert r.metrics["followup_accuracy"]["den"] == 0  # what it resolved is unknown
    assert any(e["type"] == "not_applicable" for e in rec.events)
    table = format_results([r])
    assert "n/a followup-o1001-zh/default: s2.resolves (a real model answered" in table
    assert "n/a" not in format_results([f])


def test_a_stale_answer_fails_fresh_fact_read_from_the_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the time hint the model serves yesterday's ETA: the answer repeats a fact from
    # a tool result a day old, which the answer-level reading finds stale.
    r, f = run_real(STALE, "no-time-hint", tmp_path, monkeypatch)
    failed = sorted(c.id for c in r.checks if not c.passed)
    assert failed == ["s3.called", "s3.fresh_fact", "s3.mentions"]
    assert "stale" in next(c.detail for c in r.checks if c.id == "s3.fresh_fact")
    assert r.expected  # exactly the control's expected failures
    assert failed == sorted(c.id for c in f.checks if not c.passed)


def test_an_over_window_answer_from_the_endpoint_fails_the_turn_as_an_overflow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The endpoint's window is smaller than the run's service window: the endpoint's 400
    # (context_length_exceeded) reaches the harness as an overflow and is recorded.
    monkeypatch.setenv(KEY_ENV, "tiny")
    small = {"service.window": 400, "service.max_output": 100, "service.default_output": 100}
    with serving(tmp_path / "serve", cli_set=small) as (url, _):
        [r] = run_scenario_file(FOLLOWUP, variants=["default"], cli_set=real(url),
                                out_dir=tmp_path / "real")
    rec = Record.load(r.record)
    overflows = rec.of_type("overflow")
    assert overflows and overflows[0]["limit_name"] == "endpoint"
    assert [t["reason"] for t in rec.of_type("turn")] == ["overflow", "overflow"]


@pytest.mark.parametrize(("sets", "field", "problem"), [
    ({"model": "openai-compatible"}, "model", "needs model.base_url"),
    ({"model": "openai-compatible", "model.base_url": "http://127.0.0.1:9/v1"}, "model",
     "needs model.model"),
    ({"model.temprature": 0}, "model.temprature", "unknown setting"),
])
def test_bad_model_settings_name_the_field(sets: dict[str, Any], field: str,
                                           problem: str) -> None:
    with pytest.raises(InputError, match=problem) as info:
        resolve([sets])
    assert info.value.field == field


def test_a_missing_key_says_which_variable(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    [r] = run_scenario_file(FOLLOWUP, variants=["default"],
                            cli_set=real("http://127.0.0.1:9/v1"), out_dir=tmp_path)
    assert r.error == f"InputError: model.api_key_env: set the environment variable {KEY_ENV} " \
                      "to the API key"
