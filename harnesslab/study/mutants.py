"""Mutation testing of the reference harness: cosmic-ray's operators mutate ``harness/``, the
bundled suite is the test, coverage picks the scenario variants that reach each mutated line,
and a mutant stops at its first kill under the rule the bug zoo uses (``study.kills``).

Each mutant runs in a forked process that imports the harness afresh with the one mutated
module (nothing is written to disk), under a CPU limit. A mutant whose lines no variant reaches
survives without a run. The score is killed / (total - equivalent); the equivalents, each with
its reason, are ``equivalents.yaml`` beside this module.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import pickle
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from harnesslab.errors import InputError

PACKAGE = Path(__file__).resolve().parents[1]          # harnesslab/
HARNESS = PACKAGE / "harness"
# The reference harness's own logic (the list); its interface, settings model, AgentScope
# profile and path helpers are left out: mutating a settings default changes every run at once.
MODULES = ("agent.py", "compaction.py", "split.py", "limits.py", "prompts.py", "memory/embed.py",
           "memory/files.py", "memory/items.py", "memory/modes.py", "store.py", "identity.py",
           "offload.py")
EQUIVALENTS = Path(__file__).with_name("equivalents.yaml")
COSMIC_RAY_MISSING = ("mutation testing needs cosmic-ray and coverage: "
                      "pip install 'harnesslab[dev]' (or pip install cosmic-ray coverage)")


def _engine() -> Any:
    try:
        import cosmic_ray.plugins as plugins
    except ImportError as e:
        raise InputError(COSMIC_RAY_MISSING, field="--mutants") from e
    return plugins


@dataclass(frozen=True)
class Mutant:
    """One mutation cosmic-ray can make: an operator's ``occurrence``-th position in a file."""

    path: str          # relative to harnesslab/, e.g. harness/split.py
    operator: str      # cosmic-ray's name, e.g. core/ReplaceComparisonOperator_Lt_LtE
    occurrence: int
    line: int
    end_line: int
    function: str
    col: int = 0
    end_col: int = 0

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}:{self.operator.split('/', 1)[1]}:{self.occurrence}"

    @property
    def module(self) -> str:
        return "harnesslab." + self.path.removesuffix(".py").replace("/", ".")

    def source(self) -> tuple[str, str | None]:
        """The module's source and the mutated source (None: the operator found nothing)."""
        return _source(self.path), _mutated(self.path, self.operator, self.occurrence)


@cache
def _source(path: str) -> str:
    return (PACKAGE / path).read_text(encoding="utf-8")


@cache
def _tree(path: str) -> bytes:
    """The module's parso tree as cosmic-ray parses it, pickled: a copy for each mutation
    costs a third of a parse (cosmic-ray mutates the tree in place, so each needs its own)."""
    from cosmic_ray.ast import get_ast

    return pickle.dumps(get_ast(_source(path)), protocol=pickle.HIGHEST_PROTOCOL)


@lru_cache(maxsize=8)
def _mutated(path: str, operator: str, occurrence: int) -> str | None:
    """cosmic-ray's ``mutate_code`` on a copy of the module's tree (the same walk, the same
    result); kept for the few calls one mutant's planning makes (its lines, its scope)."""
    from cosmic_ray.mutating import MutationVisitor

    visitor = MutationVisitor(occurrence, _engine().get_operator(operator)())
    mutated = visitor.walk(pickle.loads(_tree(path)))  # our own pickle, made above
    return mutated.get_code() if visitor.mutation_applied else None


def enumerate_mutants(modules: Sequence[str] = MODULES) -> list[Mutant]:
    """Every mutation of the modules by cosmic-ray's operators that take no arguments."""
    plugins = _engine()
    from cosmic_ray.ast import ast_nodes, get_ast_from_path
    from cosmic_ray.ast.ast_query import ASTQuery

    names = [n for n in plugins.operator_names() if not plugins.get_operator(n).arguments()]
    out: list[Mutant] = []
    for rel in modules:
        path = HARNESS / rel
        nodes = list(ast_nodes(get_ast_from_path(path)))
        for name in names:
            op = plugins.get_operator(name)()
            occurrence = 0
            for node in nodes:
                for start, end in op.mutation_positions(node):
                    out.append(Mutant(f"harness/{rel}", name, occurrence, start[0], end[0],
                                      ASTQuery(node).get_definition_name() or "",
                                      start[1], end[1]))
                    occurrence += 1
    return out


