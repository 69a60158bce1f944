"""``harnesslab bugs``, ``fidelity`` and ``sessions``: the suite against the bug zoo, the reference
harness against the real AgentScope, a harness's session store.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Any

from harnesslab.cli.common import parse_sets, positive_int
from harnesslab.errors import InputError


def _cmd_bugs(args: argparse.Namespace) -> int:
    from harnesslab.harnesses.bugs import BUGS
    from harnesslab.scenario.loader import bundled_dir, scenario_paths
    from harnesslab.study.zoo import format_kill_table, run_zoo

    if args.mutants:
        return _cmd_mutants(args)
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


class _Lines:
    """Progress for a log (stderr not a terminal): a line every minute or every tenth of the
    mutants, with the counts by status so far and, once mutants run, the wall time left at
    their rate (the ones settled without a run, equivalent, out of scope or unreached, come
    first and cost next to nothing)."""

    EVERY_SECONDS = 60.0
    FREE = frozenset({"equivalent", "out-of-scope", "unreached"})

    def __init__(self, total: int) -> None:
        self.total, self.done, self.ran, self.by = total, 0, 0, Counter[str]()
        self._t0 = self._last = self._runs_from = time.monotonic()
        self._step, self._last_done = max(1, total // 10), 0

    def update(self, status: str) -> None:
        now = time.monotonic()
        self.done += 1
        self.by[status] += 1
        if status in self.FREE:
            self._runs_from = now  # the planning pass settles these before any run ends
        else:
            self.ran += 1
        if self.done == self.total or now - self._last >= self.EVERY_SECONDS \
                or self.done - self._last_done >= self._step:
            counts = ", ".join(f"{n} {k}" for k, n in sorted(self.by.items()))
            left = ""
            if self.ran and self.done < self.total:
                rate = (now - self._runs_from) / self.ran
                left = f", about {rate * (self.total - self.done) / 60:.0f} min left"
            print(f"mutants: {self.done}/{self.total} ({counts}); "
                  f"{(now - self._t0) / 60:.1f} min{left}", file=sys.stderr, flush=True)
            self._last, self._last_done = now, self.done

    def close(self) -> None:
        pass


def _cmd_mutants(args: argparse.Namespace) -> int:
    import resource
    from dataclasses import asdict

    from harnesslab.scenario.loader import bundled_dir, scenario_paths
    from harnesslab.study import mutants as mut

    t0, w0 = time.process_time(), time.monotonic()
    paths = scenario_paths(args.paths or [str(bundled_dir())])
    if not paths:
        raise InputError("no scenario files found", field="PATH")
    every = mut.enumerate_mutants()
    if args.mutant:
        known = {m.id: m for m in every}
        for i in args.mutant:
            if i not in known:
                raise InputError(f"no mutant {i!r} (ids are PATH:LINE:OPERATOR:OCCURRENCE, as "
                                 "the report prints them)", field="--mutant")
        chosen = [known[i] for i in args.mutant]
    else:
        chosen = mut.stratified_sample(every, args.sample, args.sample_seed)
    equivalents = mut.load_equivalents()
    tty = sys.stderr.isatty()
    if not tty:
        print(f"mutants: {len(chosen)} chosen; the coverage map of {len(paths)} scenario files "
              "first (cached after its first run)", file=sys.stderr, flush=True)
    cmap = mut.coverage_map(paths)
    plan = time.process_time() - t0
    progress: Any = None
    if not args.json and tty:
        from tqdm import tqdm

        progress = tqdm(total=len(chosen), unit="mutant", file=sys.stderr)
    elif not tty:
        progress = _Lines(len(chosen))
    results = mut.run_mutants(chosen, cmap, workers=args.workers or 2, equivalents=equivalents,
                              on_done=(lambda r: progress.update(r.status))
                              if progress is not None else None)
    if progress is not None:
        progress.close()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {"total": time.process_time() - t0 + kids.ru_utime + kids.ru_stime,
           "planning and coverage": plan,
           "mutants": kids.ru_utime + kids.ru_stime, "wall": time.monotonic() - w0}
    s = mut.score(results)
    if args.json:
        print(json.dumps({"mutants": [asdict(r) for r in results], "killed": s.killed,
                          "total": s.total, "equivalent": s.equivalent, "score": s.value,
                          "cpu_seconds": cpu, "enumerated": len(every)},
                         ensure_ascii=False, indent=2))
    else:
        print(f"{len(chosen)} of {len(every)} mutants (cosmic-ray operators over "
              f"{len(mut.MODULES)} harness modules; sample seed {args.sample_seed})")
        print(mut.format_report(results, cpu), end="")
    if args.fail_under is not None and s.value * 100 < args.fail_under:
        print(f"mutation score {s.value:.1%} is below --fail-under {args.fail_under:g}%",
              file=sys.stderr)
        return 1
    return 0


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harnesslab.harnesses.registry import load_harness
    from harnesslab.scenario.loader import bundled_dir, scenario_paths

    paths = scenario_paths(args.paths or [str(bundled_dir())])
    if not paths:
        raise InputError("no scenario files found", field="PATH")
    seeds = list(range(args.seed, args.seed + args.seeds))
    if args.against == "codex-cli":
        from harnesslab.study import fidelity_turns as ft

        pair = ft.codex_pair()
        turns = ft.run_turn_fidelity(paths, pair, seeds=seeds, out_dir=Path(args.out),
                                     cli_set=parse_sets(args.set), variants=args.variant)
        if args.json:
            print(json.dumps(ft.turns_to_json(turns), ensure_ascii=False, indent=2))
        else:
            print(ft.format_turn_report(turns, pair), end="")
            print(f"records: {args.out}/reference and {args.out}/{pair.name}")
        return 0 if all(c.agrees for c in turns if c.not_applicable is None) else 1
    load_harness("agentscope")  # without the extra: one line with the install command
    from harnesslab.study.fidelity import format_report, run_fidelity, to_json

    found = run_fidelity(paths, seeds=seeds, out_dir=Path(args.out), cli_set=parse_sets(args.set),
                         variants=args.variant)
    if args.json:
        print(json.dumps(to_json(found), ensure_ascii=False, indent=2))
    else:
        print(format_report(found), end="")
        print(f"records: {args.out}/reference and {args.out}/agentscope")
    return 0 if all(c.agrees for c in found if c.not_applicable is None) else 1


def add_fidelity_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    f = sub.add_parser(
        "fidelity", help="compare the reference harness with the real AgentScope (call by call) "
        "or the real Codex CLI (turn by turn)",
        description="Run scenarios (default: the bundled suite) through the reference harness "
        "(prompts=agentscope) and through AgentScope 2.0.x (the agentscope extra) with the same "
        "settings; report per model call whether the estimates, the requests and the "
        "compaction points agree, per turn whether the outcomes do, and every difference. "
        "Variants AgentScope cannot express are reported as not applicable. With --against "
        "codex-cli: the reference harness's codex strategy against the real Codex CLI, turn by "
        "turn. Exit 1 on any difference, 2 on bad input.")
    f.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or folders")
    f.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a setting for both harnesses (repeatable), beneath each variant's own")
    f.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    f.add_argument("--seeds", type=positive_int, default=1, help="how many seeds (default 1)")
    f.add_argument("--variant", action="append", metavar="NAME", help="only these variants")
    f.add_argument("--out", default="runs/fidelity", metavar="DIR",
                   help="where both runs' records go (default runs/fidelity)")
    f.add_argument("--json", action="store_true", help="print the comparison as JSON")
    f.add_argument("--against", choices=("agentscope", "codex-cli"), default="agentscope",
                   help="agentscope (default): the reference harness (prompts=agentscope) "
                   "against AgentScope 2.0.x, call by call; codex-cli: the reference harness's "
                   "codex strategy against the real Codex CLI (harness=codex-cli, node and "
                   "the npm package), turn by turn: compactions, handoff, the request after, "
                   "the answer, the checks")
    f.set_defaults(func=_cmd_fidelity)


def _cmd_sessions(args: argparse.Namespace) -> int:
    from harnesslab.study import sessions

    if args.action == "list":
        out = sessions.list_sessions(args.store, as_json=args.json)
    elif args.session is None:
        raise InputError(f"sessions {args.action} needs a SESSION id", field="SESSION")
    elif args.action == "show":
        out = sessions.show_session(args.store, args.session, as_json=args.json)
    else:
        out = sessions.resume_session(args.store, args.session, as_json=args.json,
                                      settings=parse_sets(args.set))
    for note in out.notes:
        print(f"harnesslab sessions: {note}", file=sys.stderr)
    print(out.text, end="")
    return 0 if out.ok else 1


def add_sessions_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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


def add_bugs_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    b = sub.add_parser("bugs", help="run the suite against the bug zoo and print the kill table",
                       description="Each zoo harness is the reference harness with one realistic "
                       "context-management mistake. A bug is killed when a check that should "
                       "pass fails, when the service rejects more of its requests as malformed "
                       "than the reference's, or when a cost the scenario declares gets worse "
                       "than the reference's by more than its margin; a control's expected "
                       "failure that passes is reported apart (changed a control), never a kill, "
                       "and controls that reject every call do not count.")
    b.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or folders "
                   "(default: the bundled suite)")
    b.add_argument("--bug", action="append", metavar="NAME", help="only these bugs")
    b.add_argument("--workers", type=positive_int, default=None,
                   help="processes (default: every core)")
    b.add_argument("--list", action="store_true", help="list the zoo: each bug and the "
                   "real-world mistake it models")
    b.add_argument("--all", action="store_true", help="run every scenario for every bug and "
                   "count every surprise (default: a bug stops at its first kill)")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.add_argument("--mutants", action="store_true", help="mutation testing instead of the "
                   "zoo: cosmic-ray mutates the reference harness, each mutant runs the "
                   "variants coverage says reach its line, to its first kill (the dev extra; "
                   "docs/suite-power.md)")
    b.add_argument("--sample", type=int, default=200, metavar="N", help="--mutants: how many "
                   "mutants, stratified by module (default 200; 0: every mutant)")
    b.add_argument("--sample-seed", type=int, default=0, metavar="S",
                   help="--mutants: the sample's seed (default 0)")
    b.add_argument("--mutant", action="append", metavar="ID", help="--mutants: only these "
                   "mutants, by the id the report prints (repeatable)")
    b.add_argument("--fail-under", type=float, default=None, metavar="PCT", help="--mutants: "
                   "exit 1 when the score is below PCT percent")
    b.set_defaults(func=_cmd_bugs)
