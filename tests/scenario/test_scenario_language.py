"""The scenario language's new words: references by item and position, tools a world offers,
failing tools set by a variant, and checks expected to fail in a fraction of the seeds (judged
per run as free, across seeds by the suite summary)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.judge.checks import CheckOutcome, verdict
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_scenario_file
from harnesslab.run.suite import summarize
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import FailRate, Variant
from harnesslab.scenario.settings import resolve

BASE = """\
id: tiny
title: a tiny scenario
locale: zh
world:
  now: "2026-11-28T10:00:00+08:00"
  users:
    U-1: {name: 张三, phone: "13800000001", address: 上海}
  orders:
    O-1001:
      user: U-1
      items: [滑板]
      timeline:
        - {at: "2026-11-27T20:00:00+08:00", status: in_transit, eta: "2026-11-30"}
    O-1002:
      user: U-1
      items: [耳机]
      timeline:
        - {at: "2026-11-27T20:00:00+08:00", status: shipped, eta: "2026-12-02"}
  tools:
    list_orders: {}
    track_order:
      failures: [{kind: unavailable, until: "2026-11-28T11:00:00+08:00"}]
session: {user: U-1}
lexicon:
  "我有哪些订单？": {act: list_orders}
  "滑板那个到哪了？": {act: order_status, order: "@item:滑板"}
  "第二个呢？": {act: order_status, order: "@last"}
steps:
  - user: "我有哪些订单？"
    expect: {called: [list_orders], mentions: [O-1001, O-1002]}
  - user: "滑板那个到哪了？"
    expect: {resolves: {order: O-1001}, unable: unavailable}
  - advance: 2h
  - user: "第二个呢？"
    expect: {answered: true, resolves: {order: O-1002}, mentions: [shipped]}
variants:
  - name: default
  - name: outage-lasts
    set: {world.tools.track_order: {failures: [{kind: unavailable}]}}
    expect_fail: [s4.answered, s4.mentions]
  - name: sometimes
    description: the morning outage hits only some calls, as the seed draws them
    set: {world.tools.track_order: {failures: [{kind: unavailable, rate: 0.5,
                                          until: "2026-11-28T11:00:00+08:00"}]}}
    expect_fail: [{check: s2.unable, at_least: 1, of: 5}]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_items_positions_offered_tools_and_failures_run_end_to_end(tmp_path: Path) -> None:
    results = run_scenario_file(write(tmp_path, BASE), out_dir=tmp_path / "out",
                                variants=["default", "outage-lasts"])
    default, lasting = results
    assert default.expected and default.all_passed, default.verdict
    assert lasting.expected and not lasting.all_passed
    rec = Record.load(default.record)  # type: ignore[arg-type]
    # Only what the world offers is sent, and so only those tools carry a max age.
    assert set(rec.header["max_ages"]) == {"track_order", "get_user_profile", "search_kb",
                                           "get_logistics_trace", "list_orders"}
    runs = [(e["name"], e["is_error"]) for e in rec.of_type("tool_call")]
    assert runs == [("list_orders", False), ("track_order", True), ("track_order", False)]
    assert not rec.of_type("protocol_error")


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('order: "@item:滑板"', 'order: "@item:自行车"',
     r"s\.yaml:\d+: lexicon\.滑板那个到哪了？\.order: no order holds the item '自行车'"),
    ("    list_orders: {}\n", "",
     r"lexicon\.我有哪些订单？\.act: act list_orders needs the tool list_orders, which the world "
     "does not offer"),
    ('order: "@last"', 'order: "@second"', r"order: expected an id like O-1001, @ref, @first"),
    ("{check: s2.unable, at_least: 1, of: 5}", "{check: s9.unable, at_least: 1, of: 5}",
     r"variants\[2\]\.expect_fail\[0\]\.check: no check 's9\.unable'"),
    ("at_least: 1, of: 5", "at_least: 6, of: 5",
     r"variants\[2\]\.expect_fail\[0\]: at_least cannot exceed of"),
    ("{check: s2.unable, at_least: 1, of: 5}", "{check: s2.unable, at_least: 1}",
     r"variants\[2\]\.expect_fail\[0\]\.of: missing required field"),
    ("{kind: unavailable, rate: 0.5,", "{kind: down, rate: 0.5,",
     r"variants\[2\]\.set\.world\.tools\.track_order\.failures\.0\.kind: .*in variant "
     "'sometimes'"),
    ("world.tools.track_order:", "world.tools.teleport:", r"unknown tool 'teleport'"),
])
def test_bad_scenario_language_is_one_line(tmp_path: Path, old: str, new: str,
                                           expected: str) -> None:
    assert old in BASE
    with pytest.raises(InputError, match=expected) as e:
        load_scenario(write(tmp_path, BASE.replace(old, new, 1)))
    assert "\n" not in str(e.value)


