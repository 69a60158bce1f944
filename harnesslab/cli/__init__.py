"""The ``harnesslab`` command, one module per group of subcommands (``app`` builds the parser)."""

from harnesslab.cli.app import main

__all__ = ["main"]
