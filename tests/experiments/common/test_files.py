"""experiments/common/files.py: files written whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragons_egg.experiments.common import files


def test_atomic_writes_leave_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    """``atomic_path``/``write_atomically`` (every results file of the experiments): a write
    that fails midway (here a Ctrl-C) leaves the old file whole and no temporary file."""
    path = tmp_path / "summary.json"
    files.write_atomically(path, "old")
    with pytest.raises(KeyboardInterrupt):
        with files.atomic_path(path) as tmp:
            tmp.write_text("half of the ne")
            raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    files.write_atomically(path, "new")
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_a_named_temporary_file_is_used_and_removed_on_failure(tmp_path: Path) -> None:
    """``tmp_name`` names the temporary file (torch records the name it writes); a failed
    block removes it and leaves no file at the path."""
    path = tmp_path / "latest.pt"
    with pytest.raises(OSError):
        with files.atomic_path(path, tmp_name="latest.pt.tmp") as tmp:
            assert tmp == tmp_path / "latest.pt.tmp"
            tmp.write_bytes(b"x")
            raise OSError("disk full")
    assert list(tmp_path.iterdir()) == []
