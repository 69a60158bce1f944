"""Domain files (``*.domain.yaml``): a bad one gets one line naming the file, the line and the
field, exit 2 from the CLI; a good one loads, and the help-desk example's scenario with it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.errors import InputError
from harnesslab.scenario.domains import load_domain
from harnesslab.scenario.loader import load_scenario, scenario_paths

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "helpdesk"
DOMAIN = EXAMPLE / "helpdesk.domain.yaml"
SCENARIO = EXAMPLE / "vpn-ticket-followup-zh.yaml"


def _copy(tmp_path: Path, old: str, new: str, name: str = "helpdesk.domain.yaml") -> Path:
    """The example beside a copy of its domain file with ``old`` replaced by ``new``."""
    shutil.copy(SCENARIO, tmp_path / SCENARIO.name)
    text = DOMAIN.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return tmp_path / SCENARIO.name


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, start=1) if needle in line)


def test_the_example_domain_and_scenario_load() -> None:
    d = load_domain(DOMAIN)
    assert set(d.types) == {"user", "ticket"}
    assert d.patterns["ticket"].search("工单 INC-1001 的") and not \
        d.patterns["ticket"].search("XINC-1001")
    sc = load_scenario(SCENARIO)
    assert sc.compiled_domain is not None and sc.compiled_domain.name == "helpdesk"
    assert sc.users() == ["E-101", "E-102"]


@pytest.mark.parametrize(("old", "new", "needle", "field", "problem"), [
    ("type: enum", "type: colour", "type: colour", "entities.ticket.fields.status.type",
     "Input should be 'string', 'enum', 'date', 'datetime', 'number', 'boolean' or 'list'"),
    ("pattern: 'INC-\\d{4}'", "pattern: 'INC-\\d{3}'", "    INC-1001:", "data.ticket.INC-1001",
     "id 'INC-1001' does not match the pattern 'INC-\\d{3}' of ticket"),
    ("returns: [title, status, assignee, due]", "returns: [title, status, priority]",
     "returns: [title, status, priority]", "tools.get_ticket.returns[2]",
     "ticket has no field 'priority'; its fields: title, status, assignee, due"),
    ("status: resolved", "status: done", "status: done", "data.ticket.INC-2001.status",
     "'done' is not one of new, in_progress, waiting_on_user, resolved, closed"),
    ("owner: E-102", "owner: E-109", "owner: E-109", "data.ticket.INC-2001.owner",
     "owner 'E-109' is no user of the domain"),
    ("id: {pattern: 'INC-\\d{4}'}", "id: {pattern: '[A-Za-z]+'}", "id: {pattern: '[A-Za-z]+'}",
     "entities.ticket.id", "the id pattern matches 'A' in the filler text ('A friend recommended "
     "your shop, said the after-sales service is reliable.'); make it match only ids"),
    ('{at: "2026-12-01T20:00:00+08:00", status: waiting_on_user, due: "2026-12-03"}',
     '{at: "2026-12-01T20:00:00+08:00", title: renamed}', "title: renamed",
     "data.ticket.INC-1001.timeline[1].title",
     "title is not volatile: only volatile fields change over a timeline"),
])
def test_a_bad_domain_file_is_one_line_naming_file_line_field(
        tmp_path: Path, old: str, new: str, needle: str, field: str, problem: str) -> None:
    sc = _copy(tmp_path, old, new)
    domain = tmp_path / "helpdesk.domain.yaml"
    with pytest.raises(InputError) as e:
        load_scenario(sc)
    assert e.value.file == str(domain)
    assert e.value.line == _line_of(domain, needle)
    assert e.value.field == field
    assert e.value.problem == problem


def test_the_cli_says_it_in_one_line_with_exit_2(tmp_path: Path) -> None:
    sc = _copy(tmp_path, "returns: [title, status, assignee, due]",
               "returns: [title, status, priority]")
    p = subprocess.run([sys.executable, "-m", "harnesslab.cli", "run", str(sc), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1
    line = _line_of(tmp_path / "helpdesk.domain.yaml", "priority")
    assert re.fullmatch(rf"harnesslab run: error: {re.escape(str(tmp_path))}/helpdesk\.domain\.yaml:"
                        rf"{line}: tools\.get_ticket\.returns\[2\]: ticket has no field "
                        r"'priority'; .*", lines[0])
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_a_scenario_naming_a_missing_domain(tmp_path: Path) -> None:
    text = SCENARIO.read_text(encoding="utf-8").replace("domain: helpdesk.domain.yaml",
                                                        "domain: nowhere.domain.yaml")
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_scenario(tmp_path / "s.yaml")
    assert e.value.field == "domain" and e.value.line == _line_of(tmp_path / "s.yaml", "domain:")
    assert e.value.problem.startswith("no domain file 'nowhere.domain.yaml' beside the scenario")


@pytest.mark.parametrize(("old", "new", "field", "problem"), [
    ("{act: ask, entity: ticket, field: assignee}", "{act: ask, entity: ticket, field: owner_name}",
     "lexicon.那现在谁在处理？.field",
     "ticket has no field 'owner_name'; its fields: title, status, assignee, due"),
    ("{act: ask, entity: ticket, field: assignee}", "{act: ask, entity: tiket, field: assignee}",
     "lexicon.那现在谁在处理？.entity", "unknown entity type 'tiket'; the domain's: user, ticket"),
    ("id: INC-1001, field: status", "id: INC-9999, field: status",
     "lexicon.我的工单 INC-1001 现在什么状态？回答简单一点。.id", "unknown ticket 'INC-9999'"),
    ("{act: ask, entity: ticket, field: assignee}", "{act: ask_eta, order: '@ref'}",
     "lexicon.那现在谁在处理？.act", "unknown act 'ask_eta'; the domain's: ask, list, "
     "ask_policy, set_constraint, chitchat"),
    ('now: "2026-12-01T10:00:00+08:00"', 'now: "2026-12-01T10:00:00+08:00"\n  users: {U-1: '
     '{name: x, phone: "1", address: y}}', "world.users", "users is the bundled world's short "
     "form; a declared domain's instances go under world.data"),
    ("session: {user: E-101}", "session: {user: U-1}", "session.user",
     "unknown user 'U-1'; the domain's: E-101, E-102"),
    ("resolves: {ticket: INC-1001}, max_chars", "resolves: {order: INC-1001}, max_chars",
     "steps[2].expect.resolves.order", "unknown entity type 'order'; the domain's: user, ticket"),
])
def test_a_scenario_is_checked_against_its_domain(tmp_path: Path, old: str, new: str,
                                                 field: str, problem: str) -> None:
    shutil.copy(DOMAIN, tmp_path / DOMAIN.name)
    text = SCENARIO.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_scenario(tmp_path / "s.yaml")
    assert (e.value.field, e.value.problem) == (field, problem)
    assert e.value.line is not None


def test_a_folder_with_a_domain_file_lists_only_its_scenarios() -> None:
    assert scenario_paths([str(EXAMPLE)]) == [SCENARIO]
