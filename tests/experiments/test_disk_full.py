"""A full disk is one line (issue 47: "ENOSPC/EIO while writing is one line. It says where the
last complete state is and how to resume"), for every command that writes: the tournament, the
tribute analysis and the self-play trainer. Each stops with exit status 1 and one line on
stderr that names what the disk said, the file being written, what is saved and the command
that resumes; nothing finished is lost, no part of a line or file is left under a final name,
and the printed command, run once the disk has room again, finishes as an uninterrupted run
does.

Before, the tournament gave a traceback (two: the report it then tried to write failed too),
and so did a trainer's checkpoint write (torch's ``RuntimeError: ... unexpected pos``, which
says nothing of the disk).

The full disk is simulated: once it is full, ``os.write`` and ``os.fsync`` on a file in the
command's folder raise ``OSError(ENOSPC)``, as a full disk does (every file the commands write
goes through one or the other: lines are appended with ``files.write_whole``, and
``files.atomic_path`` syncs a file before it takes its name); torch's own writer, which Python
does not see, fails as it does on a full disk."""

from __future__ import annotations

import collections
import errno
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the simulated disk finds an fd's file in /proc")


class FullDisk:
    """The disk of ``folder``, which fills up: at the ``at``-th write (``os.write``) or sync
    (``os.fsync``) of a file whose name starts with ``name``, and from then on for every file
    in ``folder``, they raise ``ENOSPC`` (or the ``code`` given: ``EIO``, a failing disk).
    :meth:`fix` gives it room again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path, name: str, at: int = 1,
                 calls: str = "write", code: int = errno.ENOSPC) -> None:
        self.folder, self.name, self.at, self.calls = str(folder), name, at, calls
        self.full = False
        self.seen: collections.Counter[str] = collections.Counter()
        real_write, real_fsync = os.write, os.fsync

        def refused(fd: int, call: str) -> bool:
            try:
                path = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return False
            if not path.startswith(self.folder):
                return False
            base = os.path.basename(path)
            if call == self.calls and base.startswith(self.name):
                self.seen[base] += 1
                self.full = self.full or self.seen[base] >= self.at
            return self.full

        def write(fd: int, data: bytes) -> int:
            if refused(fd, "write"):
                raise OSError(code, os.strerror(code))
            return real_write(fd, data)

        def fsync(fd: int) -> None:
            if refused(fd, "fsync"):
                raise OSError(code, os.strerror(code))
            real_fsync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)

    def fix(self) -> None:
        self.full, self.name = False, "\0never"


def run(main, argv, capsys):
    """``main(argv)`` in this process: (exit status, stderr)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def resume_words(line: str, prog: str) -> list[str]:
    """The resume command a line ends with, after ``prog``."""
    command = line.split("; resume with: ")[1]
    assert command.startswith(prog + " "), line
    return shlex.split(command[len(prog):])


def no_temporaries(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if ".tmp" in p.name], list(folder.rglob("*"))


# ---------------------------------------------------------------------------------------
# The tournament.

TOURNAMENT = "python -m dragons_egg.experiments.evaluation.tournament"
SMALL = ["heuristic", "random", "greedy", "heuristic", "--players", "4", "--matches", "16",
         "--rounds", "1", "--seed", "7", "--bootstrap", "100", "--workers", "1",
         "--no-progress"]


def _untimed(path: Path) -> dict:
    summary = json.loads(path.read_text())
    return {k: v for k, v in summary.items() if k != "timing"}


def _results(path: Path) -> list[dict]:
    from dragons_egg.experiments.evaluation.tournament.runner import TIMING_KEYS

    rows = [json.loads(x) for x in path.read_text().splitlines()]
    return sorted(({k: v for k, v in r.items() if k not in {*TIMING_KEYS, "sitting", "digest"}}
                   for r in rows), key=lambda r: (r["sequence"], r["rotation"]))


