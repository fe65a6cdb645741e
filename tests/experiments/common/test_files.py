"""experiments/common/files.py: files written whole."""

from __future__ import annotations

import os
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


def test_the_temporary_file_is_named_after_the_file_in_a_folder_of_its_own(tmp_path: Path) -> None:
    """Issue 47: temporary files are unique per process. The temporary file is named as the
    file with ``.tmp`` added (torch names a checkpoint archive's root after it), in a hidden
    folder of this call's own, ``.tmp-<pid>-...``; a failed block removes both and leaves no
    file at the path. Before, a writer that needed the name passed a fixed ``tmp_name``, which two
    processes writing one path shared."""
    path = tmp_path / "latest.pt"
    with pytest.raises(OSError):
        with files.atomic_path(path) as tmp:
            assert tmp.name == "latest.pt.tmp" and tmp.parent.parent == tmp_path
            assert tmp.parent.name.startswith(f".tmp-{os.getpid()}-")
            tmp.write_bytes(b"x")
            raise OSError("disk full")
    assert list(tmp_path.iterdir()) == []
    with files.atomic_path(path) as tmp:
        tmp.write_bytes(b"whole")
    assert path.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [path]


def test_two_writers_of_one_path_never_share_a_temporary_file(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Two writers of one path at once, in two processes (two pids) or in one (two threads,
    or a writer within a writer): each has its own temporary file, and the path ends whole,
    the last one's. Before, the second writer wrote into the first one's temporary file (in
    one process: ``.NAME.PID.tmp``), and the first one's rename took the other's bytes."""
    path = tmp_path / "latest.pt"
    monkeypatch.setattr(os, "getpid", lambda: 111)
    with files.atomic_path(path) as first:
        first.write_bytes(b"first")
        monkeypatch.setattr(os, "getpid", lambda: 222)
        with files.atomic_path(path) as second:
            assert second != first and second.name == first.name == "latest.pt.tmp"
            assert (first.parent.name[:9], second.parent.name[:9]) == (".tmp-111-", ".tmp-222-")
            second.write_bytes(b"second")
            assert first.read_bytes() == b"first"
        assert path.read_bytes() == b"second"
        with files.atomic_path(path) as third:  # the same process, while its first one writes
            assert third != first
            third.write_bytes(b"third")
    assert path.read_bytes() == b"first"
    assert list(tmp_path.iterdir()) == [path]
