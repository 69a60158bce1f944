"""Mutation testing of the reference harness: cosmic-ray's mutants, a stratified sample,
coverage's choice of variants, a forked run per mutant to its first kill, the score."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harnesslab.scenario.loader import bundled_dir
from harnesslab.study import mutants as mut

pytest.importorskip("cosmic_ray")
pytest.importorskip("coverage")

CHEAP = bundled_dir() / "followup-o1001-zh.yaml"


@pytest.fixture(scope="module")
def every() -> list[mut.Mutant]:
    return mut.enumerate_mutants()


@pytest.fixture(scope="module")
def cmap(tmp_path_factory: pytest.TempPathFactory) -> mut.CoverageMap:
    mp = pytest.MonkeyPatch()
    mp.setenv("HARNESSLAB_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    try:
        return mut.coverage_map([CHEAP])
    finally:
        mp.undo()


def _one(every: list[mut.Mutant], path: str, operator: str, before: str) -> mut.Mutant:
    for m in every:
        if m.path == path and m.operator.endswith(operator) and mut.diff_lines(m)[0] == before:
            return m
    raise AssertionError(f"no {operator} mutant of {before!r}")


def test_every_listed_module_has_mutants_and_the_sample_is_stratified(
        every: list[mut.Mutant]) -> None:
    per = Counter(m.path for m in every)
    assert set(per) == {f"harness/{p}" for p in mut.MODULES}
    s = mut.stratified_sample(every, 200, 0)
    assert len(s) == 200 and len({m.id for m in s}) == 200
    got = Counter(m.path for m in s)
    for p, n in per.items():
        assert got[p] >= 1
        assert abs(got[p] - 200 * n / len(every)) <= 1.5, p  # proportional to the module
    assert mut.stratified_sample(every, 200, 0) == s           # seeded
    assert mut.stratified_sample(every, 200, 1) != s


def test_annotations_are_equivalent_by_rule_and_code_is_not(every: list[mut.Mutant]) -> None:
    ann = _one(every, "harness/agent.py", "ReplaceBinaryOperator_BitOr_Div",
               "def _parse_time(text: str) -> datetime | None:")
    assert mut.equivalent_reason(ann, *mut.diff_lines(ann), []) == mut.ANNOTATION_REASON
    code = _one(every, "harness/agent.py", "ReplaceBinaryOperator_Add_Sub",
                "return self.clock.now() + timedelta(hours=self.cfg.clock_offset_hours)")
    assert mut.equivalent_reason(code, *mut.diff_lines(code), []) is None


def test_coverage_selects_the_variants_that_reach_a_line(every: list[mut.Mutant],
                                                         cmap: mut.CoverageMap) -> None:
    clock = _one(every, "harness/agent.py", "ReplaceBinaryOperator_Add_Sub",
                 "return self.clock.now() + timedelta(hours=self.cfg.clock_offset_hours)")
    assert {t.scenario for t in cmap.reaching(clock)} == {"followup-o1001-zh"}
    # Loading a damaged session file: no variant of this scenario goes there.
    store = [m for m in every if m.path == "harness/store.py"
             and "ExceptionReplacer" in m.operator]
    assert store and all(cmap.reaching(m) == [] for m in store)


def test_a_mutant_is_run_in_its_own_process_to_its_first_kill(every: list[mut.Mutant],
                                                              cmap: mut.CoverageMap) -> None:
    clock = _one(every, "harness/agent.py", "ReplaceBinaryOperator_Add_LShift",
                 "return self.clock.now() + timedelta(hours=self.cfg.clock_offset_hours)")
    # The control: the same module served unmutated (cosmic-ray's NoOp) survives, so the
    # kill below is the mutation's, not the forked import's.
    same = mut.Mutant("harness/agent.py", "core/NoOp", 0, clock.line, clock.line, "now")
    [killed, unchanged] = mut.run_mutants([clock, same], cmap, workers=2)
    assert killed.status == "killed" and killed.kill is not None
    assert killed.kill["how"] == "failed" and killed.ran >= 1
    assert unchanged.status in ("survived", "equivalent")
    assert mut.score([killed, unchanged]).killed == 1


def test_the_checked_in_equivalents_file_loads_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    from harnesslab.errors import InputError

    checked_in = mut.load_equivalents()
    for e in checked_in.equivalents:
        assert e.reason and e.before != e.after
    # Out of scope: functions only the inspection commands call; each exists, and nothing the
    # harness runs calls it.
    runtime = [p for p in mut.PACKAGE.rglob("*.py")
               if p.relative_to(mut.PACKAGE).parts[0] not in ("study", "cli")]
    for o in checked_in.out_of_scope:
        names = [n for _, _, n in mut._functions(o.path)]
        assert o.function in names, o
        if o.statement is not None:
            # One statement of a function runs call: it is in that function, once.
            [(first, last)] = [(a, b) for a, b, n in mut._functions(o.path) if n == o.function]
            lines = (mut.PACKAGE / o.path).read_text(encoding="utf-8").splitlines()[first - 1:last]
            assert [ln.strip() for ln in lines].count(o.statement) == 1, o
            continue
        short = o.function.rsplit(".", 1)[-1]
        callers = [p for p in runtime if f".{short}(" in p.read_text(encoding="utf-8")
                   or f" {short}(" in p.read_text(encoding="utf-8").replace(f"def {short}(", "")]
        assert callers in ([], [mut.PACKAGE / o.path]), (o.function, callers)
    bad = tmp_path / "eq.yaml"
    bad.write_text("equivalents:\n  - path: harness/x.py\n    reason: short\n")
    with pytest.raises(InputError, match="bad equivalents file"):
        mut.load_equivalents(bad)


def test_a_statement_out_of_scope_leaves_the_rest_of_its_function_in(
        every: list[mut.Mutant]) -> None:
    scope = mut.load_equivalents().out_of_scope
    ro = _one(every, "harness/store.py", "ReplaceBinaryOperator_Div_Mul",
              "self._db = _open_read_only(root / DB_NAME)")
    rw = _one(every, "harness/store.py", "ReplaceBinaryOperator_Div_Mul",
              "self._db = sqlite3.connect(root / DB_NAME, isolation_level=None, timeout=30)")
    assert mut.qualname(ro) == mut.qualname(rw) == "SessionStore.__init__"
    assert mut.out_of_scope_reason(ro, scope) is not None
    assert mut.out_of_scope_reason(rw, scope) is None  # the branch every run takes stays in
    # The entry's claim: only the store's readers (study/, for harnesslab sessions) open a
    # store read-only; nothing a run imports does.
    runtime = [p for p in mut.PACKAGE.rglob("*.py")
               if p.relative_to(mut.PACKAGE).parts[0] not in ("study", "cli")]
    assert [p for p in runtime if "read_only=True" in p.read_text(encoding="utf-8")] == []
    assert "read_only=True" in (mut.PACKAGE / "study" / "sessions.py").read_text(encoding="utf-8")


def test_the_cli_names_an_unknown_mutant_in_one_line() -> None:
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "harnesslab.cli", "bugs", "--mutants",
                        "--mutant", "harness/nope.py:1:X:0"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2
    assert "no mutant 'harness/nope.py:1:X:0'" in p.stderr and "Traceback" not in p.stderr


def test_the_cli_prints_progress_lines_to_a_log(every: list[mut.Mutant], tmp_path: Path) -> None:
    """stderr not a terminal (a log, CI): a line before the coverage map and one per tenth of
    the mutants, with the counts by status so far (the time left once mutants run and some
    remain; none at the end)."""
    import os
    import subprocess
    import sys

    clock = _one(every, "harness/agent.py", "ReplaceBinaryOperator_Add_LShift",
                 "return self.clock.now() + timedelta(hours=self.cfg.clock_offset_hours)")
    p = subprocess.run([sys.executable, "-m", "harnesslab.cli", "bugs", "--mutants",
                        "--mutant", clock.id, str(CHEAP)], capture_output=True, text=True,
                       timeout=600, env={**os.environ, "HARNESSLAB_CACHE_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("mutants: ")]
    assert lines[0] == ("mutants: 1 chosen; the coverage map of 1 scenario files first "
                        "(cached after its first run)")
    assert lines[-1].startswith("mutants: 1/1 (1 killed); ") and lines[-1].endswith(" min")


def test_a_mutant_compiles_without_its_syntax_warnings() -> None:
    """cosmic-ray's ``==`` to ``is`` against a literal warns on each compile; a full run's log
    would be thousands of those lines. Under warnings as errors a warning would surface as a
    SyntaxError: the mutant still compiles, and the one that is not Python still does not."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mut._compiles("x = 1\nif x is 1:\n    pass\n", "m.py")
        assert not mut._compiles("def f(self, -, x): pass\n", "m.py")
        # The control: the same source warns when compiled plainly.
        with pytest.raises(SyntaxError):
            compile("x = 1\nif x is 1:\n    pass\n", "m.py", "exec", dont_inherit=True)


