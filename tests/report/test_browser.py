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
