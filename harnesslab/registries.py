"""By-name registries for the extension points (compaction strategies, memory modes):
one way to register, and a duplicate name is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def class_registrar(table: dict[str, Any], what: str) -> Callable[[str], Any]:
    """A class decorator factory for a by-name registry (compaction strategies, memory modes):
    ``@register("name")`` sets ``cls.name`` and adds it; a duplicate name is an error."""
    def register(name: str) -> Callable[[type[Any]], type[Any]]:
        def deco(cls: type[Any]) -> type[Any]:
            if name in table:
                raise ValueError(f"{what} {name!r} is already registered")
            cls.name = name
            table[name] = cls
            return cls
        return deco
    return register
