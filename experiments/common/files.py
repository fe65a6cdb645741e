"""Writing files whole: a reader meets the old file or the new one, never a part of one.

The one way the experiments replace a file (run records, plots, checkpoints, tournament
output): :func:`atomic_path` for a writer that writes a path itself, :func:`write_atomically`
for text.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path, tmp_name: str = "") -> Iterator[Path]:
    """A temporary file beside ``path`` for the block to write; renamed over ``path`` when the
    block ends, removed when it fails (a full disk, a Ctrl-C): readers see the old file or the
    new one, never a part of one, and no temporary file is left behind. ``tmp_name`` names
    the temporary file (default: a hidden name with the process id), for a writer that
    records the name it writes to (torch names a checkpoint archive's root after it)."""
    path = Path(path)
    tmp = path.with_name(tmp_name or f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomically(path: str | Path, text: str) -> None:
    """``text`` (UTF-8) to ``path`` through :func:`atomic_path`, on the disk (``fsync``)
    before it takes the name."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


__all__ = ["atomic_path", "write_atomically"]
