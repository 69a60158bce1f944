"""``harnesslab sweep`` and ``report``: grids of settings, their table and the HTML report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harnesslab.cli.common import parse_sets, positive_int
from harnesslab.errors import InputError


def _folder_arg(value: str | None, field: str) -> None:
    """A folder option that names a file (or sits under one) is refused before anything
    runs, so that no finished sweep is left without its report."""
    if value is None:
        return
    p = Path(value)
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise InputError("is a file; expected a folder" if q == p else
                                 f"{q} is a file; expected a folder", field=field, file=value)
            break


def _cmd_sweep(args: argparse.Namespace) -> int:
    from harnesslab.sweep.plan import run_sweep
    from harnesslab.sweep.spec import compose_spec

    _folder_arg(args.out, "--out")
    if not args.no_report:
        _folder_arg(args.reports, "--reports")
        _folder_arg(args.report_out, "--report-out")
    spec = compose_spec(args.file, grid=args.grid or [], fixed=parse_sets(args.set),
                        scenarios=args.scenario or [], variants=args.variant or [],
                        seeds=args.seeds, first_seed=args.seed)
    outcome = run_sweep(spec, args.out, executor=args.executor, jobs=args.jobs,
                        scheduler=args.scheduler,
                        progress="bar" if sys.stderr.isatty() else "lines")
    redone = f", {outcome.redone} done again (their records were not whole)" \
        if outcome.redone else ""
    print(f"{outcome.runs} runs: {outcome.done} run now, {outcome.skipped} already done"
          f"{redone}, {outcome.errors} with an error; {outcome.seconds:.1f} s")
    print(f"table: {outcome.table}")
    if outcome.interrupted:
        left = outcome.runs - outcome.skipped - outcome.done
        print(f"harnesslab sweep: interrupted: {outcome.skipped + outcome.done} of "
              f"{outcome.runs} runs finished and kept in the table, {left} left; to resume, "
              f"run the same command again (finished runs are skipped)", file=sys.stderr)
        return 130
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


def add_sweep_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    w = sub.add_parser(
        "sweep", help="sweep settings over scenarios and seeds; write the table and the report",
        description="Run a grid of settings (each cell applied beneath every variant's own, as "
        "--set) over scenarios, variants and seeds, on all cores by default; write one row per "
        "run to OUT/sweep.parquet (or .csv) and the HTML report to reports/<timestamp>/. "
        "With no arguments: strategy x trigger_ratio x context_size x 3 seeds on the "
        "scenarios where compaction happens. Rerunning skips finished runs.")
    w.add_argument("file", nargs="?", metavar="SWEEP_FILE", help="a sweep file (YAML)")
    w.add_argument("--grid", action="append", metavar="KEY=V1,V2",
                   help="a swept setting and its values (repeatable; a key given twice "
                   "sweeps the union of its values), e.g. trigger_ratio=0.5,0.6,0.7")
    w.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a fixed setting for every cell (repeatable)")
    w.add_argument("--scenario", action="append", metavar="PATH",
                   help="scenario files, folders or bundled ids (repeatable)")
    w.add_argument("--variant", action="append", metavar="NAME", help="only these variants")
    w.add_argument("--seeds", type=positive_int, help="how many seeds")
    w.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    w.add_argument("--executor", default="processes", metavar="NAME",
                   help="serial, processes (default: all cores) or dask")
    w.add_argument("--jobs", type=positive_int, help="worker processes (default: all cores)")
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
