"""The ``harnesslab`` command: parse arguments, call the library, print; bad input exits 2."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from harnesslab.errors import HarnessLabError, InputError, TokenizerUnavailable


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own errors are bad CLI input too: one line, exit 2.
        self.exit(2, f"{self.prog}: error: {message}\n")


def _cmd_tokens(args: argparse.Namespace) -> int:
    from harnesslab.bench.tokenstats import file_stats, format_table, read_source
    from harnesslab.tokens import TOKENIZER_NAMES, TokenCache

    names: list[str] = args.tokenizer or ["o200k_base", "cl100k_base"]
    for n in names:
        if n not in TOKENIZER_NAMES:
            raise InputError(f"unknown tokenizer {n!r}; expected one of: "
                             f"{', '.join(TOKENIZER_NAMES)}", field="--tokenizer")
    cache = TokenCache()
    for n in names:
        cache.tokenizer(n)  # fail before reading anything if a tokenizer cannot load
    results, failed = [], False
    for path in args.paths:
        try:
            results.append(file_stats(read_source(path, args.format), names, cache))
        except InputError as e:
            # One bad file does not lose the others: report it, go on, exit 2 at the end.
            print(f"harnesslab tokens: error: {e}", file=sys.stderr)
            failed = True
    if args.json:
        print(json.dumps({"tokenizers": names, "files": results}, ensure_ascii=False, indent=2))
    elif results:
        print(format_table(results, names), end="")
    return 2 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="harnesslab", description="A test-bench for the context management of "
                "LLM agent harnesses.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    t = sub.add_parser(
        "tokens", help="compare bytes4/chars4 estimates with real tokenizers on files",
        description="Per file and content kind (zh, en, mixed, json), the bytes4 and chars4 "
        "estimates against each real tokenizer, with the ratio estimate/true. Reads plain text, "
        "JSON and JSONL chat transcripts (OpenAI-style messages); '-' reads standard input and "
        "strips exactly one trailing newline.")
    t.add_argument("paths", nargs="+", metavar="PATH")
    t.add_argument("--tokenizer", action="append", metavar="NAME",
                   help="a real tokenizer (repeatable): o200k_base, cl100k_base, qwen2.5, "
                   "deepseek-v4; default o200k_base and cl100k_base")
    t.add_argument("--format", choices=["auto", "text", "json", "jsonl"], default="auto",
                   help="input format; auto decides by extension, then by content")
    t.add_argument("--json", action="store_true", help="print JSON instead of a table")
    t.set_defaults(func=_cmd_tokens)
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
    return code


if __name__ == "__main__":
    sys.exit(main())
