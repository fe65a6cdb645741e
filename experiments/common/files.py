"""Writing files whole: a reader meets the old file or the new one, never a part of one.

The one way the experiments replace a file (run records, plots, checkpoints, tournament
output): :func:`atomic_path` for a writer that writes a path itself, :func:`write_atomically`
for text; and the one way they append a line to a file of lines (``results.jsonl``,
``tribute_parts.jsonl``, ``eval.csv``): :func:`write_whole`, which leaves no part of a line.

A disk that refuses a write (full, over its quota, failing, read-only: :data:`DISK_ERRORS`)
raises an ``OSError`` that names the file written (the final name, not the temporary one);
:func:`disk_error` finds it, and a command says in one line (:func:`disk_error_line`) what
failed, where its last complete state is and the command that resumes from it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The errors of a disk that refuses a write, by ``errno``, as a command's one line says them.
DISK_ERRORS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
               errno.EIO: "input/output error", errno.EROFS: "read-only file system"}


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary file for the block to write, renamed over ``path`` when the block ends and
    removed when it fails (a full disk, a Ctrl-C): readers see the old file or the new one,
    never a part of one, and no temporary file is left behind. The file is on the disk
    (``fsync``) before it takes the name: a disk that fails it late (a quota, an I/O error)
    fails it here. An ``OSError`` names ``path`` as the file written.

    The temporary file is named as the file with ``.tmp`` added (``latest.pt.tmp``), in a
    hidden folder beside it that is this call's alone (``.tmp-<pid>-<random>/``, made here and
    removed after): two processes (or two threads) writing one path never share a temporary
    file, and a writer that records the name it writes to records the same name whichever
    process writes (torch names a checkpoint archive's root folder after the file, less its
    last suffix: ``latest.pt``, so checkpoints of one state are the same bytes)."""
    path = Path(path)
    with writing(path):
        folder = Path(tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-", dir=path.parent))
    tmp = folder / f"{path.name}.tmp"
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename is not None and not str(exc.filename).startswith(str(folder)):
            raise
        if exc.filename2 is not None:  # the rename's: said as the file's own
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        exc.filename = str(path)  # the file, not its temporary
        raise
    finally:  # the folder is this call's alone: whatever the writer left in it goes
        shutil.rmtree(folder, ignore_errors=True)


def write_atomically(path: str | Path, text: str) -> None:
    """``text`` (UTF-8) to ``path`` through :func:`atomic_path` (on the disk before it takes
    the name)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def write_whole(f: Any, data: bytes | memoryview) -> None:
    """``data`` written at the end of ``f``, a file opened unbuffered (``open(path, "ab",
    buffering=0)``), whole or not at all: a write cut off midway (a full disk, a Ctrl-C)
    is undone, the file cut back to its length before, so a file of lines never ends in part
    of one; the ``OSError`` names the file."""
    fd = f.fileno()
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(f.name)
        raise


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Within: an ``OSError`` that names no file (a write to, or an ``fsync`` of, a file
    already open) names ``path``, the file being written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise


def disk_error(exc: BaseException | None) -> OSError | None:
    """The ``OSError`` of a disk that refused a write (its ``errno`` one of
    :data:`DISK_ERRORS`) that ``exc`` is, or was raised from or while handling; else
    ``None``."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
            return exc
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return None


def disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` is (or comes from) a disk that refused a write (:func:`disk_error`)."""
    return disk_error(exc) is not None


def disk_error_line(err: OSError, kept: str, resume: str | None = None) -> str:
    """One line on a write the disk refused: what it said (the ``errno``'s meaning and name),
    the file, where the last complete state is (``kept``) and, when there is one, the
    command that resumes from it."""
    what = DISK_ERRORS.get(err.errno or 0, err.strerror or "the write failed")
    name = errno.errorcode.get(err.errno or 0, str(err.errno))
    file = f" while writing {err.filename}" if err.filename else ""
    return f"{what} ({name}){file}: {kept}" + (f"; resume with: {resume}" if resume else "")


__all__ = ["DISK_ERRORS", "atomic_path", "disk_error", "disk_error_line", "disk_full",
           "write_atomically", "write_whole", "writing"]
