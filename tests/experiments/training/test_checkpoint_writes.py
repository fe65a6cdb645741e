"""Self-play checkpoints are written through a temporary file of the writing process's own
(issue 47: "Temporary files are unique per process"), named ``latest.pt.tmp`` as before, so
that the archive's root folder, which torch names after the file it writes (less its last
suffix), stays ``latest.pt``."""

import os
import zipfile

import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.experiments.training import selfplay  # noqa: E402
from dragons_egg.experiments.training.checkpoint import load_checkpoint  # noqa: E402


def test_two_processes_saving_a_checkpoint_write_two_temporary_files(tmp_path, monkeypatch):
    """Two pids saving one run's checkpoint (as two trainers given one ``--run-name`` did
    before the folder lock) hand torch two temporary files, each named ``latest.pt.tmp`` in
    a hidden folder of its own. Before, both wrote ``checkpoints/latest.pt.tmp``: one crashed
    on the shared file."""
    run = selfplay.Run(tiny(tmp_path, run_name="r"))
    torch = run.learner.torch
    real, given = torch.save, []

    def save(obj, f, *args, **kwargs):
        given.append(f)
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    for pid in (111, 222):
        monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
        path = run.save()
    monkeypatch.undo()
    assert len(given) == 2 and given[0] != given[1]
    assert [p.name for p in given] == ["latest.pt.tmp", "latest.pt.tmp"]
    assert [p.parent.name[:9] for p in given] == [".tmp-111-", ".tmp-222-"]
    assert all(p.parent.parent == run.dir / "checkpoints" for p in given)
    # nothing left of them; the archive's root is named after the checkpoint, as before
    assert sorted(p.name for p in (run.dir / "checkpoints").iterdir()) == ["latest.pt"]
    with zipfile.ZipFile(path) as z:
        assert {name.split("/")[0] for name in z.namelist()} == {"latest.pt"}
    assert load_checkpoint(path)["samples"] == run.samples
    # the temporary file's name and folder leave no trace: the same state, the same bytes
    before = path.read_bytes()
    assert run.save().read_bytes() == before


def test_two_processes_save_one_checkpoint_at_once(tmp_path, monkeypatch):
    """Two processes inside ``Run.save`` at the same time (each stopped in torch's write until
    both are there): both finish, and ``latest.pt`` is a whole checkpoint. Before, both
    wrote ``latest.pt.tmp``, and the second rename found no file (``FileNotFoundError``)."""
    import multiprocessing

    run = selfplay.Run(tiny(tmp_path, run_name="r"))
    torch = run.learner.torch
    ctx = multiprocessing.get_context("fork")
    inside = ctx.Barrier(2)
    real = torch.save

    def save(obj, f, *args, **kwargs):
        real(obj, f, *args, **kwargs)
        inside.wait(60)  # both temporary files written, neither renamed yet

    monkeypatch.setattr(torch, "save", save)

    def child() -> None:
        run.save()
        os._exit(0)

    procs = [ctx.Process(target=child) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    monkeypatch.undo()
    path = run.dir / "checkpoints" / "latest.pt"
    assert load_checkpoint(path)["samples"] == run.samples
    assert sorted(p.name for p in path.parent.iterdir()) == ["latest.pt"]

