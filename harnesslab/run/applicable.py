"""Whether a variant applies to the harness under test, from the settings that define it (its
``set``) and the harness settings the harness declares it honours
(``harnesslab.harness.honours``).

- A world setting (``service*``, ``summarizer*``, ``extractor*``, ``world.tools*``, ``model*``)
  applies to every harness and never makes a variant not applicable; nor do the bench's own
  (``harness``, ``turn_timeout``, ``persist``, ``resume``, ``clock_offset_hours``).
- Any other key is a harness setting: a variant that sets one its harness does not honour is
  not applicable ("sets strategy=codex; LastN honours none of: strategy, codex.*"), unless the
  variant says its world settings alone make its point (``world_alone``).
- A variant that sets the fake model's summarizer or extractor, run on a harness that never
  asked for a summary or an extraction, is not applicable after the run: that part never acted
  (a harness that declares every setting, the reference one, is not asked).

Only the variant's own settings define it, and only those that change something: the
scenario's settings and the command line's are the ground every variant stands on (a filler is
sized from ``context_size`` for any harness), and a variant that restates one of them
(``strategy: structured``, the default, beside a lossy summarizer) is not defined by it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.honours import (
    BENCH_SETTINGS,
    EVERY,
    honoured,
    setting_name,
)
from harnesslab.scenario.schema import Variant

WORLD_HEADS = ("service", "summarizer", "extractor", "world", "model")
SUMMARIZING = ("summarizer", "extractor")


def is_world(key: str) -> bool:
    return key.split(".", 1)[0] in WORLD_HEADS


def harness_keys(variant: Variant, base: HarnessConfig | None = None,
                 cfg: HarnessConfig | None = None) -> list[str]:
    """The variant's keys that are harness settings (what a harness must honour). Given the
    config without the variant (``base``) and with it (``cfg``), only those it changes: a
    control that states ``strategy: structured``, the default, to stay a control under any
    command line, is not defined by it."""
    keys = [k for k in variant.set if not is_world(k) and k.split(".", 1)[0] not in BENCH_SETTINGS]
    if base is None or cfg is None:
        return keys
    return [k for k in keys if getattr(base, k.split(".", 1)[0], None)
            != getattr(cfg, k.split(".", 1)[0], None)]


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 40 else text[:37] + "..."


def inapplicable(variant: Variant, declared: frozenset[str], label: str,
                 base: HarnessConfig | None = None, cfg: HarnessConfig | None = None,
                 cell: Mapping[str, Any] | None = None) -> str | None:
    """Why ``variant`` does not apply to a harness declaring ``declared``, or None (``base``
    and ``cfg`` as for :func:`harness_keys`). ``cell``: the settings a sweep cell varies; a
    swept harness setting the harness does not honour makes the cell not apply to it either
    (its rows would differ only in a label)."""
    if EVERY in declared:
        return None
    keys = [] if variant.world_alone else \
        [k for k in harness_keys(variant, base, cfg) if not honoured(declared, k)]
    if keys:
        names = sorted({setting_name(k) for k in keys})
        sets = ", ".join(f"{k}={_value(variant.set[k])}" for k in keys)
        return f"sets {sets}; {label} honours none of: {', '.join(names)}"
    mine = {k.split(".", 1)[0] for k in variant.set}
    swept = [k for k in (cell or {}) if not is_world(k) and k.split(".", 1)[0] not in
             BENCH_SETTINGS and k.split(".", 1)[0] not in mine and not honoured(declared, k)]
    if swept:
        names = sorted({setting_name(k) for k in swept})
        sets = ", ".join(f"{k}={_value((cell or {})[k])}" for k in swept)
        return f"the sweep cell sets {sets}; {label} honours none of: {', '.join(names)}"
    return None


def world_part_idle(variant: Variant, declared: frozenset[str], label: str,
                    kinds: Collection[Any]) -> str | None:
    """After a run: why the summarizer or extractor the variant sets never acted (the harness
    made no request the fake model answered as a summary or an extraction), or None. The
    variant's point is what that summary does; a harness that never summarises cannot show it,
    either way. (Not asked of a harness that honours every setting: its controls are built
    to summarise.) ``kinds``: the fake model's answer kinds over the run's model calls."""
    if EVERY in declared:
        return None
    heads = sorted({k.split(".", 1)[0] for k in variant.set if k.split(".", 1)[0] in SUMMARIZING})
    if not heads:
        return None
    if {"summary", "summary_refused"} & set(kinds):
        return None
    return (f"sets {', '.join(heads)}; {label} asked for no summary or extraction, so the "
            f"fake model's {' and '.join(heads)} never acted")
