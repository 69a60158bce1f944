"""Which variants apply to a harness: its declaration of the settings it honours against the
settings that define each variant (``harnesslab.run.applicable``); world settings never filtered;
``world_alone``; a summarizer that never acted; the host clock skew at the clock door."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from harnesslab.errors import InputError
from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.honours import ALL_SETTINGS, check_declaration, describe
from harnesslab.record.format import Record
from harnesslab.run.applicable import harness_keys, inapplicable
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import Variant
from harnesslab.scenario.settings import resolve

NONE: frozenset[str] = frozenset()


def _v(**kw: object) -> Variant:
    return Variant.model_validate({"name": "v", **kw})


def test_a_variant_defined_by_an_unhonoured_harness_setting_is_not_applicable() -> None:
    codex = _v(set={"strategy": "codex", "codex.user_message_budget": 1500})
    assert inapplicable(codex, NONE, "LastN") == (
        "sets strategy=codex, codex.user_message_budget=1500; LastN honours none of: codex.*, "
        "strategy")
    assert inapplicable(codex, frozenset({"strategy"}), "H") == \
        "sets codex.user_message_budget=1500; H honours none of: codex.*"
    assert inapplicable(codex, frozenset({"strategy", "codex.*"}), "H") is None
    assert inapplicable(codex, ALL_SETTINGS, "reference") is None
    assert inapplicable(_v(set={"tools": []}), NONE, "H") == "sets tools=[]; H honours none of: tools"
    assert inapplicable(_v(set={"memory": "vector"}), NONE, "H") == \
        "sets memory=vector; H honours none of: memory.*"


def test_world_and_bench_settings_never_make_a_variant_not_applicable() -> None:
    world = _v(set={"service.window": 300, "summarizer": {"profile": "lossy"},
                    "extractor.profile": "lossy", "world.tools.track_order": {"failures": []},
                    "service": "qwen-131k", "model": "fake", "clock_offset_hours": 12,
                    "persist": False, "resume": "session_id", "turn_timeout": 5})
    assert harness_keys(world) == []
    assert inapplicable(world, NONE, "H") is None


def test_world_alone_admits_a_variant_whose_world_part_makes_its_point() -> None:
    mixed = {"summarizer": {"profile": "lossy"}, "strategy": "freeform"}
    assert inapplicable(_v(set=mixed), NONE, "H") is not None
    assert inapplicable(_v(set=mixed, world_alone=True), NONE, "H") is None


def test_a_setting_restated_at_the_value_the_run_has_anyway_defines_nothing() -> None:
    lossy = _v(set={"summarizer": {"profile": "lossy"}, "strategy": "structured"})
    base = resolve([]).harness
    cfg = resolve([lossy.set]).harness
    assert harness_keys(lossy, base, cfg) == []
    assert inapplicable(lossy, NONE, "H", base, cfg) is None
    # Under a command line that set another strategy, the variant's structured is its own.
    other = resolve([{"strategy": "pinned"}]).harness
    assert harness_keys(lossy, other, cfg) == ["strategy"]


def test_a_declaration_names_settings_and_a_typo_is_one_clear_error() -> None:
    assert check_declaration(["strategy", "memory", "codex.auto_compact_limit"], "H") == \
        frozenset({"strategy", "memory.*", "codex.*"})
    with pytest.raises(ValueError, match=r"^H: honours names unknown setting 'stratgy'; "
                       r"expected \* or some of strategy, context_size, "):
        check_declaration(["stratgy"], "H")
    with pytest.raises(ValueError, match="must be a list of setting names, got 'strategy'"):
        check_declaration("strategy", "H")
    assert describe(ALL_SETTINGS) == "every setting"
    assert describe(NONE) == "none of the harness settings"
    assert set(HarnessConfig.model_fields) - {"codex", "memory", "harness"} <= set(
        check_declaration(list(HarnessConfig.model_fields)[1:], "H")) | {"codex", "memory"}


HARNESSES = '''
from harnesslab import HarnessBase, TurnResult
from harnesslab.harness.agent import ReferenceHarness


class Summarising(ReferenceHarness):
    """The reference harness's handling, declaring nothing."""
    honours = frozenset()


class Strategist(ReferenceHarness):
    honours = frozenset({"strategy"})


class Clock(HarnessBase):
    """Answers with the time it is handed."""
    def preload(self, exchanges):
        pass

    def turn(self, text, images=()):
        return TurnResult(self.ctx.clock.now().isoformat())


class Typo(HarnessBase):
    honours = frozenset({"stratgy"})