@pytest.mark.parametrize("where,name,at,calls,saved,code", [
    ("results", "results.jsonl", 4, "write", 3, errno.ENOSPC),  # the 4th match's line
    ("report", "summary.json", 1, "fsync", 16, errno.ENOSPC),  # all saved, then the report
    ("results", "results.jsonl", 9, "write", 8, errno.EIO),  # a failing disk
], ids=["results", "report", "results-EIO"])
def test_a_full_disk_stops_a_tournament_in_one_line_and_the_resume_finishes_it(
        where, name, at, calls, saved, code, tmp_path, monkeypatch, capsys):
    from dragons_egg.experiments.evaluation.tournament.cli import main

    full_run, out = tmp_path / "full", tmp_path / "cut"
    assert run(main, SMALL + ["--out", str(full_run)], capsys)[0] == 0
    disk = FullDisk(monkeypatch, out, name, at, calls, code)
    status, err = run(main, SMALL + ["--out", str(out)], capsys)
    assert status == 1
    line = one_line(err)
    file = out / ("results.jsonl" if where == "results" else "summary.json")
    said = {errno.ENOSPC: "no space left on device (ENOSPC)",
            errno.EIO: "input/output error (EIO)"}[code]
    assert line == (f"{TOURNAMENT}: error: {said} while writing "
                    f"{file}: {saved} of 16 matches are saved in {out / 'results.jsonl'}; "
                    f"resume with: {TOURNAMENT} --resume {out}")
    data = (out / "results.jsonl").read_bytes()
    assert data.endswith(b"\n") and len(data.splitlines()) == saved  # whole lines only
    assert not (out / "summary.json").exists() and not (out / "report.md").exists()
    no_temporaries(out)
    disk.fix()
    code, err = run(main, resume_words(line, TOURNAMENT), capsys)
    assert code == 0, err
    assert _untimed(out / "summary.json") == _untimed(full_run / "summary.json")
    assert _results(out / "results.jsonl") == _results(full_run / "results.jsonl")


def test_a_disk_full_before_the_first_match_says_nothing_is_saved(tmp_path, monkeypatch,
                                                                  capsys):
    from dragons_egg.experiments.evaluation.tournament.cli import main

    out = tmp_path / "cut"
    disk = FullDisk(monkeypatch, out, "config.json", 1, "fsync")
    code, err = run(main, SMALL + ["--out", str(out)], capsys)
    assert code == 1
    assert one_line(err) == (f"{TOURNAMENT}: error: no space left on device (ENOSPC) while "
                             f"writing {out / 'config.json'}: no match is saved in {out}: free "
                             "space and run the same command again")
    no_temporaries(out)
    disk.fix()
    assert run(main, SMALL + ["--out", str(out)], capsys)[0] == 0


# ---------------------------------------------------------------------------------------
# The tribute analysis.

TRIBUTE = "python -m dragons_egg.experiments.evaluation.tribute"


@pytest.mark.parametrize("name,at,calls,saved", [
    ("tribute_parts.jsonl", 3, "write", 30),  # the third unit of work's line
    ("report.md", 1, "fsync", 60),  # every unit saved, then the report
], ids=["parts", "report"])
def test_a_full_disk_stops_the_tribute_analysis_in_one_line_and_the_resume_finishes_it(
        name, at, calls, saved, tmp_path, monkeypatch, capsys):
    from dragons_egg.experiments.evaluation import tribute as ta

    args = ["--tribute", "greedy", "--players", "3", "--seed", "4", "--policies",
            "heuristic,learned", "--engine", "scalar", "--deals", "30", "--no-progress"]
    whole, out = tmp_path / "whole", tmp_path / "cut"
    assert run(ta.main, [*args, "--out", str(whole)], capsys)[0] == 0
    disk = FullDisk(monkeypatch, out, name, at, calls)
    code, err = run(ta.main, [*args, "--out", str(out)], capsys)
    assert code == 1
    line = one_line(err)
    assert line == (f"{TRIBUTE}: error: no space left on device (ENOSPC) while writing "
                    f"{out / name}: {saved} of 60 deal sequences are saved in "
                    f"{out / ta.PARTS}; resume with: {TRIBUTE} --resume {out}")
    data = (out / ta.PARTS).read_bytes()
    assert data.endswith(b"\n") and len(data.splitlines()) == (2 if saved == 30 else 4)
    assert not (out / ta.SUMMARY).exists()
    no_temporaries(out)
    disk.fix()
    code, err = run(ta.main, resume_words(line, TRIBUTE), capsys)
    assert code == 0, err
    assert "dropping a last line" not in err  # none was left
    a, b = (json.loads((d / ta.SUMMARY).read_text()) for d in (whole, out))
    assert {**a, "command": ""} == {**b, "command": ""}