def stratified_sample(mutants: Sequence[Mutant], n: int, seed: int = 0) -> list[Mutant]:
    """``n`` mutants drawn per module in proportion to its mutants (largest remainder, at least
    one per module), each module's draw seeded by ``seed``: the same code, the same sample."""
    by: dict[str, list[Mutant]] = {}
    for m in mutants:
        by.setdefault(m.path, []).append(m)
    if n <= 0 or n >= len(mutants):
        return list(mutants)
    total = len(mutants)
    quota = {p: max(1, n * len(ms) // total) for p, ms in by.items()}
    rest = sorted(by, key=lambda p: (-(n * len(by[p]) / total - n * len(by[p]) // total), p))
    i = 0
    while sum(quota.values()) < n:
        p = rest[i % len(rest)]
        if quota[p] < len(by[p]):
            quota[p] += 1
        i += 1
    out: list[Mutant] = []
    for p in sorted(by):
        rng = random.Random(f"{seed}:{p}")
        out += sorted(rng.sample(by[p], min(quota[p], len(by[p]))),
                      key=lambda m: (m.line, m.operator, m.occurrence))
    return out


# --- equivalents ------------------------------------------------------------------------------

class Equivalent(BaseModel):
    """A mutant that no correct-harness check could tell apart from the reference, and why."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="The mutated file, relative to harnesslab/ (harness/split.py)")
    operator: str = Field(description="cosmic-ray's operator, e.g. ReplaceComparisonOperator_Lt_LtE")
    before: str = Field(description="The mutated line as written (stripped)")
    after: str = Field(description="The same line mutated (stripped)")
    reason: str = Field(min_length=10, description="Why no harness behaviour changes")


class OutOfScope(BaseModel):
    """A function of harness/ that no harness run calls (a reader for an inspection command),
    or one statement of a function runs call that only an inspection command's argument
    reaches: the suite cannot test it, so its mutants are listed apart and left out of the
    score."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="The file, relative to harnesslab/ (harness/store.py)")
    function: str = Field(description="Its qualified name (SessionStore.rollout)")
    statement: str | None = Field(
        default=None, min_length=1,
        description="Only this statement of the function, as written (stripped, one line): for "
                    "a branch of a function every run calls that only a reader takes "
                    "(SessionStore.__init__ with read_only=True); matched like an equivalent's "
                    "line, so the entry survives line shifts")
    reason: str = Field(min_length=10, description="Who calls it instead, and why no run does")


class Equivalents(BaseModel):
    model_config = ConfigDict(extra="forbid")
    equivalents: list[Equivalent] = Field(default_factory=list)
    out_of_scope: list[OutOfScope] = Field(default_factory=list)


def load_equivalents(path: Path = EQUIVALENTS) -> Equivalents:
    if not path.exists():
        return Equivalents()
    try:
        return Equivalents.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))
                                          or {})
    except Exception as e:  # pydantic or YAML: one line naming the file
        raise InputError(f"bad equivalents file: {str(e).splitlines()[0]}", file=str(path)) from e


@cache
def _functions(path: str) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, qualified name) of every function in a module."""
    out: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append((first, child.end_lineno or child.lineno, prefix + child.name))
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse(_source(path)), "")
    return tuple(out)


def qualname(m: Mutant) -> str:
    """The innermost function holding the mutant's first line ("" at module level)."""
    hits = [(a, n) for a, b, n in _functions(m.path) if a <= m.line <= b]
    return max(hits)[1] if hits else ""


def out_of_scope_reason(m: Mutant, scope: Sequence[OutOfScope]) -> str | None:
    name = qualname(m)
    before = diff_lines(m)[0]
    return next((o.reason for o in scope if o.path == m.path and o.function == name
                 and o.statement in (None, before)), None)


def diff_lines(m: Mutant) -> tuple[str, str]:
    """The mutated lines before and after, each stripped and joined on one line."""
    code, mutated = m.source()
    if mutated is None:
        return "", ""
    a, b = code.splitlines(), mutated.splitlines()
    # A mutation keeps the line count (cosmic-ray replaces tokens in place) but may not.
    lo = m.line - 1
    hi_a = m.end_line
    hi_b = hi_a + len(b) - len(a)
    return (" ".join(s.strip() for s in a[lo:hi_a]), " ".join(s.strip() for s in b[lo:hi_b]))


ANNOTATION_REASON = ("an annotation under `from __future__ import annotations`: kept as a "
                     "string that nothing in the harness evaluates (no pydantic model, no "
                     "get_type_hints), so no behaviour changes")


@cache
def _annotations(path: str) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """The spans of the annotations no runtime code reads in a module with postponed
    evaluation: every function's argument and return annotations, and annotated assignments
    outside pydantic models (pydantic evaluates its fields' annotations)."""
    tree = ast.parse(_source(path))
    postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                    and any(a.name == "annotations" for a in n.names) for n in tree.body)
    if not postponed:
        return ()
    models = {id(b) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
              and any(getattr(base, "id", getattr(base, "attr", "")) == "BaseModel"
                      for base in c.bases) for b in c.body}
    spans: list[ast.expr] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            a = n.args
            spans += [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                             *([a.vararg] if a.vararg else []),
                                             *([a.kwarg] if a.kwarg else [])] if x.annotation]
            spans += [n.returns] if n.returns else []
        elif isinstance(n, ast.AnnAssign) and id(n) not in models:
            spans.append(n.annotation)
    return tuple(((e.lineno, e.col_offset), (e.end_lineno or e.lineno, e.end_col_offset or 0))
                 for e in spans)


