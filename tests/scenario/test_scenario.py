"""Scenario files: a bad one gets one line naming the file, the line and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Scenario

GOOD = """\
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
      timeline:
        - {at: "2026-11-27T20:00:00+08:00", status: in_transit, eta: "2026-11-30"}
session: {user: U-1}
lexicon:
  "O-1001 到哪了？": {act: order_status, order: O-1001}
steps:
  - user: "O-1001 到哪了？"
    expect: {called: [track_order], mentions: [O-1001]}
variants:
  - name: default
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_the_fixture_is_valid(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD))
    assert sc.id == "tiny" and len(sc.steps) == 1


@pytest.mark.parametrize(("old", "new", "expected"), [
    # wrong type
    ('    expect: {called', '    images: many\n    expect: {called',
     r"s\.yaml:18: steps\[0\]\.images: Input should be a valid integer"),
    # unknown act
    ("{act: order_status,", "{act: order_stats,",
     r"s\.yaml:15: lexicon\.O-1001 到哪了？\.act: unknown act 'order_stats'; the domain's: "
     r"ask, list, ask_policy, set_constraint, chitchat, order_status, .*"),
    # unknown tool
    ("called: [track_order]", "called: [track_ordr]",
     r"s\.yaml:18: steps\[0\]\.expect\.called: unknown tool 'track_ordr'; expected one of "
     r"track_order, get_user_profile, search_kb, get_logistics_trace"),
    # missing field
    ("title: a tiny scenario\n", "", r"s\.yaml:1: title: missing required field"),
    # bad YAML
    ("session: {user: U-1}", "session: {user: U-1", r"s\.yaml:14: bad YAML: expected ',' or '}'"),
    # an utterance with no lexicon entry
    ('  - user: "O-1001 到哪了？"', '  - user: "O-1001 到哪儿了？"',
     r"s\.yaml:17: steps\[0\]\.user: utterance 'O-1001 到哪儿了？' has no lexicon entry"),
    # unknown order in the lexicon
    ("order: O-1001}", "order: O-1002}", r"s\.yaml:15: lexicon\.O-1001 到哪了？\.order: "
     r"unknown order 'O-1002'"),
    # a bad @ref
    ("order: O-1001}", "order: ref}", r"s\.yaml:15: .*order: expected an id like O-1001, @ref, @first"),
    # unknown setting in a variant
    ("  - name: default", "  - name: default\n    set: {contex_size: 100}",
     r"s\.yaml:21: variants\[0\]\.set\.contex_size: in variant 'default': unknown setting; "
     r"expected a harness field"),
    # a bad value for a setting
    ("  - name: default", "  - name: default\n    set: {trigger_ratio: 2}",
     r"s\.yaml:21: variants\[0\]\.set\.trigger_ratio: in variant 'default': Input should be "
     r"less than or equal to 0\.9"),
    # a summarizer JSON form the fake model does not write
    ("  - name: default", "  - name: default\n    set: {summarizer: {json_form: sloppy}}",
     r"s\.yaml:21: variants\[0\]\.set\.summarizer\.json_form: in variant 'default': Input "
     r"should be 'strict', 'trailing_comma', 'code_fence' or 'raw_newlines'"),
    # expect_fail naming no check
    ("  - name: default", "  - name: default\n    expect_fail: [resolves]",
     r"s\.yaml:21: variants\[0\]\.expect_fail\[0\]: no check 'resolves' in this scenario"),
    # memory_files: a path that leaves the user's folder, an unknown user, two contents, bad hex
    ("lexicon:", "memory_files:\n  - {user: U-1, path: ../MEMORY.md, text: x}\nlexicon:",
     r"s\.yaml:15: memory_files\[0\]\.path: .*must be relative to the user's memory folder"),
    ("lexicon:", "memory_files:\n  - {user: U-1, path: /etc/MEMORY.md, text: x}\nlexicon:",
     r"s\.yaml:15: memory_files\[0\]\.path: .*must be relative"),
    ("lexicon:", "memory_files:\n  - {user: U-9, path: MEMORY.md, text: x}\nlexicon:",
     r"s\.yaml:15: memory_files\[0\]\.user: unknown user 'U-9'"),
    ("lexicon:", "memory_files:\n  - {user: U-1, path: MEMORY.md, text: x, dir: true}\nlexicon:",
     r"s\.yaml:15: memory_files\[0\]: .*exactly one of text, hex or dir"),
    ("lexicon:", "memory_files:\n  - {user: U-1, path: MEMORY.md, hex: 'ff f'}\nlexicon:",
     r"s\.yaml:15: memory_files\[0\]\.hex: .*not pairs of hex digits"),
    # a step of no known kind
    ('  - user: "O-1001 到哪了？"', '  - wait: 1d\n  - user: "O-1001 到哪了？"',
     r"s\.yaml:17: steps\[0\]: a step needs one of the keys user, advance, filler"),
])
def test_malformed_scenarios_are_one_line(tmp_path: Path, old: str, new: str,
                                          expected: str) -> None:
    assert old in GOOD
    with pytest.raises(InputError, match=expected) as e:
        load_scenario(write(tmp_path, GOOD.replace(old, new, 1)))
    assert "\n" not in str(e.value)


def test_expect_pass_is_accepted_and_checked(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD.replace("  - name: default",
                                                    "  - name: default\n    expect: pass")))
    assert sc.variants[0].expect == "pass"
    with pytest.raises(InputError, match=r"s\.yaml:20: variants\[0\]: expect: pass contradicts"):
        load_scenario(write(tmp_path, GOOD.replace(
            "  - name: default", "  - name: default\n    expect: pass\n    expect_fail: [called]")))


def test_cli_reports_a_bad_scenario_in_one_line_exit_2(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace("{act: order_status,", "{act: order_stats,"))
    proc = subprocess.run([sys.executable, "-m", "harnesslab.cli", "run", str(p), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"harnesslab run: error: {p}:15: lexicon.")


def test_schema_command_exports_the_scenario_schema() -> None:
    proc = subprocess.run([sys.executable, "-m", "harnesslab.cli", "schema"],
                          capture_output=True, text=True, timeout=120)
    schema = json.loads(proc.stdout)
    assert schema == json.loads(json.dumps(Scenario.model_json_schema()))
    assert {"id", "world", "lexicon", "steps", "variants"} <= set(schema["required"])