'''


@pytest.fixture
def harnesses(tmp_path: Path) -> Path:
    path = tmp_path / "harnesses.py"
    path.write_text(HARNESSES, encoding="utf-8")
    return path


def _scenario(tmp_path: Path, extra: list[dict[str, object]]) -> Path:
    src = bundled_dir() / "followup-after-filler-zh.yaml"
    data = yaml.safe_load(src.read_text(encoding="utf-8"))
    data["variants"] = [v for v in data["variants"] if v["name"] in (
        "summary-drops-constraints", "summary-drops-constraints-pinned")] + extra
    out = tmp_path / "followup.yaml"
    out.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return out


def _run(path: Path, variant: str, harness: str, out: Path) -> RunResult:
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == variant)
    return run_variant(sc, v, source=path, out_dir=out, cli_set={"harness": harness})


def test_lossy_summary_controls_apply_to_a_harness_that_summarises(
        tmp_path: Path, harnesses: Path) -> None:
    """The same handling as the reference harness, declaring nothing: the lossy-summary control
    (structured, the default, beside a lossy summarizer) applies and fails as designed; the
    pinned fix does not apply; a lossy summary beside a strategy it does not honour applies
    only with world_alone."""
    lossy = {"summarizer": {"profile": "lossy", "drop": {"constraint": 1.0}}}
    path = _scenario(tmp_path, [
        {"name": "lossy-freeform", "set": {**lossy, "strategy": "freeform"},
         "expect_fail": ["s3.max_chars"]},
        {"name": "lossy-freeform-alone", "set": {**lossy, "strategy": "freeform"},
         "expect_fail": ["s3.max_chars"], "world_alone": True}])
    spec = f"{harnesses}:Summarising"
    control = _run(path, "summary-drops-constraints", spec, tmp_path / "o")
    assert not control.not_applicable and control.expected, control.error
    fix = _run(path, "summary-drops-constraints-pinned", spec, tmp_path / "o")
    assert fix.error == "NotApplicable: sets strategy=pinned; Summarising honours none of: strategy"
    plain = _run(path, "lossy-freeform", spec, tmp_path / "o")
    assert plain.not_applicable
    alone = _run(path, "lossy-freeform-alone", spec, tmp_path / "o")
    assert not alone.not_applicable and alone.expected, alone.error
    # Declaring strategy, the pinned fix applies and holds.
    fixed = _run(path, "summary-drops-constraints-pinned", f"{harnesses}:Strategist",
                 tmp_path / "p")
    assert fixed.expected and fixed.honours == ["strategy"] and fixed.record is not None
    rec = Record.load(fixed.record)
    assert [e["settings"] for e in rec.of_type("honours")] == [["strategy"]]


def test_a_summarizer_never_asked_to_act_leaves_the_run_not_applicable(
        tmp_path: Path, harnesses: Path) -> None:
    path = _scenario(tmp_path, [])
    r = _run(path, "summary-drops-constraints", f"{harnesses}:Clock", tmp_path / "o")
    assert r.error == ("NotApplicable: sets summarizer; Clock asked for no summary or "
                       "extraction, so the fake model's summarizer never acted")


def test_a_misspelt_declaration_is_bad_input_before_anything_runs(
        tmp_path: Path, harnesses: Path) -> None:
    with pytest.raises(InputError, match=r"harness: Typo: honours names unknown setting "
                       r"'stratgy'"):
        resolve([{"harness": f"{harnesses}:Typo"}])


def test_the_host_clock_skew_reaches_a_harness_that_does_not_skew_itself(
        tmp_path: Path, harnesses: Path) -> None:
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    by = {v.name: v for v in sc.variants}
    spec = f"{harnesses}:Clock"
    right = run_variant(sc, by["default"], source=path, out_dir=tmp_path / "a",
                        cli_set={"harness": spec})
    ahead = run_variant(sc, by["harness-clock-ahead"], source=path, out_dir=tmp_path / "b",
                        cli_set={"harness": spec})
    first = [datetime.fromisoformat(r) for r in _replies(right)]
    later = [datetime.fromisoformat(r) for r in _replies(ahead)]
    assert [b - a for a, b in zip(first, later, strict=True)] == [timedelta(hours=24)] * len(first)


def _replies(result: RunResult) -> list[str]:
    assert result.record is not None
    return [t["reply"] for t in Record.load(result.record).of_type("turn")]


def test_show_names_the_declared_settings_at_the_top(tmp_path: Path, harnesses: Path) -> None:
    from harnesslab.record.show import show_call, show_overview

    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    ref = run_variant(sc, sc.variants[0], source=path, out_dir=tmp_path / "r")
    mine = run_variant(sc, sc.variants[0], source=path, out_dir=tmp_path / "m",
                       cli_set={"harness": f"{harnesses}:Strategist"})
    assert ref.record is not None and mine.record is not None
    assert show_overview(Record.load(ref.record)).splitlines()[1] == \
        "harness reference honours every setting"
    assert show_call(Record.load(mine.record), 1).splitlines()[0] == \
        "harness Strategist honours strategy"
