from __future__ import annotations

import re

import pytest

from harnesslab.sim.filler import _EN_AGENT, _EN_USER, _ZH_AGENT, _ZH_USER, exchanges, make_filler
from harnesslab.sim.intents import CONSTRAINT_PHRASES, ID_PATTERNS
from harnesslab.tokens import make_rule

ALL = _ZH_USER + _ZH_AGENT + _EN_USER + _EN_AGENT


def test_filler_has_no_ids_digits_or_constraint_phrases() -> None:
    for text in ALL:
        assert not any(p.search(text) for p in ID_PATTERNS.values()), text
        assert not re.search(r"\d", text), text
        low = text.lower()
        assert not any(p.lower() in low for ps in CONSTRAINT_PHRASES.values() for p in ps), text


@pytest.mark.parametrize(("estimator", "target"), [("bytes4", 5000.0), ("o200k_base", 3000.0),
                                                   ("chars4", 2000.0)])
def test_filler_reaches_its_target_in_the_harness_estimator(estimator: str,
                                                           target: float) -> None:
    rule = make_rule(estimator)
    pairs = make_filler(rule, target, "zh", seed=3)
    units = [rule.message_units(m) for p in pairs for m in p]
    assert rule.finalize(sum(units)) >= target
    assert rule.finalize(sum(units[:-2])) < target  # the last exchange crossed it


def test_filler_is_seeded_and_differs_by_seed() -> None:
    a = [p for p, _ in zip(exchanges("en", 1), range(20), strict=False)]
    b = [p for p, _ in zip(exchanges("en", 1), range(20), strict=False)]
    c = [p for p, _ in zip(exchanges("en", 2), range(20), strict=False)]
    assert a == b and a != c
    assert all(u.role == "user" and r.role == "assistant" for u, r in a)
