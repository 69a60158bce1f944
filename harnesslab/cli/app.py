"""The ``harnesslab`` command: parse arguments, call the library, print; bad input exits 2.

Each subcommand group lives in a module of its own and imports what it needs only when it
runs, so ``--version`` and ``--help`` load no scenario model, tokenizer or plot library.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harnesslab.cli.common import Parser
from harnesslab.errors import HarnessLabError, InputError, TokenizerUnavailable


def build_parser() -> argparse.ArgumentParser:
    from harnesslab import __version__

    p = Parser(prog="harnesslab", description="A test-bench for the context management of "
                "LLM agent harnesses.")
    p.add_argument("--version", action="version", version=f"harnesslab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    # The order of --help: running, the zoo, reading records, studies, sweeps, the wire.
    from harnesslab.cli import run, study, sweep, wire

    run.add_run_parsers(sub)
    study.add_bugs_parser(sub)
    run.add_record_parsers(sub)
    study.add_fidelity_parser(sub)
    sweep.add_sweep_parsers(sub)
    wire.add_wire_parsers(sub)
    study.add_sessions_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except (InputError, TokenizerUnavailable) as e:
        print(f"harnesslab {args.command}: error: {e}", file=sys.stderr)
        return 2
    except HarnessLabError as e:
        print(f"harnesslab {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # A command stopped by Ctrl-C: one line, the shell's code for SIGINT (a sweep handles
        # it itself, to write its table first).
        print(f"harnesslab {args.command}: interrupted", file=sys.stderr)
        return 130
    return code

