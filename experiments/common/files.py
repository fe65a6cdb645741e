"""Writing files whole: a reader meets the old file or the new one, never a part of one.

The one way the experiments replace a file (run records, plots, checkpoints, tournament
output): :func:`atomic_path` for a writer that writes a path itself, :func:`write_atomically`
for text.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary file for the block to write, renamed over ``path`` when the block ends and
    removed when it fails (a full disk, a Ctrl-C): readers see the old file or the new one,
    never a part of one, and no temporary file is left behind.

    The temporary file is named as the file with ``.tmp`` added (``latest.pt.tmp``), in a
    hidden folder beside it that is this call's alone (``.tmp-<pid>-<random>/``, made here and
    removed after): two processes (or two threads) writing one path never share a temporary
    file, and a writer that records the name it writes to records the same name whichever
    process writes (torch names a checkpoint archive's root folder after the file, less its
    last suffix: ``latest.pt``, so checkpoints of one state are the same bytes)."""
    path = Path(path)
    folder = Path(tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-", dir=path.parent))
    tmp = folder / f"{path.name}.tmp"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:  # the folder is this call's alone: whatever the writer left in it goes
        shutil.rmtree(folder, ignore_errors=True)


def write_atomically(path: str | Path, text: str) -> None:
    """``text`` (UTF-8) to ``path`` through :func:`atomic_path`, on the disk (``fsync``)
    before it takes the name."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


__all__ = ["atomic_path", "write_atomically"]
