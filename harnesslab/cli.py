"""The ``harnesslab`` command: parse arguments, call the library, print; bad input exits 2."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from harnesslab.errors import HarnessLabError, InputError, TokenizerUnavailable


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own errors are bad CLI input too: one line, exit 2.
        self.exit(2, f"{self.prog}: error: {message}\n")


def _cmd_tokens(args: argparse.Namespace) -> int:
    from harnesslab.bench.tokenstats import file_stats, format_table
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _parse_sets(items: list[str] | None) -> dict[str, object]:
    from harnesslab.bench.settings import parse_value

    out: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"expected key=value, got {item!r}", field="--set")
        out[key.strip()] = parse_value(value)
    return out


def _run_dir(out: str | None) -> tuple[Path, Path | None]:
    """The folder a run writes: ``--out`` (new or empty), or ``runs/<timestamp>/`` with
    ``runs/latest`` pointing at it. Checked before anything runs."""
    if out is not None:
        path = Path(out)
        if path.exists() and not path.is_dir():
            raise InputError("is a file; expected a folder for the records", field="--out",
                             file=out)
        if path.is_dir() and any(path.iterdir()):
            raise InputError("already holds files; a run writes a new or empty folder, so that "
                             "its summary describes exactly its runs", field="--out", file=out)
        _writable(path, "--out")
        return path, None
    import datetime

    root = Path("runs")
    # The wall clock names the folder only; nothing inside a record depends on it.
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path, n = root / stamp, 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{n}"
    _writable(path, "--out")
    return path, root / "latest"


def _writable(path: Path, field: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".harnesslab-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as e:
        raise InputError(f"cannot write there: {e.strerror or e}", field=field,
                         file=str(path)) from None


def _point_latest(link: Path, target: Path) -> None:
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target.name, target_is_directory=True)
    except OSError:
        pass  # a filesystem without symlinks: the timestamped folder is still printed


def _cmd_run(args: argparse.Namespace) -> int:
    from harnesslab.bench.report_text import format_results
    from harnesslab.bench.scenario import Scenario, Variant, bundled_dir, load_scenario, scenario_paths
    from harnesslab.bench.settings import resolve, resolve_settings

    paths = scenario_paths(args.paths or [str(bundled_dir())])
    if not paths:
        raise InputError("no scenario files found", field="PATH")
    cli_set = _parse_sets(args.set)
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
    from harnesslab.bench.executors import make_executor

    # One run needs no pool (spawning workers would only add their start-up).
    executor = make_executor("serial" if len(tasks) == 1 else args.executor, jobs=args.jobs)
    out, latest = _run_dir(args.out)
    import hashlib

    from harnesslab.bench.runner import PlannedRun, RunResult, run_planned
    from harnesslab.bench.suite import write_summary

    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p, _ in scenarios}
    planned = [PlannedRun(i, str(p), sha[p], v.name, seed, cli_set, str(out))
               for i, (p, _, v, seed) in enumerate(tasks)]
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
        _point_latest(latest, out)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        print(format_results(results, summary), end="")
        print(f"records and summary: {out}")
    # The summary also judges expectations across seeds ("fails in 3 of 5").
    return 0 if summary["expected"] else 1


def _cmd_bugs(args: argparse.Namespace) -> int:
    from harnesslab.bench.scenario import bundled_dir, scenario_paths
    from harnesslab.bench.zoo import format_kill_table, run_zoo
    from harnesslab.harness.bugs import BUGS

    if args.list:
        width = max(len(n) for n in BUGS)
        for b in BUGS.values():
            print(f"bug/{b.name.ljust(width)}  {b.mistake}")
        return 0
    paths = scenario_paths(args.paths or [str(bundled_dir())])
    if not paths:
        raise InputError("no scenario files found", field="PATH")
    for name in args.bug or []:
        if name not in BUGS:
            raise InputError(f"unknown bug {name!r}; the zoo has {', '.join(BUGS)}",
                             field="--bug")
    progress = None
    if not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        progress = tqdm(total=len(args.bug or BUGS), unit="bug", file=sys.stderr)
    results = run_zoo([str(p) for p in paths], args.bug, workers=args.workers,
                      exhaustive=args.all,
                      on_done=(lambda r: progress.update()) if progress is not None else None)
    if progress is not None:
        progress.close()
    if args.json:
        killed = sum(1 for r in results if r["kill"] is not None)
        print(json.dumps({"bugs": results, "killed": killed, "total": len(results),
                          "kill_rate": killed / len(results)}, ensure_ascii=False, indent=2))
    else:
        print(format_kill_table(results), end="")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from harnesslab.bench.record import Record
    from harnesslab.bench.show import show_call, show_overview

    rec = Record.load(args.record)
    print(show_call(rec, args.call) if args.call is not None else show_overview(rec), end="")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from harnesslab.bench.scenario import Scenario

    print(json.dumps(Scenario.model_json_schema(), ensure_ascii=False, indent=2))
    return 0


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harnesslab.bench.scenario import bundled_dir, scenario_paths
    from harnesslab.harness.registry import load_harness

    load_harness("agentscope")  # without the extra: one line with the install command
    from harnesslab.bench.fidelity import format_report, run_fidelity, to_json

    paths = scenario_paths(args.paths or [str(bundled_dir())])
    if not paths:
        raise InputError("no scenario files found", field="PATH")
    seeds = list(range(args.seed, args.seed + args.seeds))
    found = run_fidelity(paths, seeds=seeds, out_dir=Path(args.out), cli_set=_parse_sets(args.set),
                         variants=args.variant)
    if args.json:
        print(json.dumps(to_json(found), ensure_ascii=False, indent=2))
    else:
        print(format_report(found), end="")
        print(f"records: {args.out}/reference and {args.out}/agentscope")
    return 0 if all(c.agrees for c in found if c.not_applicable is None) else 1


def _add_fidelity(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    f = sub.add_parser(
        "fidelity", help="compare the reference harness with the real AgentScope, call by call",
        description="Run scenarios (default: the bundled suite) through the reference harness "
        "(prompts=agentscope) and through AgentScope 2.0.x (the agentscope extra) with the same "
        "settings; report per model call whether the estimates, the requests and the "
        "compaction points agree, per turn whether the outcomes do, and every difference. "
        "Variants AgentScope cannot express are reported as not applicable. Exit 1 on any "
        "difference, 2 on bad input.")
    f.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or folders")
    f.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a setting for both harnesses (repeatable), beneath each variant's own")
    f.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    f.add_argument("--seeds", type=_positive_int, default=1, help="how many seeds (default 1)")
    f.add_argument("--variant", action="append", metavar="NAME", help="only these variants")
    f.add_argument("--out", default="runs/fidelity", metavar="DIR",
                   help="where both runs' records go (default runs/fidelity)")
    f.add_argument("--json", action="store_true", help="print the comparison as JSON")
    f.set_defaults(func=_cmd_fidelity)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from harnesslab.bench.sweep import run_sweep
    from harnesslab.bench.sweep_spec import compose_spec

    spec = compose_spec(args.file, grid=args.grid or [], fixed=_parse_sets(args.set),
                        scenarios=args.scenario or [], variants=args.variant or [],
                        seeds=args.seeds, first_seed=args.seed)
    outcome = run_sweep(spec, args.out, executor=args.executor, jobs=args.jobs,
                        scheduler=args.scheduler, progress=sys.stderr.isatty())
    print(f"{outcome.runs} runs: {outcome.done} run now, {outcome.skipped} already done, "
          f"{outcome.errors} with an error; {outcome.seconds:.1f} s")
    print(f"table: {outcome.table}")
    if not args.no_report:
        _write_report([str(outcome.out)], args)
    return 1 if outcome.errors else 0


def _write_report(dirs: list[str], args: argparse.Namespace) -> None:
    if len(dirs) == 1:
        from harnesslab.report.html import write_report

        written = write_report(dirs[0], out=args.report_out, reports_root=args.reports)
        path = written.path
        print(written.headline)
    else:
        from harnesslab.report.compare import write_compare

        path, data = write_compare(dirs[0], dirs[1], out=args.report_out,
                                   reports_root=args.reports)
        print(data["headline"])
    print(f"report: {path}")
    if args.screenshots:
        from harnesslab.report.screens import screenshots

        for shot in screenshots(path).shots:
            print(f"screenshot: {shot}")


def _cmd_report(args: argparse.Namespace) -> int:
    if len(args.sweeps) > 2:
        raise InputError("expected one sweep folder, or two to compare", field="SWEEP")
    _write_report(args.sweeps, args)
    return 0


def _add_sweep_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    w = sub.add_parser(
        "sweep", help="sweep settings over scenarios and seeds; write the table and the report",
        description="Run a grid of settings (each cell applied beneath every variant's own, as "
        "--set) over scenarios, variants and seeds, on all cores by default; write one row per "
        "run to OUT/sweep.parquet (or .csv) and the HTML report to reports/<timestamp>/. "
        "With no arguments: strategy x trigger_ratio x context_size x 3 seeds on the "
        "scenarios where compaction happens. Rerunning skips finished runs.")
    w.add_argument("file", nargs="?", metavar="SWEEP_FILE", help="a sweep file (YAML)")
    w.add_argument("--grid", action="append", metavar="KEY=V1,V2",
                   help="a swept setting and its values (repeatable), e.g. "
                   "trigger_ratio=0.5,0.6,0.7")
    w.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a fixed setting for every cell (repeatable)")
    w.add_argument("--scenario", action="append", metavar="PATH",
                   help="scenario files, folders or bundled ids (repeatable)")
    w.add_argument("--variant", action="append", metavar="NAME", help="only these variants")
    w.add_argument("--seeds", type=_positive_int, help="how many seeds")
    w.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    w.add_argument("--executor", default="processes", metavar="NAME",
                   help="serial, processes (default: all cores) or dask")
    w.add_argument("--jobs", type=_positive_int, help="worker processes (default: all cores)")
    w.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="a Dask scheduler (with --executor dask)")
    w.add_argument("--out", default="runs/sweep", metavar="DIR",
                   help="the sweep folder: records, rows.jsonl, the table (default runs/sweep)")
    w.add_argument("--reports", default="reports", metavar="DIR",
                   help="where reports/<timestamp>/index.html goes (default reports)")
    w.add_argument("--report-out", metavar="DIR", help="write the report into exactly this folder")
    w.add_argument("--no-report", action="store_true", help="write the table only")
    w.add_argument("--screenshots", action="store_true",
                   help="also PNG screenshots of the report by headless chromium")
    w.set_defaults(func=_cmd_sweep)

    rp = sub.add_parser("report", help="write the HTML report of a sweep, or compare two",
                        description="One sweep folder: its HTML report. Two (A B): paired deltas "
                        "B - A on the runs they share, with an exact sign test.")
    rp.add_argument("sweeps", nargs="+", metavar="SWEEP", help="sweep folder(s)")
    rp.add_argument("--reports", default="reports", metavar="DIR",
                    help="where reports/<timestamp>/index.html goes (default reports)")
    rp.add_argument("--report-out", metavar="DIR", help="write into exactly this folder")
    rp.add_argument("--screenshots", action="store_true",
                    help="also PNG screenshots of the report by headless chromium")
    rp.set_defaults(func=_cmd_report)


def _cmd_sessions(args: argparse.Namespace) -> int:
    from harnesslab.bench import sessions

    if args.action == "list":
        print(sessions.list_sessions(args.store, as_json=args.json), end="")
        return 0
    if args.session is None:
        raise InputError(f"sessions {args.action} needs a SESSION id", field="SESSION")
    if args.action == "show":
        print(sessions.show_session(args.store, args.session, as_json=args.json), end="")
        return 0
    text, ok = sessions.resume_session(args.store, args.session, as_json=args.json,
                                       settings=_parse_sets(args.set))
    print(text, end="")
    return 0 if ok else 1


def _add_sessions(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ss = sub.add_parser("sessions", help="list, show or resume the sessions of a harness's store",
                        description="Read a session store (a run's <record>.work folder or its "
                        "store/): list its sessions, show one's metadata, rollout and state, or "
                        "resume one on a fresh reference harness and check that it restores the "
                        "rollout's state (exit 1 when it does not, or the store fails its "
                        "integrity check).")
    ss.add_argument("action", choices=["list", "show", "resume"])
    ss.add_argument("store", metavar="STORE_DIR")
    ss.add_argument("session", metavar="SESSION", nargs="?", help="a session id (show, resume)")
    ss.add_argument("--json", action="store_true", help="print JSON")
    ss.add_argument("--set", action="append", metavar="KEY=VALUE", help="resume: a harness "
                    "setting the session was served with (repeatable), e.g. strategy=pinned")
    ss.set_defaults(func=_cmd_sessions)


def build_parser() -> argparse.ArgumentParser:
    from harnesslab import __version__

    p = _Parser(prog="harnesslab", description="A test-bench for the context management of "
                "LLM agent harnesses.")
    p.add_argument("--version", action="version", version=f"harnesslab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
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
    r.add_argument("--seeds", type=_positive_int, default=1, help="how many seeds (default 1)")
    r.add_argument("--variant", action="append", metavar="NAME", help="only these variants")
    r.add_argument("--out", metavar="DIR", help="a new or empty folder for the records and "
                   "summary.json (default: a new runs/<timestamp>/, with runs/latest pointing at "
                   "it)")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.add_argument("--executor", default="processes", choices=("serial", "processes"),
                   help="serial: one run after another here; processes (default): spread "
                   "over local processes, as sweeps are (the same records and output)")
    r.add_argument("--jobs", type=_positive_int, help="worker processes (default: all cores)")
    r.set_defaults(func=_cmd_run)

    b = sub.add_parser("bugs", help="run the suite against the bug zoo and print the kill table",
                       description="Each zoo harness is the reference harness with one realistic "
                       "context-management mistake. A bug is killed when a variant's outcome "
                       "is not the expected one; controls that reject every call do not count.")
    b.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or folders "
                   "(default: the bundled suite)")
    b.add_argument("--bug", action="append", metavar="NAME", help="only these bugs")
    b.add_argument("--workers", type=_positive_int, default=None,
                   help="processes (default: every core)")
    b.add_argument("--list", action="store_true", help="list the zoo: each bug and the "
                   "real-world mistake it models")
    b.add_argument("--all", action="store_true", help="run every scenario for every bug and "
                   "count every surprise (default: a bug stops at its first kill)")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(func=_cmd_bugs)

    s = sub.add_parser("show", help="print what the model saw at a call of a record")
    s.add_argument("record", metavar="RECORD")
    s.add_argument("--call", type=int, metavar="N", help="the model call to show")
    s.set_defaults(func=_cmd_show)

    sc = sub.add_parser("schema", help="print the scenario JSON Schema")
    sc.set_defaults(func=_cmd_schema)
    _add_fidelity(sub)
    _add_sweep_parsers(sub)
    from harnesslab.cli_wire import add_wire_parsers

    add_wire_parsers(sub)
    _add_sessions(sub)
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
