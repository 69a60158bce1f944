"""Scenarios generated from a declared domain (harnesslab.scenario.generate): the same seed
gives the same text, the checked-in tau2 sets are a fresh generation, and every generated
scenario runs under seeds 0, 1 and 2 with each default variant passing and each control
failing exactly as it declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harnesslab import run_scenario_file
from harnesslab.errors import InputError
from harnesslab.scenario.domains import bundled_domains_dir
from harnesslab.scenario.generate import SHAPES, generate, main, write
from harnesslab.scenario.loader import load_scenario
from harnesslab.study.tau2 import DOMAINS, SEED

SETS = {d: bundled_domains_dir() / f"tau2-{d}" for d in DOMAINS}
FILES = sorted(p for folder in SETS.values() for p in folder.glob("*.yaml"))
HELPDESK = Path(__file__).resolve().parents[2] / "examples" / "helpdesk" / \
    "helpdesk.domain.yaml"


def _unexpected(path: Path, seeds: range) -> list[str]:
    out = []
    for r in run_scenario_file(path, seeds=seeds):
        if not r.expected:
            why = r.verdict.unexpected if r.verdict else r.error
            out.append(f"{r.scenario}/{r.variant} seed {r.seed} ({r.role}): {why}")
    return out


def test_the_same_seed_gives_the_same_text() -> None:
    for domain in DOMAINS:
        for lang in ("zh", "en"):
            a = generate(f"tau2-{domain}", seed=5, locale=lang)
            assert a == generate(f"tau2-{domain}", seed=5, locale=lang)
            assert [n for n, _ in a] == [f"tau2-{domain}-{s}-{lang}.yaml" for s in SHAPES]
    assert generate("tau2-retail", seed=5, locale="zh") != \
        generate("tau2-retail", seed=6, locale="zh")


def test_both_locales_of_a_seed_pick_the_same_users_and_instances() -> None:
    zh = [yaml.safe_load(t) for _, t in generate("tau2-airline", seed=3, locale="zh")]
    en = [yaml.safe_load(t) for _, t in generate("tau2-airline", seed=3, locale="en")]
    for a, b in zip(zh, en, strict=True):
        assert a["session"] == b["session"] and a["world"] == b["world"]
        assert [list(i.values()) for i in a["lexicon"].values()] == \
            [list(i.values()) for i in b["lexicon"].values()]


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_checked_in_sets_are_a_fresh_generation(domain: Any) -> None:
    want = {n: t for lang in ("zh", "en")
            for n, t in generate(f"tau2-{domain}", seed=SEED, locale=lang)}
    have = {p.name: p.read_text(encoding="utf-8") for p in SETS[domain].glob("*.yaml")}
    assert have == want, (f"regenerate: python -m harnesslab.scenario.generate tau2-{domain} "
                          f"--seed {SEED} --out harnesslab/domains/tau2-{domain}")


def test_the_checked_in_scenarios_name_the_bundled_domain_and_keep_the_attribution() -> None:
    assert len(FILES) == len(DOMAINS) * len(SHAPES) * 2
    for p in FILES:
        sc = load_scenario(p)
        assert sc.domain == p.parent.name
        assert "Sierra Research" in p.read_text(encoding="utf-8").split("\nid:")[0]
        assert any(v.expect_fail for v in sc.variants), p.name  # every scenario has a control


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_generated_scenario_passes_its_defaults_and_fails_its_controls(path: Path) -> None:
    assert _unexpected(path, range(3)) == []


def test_other_generator_seeds_and_another_domain_give_working_scenarios(tmp_path: Path) -> None:
    # The generator reads any domain: another selection of tau2's, and the helpdesk example
    # (a domain file beside no scenario: named by its path relative to the output folder).
    paths = write("tau2-retail", tmp_path / "r", seed=1, locales=("en",))
    paths += write("tau2-airline", tmp_path / "a", seed=2, locales=("zh",))
    paths += write(HELPDESK, tmp_path / "h", seed=0, locales=("zh",))
    assert str(load_scenario(paths[-1]).domain).endswith("helpdesk.domain.yaml")
    assert [u for p in paths for u in _unexpected(p, range(1))] == []


def test_a_domain_without_a_changing_field_is_refused_in_one_line(tmp_path: Path) -> None:
    text = HELPDESK.read_text(encoding="utf-8")
    static = "\n".join(line for line in text.splitlines()
                       if "timeline:" not in line and "- {at:" not in line)
    p = tmp_path / "static.domain.yaml"
    p.write_text(static + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="volatile field"):
        generate(p, seed=0, locale="en")


def test_main_writes_a_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tau2-retail", "--out", str(tmp_path), "--locale", "en", "--seed", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(SHAPES)
    assert main([str(bundled_domains_dir() / "none.domain.yaml"), "--out", str(tmp_path)]) == 2
