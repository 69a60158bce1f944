"""Which settings a harness honours: the names a harness may declare in ``honours`` and how a
setting key (``strategy``, ``codex.user_message_budget``, ``memory: vector``) maps to one.

A harness declares the harness settings it reads and acts on (a class: the ``honours``
attribute; a ``cmd:`` program: its answer to the first line; an adapter: what it maps). The
bench uses the declaration to tell a variant that configures something this harness has not
(``strategy: codex`` on a harness without strategies) from one it can be judged on. ``*``
honours every setting (the reference harness). Settings of the codex and memory groups are
declared as a group (``codex.*``, ``memory.*``): their fields mean nothing one by one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harnesslab.harness.config import HarnessConfig

EVERY = "*"
ALL_SETTINGS: frozenset[str] = frozenset({EVERY})
GROUPS = ("codex", "memory")

# Settings the bench itself applies whatever the harness declares: which harness runs, how long
# a program may take, the bench's checkpointer between instances (``persist``, ``resume``), who
# binds the acting user on the bench's tool backend for a program (``tool_identity``) and the
# host clock a harness is handed (``clock_offset_hours``, applied to its clock door unless the
# harness applies it itself).
BENCH_SETTINGS: frozenset[str] = frozenset({"harness", "turn_timeout", "persist", "resume",
                                            "tool_identity", "clock_offset_hours"})


def setting_name(key: str) -> str:
    """The declared name a setting key falls under: ``codex.tool_output_limit`` -> ``codex.*``."""
    head = key.split(".", 1)[0]
    return f"{head}.*" if head in GROUPS else head


def declarable() -> tuple[str, ...]:
    """Every name a declaration may hold (besides ``*``)."""
    fields = [f for f in HarnessConfig.model_fields if f not in GROUPS and f != "harness"]
    return (*fields, *(f"{g}.*" for g in GROUPS))


def check_declaration(names: Any, who: str) -> frozenset[str]:
    """``names`` as a set of declared names; a ValueError naming ``who`` and the first name no
    harness setting has (a typo would otherwise quietly make variants not applicable)."""
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise ValueError(f"{who}: honours must be a list of setting names, got {names!r}")
    out = set()
    allowed = set(declarable())
    for n in names:
        if not isinstance(n, str):
            raise ValueError(f"{who}: honours must be a list of setting names, got {n!r}")
        name = n if n == EVERY else setting_name(n) if n.split(".", 1)[0] in GROUPS else n
        if name != EVERY and name not in allowed:
            raise ValueError(f"{who}: honours names unknown setting {n!r}; expected * or some "
                             f"of {', '.join(declarable())}")
        out.add(name)
    return frozenset(out)


def honours_of(harness: Any, who: str) -> frozenset[str]:
    """What a harness (class or instance) declares: its ``honours`` attribute, or nothing."""
    return check_declaration(getattr(harness, "honours", ()), who)


def honoured(declared: frozenset[str], key: str) -> bool:
    return EVERY in declared or setting_name(key) in declared


def describe(declared: frozenset[str]) -> str:
    """One phrase for reports: ``every setting``, ``none of the harness settings``, or the list."""
    if EVERY in declared:
        return "every setting"
    if not declared:
        return "none of the harness settings"
    return ", ".join(sorted(declared))
