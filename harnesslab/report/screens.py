"""Screenshots of a report (its first screen and one failure drill-down) by Debian's headless
chromium, driven by Playwright for Python; never a browser download."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 860}
MAX_SHOT_HEIGHT = 2400


def chromium_path() -> str | None:
    """``$HARNESSLAB_CHROMIUM``, else chromium on the PATH (Debian: /usr/bin/chromium)."""
    env = os.environ.get("HARNESSLAB_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def browser() -> Iterator[Any]:
    """A headless chromium (Playwright) browser; bad setup is one line naming what to install."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise InputError("screenshots need Playwright for Python: pip install "
                         "'harnesslab[screenshots]'", field="--screenshots") from None
    exe = chromium_path()
    if exe is None:
        raise InputError("screenshots need a chromium executable: apt-get install chromium "
                         "(or set HARNESSLAB_CHROMIUM)", field="--screenshots")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class PageCheck:
    """What a browser saw opening a page: console errors, page errors, the shots taken."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    shots: list[Path] = field(default_factory=list)


def open_page(b: Any, html: Path) -> tuple[Any, PageCheck]:
    check = PageCheck()
    page = b.new_page(viewport=VIEWPORT)
    page.on("console", lambda m: check.console_errors.append(m.text) if m.type == "error"
            else None)
    page.on("pageerror", lambda e: check.page_errors.append(str(e)))
    page.goto(html.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, check


def screenshots(html: Path, out_dir: Path | None = None) -> PageCheck:
    """``first-screen.png`` (the top of the report as it opens) and ``drilldown.png`` (the first
    failure drill-down, when there is one) next to the report."""
    out = out_dir or html.parent
    with browser() as b:
        page, check = open_page(b, html)
        first = out / "first-screen.png"
        page.screenshot(path=str(first))
        check.shots.append(first)
        drill = page.query_selector("article.drill")
        box = drill.bounding_box() if drill is not None else None
        if box is not None:
            shot = out / "drilldown.png"
            # The drill-down's top, at most MAX_SHOT_HEIGHT tall: a picture, not a scroll.
            page.screenshot(path=str(shot), full_page=True, clip={
                "x": box["x"], "y": box["y"], "width": box["width"],
                "height": min(box["height"], MAX_SHOT_HEIGHT)})
            check.shots.append(shot)
        page.close()
    return check
