"""Harnesses by name: a registered program (``codex-cli``) is a black-box harness, judged from
outside like any ``cmd:`` line; an in-process name is not; a bad name lists them all."""

from __future__ import annotations

import pytest

from harnesslab.errors import InputError
from harnesslab.harnesses.registry import (
    harness_label,
    load_harness,
    program_command,
    register_program,
)


def test_codex_cli_is_the_packaged_program_run_as_cmd() -> None:
    command = program_command("codex-cli")
    assert command is not None and command.endswith("-m harnesslab.adapters.codex_program")
    assert harness_label("codex-cli") == "codex-cli"
    pytest.importorskip("starlette")
    assert callable(load_harness("codex-cli"))  # the cmd: harness factory
    # The control: in-process harnesses are not programs.
    assert program_command("reference") is None and program_command("bug/no-reserve") is None
    assert program_command("cmd:python my_agent.py") == "python my_agent.py"


def test_a_bad_name_lists_programs_too() -> None:
    with pytest.raises(InputError, match="reference, agentscope, codex-cli"):
        load_harness("no-such-harness")


def test_a_program_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_program("codex-cli", lambda: "x")
    with pytest.raises(ValueError, match="may not contain"):
        register_program("a:b", lambda: "x")
