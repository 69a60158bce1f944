"""The sweep table on disk: its rows as a DataFrame, written whole as ``sweep.parquet`` or
``sweep.csv`` and read back, and the sweep manifest's name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnesslab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd



# The sweep folder's manifest: what was planned, for the report and resumes.
MANIFEST = "sweep.json"


def cell_value(v: Any) -> Any:
    """A cell setting as a table value: scalars as they are, collections as canonical JSON."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# --- the table ---------------------------------------------------------------------------------

def has_pyarrow() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def to_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame sorted by run key; a column of mixed kinds is kept as text."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    if df.empty:
        return df
    for c in df.columns:
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and v == v}
            if len(kinds) > 1 and not kinds <= {int, float}:
                df[c] = [None if v is None else cell_value(v) if not isinstance(v, str)
                         else v for v in df[c]]
    return df.sort_values("run_key", kind="stable").reset_index(drop=True)


def write_table(rows: Sequence[Mapping[str, Any]], out: Path, fmt: str | None = None) -> Path:
    """``sweep.parquet`` (pyarrow) or ``sweep.csv``, written whole then renamed into place."""
    fmt = fmt or ("parquet" if has_pyarrow() else "csv")
    df = to_frame(rows)
    path = out / f"sweep.{fmt}"
    tmp = out / f".sweep.{fmt}.tmp"
    if fmt == "parquet":
        df.to_parquet(tmp, index=False)
    else:
        df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    other = out / ("sweep.csv" if fmt == "parquet" else "sweep.parquet")
    other.unlink(missing_ok=True)  # one table per sweep folder, never a stale second one
    return path


def table_path(out: str | Path) -> Path:
    out = Path(out)
    for name in ("sweep.parquet", "sweep.csv"):
        if (out / name).exists():
            return out / name
    raise InputError("not a sweep folder: no sweep.parquet or sweep.csv (run harnesslab sweep "
                     "--out with it first)", file=str(out))


def load_table(out: str | Path) -> pd.DataFrame:
    """The sweep table of a sweep folder, as written."""
    import pandas as pd

    path = table_path(out)
    if path.suffix == ".parquet" and not has_pyarrow():
        raise InputError("reading a parquet table needs pyarrow: pip install pyarrow",
                         file=str(path))
    try:
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as e:  # pyarrow's ArrowInvalid, pandas' ParserError, OSError: all damage
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"not a readable sweep table ({first}); it is rebuilt from rows.jsonl "
                         "by running the same harnesslab sweep again (finished runs are "
                         "skipped)", file=str(path)) from None