def in_annotation(m: Mutant) -> bool:
    return any(a <= (m.line, m.col) and (m.end_line, m.end_col) <= b
               for a, b in _annotations(m.path))


def equivalent_reason(m: Mutant, before: str, after: str,
                      equivalents: Sequence[Equivalent]) -> str | None:
    if in_annotation(m):
        return ANNOTATION_REASON
    op = m.operator.split("/", 1)[1]
    for e in equivalents:
        if e.path == m.path and e.operator == op and e.before == before and e.after == after:
            return e.reason
    return None


# --- coverage: which variants reach which lines ------------------------------------------------

@dataclass(frozen=True)
class Target:
    """One scenario variant at seed 0 under the reference harness, as the mutants re-run it."""

    file: str
    scenario: str
    variant: str
    cpu: float                       # seconds under the reference harness (with coverage)
    reference: dict[str, Any]        # its cost metrics, the cost rule's reference

    @property
    def key(self) -> str:
        return f"{self.scenario}/{self.variant}"


@dataclass
class CoverageMap:
    targets: dict[str, Target]
    lines: dict[str, dict[int, list[str]]]  # harness path -> line -> target keys
    cpu: float = 0.0

    def reaching(self, m: Mutant) -> list[Target]:
        """The variants that execute the mutated lines, cheapest first. A line only run at
        import (a default value, a class attribute) is reached by whoever runs its function,
        or, outside any function, by every variant."""
        per_line = self.lines.get(m.path, {})
        keys: set[str] = set()
        at_import = False
        # The whole statement's lines, not the mutated ones alone: a continuation line runs
        # only when the operands before it let it (`x and y` over two lines), and a mutant
        # can change that (and -> or evaluates y where the reference never did).
        lo, hi = _statement_span(m.path, m.line, m.end_line)
        for ln in range(lo, hi + 1):
            keys.update(per_line.get(ln, ()))
        at_import = IMPORT in keys
        keys.discard(IMPORT)
        if not keys and at_import:
            span = _import_time_span(m.path, m.line)
            if isinstance(span, tuple):
                for ln in range(span[0], span[1] + 1):
                    keys.update(per_line.get(ln, ()))
                keys.discard(IMPORT)
            else:  # module or class level, or a function the import itself calls
                keys = set(self.targets)
        return sorted((self.targets[k] for k in keys), key=lambda t: (t.cpu, t.key))


