"""One writer per folder: an exclusive OS file lock on every folder a command writes.

Every command that writes a run, tournament, analysis or benchmark folder holds
:class:`FolderLock` on it for as long as it writes (the ``filelock`` library: ``flock`` on
Unix, ``msvcrt`` locking on Windows). The lock belongs to the process: the operating system
drops it when the process ends, however it ends, so a lock left by a killed process never
blocks a resume. A second writer (a second tournament into the same ``--out``, a scheduler's
requeue while the first still runs, a trainer given a tournament's folder, an ``--overwrite``
of a folder in use) is refused at once with one line naming the holder's process id, which the
holder records beside the lock (:data:`HOLDER`) once it has it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

#: The lock file and the record of its holder, in the locked folder.
LOCK, HOLDER = ".dragons-egg.lock", ".dragons-egg.writer"


#: The locks this process holds, by folder: ``[lock, holds]`` (a lock taken again in this
#: process is counted, not taken twice: ``flock`` would refuse this process's second take).
_HELD: dict[Path, list[Any]] = {}


class FolderBusy(ValueError):
    """The folder is being written by another process (the message names it)."""


class FolderUnwritable(ValueError):
    """The folder cannot be made or written (the message names it and why)."""


def left_behind(folder: Path) -> list[Path]:
    """Remove the temporary folders (``.tmp-<pid>-<random>/``, of
    :func:`~dragons_egg.experiments.common.files.atomic_path`) that another process left in
    ``folder`` or a folder in it, and return them: a writer killed at once (SIGKILL, the
    kernel's OOM killer) leaves its temporary folder behind. Called once the lock of
    ``folder`` is taken, when no other process writes there."""
    own = f".tmp-{os.getpid()}-"
    gone = []
    for tmp in [*folder.glob(".tmp-*"), *folder.glob("*/.tmp-*")]:
        if tmp.is_dir() and not tmp.is_symlink() and not tmp.name.startswith(own):
            shutil.rmtree(tmp, ignore_errors=True)
            gone.append(tmp)
    return gone


class FolderLock:
    """The exclusive lock of ``folder`` (made if missing); :meth:`acquire` it, or use it as a
    context manager. Acquiring a lock this process holds already is allowed (counted)."""

    def __init__(self, folder: str | os.PathLike[str], what: str = "folder") -> None:
        self.folder = Path(folder)
        self.what = what
        self._lock: Any = None

    def acquire(self) -> FolderLock:
        """Take the lock, or a :class:`FolderBusy` at once naming the process that holds it."""
        from filelock import FileLock, Timeout

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FolderUnwritable(f"cannot write to {self.what} {str(self.folder)!r}: "
                                   f"{exc.strerror or exc}") from None
        key = self.folder.resolve()
        if key in _HELD:
            _HELD[key][1] += 1
            self._lock = _HELD[key][0]
            return self
        lock = FileLock(str(self.folder / LOCK), timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:  # before OSError: filelock's Timeout is one
            raise FolderBusy(f"{self.what} {str(self.folder)!r} is being written by another "
                             f"process ({self.holder()}): wait for it to finish or stop it "
                             "(two writers in one folder would mix their results)") from None
        except OSError as exc:
            raise FolderUnwritable(f"cannot write to {self.what} {str(self.folder)!r}: "
                                   f"{exc.strerror or exc}") from None
        self._lock = lock
        _HELD[key] = [lock, 1]
        record = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                  "command": " ".join(sys.argv)[:500]}
        (self.folder / HOLDER).write_text(json.dumps(record) + "\n", encoding="utf-8")
        left_behind(self.folder)
        return self

    def holder(self) -> str:
        """Who holds the lock, as its holder recorded it (``pid N on HOST since T``)."""
        try:
            rec = json.loads((self.folder / HOLDER).read_text(encoding="utf-8"))
            return f"pid {int(rec['pid'])} on {rec['host']} since {rec['since']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "a process that has not yet said which"

    def release(self) -> None:
        """Give the lock up (the process's end does the same)."""
        if self._lock is None:
            return
        self._lock = None
        key = self.folder.resolve()
        entry = _HELD.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _HELD[key]
            entry[0].release()

    @property
    def held(self) -> bool:
        return self._lock is not None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


__all__ = ["FolderBusy", "FolderLock", "FolderUnwritable", "HOLDER", "LOCK"]
