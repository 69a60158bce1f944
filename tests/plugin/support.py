"""Temporary projects for the plugin tests: scenarios adapted from the bundled follow-up one,
and the user's own harness (``agent_lastn.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harnesslab.scenario.loader import bundled_dir

HERE = Path(__file__).resolve().parent
FOLLOWUP = bundled_dir() / "followup-after-filler-zh.yaml"

def _variant(name: str) -> dict[str, Any]:
    data = yaml.safe_load(FOLLOWUP.read_text(encoding="utf-8"))
    found: dict[str, Any] = next(v for v in data["variants"] if v["name"] == name)
    return found


# The bundled follow-up scenario's controls: truncation on a small window drops the first turn;
# a tiny service window rejects every call.
TRUNCATE_SMALL: dict[str, Any] = _variant("truncate-small-window")["set"]
REFERENT_LOST: list[str] = _variant("truncate-small-window")["expect_fail"]
REJECTS_ALL = {k: v for k, v in _variant("service-rejects-all").items() if k != "description"}


# Inline runs (pytester.runpytest) happen in a process that has imported harnesslab already, so
# pytest warns that it cannot assertion-rewrite the plugin's package: noise in these tests only.
INI = '[tool.pytest.ini_options]\nfilterwarnings = ["ignore::pytest.PytestAssertRewriteWarning"]\n'


def followup(variants: list[dict[str, Any]], scenario_id: str = "followup") -> str:
    """The bundled follow-up scenario (steps, world, lexicon) with these variants."""
    data = yaml.safe_load(FOLLOWUP.read_text(encoding="utf-8"))
    data["id"] = scenario_id
    data["variants"] = variants
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def agent_source(*, fixed: bool) -> str:
    text = (HERE / "agent_lastn.py").read_text(encoding="utf-8")
    return text.replace("pin_first = False", "pin_first = True") if fixed else text


def outcomes_by_name(lines: list[str]) -> dict[str, str]:
    """``pytest -rA`` short summary lines -> {item name: PASSED / FAILED / XFAIL / ...}."""
    out = {}
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) >= 2 and "::" in parts[1] and parts[0].isupper():
            out[parts[1].split("::")[-1]] = parts[0]
    return out


def assert_in_order(text: str, parts: list[str]) -> None:
    """Each part occurs in ``text``, after the previous one (literally: no wildcards)."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"not found after position {at}: {part!r}\n--- in ---\n{text}"
        at = found + len(part)