# ---------------------------------------------------------------------------------------
# The self-play trainer.

SELFPLAY = "python -m dragons_egg.experiments.training.selfplay"
SP = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12", "--hidden",
      "16", "--epochs", "1", "--minibatch", "32", "--num-rounds", "1", "--eval-opponents",
      "random", "--eval-players", "2", "--eval-matches", "4", "--no-progress",
      "--collectors", "0", "--eval-every", "144", "--checkpoint-every", "144"]


def _torch_fails(monkeypatch, disk: FullDisk, at: int) -> None:
    """Torch's writer on a full disk, from its ``at``-th checkpoint: its C++ writer fails
    where Python does not see it, and says only ``unexpected pos``."""
    import torch

    real, calls = torch.save, []

    def save(obj, f, *args, **kwargs):
        if isinstance(f, str | os.PathLike) and os.path.abspath(f).startswith(disk.folder):
            calls.append(f)
            if len(calls) >= at and disk.name != "\0never":
                disk.full = True
                Path(f).write_bytes(b"PK\x03\x04 part of an archive")
                raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected "
                                   "pos 704 vs 598")
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)


@pytest.mark.parametrize("where", ["checkpoint", "eval.csv"])
def test_a_full_disk_stops_a_selfplay_run_in_one_line_and_the_resume_finishes_it(
        where, tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    from dragons_egg.experiments.common.runs import read_eval_csv
    from dragons_egg.experiments.training import selfplay
    from dragons_egg.experiments.training.checkpoint import load_checkpoint

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "runs" / "x"
    ckpt = Path("runs/x/checkpoints/latest.pt")
    disk = FullDisk(monkeypatch, run_dir, "eval.csv" if where == "eval.csv" else "\0", 2)
    _torch_fails(monkeypatch, disk, 2 if where == "checkpoint" else 99)
    argv = SP + ["--total-samples", "432", "--out-dir", "runs", "--run-name", "x"]
    code, err = run(selfplay.main, argv, capsys)
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert "Traceback" not in err and not any(x.startswith("error") for x in
                                              err.strip().splitlines()[:-1]), err
    file = Path("runs/x") / ("checkpoints/latest.pt" if where == "checkpoint" else "eval.csv")
    assert line == (f"error: no space left on device (ENOSPC) while writing {file}: the last "
                    f"complete checkpoint is {ckpt}; resume with: {SELFPLAY} --resume {ckpt}")
    # the checkpoint before is whole; eval.csv ends in its last whole row
    assert load_checkpoint(ckpt)["samples"] == 144
    rows = [r["samples"] for r in read_eval_csv(run_dir / "eval.csv")]
    assert rows == ([144, 288] if where == "checkpoint" else [144])
    assert (run_dir / "eval.csv").read_bytes().endswith(b"\n")
    no_temporaries(run_dir)
    disk.fix()
    code, err = run(selfplay.main, resume_words(line, SELFPLAY), capsys)
    assert code == 0, err
    assert [r["samples"] for r in read_eval_csv(run_dir / "eval.csv")] == [144, 288, 432]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["samples"] == summary["budget"]["will_train"] == 432
    assert [h["event"] for h in json.loads((run_dir / "config_history.json").read_text())] \
        == ["start", "resume"]
    # as a run stopped (with no full disk) at that checkpoint and resumed: nothing was lost
    # (a resumed run is not the same as one never stopped: its matches start afresh)
    ref = SP + ["--out-dir", "ref", "--run-name", "x"]
    assert run(selfplay.main, ref + ["--total-samples", "144"], capsys)[0] == 0
    assert run(selfplay.main, ["--resume", "ref/x/checkpoints/latest.pt",
                               "--total-samples", "432"], capsys)[0] == 0
    np = pytest.importorskip("numpy")
    a, b = np.load(run_dir / "final.npz"), np.load(tmp_path / "ref" / "x" / "final.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.files if k != "meta")


def test_a_full_disk_at_a_runs_first_checkpoint_says_there_is_none(tmp_path, monkeypatch,
                                                                   capsys):
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    from dragons_egg.experiments.training import selfplay

    run_dir = tmp_path / "x"
    disk = FullDisk(monkeypatch, run_dir, "\0", 1)
    _torch_fails(monkeypatch, disk, 1)
    code, err = run(selfplay.main, SP + ["--total-samples", "144", "--out-dir", str(tmp_path),
                                         "--run-name", "x"], capsys)
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"error: no space left on device (ENOSPC) while writing {run_dir}/checkpoints/latest.pt:"
        " the run has no checkpoint yet, nothing to resume: free space and start it again "
        "(--overwrite replaces the files it wrote)")
    assert not (run_dir / "checkpoints" / "latest.pt").exists()
    no_temporaries(run_dir)


# ---------------------------------------------------------------------------------------
# A real full file system, where the test may mount one (root on Linux).

class SmallDisk:
    """A tmpfs of ``size`` mounted at ``path`` (:meth:`grow` gives it room)."""

    def __init__(self, path: Path, size: str) -> None:
        import subprocess

        self.path = path
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                               str(path)], capture_output=True)
        if done.returncode:
            pytest.skip(f"cannot mount a small file system: {done.stderr.decode().strip()}")

    def grow(self) -> None:
        import subprocess

        subprocess.run(["mount", "-o", "remount,size=64m", str(self.path)], check=True)

    def close(self) -> None:
        import subprocess

        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root on Linux")
    disks: list[SmallDisk] = []
    yield lambda size: disks.append(SmallDisk(tmp_path / f"disk{len(disks)}", size)) or \
        disks[-1]
    for d in disks:
        d.close()