@cache
def _statements(path: str) -> tuple[tuple[int, int], ...]:
    """Every statement's line span; for a compound statement (if, while, for, with, def, ...)
    only its header, the lines before its body."""
    spans: list[tuple[int, int]] = []
    for node in ast.walk(ast.parse(_source(path))):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            spans.append((first, max(first, body[0].lineno - 1)))
        else:
            spans.append((node.lineno, end))
    return tuple(spans)


def _statement_span(path: str, line: int, end_line: int) -> tuple[int, int]:
    """The lines of the innermost statement (or compound statement's header) holding the
    mutated lines; the mutated lines themselves when none does."""
    holding = [(a, b) for a, b in _statements(path) if a <= line and end_line <= b]
    if not holding:
        return line, end_line
    return min(holding, key=lambda s: (s[1] - s[0], -s[0]))


def _import_time_span(path: str, line: int) -> tuple[int, int] | str | None:
    """For a line outside every function body: the body lines of the function whose signature
    holds it, or "all" for module and class level; None for a line inside a body (a runtime
    line no variant ran)."""
    tree = ast.parse(_source(path))
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first <= line <= (node.end_lineno or node.lineno) and (
                    best is None or node.lineno >= best.lineno):
                best = node
    if best is None:
        return "all"
    if line >= best.body[0].lineno:
        return None
    return best.body[0].lineno, best.end_lineno or best.body[0].lineno


# What a run's outcome depends on; the studies, reports, CI glue and the CLI do not change it.
_NOT_RUN = ("study", "report", "ci", "cli")


def _fingerprint(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    code = [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] not in _NOT_RUN or p.name == "kills.py"]
    for p in [*code, *paths]:
        h.update(str(p.name).encode())
        h.update(p.read_bytes())
    # A variant that requires a missing extra is skipped, so it reaches no line: the map of an
    # install with the extra is another map.
    from harnesslab.scenario.schema import EXTRAS, missing_extras

    h.update(repr(missing_extras(sorted(EXTRAS))).encode())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    base = os.environ.get("HARNESSLAB_CACHE_DIR") or str(Path.home() / ".cache" / "harnesslab")
    return Path(base) / "mutants"


IMPORT = "import"  # the coverage context of lines run while the harness modules load


def coverage_map(paths: Sequence[Path], *, use_cache: bool = True) -> CoverageMap:
    """Run every variant of the scenario files once (seed 0, the reference harness) under
    coverage, one coverage context per variant, in a forked process that imports the harness
    afresh (so what runs at import is seen too). Cached by the bytes of the code runs depend on
    and of the scenarios, so it reruns only when either changes."""
    try:
        import coverage  # noqa: F401
    except ImportError as e:
        raise InputError(COSMIC_RAY_MISSING, field="--mutants") from e
    cache = cache_dir() / f"coverage-{_fingerprint(paths)}.json"
    if not (use_cache and cache.exists()):
        cache.parent.mkdir(parents=True, exist_ok=True)
        part = cache.with_suffix(f".{os.getpid()}.part")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _purge()
                part.write_text(json.dumps(_measure([str(p) for p in paths])), encoding="utf-8")
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        _, status, ru = os.wait4(pid, 0)
        if status != 0 or not part.exists():
            raise RuntimeError(f"the coverage run of the reference harness failed ({status})")
        raw = json.loads(part.read_text(encoding="utf-8"))
        raw["cpu"] = ru.ru_utime + ru.ru_stime
        cache.write_text(json.dumps(raw), encoding="utf-8")
        part.unlink()
    raw = json.loads(cache.read_text(encoding="utf-8"))
    return CoverageMap({k: Target(**t) for k, t in raw["targets"].items()},
                       {p: {int(ln): ks for ln, ks in d.items()}
                        for p, d in raw["lines"].items()}, raw["cpu"])


