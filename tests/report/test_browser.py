"""The report in Debian's headless chromium (Playwright, never a browser download): it renders
with no console error, markup in scenario text shows as text and never runs, and
``--screenshots`` writes the first screen and a drill-down next to the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.report.screens import browser, chromium_path, open_page
from tests.report.conftest import MARKUP_TITLE, MARKUP_UTTERANCE, SmallSweep

pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def rendered(small_sweep: SmallSweep, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if chromium_path() is None:
        pytest.skip("no chromium executable (Debian: apt-get install chromium; .ci/run does)")
    out = tmp_path_factory.mktemp("browser") / "report"
    assert main(["report", str(small_sweep.dir), "--report-out", str(out), "--screenshots"]) == 0
    return out


def test_screenshots_are_written_next_to_the_report(rendered: Path) -> None:
    for name in ("first-screen.png", "drilldown.png"):
        data = (rendered / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 20_000, name
        width = int.from_bytes(data[16:20], "big")
        assert width >= 800, name


def test_report_renders_without_console_errors_and_markup_stays_text(rendered: Path) -> None:
    with browser() as b:
        page, check = open_page(b, rendered / "index.html")
        assert check.console_errors == [] and check.page_errors == []
        # Neither the title's nor the utterance's <script> ran.
        assert page.title() == "harnesslab sweep report"
        assert page.evaluate("typeof window.pwned") == "undefined"
        # Folded drill-downs hold the scenario's title and turns: open them all, as a reader
        # would, so the visible text is what is checked.
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        body = page.inner_text("body")
        assert MARKUP_TITLE in body and MARKUP_UTTERANCE in body
        assert page.evaluate("document.querySelectorAll('p.title b, .msg b').length") == 0
        # Only the JSON data blocks are <script> elements, and none is executable.
        kinds = page.evaluate("[...document.scripts].map(s => s.type)")
        assert kinds and set(kinds) == {"application/json"}
        # It rendered: the headline, the plots with a size, a drill-down.
        assert "Best quality at the lowest cost" in page.inner_text("#headline")
        box = page.locator("#ranking svg").first.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 200
        assert page.locator("article.drill").count() >= 1
        assert page.locator("svg").count() >= 4 + 2 * page.locator("article.drill").count()
        page.close()


# The page a person reads at the default grid: about three screens plus what they open.
MAX_PAGE_HEIGHT = 12_000


def page_height(html: Path, width: int = 1400) -> int:
    with browser() as b:
        page = b.new_page(viewport={"width": width, "height": 900})
        page.goto(html.resolve().as_uri())
        page.wait_for_load_state("load")
        height = int(page.evaluate("document.documentElement.scrollHeight"))
        page.close()
    return height


def test_the_default_grid_s_report_is_a_few_screens_with_grouped_drilldowns(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    if chromium_path() is None:
        pytest.skip("no chromium executable (Debian: apt-get install chromium; .ci/run does)")
    import os

    root = tmp_path_factory.mktemp("default-grid")
    # HARNESSLAB_DEFAULT_SWEEP: a finished default sweep folder to reuse (it takes minutes).
    sweep = Path(os.environ.get("HARNESSLAB_DEFAULT_SWEEP") or root / "sweep")
    out = root / "report"
    if not (sweep / "sweep.json").exists():
        assert main(["sweep", "--out", str(sweep), "--no-report"]) == 0
    assert main(["report", str(sweep), "--report-out", str(out), "--screenshots"]) == 0
    height = page_height(out / "index.html")
    print(f"default grid report: {height} px tall at 1400 px")
    assert height <= MAX_PAGE_HEIGHT
    for name in ("first-screen.png", "drilldown.png"):
        assert (out / name).read_bytes().startswith(PNG)
    with browser() as b:
        page, check = open_page(b, out / "index.html")
        assert check.console_errors == [] and check.page_errors == []
        drills = page.locator("article.drill")
        # Grouped by cause: every drill-down counts the runs behind it, and no two share a cause.
        heads = [drills.nth(i).locator("details.cause > summary").inner_text()
                 for i in range(drills.count())]
        assert heads and all(" with this cause, under " in h for h in heads)
        assert len(set(heads)) == len(heads)
        page.close()


def test_a_report_past_the_height_limit_is_seen(rendered: Path, tmp_path: Path) -> None:
    # The control: every drill-down open and repeated makes the page taller than the limit.
    text = (rendered / "index.html").read_text(encoding="utf-8")
    start, end = text.index('<section id="failures">'), text.index('<section id="runs">')
    tall = text[:end] + text[start:end].replace("<details", "<details open") * 12 + text[end:]
    (tmp_path / "index.html").write_text(tall, encoding="utf-8")
    assert page_height(tmp_path / "index.html") > MAX_PAGE_HEIGHT
