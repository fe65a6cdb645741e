"""One writer per folder (issue 47, 2; experiments/common/locks.py). Before the lock, two
tournaments started at once into one --out both played every match and interleaved
results.jsonl (broken and duplicate lines), a second --resume doubled the lines, and
--overwrite deleted the finished matches of a run still writing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dragons_egg.experiments.common.locks import HOLDER, FolderBusy, FolderLock

HOLD = textwrap.dedent("""
    import sys, time
    from dragons_egg.experiments.common.locks import FolderLock
    FolderLock(sys.argv[1]).acquire()
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
""")


def holder(folder: Path, seconds: float = 60.0) -> subprocess.Popen[str]:
    """A process that takes the folder's lock and keeps it ``seconds``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_at_once_naming_the_holder(tmp_path):
    proc = holder(tmp_path / "f")
    try:
        t = time.perf_counter()
        with pytest.raises(FolderBusy, match=rf"folder .* is being written by another process "
                                             rf"\(pid {proc.pid} on "):
            FolderLock(tmp_path / "f").acquire()
        assert time.perf_counter() - t < 2
    finally:
        proc.kill()
        proc.wait()


def test_a_lock_left_by_a_dead_process_does_not_block(tmp_path):
    proc = holder(tmp_path / "f")
    proc.kill()  # SIGKILL: no clean-up ran
    proc.wait()
    with FolderLock(tmp_path / "f") as lock:
        assert lock.held
        assert json.loads((tmp_path / "f" / HOLDER).read_text())["pid"] == os.getpid()


def test_this_process_may_take_its_own_lock_again(tmp_path):
    a = FolderLock(tmp_path / "f").acquire()
    b = FolderLock(tmp_path / "f").acquire()
    b.release()
    proc = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path / "f"), "0"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "FolderBusy" in proc.stderr  # still held by a
    a.release()
    assert subprocess.run([sys.executable, "-c", HOLD, str(tmp_path / "f"), "0"],
                          capture_output=True, text=True).returncode == 0


TOURNAMENT = [sys.executable, "-m", "dragons_egg.experiments.evaluation.tournament",
              "ismcts:iterations=30", "random", "--players", "2", "--matches", "24",
              "--rounds", "1", "--bootstrap", "100", "--workers", "1", "--no-progress"]


def test_two_tournaments_into_one_folder_one_plays_one_is_refused(tmp_path):
    """The second is started while the first plays (its lock's holder record is there):
    refused at once, naming the first's pid; the first writes every match once."""
    out = tmp_path / "t"
    first = subprocess.Popen(TOURNAMENT + ["--matches", "60", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / HOLDER).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run(TOURNAMENT + ["--matches", "60", "--out", str(out)],
                            capture_output=True, text=True, timeout=120)
    _, err_first = first.communicate(timeout=600)
    assert first.returncode == 0, err_first
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert f"is being written by another process (pid {first.pid} on " in second.stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 60 and len({(r["sequence"], r["rotation"]) for r in lines}) == 60


def test_overwrite_and_resume_of_a_folder_in_use_are_refused(tmp_path):
    out = tmp_path / "t"
    assert subprocess.run(TOURNAMENT + ["--out", str(out)], capture_output=True).returncode == 0
    before = (out / "results.jsonl").read_bytes()
    proc = holder(out)
    try:
        for extra in (["--overwrite"], ["--resume", str(out)]):
            argv = TOURNAMENT + ["--out", str(out)] + extra if "--overwrite" in extra else \
                TOURNAMENT[:3] + extra
            run = subprocess.run(argv, capture_output=True, text=True)
            assert run.returncode == 2 and f"(pid {proc.pid} on " in run.stderr, run.stderr
        assert (out / "results.jsonl").read_bytes() == before  # nothing deleted
    finally:
        proc.kill()
        proc.wait()


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from dragons_egg.experiments.common.files import atomic_path
    from dragons_egg.experiments.common.locks import FolderLock
    FolderLock(sys.argv[1]).acquire()
    with atomic_path(Path(sys.argv[1]) / "checkpoints" / "latest.pt") as tmp:
        tmp.write_bytes(b"half a checkpoint")
        print("writing", flush=True)
        time.sleep(60)
""")


def test_the_next_writer_removes_the_temporary_files_of_a_killed_one(tmp_path):
    """Issue 47: a writer killed at once (SIGKILL) left its temporary folder (with a part of
    a checkpoint) in the run folder for good. The next process to take the folder's lock
    removes it, and nothing else."""
    f = tmp_path / "f"
    (f / "checkpoints").mkdir(parents=True)
    (f / "checkpoints" / "latest.pt").write_bytes(b"the last whole checkpoint")
    (f / ".tmp-notes").write_text("a user's file, not a folder: kept")
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(f)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    finally:
        proc.kill()
        proc.wait()
    left = list((f / "checkpoints").glob(".tmp-*"))
    assert len(left) == 1 and left[0].name.startswith(f".tmp-{proc.pid}-")
    with FolderLock(f):
        assert list(f.rglob(".tmp-*/*")) == []
        assert (f / "checkpoints" / "latest.pt").read_bytes() == b"the last whole checkpoint"
        assert (f / ".tmp-notes").is_file()
