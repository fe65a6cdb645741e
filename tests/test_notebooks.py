"""Committed notebooks carry no outputs (the suite executes them with nbmake)."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_three_notebooks():
    names = [p.stem for p in NOTEBOOKS]
    assert names == ["01_quickstart", "02_training_and_evaluation", "03_tribute_analysis"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name
