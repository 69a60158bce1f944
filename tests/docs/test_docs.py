"""The README as a front door and the docs as the reference: the README's length and links,
and every table in the README and docs that lists what the code has, checked against the code
(generated tables regenerate identically; hand-written ones name exactly what exists)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.docs.tables import DOCS, ROOT, TABLES, blocks, metric_docs, render

README = ROOT / "README.md"

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="the docs are in the checkout")


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def prose_lines(text: str) -> list[str]:
    """Lines outside fenced code blocks."""
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            out.append(line)
    return out


# --- the README --------------------------------------------------------------------------------

def test_the_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 250
    assert [n for n, line in enumerate(lines, 1) if len(line) > 110] == []
    heads = [line for line in prose_lines(text) if line.startswith("## ")]
    for want in ("## Install", "## How to read the report", "## Testing your own harness",
                 "## Where to read more"):
        assert want in heads
    assert "Python 3.11" in text


def test_every_page_the_readme_links_exists_and_every_page_is_linked() -> None:
    text = README.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#]+)", text))
    assert sorted(p for p in linked if not (ROOT / p).is_file()) == []
    # Every reference page has a way in from the front door (the index is the site's home).
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")} - {"docs/index.md"}
    assert sorted(pages - linked) == []


def test_the_readme_config_is_valid() -> None:
    from harnesslab.ci.config import parse_config

    (toml,) = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    parse_config(tomllib.loads(toml)["tool"]["harnesslab"], "README.md")


# --- the site ----------------------------------------------------------------------------------

def test_mkdocs_builds_every_page_in_strict_mode(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="pip install -e '.[dev]'")
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    # No nav: every page of docs/ is in the site, whoever adds it.
    assert "nav" not in config and config["strict"] is True
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    built = {x.parent.name if x.name == "index.html" and x.parent != tmp_path / "site"
             else x.stem for x in (tmp_path / "site").rglob("index.html")}
    pages = {x.stem for x in DOCS.glob("*.md")} - {"index"}
    assert pages <= built


# --- generated tables --------------------------------------------------------------------------

def test_every_generated_table_is_as_the_code_makes_it() -> None:
    stale = [p.name for p in sorted(DOCS.glob("*.md"))
             if render(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")]
    assert stale == [], "run: python -m tests.docs.tables"
    used = {name for p in DOCS.glob("*.md") for name in blocks(p.read_text(encoding="utf-8"))}
    assert used == set(TABLES)


def test_a_stale_table_is_seen() -> None:
    # The control: a settings table that lost a row no longer renders to itself.
    text = page("settings.md")
    lost = "\n".join(x for x in text.splitlines() if not x.startswith("| `trigger_ratio` |"))
    assert render(lost) != lost


def test_every_metric_a_run_produces_is_documented(tmp_path: Path) -> None:
    from harnesslab.run.runner import run_scenario_file
    from harnesslab.scenario.loader import bundled_dir

    documented = set(metric_docs())
    table = page("metrics.md")
    produced: set[str] = set()
    for sc in ("followup-o1001-zh", "restart-followup-en", "memory-two-users-zh"):
        (r,) = run_scenario_file(bundled_dir() / f"{sc}.yaml", variants=["default"])
        produced |= set(r.metrics)
    produced |= set(_server_truncated_metrics(tmp_path))
    assert sorted(k for k in produced if k not in documented and f"``{k}``" not in table) == []
    assert sorted(documented - produced) == []


def _server_truncated_metrics(out: Path) -> dict[str, object]:
    """The metrics of a session whose server truncated a request (Ollama's default over its
    window), which no bundled run makes."""
    pytest.importorskip("starlette", reason="pip install -e '.[serve]'")
    import httpx

    from harnesslab.judge.metrics import run_metrics
    from harnesslab.record.format import Record
    from tests.wire.support import Q1, serving

    with serving(out, cli_set={"service.window": 400, "service.max_output": 100,
                               "service.default_output": 100}) as (url, _):
        r = httpx.post(f"{url.removesuffix('/v1')}/api/chat",
                       headers={"Authorization": "Bearer k"},
                       json={"model": "m", "stream": False, "messages": [
                           {"role": "user", "content": "很长的历史记录。" * 200},
                           {"role": "user", "content": Q1}]})
    assert r.status_code == 200, r.text
    return run_metrics(Record.load(out / "session1.jsonl"), [])


# --- hand-written tables, checked ----------------------------------------------------------------

def _ids(cells: list[str]) -> set[str]:
    out: set[str] = set()
    for cell in cells:
        m = re.fullmatch(r"`([a-z0-9-]+?)(?:-\{([a-z,]+)\})?`", cell.strip())
        assert m is not None, cell
        out |= {f"{m[1]}-{x}" for x in m[2].split(",")} if m[2] else {m[1]}
    return out


def first_column(text: str, header: str) -> list[str]:
    section = text[text.index(header):]
    rows = []
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1])
    return rows


def test_the_scenario_table_lists_every_bundled_scenario() -> None:
    from harnesslab.scenario.loader import bundled_dir

    listed = _ids(first_column(page("scenarios.md"), "| scenario | what it shows |"))
    bundled = {p.stem for p in bundled_dir().glob("*.yaml")}
    assert (sorted(bundled - listed), sorted(listed - bundled)) == ([], [])


def test_the_scenario_table_reader_sees_a_missing_row() -> None:
    text = page("scenarios.md")
    lost = "\n".join(x for x in text.splitlines() if not x.startswith("| `summary-weight-zh`"))
    assert "summary-weight-zh" not in _ids(first_column(lost, "| scenario | what it shows |"))


def test_the_kill_table_names_every_bug_of_the_zoo() -> None:
    from harnesslab.harnesses.bugs import BUGS

    text = page("bug-zoo.md")
    block = re.search(r"```\nbug +killed by.*?\n(.*?)\nkill rate: (\d+)/(\d+)", text, re.S)
    assert block is not None
    names = {line.split()[0] for line in block[1].splitlines()}
    assert names == set(BUGS)
    assert int(block[2]) == int(block[3]) == len(BUGS)


def test_the_memory_table_lists_every_mode() -> None:
    from harnesslab.harness.memory import MEMORY_MODES

    listed = {c.strip().strip("`") for c in first_column(page("memory.md"), "| mode |")}
    assert listed == set(MEMORY_MODES) - {"none"}
