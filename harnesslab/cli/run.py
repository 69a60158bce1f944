"""``harnesslab run``, ``show``, ``schema`` and ``tokens``: run scenarios, read a record, print the
scenario schema, compare token estimates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harnesslab.cli.common import parse_sets, point_latest, positive_int, run_dir
from harnesslab.errors import InputError


def _cmd_tokens(args: argparse.Namespace) -> int:
    from harnesslab.study.tokenstats import file_stats, format_table
    from harnesslab.tokens import TOKENIZER_NAMES, get_tokenizer

    names: list[str] = args.tokenizer or ["o200k_base", "cl100k_base"]
    for n in names:
        if n not in TOKENIZER_NAMES:
            raise InputError(f"unknown tokenizer {n!r}; expected one of: "
                             f"{', '.join(TOKENIZER_NAMES)}", field="--tokenizer")
    for n in names:
        get_tokenizer(n)  # fail before reading anything if a tokenizer cannot load
    results, failed = [], False
    for path in args.paths:
        try:
            results.append(file_stats(path, names, args.format))
        except InputError as e:
            # One bad file does not lose the others: report it, go on, exit 2 at the end.
            print(f"harnesslab tokens: error: {e}", file=sys.stderr)
            failed = True
    if args.json:
        print(json.dumps({"tokenizers": names, "files": results}, ensure_ascii=False, indent=2))
    elif results:
        print(format_table(results, names), end="")
    return 2 if failed else 0


def _cmd_run(args: argparse.Namespace) -> int:
    from harnesslab.run.table import format_results
    from harnesslab.scenario.loader import bundled_dir, load_scenario, scenario_paths
    from harnesslab.scenario.schema import Scenario, Variant
    from harnesslab.scenario.settings import resolve, resolve_settings

    paths = scenario_paths(args.paths or [str(bundled_dir())])
    if not paths:
        raise InputError("no scenario files found", field="PATH")
    cli_set = parse_sets(args.set)
    try:
        resolve([cli_set])  # a bad --set is the command line's fault, not a scenario's
    except InputError as e:
        raise InputError(e.problem, field=f"--set {e.field}" if e.field else "--set") from None
    # Bad input is found before anything runs: every file loads, every chosen variant exists
    # and resolves.
    scenarios = [(p, load_scenario(p)) for p in paths]
    wanted = set(args.variant or [])
    known = {v.name for _, sc in scenarios for v in sc.variants}
    for name in sorted(wanted - known):
        raise InputError(f"no variant {name!r} in the chosen scenarios; they have: "
                         f"{', '.join(sorted(known))}", field="--variant")
    tasks: list[tuple[Path, Scenario, Variant, int]] = []
    for p, sc in scenarios:
        for v in sc.variants:
            if wanted and v.name not in wanted:
                continue
            try:
                resolve_settings(sc, v, cli_set)
            except InputError as e:
                raise InputError(f"with the command line's settings: {e.problem}" if cli_set
                                 else e.problem, file=str(p),
                                 field=f"variants.{v.name}.{e.field}" if e.field
                                 else f"variants.{v.name}") from None
            tasks.extend((p, sc, v, seed) for seed in range(args.seed, args.seed + args.seeds))
    from harnesslab.run.executors import make_executor

    # One run needs no pool (spawning workers would only add their start-up).
    executor = make_executor("serial" if len(tasks) == 1 else args.executor, jobs=args.jobs)
    out, latest = run_dir(args.out)
    import hashlib

    from harnesslab.run.runner import PlannedRun, RunResult, run_planned
    from harnesslab.run.suite import write_summary

    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p, _ in scenarios}
    planned = [PlannedRun(i, str(p), sha[p], v.name, seed, cli_set, str(out),
                          sc.compiled_domain.sha256 if sc.compiled_domain is not None else None)
               for i, (p, sc, v, seed) in enumerate(tasks)]
    done: dict[int, RunResult] = {}
    progress = None
    if not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        progress = tqdm(total=len(tasks), unit="run", file=sys.stderr)
    with executor:
        for i, result in executor.map_unordered(run_planned, planned):
            done[i] = result
            if progress is not None:
                progress.set_postfix_str(f"{result.scenario}/{result.variant}", refresh=False)
                progress.update()
    if progress is not None:
        progress.close()
    results = [done[i] for i in range(len(planned))]  # in plan order, as a serial run gives
    summary = write_summary(results, out)
    if latest is not None:
        point_latest(latest, out)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        print(format_results(results, summary), end="")
        print(f"records and summary: {out}")
    # The summary also judges expectations across seeds ("fails in 3 of 5").
    return 0 if summary["expected"] else 1


def _cmd_show(args: argparse.Namespace) -> int:
    from harnesslab.record.format import Record
    from harnesslab.record.show import show_call, show_overview

    rec = Record.load(args.record)
    print(show_call(rec, args.call) if args.call is not None else show_overview(rec), end="")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    if args.domain:
        from harnesslab.sim.domain import DomainFile

        print(json.dumps(DomainFile.model_json_schema(), ensure_ascii=False, indent=2))
        return 0
    from harnesslab.scenario.schema import Scenario

    print(json.dumps(Scenario.model_json_schema(), ensure_ascii=False, indent=2))
    return 0


def add_run_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    t = sub.add_parser(
        "tokens", help="compare bytes4/chars4 estimates with real tokenizers on files",
        description="Per file and content kind (zh, en, mixed, json), the bytes4 and chars4 "
        "estimates against each real tokenizer, with the ratio estimate/true. Reads plain text, "
        "JSON and JSONL chat transcripts (OpenAI-style messages); '-' reads standard input. "
        "Exactly one trailing newline is stripped from every input (echo and editors add it).")
    t.add_argument("paths", nargs="+", metavar="PATH")
    t.add_argument("--tokenizer", action="append", metavar="NAME",
                   help="a real tokenizer (repeatable): o200k_base, cl100k_base, qwen2.5, "
                   "deepseek-v4; default o200k_base and cl100k_base")
    t.add_argument("--format", choices=["auto", "text", "json", "jsonl"], default="auto",
                   help="input format; auto decides by extension, then by content")
    t.add_argument("--json", action="store_true", help="print JSON instead of a table")
    t.set_defaults(func=_cmd_tokens)

    r = sub.add_parser("run", help="run scenarios (default: the bundled suite) with their variants",
                       description="Run every variant of each scenario, print the checks, the "
                       "expected outcomes and the metrics, and write the records. Exit 1 when an "
                       "outcome is not the expected one, 2 on bad input.")
    r.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or folders")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a setting for every variant (repeatable), beneath each variant's own "
                   "settings, e.g. context_size=8192, strategy=pinned, service=qwen-131k, "
                   "harness=path/to/my_harness.py:MyHarness")
    r.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    r.add_argument("--seeds", type=positive_int, default=1, help="how many seeds (default 1)")
    r.add_argument("--variant", action="append", metavar="NAME", help="only these variants")
    r.add_argument("--out", metavar="DIR", help="a new or empty folder for the records and "
                   "summary.json (default: a new runs/<timestamp>/, with runs/latest pointing at "
                   "it)")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.add_argument("--executor", default="processes", choices=("serial", "processes"),
                   help="serial: one run after another here; processes (default): spread "
                   "over local processes, as sweeps are (the same records and output)")
    r.add_argument("--jobs", type=positive_int, help="worker processes (default: all cores)")
    r.set_defaults(func=_cmd_run)



def add_record_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("show", help="print what the model saw at a call of a record")
    s.add_argument("record", metavar="RECORD")
    s.add_argument("--call", type=int, metavar="N", help="the model call to show")
    s.set_defaults(func=_cmd_show)

    sc = sub.add_parser("schema", help="print the scenario JSON Schema (--domain: the domain "
                        "file's)")
    sc.add_argument("--domain", action="store_true",
                    help="the JSON Schema of a domain file (*.domain.yaml) instead")
    sc.set_defaults(func=_cmd_schema)