def test_tools_settings_replace_one_tools_spec() -> None:
    s = resolve([{"world.tools": {"track_order": {"max_age": "1h"}}},
                 {"world.tools.get_order": {"failures": [{"kind": "forbidden"}]}},
                 {"tools": ["track_order"]}])  # the harness's own setting: what it offers
    assert s.tools == {"track_order": {"max_age": "1h"},
                       "get_order": {"failures": [{"kind": "forbidden"}]}}
    assert s.harness.tools == ["track_order"]
    with pytest.raises(InputError, match="expected a mapping per tool"):
        resolve([{"world.tools.track_order": "down"}])


def test_fail_rate_needs_a_fraction_of_the_seeds() -> None:
    rate = FailRate(check="s3.resolves", at_least=3, of=5)
    # up to 5 seeds: as many as keep "3 of 5" reachable; beyond, the same fraction
    assert [rate.needed(n) for n in (1, 2, 3, 4, 5, 6, 10)] == [0, 0, 1, 2, 3, 4, 6]


def _run(variant: Variant, seed: int, passed: bool) -> RunResult:
    checks = [CheckOutcome("s2.mentions", "mentions", 2, passed, "x"),
              CheckOutcome("s1.called", "called", 1, True, "x")]
    return RunResult("sc", variant.name, seed, None, checks, verdict(checks, variant),
                     rates=variant.fail_rates)


def test_a_rate_is_free_in_one_run_and_judged_across_seeds() -> None:
    v = Variant(name="v", expect_fail=[FailRate(check="mentions", at_least=2, of=5)])
    assert verdict(_run(v, 0, True).checks, v).ok and verdict(_run(v, 0, False).checks, v).ok
    two = [_run(v, s, passed=s not in (1, 3)) for s in range(5)]
    (row,) = summarize(two)["rows"]
    assert row["expected"] and row["pass_hat_k"]["1"] == pytest.approx(0.6)
    one = [_run(v, s, passed=s != 1) for s in range(5)]
    summary = summarize(one)
    (row,) = summary["rows"]
    assert not row["expected"] and not summary["expected"]
    assert row["unexpected"] == ["expected mentions to fail in at least 2 of 5 seeds (2 of 5), "
                                 "it failed in 1"]


def test_a_plain_expect_fail_still_requires_every_run_to_fail() -> None:
    v = Variant(name="v", expect_fail=["s2.mentions"])
    assert not verdict(_run(v, 0, True).checks, v).ok
    assert verdict(_run(v, 0, False).checks, v).ok


def test_a_seeded_failure_gives_seed_dependent_outcomes(tmp_path: Path) -> None:
    results = run_scenario_file(write(tmp_path, BASE), seeds=range(6), variants=["sometimes"])
    outcomes = [r.all_passed for r in results]
    assert True in outcomes and False in outcomes
    (row,) = summarize(results)["rows"]
    assert row["expected"]
    assert row["pass_hat_k"]["6"] < row["pass_hat_k"]["1"]
    assert re.fullmatch(r"\d\.\d+", str(round(row["pass_hat_k"]["1"], 3)))
