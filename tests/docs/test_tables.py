"""The hand-written tables of the docs and the README, each checked against what the code has
(the generated ones are ``tables.py``'s; the scenario, kill and memory tables are checked in
``test_docs.py``). Every check reads the page through one function and has a control: the page
with a row lost, or a row that names what does not exist, is seen."""

from __future__ import annotations

import ast
import re

import pytest

from harnesslab.scenario.loader import bundled_dir, load_scenario
from tests.docs.tables import DOCS, ROOT

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="the docs are in the checkout")


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def table(text: str, header: str) -> list[list[str]]:
    """The body rows of the table whose header line starts with ``header``, as stripped cells
    (an escaped ``\\|`` stays inside its cell)."""
    at = text.index(header)
    rows = []
    for line in text[at:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([c.strip() for c in cells])
    return rows


def without(text: str, start: str) -> str:
    """``text`` less its lines starting with ``start`` (a table that lost a row)."""
    kept = [x for x in text.splitlines() if not x.startswith(start)]
    assert len(kept) < len(text.splitlines()), start
    return "\n".join(kept) + "\n"


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# --- docs/black-box.md: the wires = the serve app's routes that take a model call --------------

WIRES = "| wire | environment the official SDK reads |"


def listed_wires(text: str) -> set[str]:
    return {ticked(row[0])[0] for row in table(text, WIRES)}


def served_wires() -> set[str]:
    pytest.importorskip("starlette", reason="pip install -e '.[serve]'")
    from starlette.routing import Route

    from harnesslab.adapters.serve_app import Sessions, build_app

    app = build_app(Sessions())
    # Every POST route takes a model call but the tools' (POST /harnesslab/tools/NAME runs a
    # tool), the embeddings', the token counts', the conversations' and Ollama's model
    # information (no model call); GET routes list models and tools and tell the time:
    # serve.md's, as the embeddings and counts.
    return {f"POST {r.path}" for r in app.routes if isinstance(r, Route)
            and "POST" in (r.methods or ()) and not r.path.startswith("/harnesslab/tools")
            and r.path not in NOT_CALLS}


NOT_CALLS = {"/v1/embeddings", "/v1/messages/count_tokens", "/v1/responses/input_tokens",
             "/api/show",
             "/v1/conversations", "/v1/conversations/{cid}", "/v1/conversations/{cid}/items"}


def test_the_wires_table_lists_every_route_that_takes_a_model_call() -> None:
    served = served_wires()
    assert len(served) == 6
    assert listed_wires(page("black-box.md")) == served


def test_a_wire_missing_from_the_table_is_seen() -> None:
    lost = without(page("black-box.md"), "| `POST /v1/messages`")
    assert listed_wires(lost) != served_wires()


# --- docs/frameworks.md: the examples, and the framework x scenario matrix ----------------------

EXAMPLES = "| example | framework |"
MATRIX = "| scenario | langchain |"


def listed_examples(text: str) -> set[str]:
    return {ticked(row[0])[0] for row in table(text, EXAMPLES)}


def test_the_examples_table_lists_every_example_agent_and_only_those() -> None:
    on_disk = {p.name for p in (ROOT / "examples").glob("*_agent.py")}
    assert len(on_disk) >= 8
    assert listed_examples(page("frameworks.md")) == on_disk


def test_an_example_missing_from_the_table_is_seen() -> None:
    lost = without(page("frameworks.md"), "| `agno_agent.py`")
    assert "agno_agent.py" not in listed_examples(lost)


def matrix_problems(text: str) -> list[str]:
    """What the framework x scenario matrix names that does not exist. Its cells are the
    measured outcomes of the runs the page describes (a framework's own venv, 25-minute runs),
    not regenerated here: what is checked is that each column is an example the page lists,
    each row a bundled scenario, and a bundled scenario without a row is named on the page as
    bundled after those runs."""
    problems = []
    header = [c.strip() for c in text[text.index(MATRIX):].splitlines()[0].split("|")[1:-1]]
    examples = listed_examples(text)
    problems += [f"column {c}: no {c}_agent.py in the examples table" for c in header[1:]
                 if f"{c}_agent.py" not in examples]
    rows = table(text, MATRIX)
    problems += [f"row {r[0]}: {len(r)} cells for {len(header)} columns" for r in rows
                 if len(r) != len(header)]
    listed = {r[0] for r in rows}
    bundled = {p.stem for p in bundled_dir().glob("*.yaml")}
    problems += [f"row {s}: not a bundled scenario" for s in sorted(listed - bundled)]
    later = re.search(r"bundled after them \(([^)]*)\) have no row", text)
    named_later = set(ticked(later[1])) if later else set()
    problems += [f"{s}: bundled, no row, not named as bundled after the runs"
                 for s in sorted(bundled - listed - named_later)]
    problems += [f"{s}: named as bundled after the runs, but not bundled or has a row"
                 for s in sorted(named_later - (bundled - listed))]
    return problems


def test_the_results_matrix_names_bundled_scenarios_and_listed_examples() -> None:
    assert matrix_problems(page("frameworks.md")) == []


def test_a_matrix_row_lost_or_naming_no_scenario_is_seen() -> None:
    text = page("frameworks.md")
    assert matrix_problems(without(text, "| stale-logistics-zh |")) == [
        "stale-logistics-zh: bundled, no row, not named as bundled after the runs"]
    bogus = text.replace("| stale-logistics-zh |", "| stale-logistics-xx |")
    assert "row stale-logistics-xx: not a bundled scenario" in matrix_problems(bogus)


# --- docs/layout.md: the folders = harnesslab's subpackages and shared modules ------------------

FOLDERS = "| folder | what it owns |"


def listed_layout(text: str) -> set[str]:
    out: set[str] = set()
    for row in table(text, FOLDERS):
        names = ticked(row[0])
        if not names[0].startswith("harnesslab/"):
            continue  # notebooks/, beside the package
        if names[0].endswith("/"):
            out.add(names[0])  # one folder (a parenthesis may name its link)
        else:
            out |= {f"harnesslab/{n.removeprefix('harnesslab/')}" for n in names}
    return out


def package_layout() -> set[str]:
    pkg = ROOT / "harnesslab"
    folders = {f"harnesslab/{p.name}/" for p in pkg.iterdir()
               if p.is_dir() and not p.name.startswith(("_", "."))}
    # __init__ is the public API and __main__ the entry point, both named on the page's top.
    modules = {f"harnesslab/{p.name}" for p in pkg.glob("*.py")
               if p.name not in ("__init__.py", "__main__.py")}
    return folders | modules


def test_the_layout_table_names_every_subpackage_and_shared_module() -> None:
    assert listed_layout(page("layout.md")) == package_layout()


def test_a_folder_missing_from_the_layout_table_is_seen() -> None:
    lost = without(page("layout.md"), "| `harnesslab/study/`")
    assert listed_layout(lost) == package_layout() - {"harnesslab/study/"}


# --- docs/pytest.md: what a control's item becomes ---------------------------------------------

OUTCOMES = "| what the control did | the item |"
# A control per case the table's rows name (the phrase in the row), as tests/plugin runs them.
CASES = {
    "exactly the listed checks failed": "holds",
    "every check passed": "no-longer-fails",
    "a check it does not list failed": "fails-more",
    "a listed one passed while others failed": "partly",
    "the run crashed": "crashed",
}


def documented_outcomes(text: str) -> dict[str, str]:
    """Each case's item outcome as the table gives it (its bold word: xfailed, failed)."""
    out = {}
    for what, item in table(text, OUTCOMES):
        (outcome,) = re.findall(r"\*\*(\w+)\*\*", item)
        if "XPASS(strict)" in item:
            outcome += " XPASS(strict)"
        for phrase, case in CASES.items():
            if phrase in what:
                out[case] = outcome
    return out


def test_the_outcome_table_is_what_the_plugin_makes_of_each_control(
        pytester: pytest.Pytester) -> None:
    from tests.plugin.support import INI, REFERENT_LOST, TRUNCATE_SMALL, followup, outcomes_by_name

    pytester.makepyprojecttoml(INI)
    pytester.makefile(".yaml", followup=followup([
        {"name": "holds", "set": TRUNCATE_SMALL, "expect_fail": REFERENT_LOST},
        {"name": "no-longer-fails", "expect_fail": ["s3.resolves"]},
        {"name": "fails-more", "set": TRUNCATE_SMALL, "expect_fail": ["s3.resolves"]},
        {"name": "partly", "set": TRUNCATE_SMALL, "expect_fail": [*REFERENT_LOST, "s1.max_chars"]},
        # A program that exits before its first answer: the run ends with an error.
        {"name": "crashed", "set": {"harness": "cmd:python -c pass"}, "expect_fail": REFERENT_LOST},
    ]))
    result = pytester.runpytest("-rA")
    made = {name: {"XFAIL": "xfailed", "FAILED": "failed"}[o]
            for name, o in outcomes_by_name(result.outlines).items()}
    out = result.stdout.str()
    no_longer = out[out.index("_ followup / no-longer-fails _"):].split("\n_")[0]
    if "[XPASS(strict)]" in no_longer:
        made["no-longer-fails"] += " XPASS(strict)"
    assert "HarnessGone" in out[out.index("_ followup / crashed _"):]
    assert documented_outcomes(page("pytest.md")) == made


def test_an_outcome_table_with_a_case_lost_or_wrong_is_seen() -> None:
    text = page("pytest.md")
    assert "holds" not in documented_outcomes(without(text, "| exactly the listed checks"))
    wrong = text.replace("| **failed** (`XPASS(strict)`)", "| **xfailed**")
    assert documented_outcomes(wrong)["no-longer-fails"] == "xfailed"


# --- docs/suite-power.md: the mutation figures and the scenarios written for the survivors ------

FIGURES = "| | mutants |"
SURVIVORS = "| scenario | what a correct harness must keep | controls |"


def figure_problems(text: str) -> list[str]:
    """The mutation figures are a measurement (``harnesslab bugs --mutants --sample 200``, about
    50 minutes of wall time: not rerun by a test); what a test can hold them to is that they
    add up, their rates are their counts, the per-module line sums to the table, and CI runs the
    sample the page measured with a floor below the measured score."""
    rows = {r[0]: r[1] for r in table(text, FIGURES)}

    def count(key: str) -> int:
        (cell,) = [v for k, v in rows.items() if k.startswith(key)]
        return int(cell.split()[0])

    def rate(key: str) -> float:
        (cell,) = [v for k, v in rows.items() if k.startswith(key)]
        return float(re.search(r"\(([\d.]+)%\)", cell)[1])  # type: ignore[index]

    problems = []
    sampled, scope, equiv = count("sampled"), count("out of scope"), count("equivalent")
    nonequiv = count("non-equivalent")
    if sampled != scope + equiv + nonequiv:
        problems.append(f"sampled {sampled} != {scope} + {equiv} + {nonequiv}")
    for key in ("killed by the suite before", "killed with"):
        if round(100 * count(key) / nonequiv, 1) != rate(key):
            problems.append(f"{key}: {count(key)}/{nonequiv} is not {rate(key)}%")
    prose = " ".join(text.split())
    strata = re.search(r"stratified: ([^)]*)\)", prose)
    assert strata is not None
    if sum(int(x.rsplit(" ", 1)[1]) for x in strata[1].split(", ")) != sampled:
        problems.append(f"the strata ({strata[1]}) do not add up to {sampled}")
    per = re.search(r"Per module \(killed / non-equivalent, after\): ([^(]*?)(?: \(|\.)", prose)
    assert per is not None
    pairs = [tuple(map(int, x.rsplit(" ", 1)[1].split("/"))) for x in per[1].split(", ")]
    if (sum(k for k, _ in pairs), sum(n for _, n in pairs)) != (count("killed with"), nonequiv):
        problems.append("the per-module line does not sum to the table")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    sample = re.search(r"HARNESSLAB_CI_MUTANTS:-(\d+)", ci)
    floor = re.search(r"HARNESSLAB_CI_MUTATION_FLOOR:-(\d+)", ci)
    assert sample is not None and floor is not None
    if int(sample[1]) != sampled:
        problems.append(f".ci/run samples {sample[1]}, the page measured {sampled}")
    if not int(floor[1]) < rate("killed with"):
        problems.append(f".ci/run's floor {floor[1]}% is not below the measured score")
    if f"--fail-under {floor[1]}" not in text:
        problems.append(f"the page does not state CI's floor ({floor[1]})")
    return problems


def test_the_mutation_figures_add_up_and_match_ci() -> None:
    assert figure_problems(page("suite-power.md")) == []


def test_a_mutation_figure_that_does_not_add_up_is_seen() -> None:
    text = page("suite-power.md")
    wrong = text.replace("| non-equivalent, in scope | 130 |", "| non-equivalent, in scope | 132 |")
    assert "sampled 200 != 13 + 57 + 132" in figure_problems(wrong)
    killed = text.replace("| 119 (91.5%) |", "| 120 (91.5%) |")
    assert killed != text
    assert any(p.startswith("killed with: 120/130") for p in figure_problems(killed))


def survivor_problems(text: str) -> list[str]:
    problems = []
    for scenario, _, controls in table(text, SURVIVORS):
        (sid,) = ticked(scenario)
        path = bundled_dir() / f"{sid}.yaml"
        if not path.is_file():
            problems.append(f"{sid}: not a bundled scenario")
            continue
        has = {v.name for v in load_scenario(path).variants if v.kind == "control"}
        if set(ticked(controls)) != has:
            problems.append(f"{sid}: controls {sorted(ticked(controls))}, it has {sorted(has)}")
    return problems


def test_the_survivors_scenarios_exist_with_the_controls_named() -> None:
    assert survivor_problems(page("suite-power.md")) == []


def test_a_survivors_row_naming_a_wrong_scenario_or_control_is_seen() -> None:
    text = page("suite-power.md")
    assert survivor_problems(text.replace("| `restart-cost-zh` |", "| `restart-costs-zh` |")) \
        == ["restart-costs-zh: not a bundled scenario"]
    lost = text.replace("| `no-memory`, `tools-missing` |", "| `tools-missing` |", 1)
    assert survivor_problems(lost) == [
        "memory-cost-next-day-zh: controls ['tools-missing'], it has ['no-memory', "
        "'tools-missing']"]


# --- docs/your-harness.md: the protocol = the lines adapters/cmd.py writes and reads -----------

PROTOCOL = "| the bench writes | the program answers |"
BENCH_SIDE = [ROOT / "harnesslab" / "adapters" / f for f in ("cmd.py", "program.py")]


def line_types(cell: str) -> set[str]:
    return set(re.findall(r'"type": "(\w+)"', cell))


def sent_types() -> set[str]:
    """Every ``{"type": ...}`` line the bench's side of the protocol builds."""
    out: set[str] = set()
    for path in BENCH_SIDE:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == "type" and \
                            isinstance(v, ast.Constant) and isinstance(v.value, str):
                        out.add(v.value)
    return out


def told_apart() -> set[str]:
    """The answer types the bench reads (``.get("type") == ...``); every other answer is any
    JSON object, or one with a string ``text``."""
    return {t for path in BENCH_SIDE for t in re.findall(
        r'\.get\("type"\) == "(\w+)"', path.read_text(encoding="utf-8"))}


def protocol_problems(text: str) -> list[str]:
    from harnesslab.adapters.cmd import PROTOCOL as VERSION

    rows = table(text, PROTOCOL)
    written = set().union(*(line_types(r[0]) for r in rows))
    answered = set().union(*(line_types(r[1]) for r in rows))
    problems = []
    if written != sent_types():
        problems.append(f"the bench writes {sorted(sent_types())}; the table {sorted(written)}")
    if not told_apart() <= answered:
        problems.append(f"answers the bench reads missing: {sorted(told_apart() - answered)}")
    hello = [r[0] for r in rows if '"hello"' in r[0]]
    if not hello or f'"protocol": {VERSION}' not in hello[0]:
        problems.append(f"the hello line does not give protocol {VERSION}")
    return problems


def test_the_protocol_table_is_every_line_the_bench_writes_and_reads() -> None:
    assert sent_types() == {"hello", "user", "advance", "preload", "shutdown"}
    assert told_apart() == {"ok"}
    assert protocol_problems(page("your-harness.md")) == []


def test_a_protocol_line_missing_from_the_table_is_seen() -> None:
    lost = without(page("your-harness.md"), '| `{"type": "shutdown"}`')
    assert protocol_problems(lost) == [
        "the bench writes ['advance', 'hello', 'preload', 'shutdown', 'user']; the table "
        "['advance', 'hello', 'preload', 'user']"]


# --- README.md: the page table ----------------------------------------------------------------

PAGES = "| page | what it covers |"


def page_table_problems(text: str) -> list[str]:
    problems = []
    for row in table(text, PAGES):
        m = re.fullmatch(r"\[(docs/[\w-]+\.md)\]\((docs/[\w-]+\.md)\)", row[0])
        if m is None or m[1] != m[2]:
            problems.append(f"{row[0]}: not a link to the page it names")
        elif not (ROOT / m[2]).is_file():
            problems.append(f"{m[2]}: no such page")
    return problems


def test_the_readme_page_table_links_pages_that_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(table(text, PAGES)) >= 15
    assert page_table_problems(text) == []


def test_a_page_table_row_naming_no_page_is_seen() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    gone = text.replace("[docs/memory.md](docs/memory.md)", "[docs/memories.md](docs/memories.md)")
    assert page_table_problems(gone) == ["docs/memories.md: no such page"]


AS_MEMORY = "| memory mode | AgentScope middleware |"
AS_RUNS = "| scenario | variant | mode | through AgentScope |"


def as_memory_problems(text: str) -> list[str]:
    """docs/agentscope-memory.md: the mode table names every memory mode, "yes" exactly for the
    modes the adapter wires; the runs table lists every bundled variant that runs a wired mode."""
    from harnesslab.adapters.agentscope_settings import MEMORY_MODES
    from harnesslab.harness.memory import MEMORY_MODES as ALL
    from harnesslab.scenario.settings import resolve_settings

    problems = []
    rows = {ticked(r[0])[0]: r[3] for r in table(text, AS_MEMORY)}
    if set(rows) != set(ALL) - {"none"}:
        problems.append(f"modes {sorted(rows)}")
    wired = {m for m, w in rows.items() if w == "yes"}
    if wired != set(MEMORY_MODES) - {"none"}:
        problems.append(f"wired {sorted(wired)}")
    want, exist = set(), set()
    for p in sorted(bundled_dir().glob("*.yaml")):
        sc = load_scenario(p)
        for v in sc.variants:
            exist.add((sc.id, v.name))
            if resolve_settings(sc, v, {}).harness.memory.mode in wired:
                want.add((sc.id, v.name))
    listed = {(r[0], r[1]) for r in table(text, AS_RUNS)}
    problems += [f"{s}/{v}: not listed" for s, v in sorted(want - listed)]
    problems += [f"{s}/{v}: no such variant" for s, v in sorted(listed - exist)]
    return problems


def test_the_agentscope_memory_tables_match_the_adapter_and_the_suite() -> None:
    assert as_memory_problems(page("agentscope-memory.md")) == []


def test_an_agentscope_memory_row_lost_or_wrong_is_seen() -> None:
    text = page("agentscope-memory.md")
    assert as_memory_problems(without(text, "| memory-two-users-zh | agentic |")) == [
        "memory-two-users-zh/agentic: not listed"]
    # A wired mode the page calls not wired (ReMe's row, "yes" -> "no").
    wrong = text.replace("ReMe's indexes in `metadata/`) | yes |",
                         "ReMe's indexes in `metadata/`) | no |")
    assert wrong != text
    assert as_memory_problems(wrong)[0] == "wired ['agentic', 'vector']"
    named = text.replace("| memory-cost-next-day-zh | agentic |", "| memory-cost-next-day-zh | agentik |")
    assert named != text
    assert as_memory_problems(named) == ["memory-cost-next-day-zh/agentic: not listed",
                                         "memory-cost-next-day-zh/agentik: no such variant"]
