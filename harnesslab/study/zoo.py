"""The suite's power, measured: run the scenario suite against every harness of the bug zoo
(``harnesslab.harnesses.bugs``) and report, per bug, the first check that kills it.

A bug is killed when a variant's outcome differs from the one the variant expects: a check
expected to pass fails, or a check a control expects to fail passes. Variants that reject
every call (``REJECT_ALL``) never count: they fail every check at once and say nothing about
the bug.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnesslab.judge.checks import CheckOutcome, matching
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Variant

REJECT_ALL = frozenset({"service-rejects-all", "window-too-small"})


@dataclass(frozen=True)
class Kill:
    scenario: str
    variant: str
    check: str      # the check id, or the expect_fail entry that passed
    step: int | None
    how: str        # "failed" (expected to pass) or "passed" (a control expected it to fail)
    detail: str


@dataclass(frozen=True)
class BugResult:
    bug: str
    mistake: str
    kill: Kill | None
    kills: int      # surprising checks over the whole suite
    errors: list[str]
    # Variants that do not apply to the bug's harness (the reason): neither kills nor errors.
    not_applicable: list[str] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return self.kill is not None


def surprises(checks: Sequence[CheckOutcome], variant: Variant) -> list[tuple[str, int | None,
                                                                                str, str]]:
    """(check, step, how, detail) for every check whose outcome the variant did not expect, as
    ``checks.verdict`` judges one run (a check expected to fail only at a rate is free)."""
    out: list[tuple[str, int | None, str, str]] = []
    covered = {c.id for r in variant.fail_rates for c in matching(list(checks), r.check)}
    for want in variant.fail_always:
        hits = matching(list(checks), want)
        covered.update(c.id for c in hits)
        if not any(not c.passed for c in hits):
            step = hits[0].step if "." in want and hits else None
            out.append((want, step, "passed", "expected to fail, but it passed"))
    out += [(c.id, c.step, "failed", c.detail) for c in checks
            if not c.passed and c.id not in covered]
    return out


def _run_bug(bug: str, paths: Sequence[str], exhaustive: bool = False) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="harnesslab-zoo-"))
    first: Kill | None = None
    kills, errors, na = 0, [], []
    try:
        for p in paths:
            sc = load_scenario(p)
            for v in sc.variants:
                if v.name in REJECT_ALL:
                    continue
                r = run_variant(sc, v, out_dir=workdir, cli_set={"harness": f"bug/{bug}"})
                if r.not_applicable:
                    na.append(f"{sc.id}/{v.name}: {(r.error or '').removeprefix('NotApplicable: ')}")
                    continue
                if r.error is not None:
                    errors.append(f"{sc.id}/{v.name}: {r.error}")
                    continue
                found = surprises(r.checks, v)
                kills += len(found)
                if found and first is None:
                    check, step, how, detail = found[0]
                    first = Kill(sc.id, v.name, check, step, how, detail)
                    if not exhaustive:
                        return _result(bug, first, kills, errors, na)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _result(bug, first, kills, errors, na)


def _result(bug: str, first: Kill | None, kills: int, errors: list[str],
            na: list[str]) -> dict[str, Any]:
    from harnesslab.harnesses.bugs import BUGS

    return asdict(BugResult(bug, BUGS[bug].mistake, first, kills, errors, na))


def run_zoo(paths: Iterable[str], bugs: Sequence[str] | None = None, *, workers: int | None = None,
            exhaustive: bool = False,
            on_done: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Every bug (or the named ones) through every scenario file; results in zoo order. A bug
    stops at its first kill unless ``exhaustive`` (then ``kills`` counts every surprise)."""
    from harnesslab.harnesses.bugs import BUGS

    names = list(bugs) if bugs else list(BUGS)
    files = [str(p) for p in paths]
    workers = workers or os.cpu_count() or 1
    results: dict[str, dict[str, Any]] = {}
    if workers == 1:
        for n in names:
            results[n] = _run_bug(n, files, exhaustive)
            if on_done:
                on_done(results[n])
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_run_bug, n, files, exhaustive): n for n in names}
            from concurrent.futures import as_completed

            for f in as_completed(futures):
                results[futures[f]] = f.result()
                if on_done:
                    on_done(results[futures[f]])
    return [results[n] for n in names]


def format_kill_table(results: Sequence[dict[str, Any]]) -> str:
    rows = [["bug", "killed by (scenario / variant / check, turn)", "surprises"]]
    # Without --all a bug stops at its first kill, so "surprises" counts up to that run.
    for r in results:
        k = r["kill"]
        where = "SURVIVED" if k is None else (
            f"{k['scenario']} / {k['variant']} / {k['check']}"
            + (f", turn s{k['step']}" if k["step"] else "") + f" ({k['how']})")
        rows.append([r["bug"], where, str(r["kills"])])
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    killed = sum(1 for r in results if r["kill"] is not None)
    lines.append(f"kill rate: {killed}/{len(results)} = {killed / len(results):.0%} "
                 "(reject-all controls not counted)")
    for r in results:
        for e in r["errors"]:
            lines.append(f"  ! {r['bug']}: run error {e}")
    for r in results:
        for e in r.get("not_applicable", []):
            lines.append(f"  - {r['bug']}: not applicable {e}")
    return "\n".join(lines) + "\n"