def test_a_real_full_file_system_stops_a_tournament_in_one_line(small_disk, tmp_path,
                                                                 capsys):
    """The finding itself, on a file system that is really full: the kernel's ``ENOSPC``."""
    from dragons_egg.experiments.evaluation.tournament.cli import main

    args = ["heuristic", "random", "--players", "2", "--matches", "400", "--rounds", "1",
            "--bootstrap", "100", "--workers", "1", "--no-progress"]
    disk = small_disk("64k")
    out = disk.path / "t"
    status, err = run(main, [*args, "--out", str(out)], capsys)
    assert status == 1
    line = one_line(err)
    assert line.startswith(f"{TOURNAMENT}: error: no space left on device (ENOSPC) while "
                           f"writing {out / 'results.jsonl'}: ")
    saved = int(line.split(": ")[3].split(" of ")[0])
    data = (out / "results.jsonl").read_bytes()
    assert 0 < saved < 400 and data.endswith(b"\n") and len(data.splitlines()) == saved
    no_temporaries(out)
    disk.grow()
    assert run(main, resume_words(line, TOURNAMENT), capsys)[0] == 0
    assert run(main, [*args, "--out", str(tmp_path / "full")], capsys)[0] == 0
    assert _untimed(out / "summary.json") == _untimed(tmp_path / "full" / "summary.json")


def test_a_real_full_file_system_stops_a_selfplay_run_in_one_line(small_disk, monkeypatch,
                                                                  capsys):
    """Torch's writer on a really full file system says ``RuntimeError: ... unexpected
    pos``; the trainer says the disk is full, and the run resumes."""
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    from dragons_egg.experiments.common.runs import read_eval_csv
    from dragons_egg.experiments.training import selfplay

    disk = small_disk("300k")
    monkeypatch.chdir(disk.path)
    code, err = run(selfplay.main, SP + ["--total-samples", "720", "--out-dir", "runs",
                                         "--run-name", "x"], capsys)
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert "Traceback" not in err, err
    assert line.startswith("error: no space left on device (ENOSPC) while writing runs/x/"), line
    no_temporaries(disk.path / "runs" / "x")
    disk.grow()
    assert run(selfplay.main, resume_words(line, SELFPLAY), capsys)[0] == 0
    assert [r["samples"] for r in read_eval_csv(disk.path / "runs/x/eval.csv")] == \
        [144, 288, 432, 576, 720]
