"""The pytest plugin (entry point ``pytest11: harnesslab``; the only module that imports pytest):
scenario files as test items, one per scenario x variant, with the harness, settings, seeds,
gate and baseline from ``[tool.harnesslab]`` (``harnesslab.ci.config``).

- A ``.yaml``/``.yml`` file is collected only when it is a scenario: its top-level keys include
  ``id``, ``lexicon``, ``steps`` and ``variants``. Other YAML files are left alone.
- An ordinary variant's item passes when its checks pass (over seeds: the gate of
  ``harnesslab.ci.gate``). A control's item (a variant with ``expect_fail``) is marked
  ``xfail(strict=True, raises=ExpectedFailure)`` and run without its expected-failure list:
  it raises :class:`ExpectedFailure` when exactly the listed checks failed (xfailed: the control
  holds); it returns normally when every check passed (strict XPASS: the control no longer
  fails, a failure); and any other outcome (a check it does not list failed, or a listed check
  passed while others failed, or the run crashed) raises :class:`ScenarioFailure`, which the
  xfail does not accept, so it is an ordinary failure with its report.
- ``--harnesslab-seeds K`` runs each item with K seeds; ``--harnesslab-save-baseline FILE`` and
  ``--harnesslab-baseline FILE`` save and compare per-seed metrics (``harnesslab.ci.baseline``).
- The ``harnesslab`` fixture runs scenarios from hand-written tests (:class:`HarnessLab`).

``-p no:harnesslab`` disables all of it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harnesslab.ci.baseline import BaselineItem, Change, compare_item, item_of, save_baseline
from harnesslab.ci.config import CIOptions, CIRun, resolve_ci
from harnesslab.ci.gate import (
    declared_line,
    display_path,
    explain,
    failure_text,
    judge,
    seed_label,
)
from harnesslab.errors import InputError
from harnesslab.harnesses.registry import harness_label
from harnesslab.run.runner import RunResult, harness_spec, run_variant
from harnesslab.run.suite import rate_unexpected
from harnesslab.scenario.loader import load_scenario
from harnesslab.scenario.schema import Scenario, Variant
from harnesslab.scenario.settings import resolve_settings


class ExpectedFailure(Exception):
    """A control failed exactly as designed: the only exception its strict xfail accepts."""


class ScenarioFailure(Exception):
    """An item failed; the message is its report."""


_TOP_KEY = re.compile(r"^(id|lexicon|steps|variants)\s*:", re.MULTILINE)
_KEYS = frozenset({"id", "lexicon", "steps", "variants"})


def is_scenario_file(path: Path) -> bool:
    """The cheap check: the top-level keys of a scenario (textually, so a scenario with a YAML
    error is still collected and reported; else parsed, for flow-style files)."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if {m.group(1) for m in _TOP_KEY.finditer(text)} >= _KEYS:
        return True
    if not all(k in text for k in _KEYS):
        return False
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and set(data) >= _KEYS


@dataclass
class _State:
    """One session's configuration and what its items reported (for the summary)."""

    run: CIRun
    cwd: Path
    items: list[BaselineItem] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # the bench's fault: reported apart
    not_applicable: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # an extra the variant requires is missing
    ran: int = 0
    saved: int = 0


STATE = pytest.StashKey[_State]()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("harnesslab", "harnesslab: scenarios as tests")
    g.addoption("--harnesslab-config", metavar="FILE", help="a TOML file with the harnesslab "
                "keys (default: [tool.harnesslab] in the rootdir's pyproject.toml)")
    g.addoption("--harnesslab-seeds", type=_positive_int, metavar="K",
                help="run each scenario variant with seeds 0..K-1 (default: the config's seeds)")
    g.addoption("--harnesslab-set", action="append", default=[], metavar="KEY=VALUE",
                help="a setting for every variant, over the config's settings and beneath each "
                "variant's own (repeatable), e.g. strategy=truncate")
    g.addoption("--harnesslab-out", metavar="DIR", help="where run records go (default "
                ".harnesslab/pytest under the rootdir)")
    g.addoption("--harnesslab-baseline", metavar="FILE", help="compare each item's metrics with "
                "this baseline; regressions beyond the tolerance fail")
    g.addoption("--harnesslab-save-baseline", metavar="FILE",
                help="save each item's per-seed metrics as a baseline")