def _measure(paths: Sequence[str]) -> dict[str, Any]:
    import coverage

    cov = coverage.Coverage(data_file=None, include=[str(HARNESS / "*"), str(HARNESS / "*/*")])
    cov.start()
    cov.switch_context(IMPORT)
    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.loader import load_scenario
    from harnesslab.study.kills import REJECT_ALL, findings

    targets: dict[str, Target] = {}
    # Runs write records as `harnesslab run` does (the offloader's paths are the record's).
    work = Path(tempfile.mkdtemp(prefix="harnesslab-coverage-"))
    try:
        for p in paths:
            sc = load_scenario(p)
            for v in sc.variants:
                if v.name in REJECT_ALL:
                    continue
                key = f"{sc.id}/{v.name}"
                cov.switch_context(key)
                t0 = time.process_time()
                r = run_variant(sc, v, source=Path(p), out_dir=work)
                shutil.rmtree(work / sc.id, ignore_errors=True)
                if r.error is not None or findings(r.checks, v):
                    continue  # a variant the reference fails is no test of a mutant
                targets[key] = Target(p, sc.id, v.name, time.process_time() - t0,
                                      {k: r.metrics.get(k) for k in
                                       ("true_input_tokens", "overflow_rate", "summary_tokens",
                                        "protocol_error_rate")})
    finally:
        cov.stop()
        shutil.rmtree(work, ignore_errors=True)
    data = cov.get_data()
    lines: dict[str, dict[int, list[str]]] = {}
    for f in data.measured_files():
        rel = Path(f).resolve().relative_to(PACKAGE).as_posix()
        lines[rel] = {ln: sorted(k for k in ks if k in targets or k == IMPORT)
                      for ln, ks in data.contexts_by_lineno(f).items()
                      if any(k in targets or k == IMPORT for k in ks)}
    return {"targets": {k: asdict(t) for k, t in targets.items()}, "lines": lines}


# --- running one mutant -----------------------------------------------------------------------

@dataclass
class MutantResult:
    id: str
    path: str
    line: int
    function: str
    operator: str
    before: str
    after: str
    # killed, timeout, crashed, survived, unreached, equivalent, out-of-scope
    status: str = "survived"
    kill: dict[str, Any] | None = None       # scenario, variant, check, how, detail
    controls: list[str] = field(default_factory=list)  # variants whose control it changed
    ran: int = 0               # variants run
    reached: int = 0           # variants that reach its lines
    cpu: float = 0.0
    reason: str = ""           # an equivalent's reason

    @property
    def killed(self) -> bool:
        return self.status in ("killed", "timeout", "crashed")


class _MutantFinder(importlib.abc.MetaPathFinder):
    """Serves the one mutated module from memory; every other module imports as usual."""

    def __init__(self, module: str, path: Path, code: str) -> None:
        self.module, self.path, self.code = module, path, code

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.module:
            return None
        loader = _MutantLoader(name, str(self.path), self.code)
        is_pkg = self.path.name == "__init__.py"
        return importlib.util.spec_from_file_location(
            name, self.path, loader=loader,
            submodule_search_locations=[str(self.path.parent)] if is_pkg else None)


class _MutantLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name: str, path: str, code: str) -> None:
        super().__init__(name, path)
        self.code = code

    def get_code(self, fullname: str) -> Any:
        return _compile(self.code, self.path)


# Kept across mutants: they import no harness module, and the tokenizers they hold are costly.
_KEEP = ("harnesslab.errors", "harnesslab.messages", "harnesslab.tokens")


def _purge() -> None:
    for name in [n for n in sys.modules if n == "harnesslab" or n.startswith("harnesslab.")]:
        if name != "harnesslab" and not name.startswith(_KEEP):
            del sys.modules[name]


def _test_mutant(m: Mutant, mutated: str, targets: Sequence[Target],
                 work: Path) -> dict[str, Any]:
    """In the forked child: the suite's reaching variants against the mutant, to the first kill."""
    _purge()
    sys.meta_path.insert(0, _MutantFinder(m.module, PACKAGE / m.path, mutated))
    from harnesslab.run.runner import run_variant
    from harnesslab.scenario.loader import load_scenario
    from harnesslab.study.kills import findings

    out: dict[str, Any] = {"kill": None, "controls": [], "ran": 0}
    for t in targets:
        sc = load_scenario(t.file)
        v = next(v for v in sc.variants if v.name == t.variant)
        r = run_variant(sc, v, source=Path(t.file), out_dir=work)
        shutil.rmtree(work / sc.id, ignore_errors=True)
        out["ran"] += 1
        if r.error is not None:
            out["kill"] = {"scenario": t.scenario, "variant": t.variant, "check": "run",
                           "how": "failed", "detail": f"run error: {r.error}"}
            return out
        found = findings(r.checks, v, r.metrics, t.reference, sc.cost)
        kill = next((f for f in found if f.kills), None)
        if any(not f.kills for f in found):
            out["controls"].append(t.key)
        if kill is not None:
            out["kill"] = {"scenario": t.scenario, "variant": t.variant, "check": kill.check,
                           "how": kill.how, "detail": kill.detail}
            return out
    return out


