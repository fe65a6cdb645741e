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


def _enospc() -> OSError:
    import errno

    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_line_is_appended_whole_or_not_at_all(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 47 (a full disk): ``write_whole`` appends a line to a file of lines; a disk that
    takes part of it and then refuses the rest leaves the file at its last whole line, and
    the error names the file."""
    path = tmp_path / "results.jsonl"
    with open(path, "ab", buffering=0) as f:
        files.write_whole(f, b'{"a": 1}\n')
        real = os.write

        def half(fd: int, data: bytes) -> int:  # takes 3 bytes, then the disk is full
            monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(_enospc()))
            return real(fd, bytes(data[:3]))

        monkeypatch.setattr(os, "write", half)
        with pytest.raises(OSError) as exc:
            files.write_whole(f, b'{"b": 2}\n')
        monkeypatch.undo()
    assert exc.value.filename == str(path) and files.disk_full(exc.value)
    assert path.read_bytes() == b'{"a": 1}\n'


@pytest.mark.parametrize("where", ["block", "fsync", "rename"])
def test_a_refused_atomic_write_names_the_file_and_keeps_the_old_one(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write the disk refuses in the block, when the file is synced (a quota, an I/O error
    that shows late) or at the rename: the error names the file (not its temporary one), the
    old file is whole and no temporary file is left."""
    path = tmp_path / "summary.json"
    files.write_atomically(path, "old")
    if where == "fsync":
        monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(_enospc()))
    if where == "rename":
        def replace(src: str, dst: str) -> None:
            raise OSError(28, os.strerror(28), str(src), None, str(dst))
        monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError) as exc:
        with files.atomic_path(path) as tmp:
            tmp.write_text("new")
            if where == "block":
                with open(tmp, "ab", buffering=0) as f:
                    monkeypatch.setattr(os, "write",
                                        lambda fd, data: (_ for _ in ()).throw(_enospc()))
                    files.write_whole(f, b"more")
    monkeypatch.undo()
    assert exc.value.filename == str(path) and exc.value.errno == 28
    assert str(exc.value) == f"[Errno 28] No space left on device: '{path}'"
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == \
        ["summary.json"]


def test_disk_error_finds_the_disk_behind_an_error_and_says_it_in_one_line() -> None:
    import errno

    full = _enospc()
    full.filename = "/runs/x/checkpoints/latest.pt"
    try:
        try:
            raise full
        except OSError as exc:
            raise RuntimeError("while cleaning up") from exc
    except RuntimeError as late:
        assert files.disk_error(late) is full
    hidden = ValueError("said otherwise")
    hidden.__context__, hidden.__suppress_context__ = full, True  # raise ... from None
    assert files.disk_error(hidden) is None
    assert not files.disk_full(FileNotFoundError(errno.ENOENT, "no such file"))
    assert files.disk_full(OSError(errno.EIO, "I/O")) and files.disk_full(
        OSError(errno.EDQUOT, "quota"))
    assert files.disk_error_line(full, "the last complete checkpoint is A", "train --resume A") \
        == ("no space left on device (ENOSPC) while writing /runs/x/checkpoints/latest.pt: "
            "the last complete checkpoint is A; resume with: train --resume A")
