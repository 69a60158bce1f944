"""The documentation's tables that list what the code has (settings, service profiles, metrics,
the bug zoo), generated from the code, so that a page cannot go stale: ``tests/docs`` fails
when a page's table differs from what this makes. ``python -m tests.docs.tables`` rewrites
them in place.

A generated table sits between ``<!-- table:NAME -->`` and ``<!-- end table -->``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- table:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end table -->)", re.S)


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()
    else:
        return "(required)"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "(none)"
    if isinstance(value, dict):
        return "(none)" if not value else _cell(value)
    return "null" if value is None else str(value).lower() if isinstance(value, bool) \
        else str(value)


def settings_table() -> str:
    """Every key ``--set`` takes, from the models that validate them."""
    from harnesslab.adapters.real_model import ModelSpec
    from harnesslab.harness.config import CodexSettings, HarnessConfig, MemorySettings
    from harnesslab.sim.model import SummarizerProfile
    from harnesslab.sim.service import ServiceProfile

    rows = ["| key | default | what it is |", "|---|---|---|"]
    for name, f in HarnessConfig.model_fields.items():
        if name in ("codex", "memory"):
            continue
        rows.append(f"| `{name}` | `{_default(f)}` | {_cell(f.description or '')} |")
    for prefix, model in (("codex", CodexSettings), ("memory", MemorySettings)):
        for name, f in model.model_fields.items():
            rows.append(f"| `{prefix}.{name}` | `{_default(f)}` | "
                        f"{_cell(f.description or '')} |")
    rows.append("| `service` | `openai-128k` | A service profile by name (below), or a mapping "
                "of its fields |")
    for name, f in ServiceProfile.model_fields.items():
        if name != "name":
            rows.append(f"| `service.{name}` | the profile's | {_cell(f.description or '')} |")
    for prefix in ("summarizer", "extractor"):
        for name, f in SummarizerProfile.model_fields.items():
            rows.append(f"| `{prefix}.{name}` | `{_default(f)}` | "
                        f"{_cell(f.description or '')} |")
    rows.append("| `filler_base` | `null` | Tokens a `times_trigger` filler multiplies instead "
                "of trigger_ratio x context_size (a sweep sets it once for its grid: "
                "[sweeps.md](sweeps.md)) |")
    rows.append("| `world.tools.<tool>` | the scenario's | A world tool's spec, replaced whole "
                "(max_age, failures) |")
    for name, f in ModelSpec.model_fields.items():
        key = "model" if name == "kind" else f"model.{name}"
        rows.append(f"| `{key}` | `{_default(f)}` | {_cell(f.description or '')} |")
    return "\n".join(rows) + "\n"


def profiles_table() -> str:
    from harnesslab.sim.service import PROFILES

    rows = ["| profile | window | max input | max output | default output | tokenizer |",
            "|---|---:|---:|---:|---:|---|"]
    for p in PROFILES.values():
        rows.append(f"| `{p.name}` | {p.window} | {p.max_input} | {p.max_output} | "
                    f"{p.default_output} | {p.tokenizer} |")
    return "\n".join(rows) + "\n"


def metric_docs() -> dict[str, str]:
    """The per-run metrics as ``harnesslab.judge.metrics`` and ``memory_metrics`` document them
    in their docstrings: name -> formula."""
    import harnesslab.judge.memory_metrics as mm
    import harnesslab.judge.metrics as m

    out: dict[str, str] = {}
    for doc, where in ((m.__doc__ or "").split("Per run", 1)[1], ""), \
            ((mm.__doc__ or ""), " (runs with memory)"):
        for item in re.split(r"\n- ", doc)[1:]:
            item = " ".join(item.split("\n\n", 1)[0].split())
            if item.startswith("memory runs only"):
                continue  # listed from memory_metrics' own docstring
            if item.startswith("cost:"):
                for name, paren in re.findall(r"``([a-z_]+)``(?: \(([^)]*)\))?", item):
                    out[name] = "cost" + (f": {paren}" if paren else "")
                continue
            for name, text in re.findall(r"``([a-z_]+)``\s*=\s*(.*?)(?=;\s*``[a-z_]+``[ :=]|$)",
                                         item):
                out[name] = _cell(text).rstrip(".;") + where
            for name, text in re.findall(r";\s*``([a-z_]+)``:\s*(.*?)(?=\.|$)", item):
                out[name] = _cell(text)
    return out


def metrics_table() -> str:
    rows = ["| metric | formula (`harnesslab/judge/metrics.py`) |", "|---|---|"]
    rows += [f"| `{name}` | {text} |" for name, text in metric_docs().items()]
    return "\n".join(rows) + "\n"


def bugs_table() -> str:
    from harnesslab.harnesses.bugs import BUGS

    rows = ["| bug (`--set harness=bug/<name>`) | the real-world mistake it models |",
            "|---|---|"]
    rows += [f"| `{b.name}` | {_cell(b.mistake)} |" for b in BUGS.values()]
    return "\n".join(rows) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "settings": settings_table, "profiles": profiles_table, "metrics": metrics_table,
    "bugs": bugs_table,
}


def blocks(text: str) -> dict[str, str]:
    return {m["name"]: m["body"] for m in BLOCK.finditer(text)}


def render(text: str) -> str:
    def fill(m: re.Match[str]) -> str:
        return m.group(1) + TABLES[m["name"]]() + m.group(4)

    return BLOCK.sub(fill, text)


def main() -> int:
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
