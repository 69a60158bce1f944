"""Dependencies point one way, as the import-linter contracts in pyproject.toml say (no import
circles; the stages of the data's path as layers; the harness knows nothing of the world or the
bench; adapters nothing of the simulator; the report reads records only; shared value types
import no room), and each contract fails when broken on purpose. Heavy optional packages load
lazily: importing harnesslab, ``--version`` and ``--help`` load none of them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import harnesslab

PACKAGE = Path(harnesslab.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"

needs_checkout = pytest.mark.skipif(not PYPROJECT.is_file() or "importlinter" not in
                                    PYPROJECT.read_text(encoding="utf-8"),
                                    reason="the contracts live in the checkout's pyproject.toml")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the package under ``root`` with the contracts of ``root``."""
    code = "import sys; from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run([sys.executable, "-c", code, "--config", str(root / "pyproject.toml"),
                           "--no-cache"], capture_output=True, text=True, cwd=root, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(PACKAGE, root / "harnesslab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, root / "pyproject.toml")
    return root


@needs_checkout
def test_the_contracts_hold() -> None:
    p = lint_imports(PACKAGE.parent)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 broken" in p.stdout


# Each line breaks one contract: (the module to add, what it imports, the contract it breaks).
BREAKS = [
    ("harness/leaky.py", "from harnesslab.sim.intents import CONSTRAINT_PHRASES",
     "The system under test gets only what a real harness gets"),
    ("harness/leaky.py", "from harnesslab.sim.intents import CONSTRAINT_PHRASES",
     "The stages of the data's path"),
    ("adapters/leaky.py", "from harnesslab.sim.model import FakeModel",
     "Adapters and the wire know nothing of the simulator's internals"),
    ("report/leaky.py", "from harnesslab.judge.checks import CheckOutcome",
     "The report is built from records only"),
    ("messages_extra.py", "from harnesslab.record.format import Record",
     "The shared value types and token accounting import no room"),
    ("record/leaky.py", "import pytest", "Only the pytest plugin imports pytest"),
    # judge/checks imports record; record importing judge closes a circle between siblings
    ("record/circle.py", "from harnesslab.judge import checks", "No import circles"),
]


@needs_checkout
@pytest.mark.parametrize(("module", "line", "contract"), BREAKS,
                         ids=[b[2].split(":")[0][:40] for b in BREAKS])
def test_a_contract_broken_on_purpose_fails(copy: Path, module: str, line: str,
                                            contract: str) -> None:
    added = copy / "harnesslab" / module
    if module == "messages_extra.py":  # a shared module: add the import to messages itself
        added = copy / "harnesslab" / "messages.py"
        original = added.read_text(encoding="utf-8")
        added.write_text(original + f"\n\ndef _leak() -> None:\n    {line}\n", encoding="utf-8")
    else:
        original = None
        added.write_text(f"{line}\n", encoding="utf-8")
    try:
        p = lint_imports(copy)
    finally:
        if original is None:
            added.unlink()
        else:
            added.write_text(original, encoding="utf-8")
    assert p.returncode == 1, p.stdout + p.stderr
    broken = p.stdout[p.stdout.index("Contracts:"):]
    assert contract in broken.replace("\n", " ").replace("  ", " "), p.stdout


@needs_checkout
def test_the_unbroken_copy_passes(copy: Path) -> None:
    # The control of the test above: the copy itself keeps every contract.
    p = lint_imports(copy)
    assert p.returncode == 0, p.stdout + p.stderr


HEAVY = ("pydantic", "yaml", "matplotlib", "pandas", "numpy", "agentscope", "tokenizers",
         "tiktoken", "tqdm", "starlette", "uvicorn", "openai", "harnesslab.scenario.schema")


def loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])  # a list literal we printed ourselves


def test_importing_harnesslab_loads_no_heavy_package() -> None:
    assert loaded_after("import harnesslab") == []
    # The control: touching a public name loads what it needs.
    assert "pydantic" in loaded_after("import harnesslab\nharnesslab.Scenario")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"]])
def test_the_command_line_loads_nothing_heavy_to_parse(argv: list[str]) -> None:
    code = (f"from harnesslab.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n"
            "    pass")
    assert loaded_after(code) == []


def test_every_public_name_resolves() -> None:
    missing = [n for n in harnesslab.__all__ if not hasattr(harnesslab, n)]
    assert missing == []
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        harnesslab.Nope  # noqa: B018
