"""The suite's power, measured: run the scenario suite against every harness of the bug zoo
(``harnesslab.harnesses.bugs``) and report, per bug, the first finding that kills it.

The kill rule is ``study.kills``'s, shared with the mutation report: a bug is killed when a
check that should pass fails, or a cost the scenario declares gets worse than the reference
harness's on the same run. A control's expected failure that passes is reported apart
("changed a control") and never counted. Variants that reject every call (``REJECT_ALL``) never
count: they fail every check at once and say nothing about the bug.
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

from harnesslab.judge.checks import CheckOutcome
from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Variant
from harnesslab.study.kills import REJECT_ALL, findings

__all__ = ["REJECT_ALL", "BugResult", "Kill", "format_kill_table", "run_zoo", "surprises"]


@dataclass(frozen=True)
class Kill:
    scenario: str
    variant: str
    check: str      # the check id, or cost.<metric>
    step: int | None
    how: str        # "failed" (a check that should pass), "protocol" (a request rejected as
    #                 malformed) or "cost" (a declared cost regressed)
    detail: str


@dataclass(frozen=True)
class BugResult:
    bug: str
    mistake: str
    kill: Kill | None
    kills: int      # killing findings over the runs made
    errors: list[str]
    controls: list[str] = field(default_factory=list)  # scenario/variant/check it made pass
    # Variants that do not apply to the bug's harness (the reason): neither kills nor errors.
    not_applicable: list[str] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return self.kill is not None


def surprises(checks: Sequence[CheckOutcome], variant: Variant) -> list[tuple[str, int | None,
                                                                                str, str]]:
    """(check, step, how, detail) for every check whose outcome the variant did not expect, as
    ``checks.verdict`` judges one run (a check expected to fail only at a rate is free):
    should-pass failures first, then controls that passed."""
    return [(f.check, f.step, f.how, f.detail) for f in findings(checks, variant)]


def _run_bug(bug: str, paths: Sequence[str], exhaustive: bool = False) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="harnesslab-zoo-"))
    first: Kill | None = None
    kills, errors, controls, na = 0, [], [], []
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
                ref = None
                if sc.cost:
                    # The reference on the same variant and seed: what the declared cost is
                    # compared with.
                    ref = run_variant(sc, v, out_dir=workdir / "reference").metrics
                found = findings(r.checks, v, r.metrics, ref, sc.cost)
                controls += [f"{sc.id}/{v.name}/{f.check}" for f in found if not f.kills]
                killing = [f for f in found if f.kills]
                kills += len(killing)
                if killing and first is None:
                    f = killing[0]
                    first = Kill(sc.id, v.name, f.check, f.step, f.how, f.detail)
                    if not exhaustive:
                        return _result(bug, first, kills, errors, controls, na)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _result(bug, first, kills, errors, controls, na)


def _result(bug: str, first: Kill | None, kills: int, errors: list[str],
            controls: list[str], na: list[str]) -> dict[str, Any]:
    from harnesslab.harnesses.bugs import BUGS

    return asdict(BugResult(bug, BUGS[bug].mistake, first, kills, errors, controls, na))


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
    rows = [["bug", "killed by (scenario / variant / check, turn)", "kills", "changed controls"]]
    # Without --all a bug stops at its first kill, so the counts cover the runs up to it.
    for r in results:
        k = r["kill"]
        where = "SURVIVED" if k is None else (
            f"{k['scenario']} / {k['variant']} / {k['check']}"
            + (f", turn s{k['step']}" if k["step"] else "") + f" ({k['how']})")
        rows.append([r["bug"], where, str(r["kills"]), str(len(r.get("controls", [])))])
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    killed = sum(1 for r in results if r["kill"] is not None)
    lines.append(f"kill rate: {killed}/{len(results)} = {killed / len(results):.0%} (killed: a "
                 "check that should pass failed, a request was rejected as malformed, or a "
                 "declared cost regressed; a control that passed is not a kill; reject-all "
                 "controls not counted)")
    for r in results:
        for e in r["errors"]:
            lines.append(f"  ! {r['bug']}: run error {e}")
    for r in results:
        for e in r.get("not_applicable", []):
            lines.append(f"  - {r['bug']}: not applicable {e}")
    return "\n".join(lines) + "\n"
