"""What every subcommand shares: the parser that exits 2 on bad input, value types, ``--set``
parsing and the run folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harnesslab.errors import InputError


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own errors are bad CLI input too: one line, exit 2.
        self.exit(2, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def parse_sets(items: list[str] | None) -> dict[str, object]:
    from harnesslab.scenario.settings import parse_value

    out: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"expected key=value, got {item!r}", field="--set")
        out[key.strip()] = parse_value(value)
    return out


def run_dir(out: str | None) -> tuple[Path, Path | None]:
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
        writable(path, "--out")
        return path, None
    import datetime

    root = Path("runs")
    # The wall clock names the folder only; nothing inside a record depends on it.
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path, n = root / stamp, 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{n}"
    writable(path, "--out")
    return path, root / "latest"


def writable(path: Path, field: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".harnesslab-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as e:
        raise InputError(f"cannot write there: {e.strerror or e}", field=field,
                         file=str(path)) from None


def point_latest(link: Path, target: Path) -> None:
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target.name, target_is_directory=True)
    except OSError:
        pass  # a filesystem without symlinks: the timestamped folder is still printed
