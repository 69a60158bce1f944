"""Choosing the harness under test: a registered name (``reference``; adapters register their
own, e.g. ``agentscope``; a registered program, e.g. ``codex-cli``, is a ``cmd:`` program by
name), ``bug/<name>`` (the bug zoo, ``harnesslab.harnesses.bugs``),
``package.module:Class``, ``path/to/file.py:Class``, or ``cmd:COMMAND`` (a black-box program,
``harnesslab.adapters.cmd``).

Registered harnesses are loaded lazily (an adapter's heavy package is imported only when it
is chosen). A bad choice is an :class:`~harnesslab.errors.InputError` on the ``harness`` field.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import shlex
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError

# name -> a loader returning the harness class (or any callable (context, config) -> Harness)
HARNESSES: dict[str, Callable[[], Any]] = {}


def register_harness(name: str, loader: Callable[[], Any]) -> None:
    """Register ``loader`` (called on first use, returns the class) under ``name``."""
    if name in HARNESSES:
        raise ValueError(f"harness {name!r} is already registered")
    if ":" in name:
        raise ValueError(f"a harness name may not contain ':' (got {name!r})")
    HARNESSES[name] = loader


# name -> the command of a black-box program shipped with the package (run as cmd:COMMAND)
PROGRAMS: dict[str, Callable[[], str]] = {}


def register_program(name: str, command: Callable[[], str]) -> None:
    """Register a black-box program under ``name``: ``harness=name`` is ``cmd:command()``."""
    if name in HARNESSES or name in PROGRAMS:
        raise ValueError(f"harness {name!r} is already registered")
    if ":" in name:
        raise ValueError(f"a harness name may not contain ':' (got {name!r})")
    PROGRAMS[name] = command


def program_command(spec: str) -> str | None:
    """The command of a black-box harness (``cmd:COMMAND`` or a registered program's name);
    None for an in-process one. What the bench sees of a program is the wire, never its state."""
    if spec.startswith("cmd:"):
        return spec[4:]
    make = PROGRAMS.get(spec)
    return make() if make is not None else None


def _module_command(module: str) -> Callable[[], str]:
    return lambda: f"{shlex.quote(sys.executable)} -m {module}"


# The real Codex CLI (node and npm @openai/codex; docs/codex.md).
register_program("codex-cli", _module_command("harnesslab.adapters.codex_program"))


def _reference() -> Any:
    from harnesslab.harness.agent import ReferenceHarness

    return ReferenceHarness


register_harness("reference", _reference)


def _agentscope() -> Any:
    try:
        from harnesslab.adapters.agentscope import AgentScopeHarness
    except ImportError as e:
        if (e.name or "").partition(".")[0] != "agentscope":
            raise
        raise ImportError("harness 'agentscope' needs the agentscope package: "
                          "pip install 'harnesslab[agentscope]'") from None
    return AgentScopeHarness


register_harness("agentscope", _agentscope)


def _from_file(path: Path) -> Any:
    # One module per file, named by its absolute path, so two files of the same name differ
    # and loading twice returns the same classes.
    resolved = path.resolve()
    name = "harnesslab_user_" + hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise InputError(f"cannot load {path} as a Python file", field="harness")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise InputError(f"{path} failed to import: {type(e).__name__}: {e}",
                         field="harness") from None
    return module


@cache
def load_harness(spec: str) -> Any:
    """The harness class named by ``spec`` (module docstring)."""
    if spec.startswith("bug/"):
        from harnesslab.harnesses.bugs import BUGS

        bug = BUGS.get(spec[4:])
        if bug is None:
            raise InputError(f"unknown bug {spec[4:]!r}; the zoo has {', '.join(BUGS)}",
                             field="harness")
        return bug.cls
    if (command := program_command(spec)) is not None:
        try:
            from harnesslab.adapters.cmd import cmd_harness
        except ImportError as e:
            raise InputError(f"harness {spec.partition(':')[0]}: needs the serve extra "
                             f"({e.name}): pip install 'harnesslab[serve]'",
                             field="harness") from None
        try:
            return cmd_harness(command)
        except ValueError as e:
            raise InputError(str(e), field="harness") from None
    if ":" not in spec:
        if spec not in HARNESSES:
            raise InputError(f"unknown harness {spec!r}; expected one of "
                             f"{', '.join([*HARNESSES, *PROGRAMS])}, "
                             "module:Class or path/to/file.py:Class", field="harness")
        try:
            return HARNESSES[spec]()
        except ImportError as e:
            raise InputError(str(e), field="harness") from None
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise InputError(f"expected module:Class or path/to/file.py:Class, got {spec!r}",
                         field="harness")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise InputError(f"no such file: {where}", field="harness")
        module = _from_file(path)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise InputError(f"cannot import {where}: {e}", field="harness") from None
    target = getattr(module, attr, None)
    if target is None or not callable(target):
        raise InputError(f"{where} has no class {attr!r}", field="harness")
    return target


def harness_label(spec: str) -> str:
    """A short name for tables: the registered name, or the class name of a user's harness."""
    if spec.startswith("cmd:"):
        from harnesslab.adapters.cmd import label

        return label(spec[4:])
    return spec if ":" not in spec else spec.rpartition(":")[2]