def _under(p: Path, root: Path) -> bool:
    return p == root or root in p.parents


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "harnesslab: a scenario variant collected by harnesslab")
    opt = config.option
    cwd = Path(config.invocation_params.dir)
    options = CIOptions(opt.harnesslab_config, opt.harnesslab_seeds, opt.harnesslab_set,
                        opt.harnesslab_out, opt.harnesslab_baseline, opt.harnesslab_save_baseline)
    try:
        run = resolve_ci(options, Path(config.rootpath), cwd)
    except InputError as e:
        raise pytest.UsageError(str(e)) from None
    state = config.stash[STATE] = _State(run, cwd)
    # Configured scenarios join a run that names no paths from the rootdir (where pytest uses
    # testpaths too), unless one of its paths holds them already.
    if state.run.scenario_paths and config.args_source != pytest.Config.ArgsSource.ARGS \
            and cwd.resolve() == Path(config.rootpath).resolve():
        given = [(cwd / a).resolve() for a in config.args]
        config.args.extend(str(p) for p in state.run.scenario_paths
                           if not any(_under(p, g) for g in given))


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE, None)
    if state is None or state.run.config_file is None:
        return None
    harness = state.run.cli_set.get("harness", "reference")
    return [f"harnesslab: {display_path(Path(state.run.config_file), state.cwd)}, "
            f"harness {harness}, seeds {seed_label(state.run.seeds)}"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_scenario_file(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _variant_lines(path: Path) -> list[int]:
    """The 0-based line where each variant starts (where a report points)."""
    import yaml

    node = yaml.compose(path.read_text(encoding="utf-8"))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "variants" and isinstance(value, yaml.SequenceNode):
                return [v.start_mark.line for v in value.value]
    return []


class ScenarioFile(pytest.File):
    """A scenario file: one item per variant."""

    def collect(self) -> Iterator[ScenarioItem]:
        state = self.config.stash[STATE]
        sc = load_scenario(self.path)
        lines = _variant_lines(self.path)
        for i, v in enumerate(sc.variants):
            try:
                resolve_settings(sc, v, state.run.cli_set)
            except InputError as e:
                raise InputError(f"{e.field}: {e.problem}" if e.field else e.problem,
                                 file=str(self.path),
                                 field=f"variant {v.name} with the configured settings") from None
            yield ScenarioItem.from_parent(self, name=v.name, scenario=sc, variant=v,
                                           line=lines[i] if i < len(lines) else 0)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, InputError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ScenarioItem(pytest.Item):
    """One scenario variant, run over the session's seeds."""

    def __init__(self, *, scenario: Scenario, variant: Variant, line: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.variant = variant
        self.line = line
        self.xpass_note = ""
        self.add_marker("harnesslab")
        self.extra_keyword_matches.update(scenario.tags)
        # A control: checks that must fail in every seed (a check expected to fail only at a
        # rate across seeds may go either way in one run, as the verdict judges it).
        if variant.fail_always:
            about = variant.description.removeprefix("control:").strip()
            why = f" ({about})" if about else ""
            self.add_marker(pytest.mark.xfail(
                strict=True, raises=ExpectedFailure,
                reason=f"control: {', '.join(variant.fail_always)} must fail{why}"))

    def runtest(self) -> None:
        state = self.config.stash[STATE]
        sc, v = self.scenario, self.variant
        results = [run_variant(sc, v, seed=s, source=self.path, out_dir=state.run.out,
                               cli_set=state.run.cli_set) for s in state.run.seeds]
        state.ran += 1
        na = [r for r in results if r.not_applicable]
        if na and na[0].skipped:
            # Not run here: an extra it requires is missing (the reason names the install).
            state.skipped.append(f"{self.nodeid}: {na[0].skipped}")
            raise pytest.skip.Exception(f"skipped: {na[0].skipped}", _use_item_location=True)
        if na and len(na) == len(results):
            # Neither a pass nor a failure: the variant asks for what this harness has not.
            why = (na[0].error or "").removeprefix("NotApplicable: ")
            state.not_applicable.append(f"{self.nodeid}: {why}")
            label = na[0].settings.get("harness", "this harness")
            raise pytest.skip.Exception(f"not applicable to {label}: {why}",
                                        _use_item_location=True)
        # Seeds that did not apply (a summary some seeds never asked for) are left out.
        results = [r for r in results if not r.not_applicable] or results
        verdict = judge(results, bool(v.fail_always), state.run.gate)
        self.user_properties += [("harnesslab_pass_rate", f"{verdict.pass_rate:.2f}"),
                                 ("harnesslab_seeds", seed_label(state.run.seeds))]
        if results[0].record is not None:
            self.user_properties.append(("harnesslab_record",
                                         display_path(results[0].record, state.cwd)))
        state.items.append(item_of(results))
        gating = [c for c in self._compare(state, results) if c.gating]
        if verdict.status == "quarantined":
            state.quarantined.append(f"{self.nodeid}: {verdict.summary}")
            # Located at the item (as a skip marker's is), not at this line.
            raise pytest.skip.Exception(f"harnesslab quarantine: {verdict.summary}",
                                        _use_item_location=True)
        unread = sorted({u for r in results for u in r.checks_unreadable})
        if unread and verdict.status != "failed" and not gating:
            # The bench could not read what the harness sent: no verdict on the harness.
            state.unreadable += [f"{self.nodeid}: {u}" for u in unread]
            raise pytest.skip.Exception(f"harnesslab could not read this request: "
                                        f"{'; '.join(unread)}", _use_item_location=True)
        parts = []
        if verdict.status == "failed":
            parts.append(failure_text(sc, v, results, verdict, state.cwd))
        parts += rate_unexpected(results)  # checks expected to fail at a rate, across seeds
        if gating:
            where = display_path(state.run.baseline_path, state.cwd) if state.run.baseline_path else ""
            parts.append(f"regressions against the baseline {where}:")
            parts += ["  " + c.line() for c in gating]
        if parts:
            raise ScenarioFailure("\n".join(parts))
        if v.fail_always and verdict.status == "ok":
            raise ExpectedFailure(f"{sc.id} / {v.name}: {verdict.summary}")
        # "control_passed" returns: the strict xfail reports it as a failure (XPASS(strict)),
        # with this note added by pytest_runtest_makereport.
        where = display_path(results[0].record, state.cwd) if results[0].record else "-"
        seeds = ("seeds " if len(state.run.seeds) > 1 else "seed ") + seed_label(state.run.seeds)
        self.xpass_note = "\n".join([
            f"{sc.id} / {v.name}: every check passed ({seeds}), so this control no longer "
            "shows the failure it is meant to show", *declared_line(results[0]),
            f"record: {where}"])

    def _compare(self, state: _State, results: list[RunResult]) -> list[Change]:
        if state.run.baseline is None:
            return []
        base = state.run.baseline.by_key().get((self.scenario.id, self.variant.name))
        if base is None:
            state.new.append(f"{self.scenario.id}/{self.variant.name}")
            return []
        changes = compare_item(base, results, state.run.tolerance)
        state.changes += changes
        return changes

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailure | ExpectedFailure | InputError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line, f"{self.scenario.id} / {self.variant.name}"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # pytest's strict XPASS says only the xfail reason; say what passed and where to look.
    if isinstance(item, ScenarioItem) and item.xpass_note and report.failed \
            and isinstance(report.longrepr, str) and "XPASS(strict)" in report.longrepr:
        report.longrepr += "\n" + item.xpass_note
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None or state.run.save_path is None or not state.items:
        return
    save_baseline(state.run.save_path, state.items, state.run.cli_set, state.run.seeds)
    state.saved = len(state.items)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or not (state.ran or state.run.baseline is not None or state.saved):
        return
    tr = terminalreporter
    tr.write_sep("=", "harnesslab")
    plural = "" if state.ran == 1 else "s"
    tr.write_line(f"{state.ran} scenario variant{plural}, seeds {seed_label(state.run.seeds)}; records "
                  f"under {display_path(state.run.out, state.cwd)}")
    if state.not_applicable:
        harness = state.run.cli_set.get("harness", "reference")
        label = harness_label(harness) if isinstance(harness, str) else str(harness)
        count = len(state.not_applicable)
        tr.write_line(f"{count} variant{'' if count == 1 else 's'} not applicable to {label} "
                      "(skipped, with the reason)")
    if state.skipped:
        count = len(state.skipped)
        tr.write_line(f"{count} variant{'' if count == 1 else 's'} skipped: "
                      f"{state.skipped[0].split(': ', 1)[1]}")
    if state.quarantined:
        tr.write_line(f"quarantined (flaky; reported, not failing): {len(state.quarantined)}")
        for q in state.quarantined:
            tr.write_line(f"  {q}", yellow=True)
    if state.unreadable:
        tr.write_line(f"unreadable (the bench could not read the request; not the harness's "
                      f"failure, docs/understanding.md): {len(state.unreadable)}")
        for u in state.unreadable:
            tr.write_line(f"  {u}", yellow=True)
    if state.run.baseline_path is not None:
        reg = [c for c in state.changes if c.kind == "regression"]
        imp = [c for c in state.changes if c.kind == "improvement"]
        failing = sum(c.gating for c in reg)
        tr.write_line(f"baseline {display_path(state.run.baseline_path, state.cwd)}: "
                      f"{len(reg)} regressions ({failing} failing), {len(imp)} improvements"
                      + (f", {len(state.new)} items not in the baseline" if state.new else ""))
        for c in reg:
            tr.write_line(f"  regression   {c.line()}", red=c.gating, yellow=not c.gating)
        for c in imp:
            tr.write_line(f"  improvement  {c.line()}", green=True)
        for n in state.new:
            tr.write_line(f"  new          {n}")
    if state.saved and state.run.save_path is not None:
        tr.write_line(f"baseline saved: {display_path(state.run.save_path, state.cwd)} "
                      f"({state.saved} items)")


class HarnessLab:
    """The ``harnesslab`` fixture: run a scenario from a hand-written test with the configured
    harness and settings (keyword settings go over them, beneath the variant's own)."""

    def __init__(self, state: _State, out: Path) -> None:
        self._state = state
        self.out = out
        self._runs: dict[tuple[str, str], tuple[Scenario, Variant]] = {}

    @property
    def settings(self) -> dict[str, Any]:
        """The configured settings (config file and ``--harnesslab-set``)."""
        return dict(self._state.run.cli_set)

    def load(self, scenario: str | Path) -> Scenario:
        p = Path(scenario)
        if not p.is_absolute() and not p.exists():
            p = self._state.cwd / p
        return load_scenario(p)

    def run(self, scenario: str | Path | Scenario, variant: str = "default", seed: int = 0,
            **settings: Any) -> RunResult:
        """Run one variant with one seed; returns the result (checks, verdict, metrics,
        record). ``harness`` may be a class (importable at module level)."""
        sc = scenario if isinstance(scenario, Scenario) else self.load(scenario)
        source = None if isinstance(scenario, Scenario) else Path(scenario)
        v = next((x for x in sc.variants if x.name == variant), None)
        if v is None:
            raise InputError(f"no variant {variant!r}; expected one of "
                             f"{', '.join(x.name for x in sc.variants)}", field="variant")
        if "harness" in settings and not isinstance(settings["harness"], str):
            settings["harness"] = harness_spec(settings["harness"])
        self._runs[(sc.id, v.name)] = (sc, v)
        return run_variant(sc, v, seed=seed, source=source, out_dir=self.out,
                           cli_set={**self._state.run.cli_set, **settings})

    def explain(self, result: RunResult) -> str:
        """What went wrong in ``result``, as a failing item reports it."""
        sc, v = self._runs[(result.scenario, result.variant)]
        return "\n".join(explain(sc, v, result, self._state.cwd))

    def assert_expected(self, result: RunResult) -> None:
        """Fail the test, readably, unless the result is the variant's expected outcome; skip
        it, with the reason, when the variant does not apply to the harness."""
        if result.skipped:
            pytest.skip(f"skipped: {result.skipped}")
        if result.not_applicable:
            pytest.skip(f"not applicable to {result.settings.get('harness', 'this harness')}: "
                        f"{(result.error or '').removeprefix('NotApplicable: ')}")
        if not result.expected:
            lines = self.explain(result).splitlines()
            pytest.fail("\n".join([f"{result.scenario} / {result.variant} (seed {result.seed}):",
                                   *("  " + ln for ln in lines)]), pytrace=False)


@pytest.fixture
def harnesslab(request: pytest.FixtureRequest) -> HarnessLab:
    """Run scenarios from a test: ``harnesslab.run(path, variant, seed, **settings)``."""
    state = request.config.stash[STATE]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid).strip("_")
    return HarnessLab(state, state.run.out / "_fixture" / name)