def test_a_mutant_from_the_copied_tree_is_cosmic_rays_own(every: list[mut.Mutant]) -> None:
    """Mutant.source mutates a copy of the module's parsed tree (parsed once per module):
    the same code as cosmic-ray's mutate_code on the file, for a spread of modules and
    operators; and each mutant differs from the module (the copy is not reused mutated)."""
    from cosmic_ray.mutating import mutate_code

    sample = mut.stratified_sample(every, 40, seed=3)
    ops = mut._engine()
    for m in sample:
        code, mutated = m.source()
        assert mutated == mutate_code(code, ops.get_operator(m.operator)(), m.occurrence)
        assert mutated is None or mutated != code
    a, b = [m for m in every if m.path == sample[0].path][:2]
    assert a.source()[1] != b.source()[1]


def test_a_mutant_on_a_continuation_line_reaches_whoever_runs_its_statement() -> None:
    """A mutated operand on a statement's second line (`x and \\n y`) runs only when the first
    operands let it, and the mutant can change that (and -> or evaluates y where the reference
    never did): its reaching variants are those of the whole statement (for an if, its header),
    never of the mutated line alone; a body line keeps its own statement."""
    lines = (mut.PACKAGE / "harness" / "agent.py").read_text(encoding="utf-8").splitlines()
    first = next(n for n, s in enumerate(lines, 1)
                 if "isinstance(e, ContextOverflowError) and self.cfg.retry_on_overflow" in s)
    second = first + 1
    assert lines[second - 1].strip() == "and not retried:"
    assert mut._statement_span("harness/agent.py", second, second) == (first, second)
    body = second + 1  # `retried = True`, inside that if: its own one-line statement
    assert lines[body - 1].strip() == "retried = True"
    assert mut._statement_span("harness/agent.py", body, body) == (body, body)
    cmap = mut.CoverageMap(targets={k: mut.Target("f", "s", k, 0.0, {}) for k in ("a", "b")},
                           lines={"harness/agent.py": {first: ["a", "b"], second: ["a"]}})
    m = mut.Mutant("harness/agent.py", "core/ReplaceAndWithOr", 0, second, second, "_serve")
    assert [t.variant for t in cmap.reaching(m)] == ["a", "b"]