def _child(m: Mutant, mutated: str, targets: Sequence[Target], out: Path,
           cpu_limit: int) -> None:
    code = 0
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))
        os.environ["HARNESSLAB_MUTANT"] = m.id  # visible to anything the child starts
        res = _test_mutant(m, mutated, targets, out.with_suffix(".work"))
        out.write_text(json.dumps(res), encoding="utf-8")
    except BaseException as e:  # the mutant broke the bench's own path: recorded, not raised
        out.write_text(json.dumps({"crash": f"{type(e).__name__}: {e}"}), encoding="utf-8")
        code = 1
    finally:
        os._exit(code)


INVALID_REASON = "not valid Python (cosmic-ray's incompetent mutant): there is no harness to test"


def _compile(code: str, path: str) -> Any:
    """A mutant's module compiled without its SyntaxWarnings: cosmic-ray's ``==`` to ``is``
    against a literal warns on every compile, thousands of lines that would bury a log's
    progress lines; the mutant is what it is either way."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return compile(code, path, "exec", dont_inherit=True)


def _compiles(code: str, path: str) -> bool:
    try:
        _compile(code, path)
    except SyntaxError:
        return False
    return True


def run_mutants(mutants: Sequence[Mutant], cmap: CoverageMap, *, workers: int = 2,
                equivalents: Equivalents | None = None,
                on_done: Callable[[MutantResult], None] | None = None) -> list[MutantResult]:
    """Every mutant against the variants that reach it, ``workers`` forked processes at a time;
    results in the mutants' order. A mutant's CPU time is its process's (``wait4``)."""
    eqs = equivalents or Equivalents()
    results: list[MutantResult] = []
    todo: list[tuple[MutantResult, Mutant, str, list[Target]]] = []
    for m in mutants:
        before, after = diff_lines(m)
        r = MutantResult(m.id, m.path, m.line, qualname(m) or m.function,
                         m.operator.split("/", 1)[1], before, after)
        results.append(r)
        _, mutated = m.source()
        reason = equivalent_reason(m, before, after, eqs.equivalents)
        outside = out_of_scope_reason(m, eqs.out_of_scope)
        targets = cmap.reaching(m)
        r.reached = len(targets)
        if outside is not None:
            r.status, r.reason = "out-of-scope", outside
        elif reason is not None:
            r.status, r.reason = "equivalent", reason
        elif mutated is None:
            r.status, r.reason = "equivalent", "cosmic-ray made no change"
        elif not _compiles(mutated, m.path):
            # cosmic-ray's "incompetent" mutant (``def f(self, -, x)``): no harness to test.
            r.status, r.reason = "equivalent", INVALID_REASON
        elif not targets:
            r.status = "unreached"
        else:
            todo.append((r, m, mutated, targets))
            continue
        if on_done:
            on_done(r)
    tmp = Path(tempfile.mkdtemp(prefix="harnesslab-mutants-"))
    running: dict[int, tuple[MutantResult, Path, float, int]] = {}
    queue = list(todo)
    try:
        while queue or running:
            while queue and len(running) < max(1, workers):
                r, m, mutated, targets = queue.pop(0)
                out = tmp / f"{len(queue)}-{os.getpid()}.json"
                # CPU limit: generous against the reference's own time, so only a hang hits it.
                limit = int(30 + 5 * sum(t.cpu for t in targets))
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(m, mutated, targets, out, limit)
                running[pid] = (r, out, time.monotonic() + 4 * limit, limit)
            pid, status, ru = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for p, (_r, _o, deadline, _lim) in running.items():
                    if now > deadline:
                        os.kill(p, signal.SIGKILL)
                time.sleep(0.02)
                continue
            r, out, _deadline, limit = running.pop(pid)
            r.cpu = ru.ru_utime + ru.ru_stime
            _settle(r, out, status)
            if on_done:
                on_done(r)
    finally:
        for p in running:
            os.kill(p, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def _settle(r: MutantResult, out: Path, status: int) -> None:
    raw = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    if raw is None:
        # Killed by its CPU limit (SIGXCPU) or the wall deadline: a hang, detected.
        r.status = "timeout" if os.WIFSIGNALED(status) else "crashed"
        r.kill = {"how": r.status, "detail": f"process ended with status {status}"}
        return
    if "crash" in raw:
        r.status, r.kill = "crashed", {"how": "crashed", "detail": raw["crash"]}
        return
    r.ran, r.controls = raw["ran"], raw["controls"]
    if raw["kill"] is not None:
        r.status, r.kill = "killed", raw["kill"]


# --- the report ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Score:
    killed: int
    total: int
    equivalent: int

    @property
    def value(self) -> float:
        live = self.total - self.equivalent
        return self.killed / live if live else 1.0


def score(results: Iterable[MutantResult]) -> Score:
    """killed / (total - equivalent), over the mutants in scope."""
    rs = [r for r in results if r.status != "out-of-scope"]
    return Score(sum(r.killed for r in rs), len(rs), sum(r.status == "equivalent" for r in rs))


def format_report(results: Sequence[MutantResult], cpu: dict[str, float]) -> str:
    s = score(results)
    lines: list[str] = []
    by_status: dict[str, int] = {}
    for r in results:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    by_how: dict[str, int] = {}
    for r in results:
        if r.status == "killed" and r.kill:
            by_how[r.kill["how"]] = by_how.get(r.kill["how"], 0) + 1
    mods: dict[str, list[int]] = {}
    for r in results:
        if r.status == "out-of-scope":
            continue
        row = mods.setdefault(r.path, [0, 0, 0])
        row[0] += r.killed
        row[1] += 1
        row[2] += r.status == "equivalent"
    lines.append("module                          killed / (mutants - equivalent)")
    for p, (k, n, e) in sorted(mods.items()):
        lines.append(f"  {p.ljust(30)}{k} / ({n} - {e})")
    survivors = [r for r in results if r.status in ("survived", "unreached")]
    lines.append(f"survivors ({len(survivors)}):")
    for r in survivors:
        lines.append(f"  {r.path}:{r.line} {r.function} {r.operator}: {r.before!r} -> "
                     f"{r.after!r} ({r.status}; ran {r.ran} of {r.reached} reaching variants)")
    changed = [r for r in results if r.controls]
    if changed:
        lines.append(f"changed a control, not counted as a kill ({len(changed)} mutants):")
        for r in changed:
            lines.append(f"  {r.id}: {', '.join(r.controls[:3])}"
                         + (f" (+{len(r.controls) - 3})" if len(r.controls) > 3 else ""))
    outside = [r for r in results if r.status == "out-of-scope"]
    if outside:
        lines.append(f"out of scope, not in the score ({len(outside)}):")
        for r in outside:
            lines.append(f"  {r.path}:{r.line} {r.function} {r.operator}: {r.reason}")
    eq = [r for r in results if r.status == "equivalent"]
    lines.append(f"equivalents ({len(eq)}):")
    for r in eq:
        lines.append(f"  {r.path}:{r.line} {r.operator}: {r.before!r} -> {r.after!r}: {r.reason}")
    how = ", ".join(f"{k} {v}" for k, v in sorted(by_how.items()))
    lines.append(f"killed: {by_status.get('killed', 0)} by the suite ({how}), "
                 f"{by_status.get('timeout', 0)} by a timeout, {by_status.get('crashed', 0)} crashed")
    lines.append(f"mutation score: killed {s.killed} / (total {s.total} - equivalent "
                 f"{s.equivalent}) = {s.value:.1%}")
    lines.append("CPU: " + ", ".join(f"{k} {v:.0f} s" for k, v in cpu.items()))
    return "\n".join(lines) + "\n"
