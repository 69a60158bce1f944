"""The worked notebook runs top to bottom (nbclient with ipykernel, from the dev extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "sweep-example.ipynb"


@pytest.mark.slow
def test_the_worked_notebook_runs_top_to_bottom(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    # It plotted from the DataFrame and wrote the report where it said.
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert (tmp_path / "reports" / "notebook-sweep" / "index.html").is_file()
    assert (tmp_path / "runs" / "notebook-sweep" / "sweep.parquet").is_file()
