"""``search-targets``: ismcts-net's moves beside the network's, kept as checked data, durable
(batches as they finish, resume, refusals by name)."""

import json
import shutil

import numpy as np
import pytest

from dragons_egg.agents.netpolicy import load_policy_file
from dragons_egg.agents.ppo import SHIPPED
from dragons_egg.experiments.training import search_targets as st

#: Small: 1-round matches, few iterations, one match a batch.
SMALL = ["--iterations", "8", "--rounds", "1", "--matches-per-batch", "1", "--no-progress"]


def _gather(tmp_path, name, *extra):
    out = tmp_path / name
    assert st.main([*SMALL, "--players", "2", "3", "--batches", "2", "--out", str(out),
                    *extra]) == 0
    return out


def test_targets_are_the_searchs_visits_over_legal_moves_and_what_the_network_reads(tmp_path):
    out = _gather(tmp_path, "a")
    data, settings = st.load_targets(out)
    assert settings["batches_done"] == 2 and settings["gathered_seconds"] > 0
    # batch 0 plays 2 seats, batch 1 three: every decision with a choice of both
    assert set(data["players"].tolist()) == {2, 3}
    mask, target = data["mask"], data["target"]
    assert (mask.sum(-1) > 1).all()  # forced moves are not kept
    assert np.allclose(target.sum(-1), 1) and not target[~mask].any()
    rows = np.arange(len(mask))
    assert mask[rows, data["played"]].all() and mask[rows, data["net_move"]].all()
    # the move played is the one searched most (ties aside)
    assert (target[rows, data["played"]] == target.max(-1)).mean() > 0.95
    # the observation is padded as the network reads it: its own top move is net_move
    net = load_policy_file(SHIPPED)
    assert data["obs"].shape[1] == net.obs_size
    for i in range(0, len(rows), 7):
        logits, _ = net.logits_and_value(data["obs"][i], mask[i])
        assert int(np.argmax(np.where(mask[i], logits, -np.inf))) == data["net_move"][i]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["decisions"] == len(rows) and set(summary["sizes"]) == {"2", "3"}
    for s in summary["sizes"].values():
        assert 0 <= s["search_differs_95"][0] <= s["search_differs"] <= \
            s["search_differs_95"][1] <= 1


def test_seeded_and_independent_of_the_workers_and_of_a_resume(tmp_path):
    a = _gather(tmp_path, "a")
    b = _gather(tmp_path, "b", "--workers", "2")
    (b / "batch_00001.npz").unlink()  # as if stopped after the first batch
    assert st.main(["--resume", str(b), "--no-progress"]) == 0
    for k in range(2):
        with np.load(a / f"batch_{k:05d}.npz") as x, np.load(b / f"batch_{k:05d}.npz") as y:
            for key in st.BATCH_KEYS:
                if key != "meta":
                    assert np.array_equal(x[key], y[key]), (k, key)


def test_refusals_name_the_file_and_the_way_on(tmp_path, capsys):
    out = _gather(tmp_path, "a")
    with pytest.raises(SystemExit):  # a rerun into the folder
        st.main([*SMALL, "--batches", "1", "--out", str(out)])
    assert f"continue them with --resume {out}" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a resume only takes the folder (and --workers)
        st.main(["--resume", str(out), "--iterations", "50"])
    assert "leave out --iterations" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        st.main([*SMALL, "--out", str(tmp_path / "c")])
    assert "give --seconds or --batches" in capsys.readouterr().err
    settings = json.loads((out / "settings.json").read_text())
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    (moved / "summary.json").unlink()
    (moved / "settings.json").write_text(json.dumps({**settings, "policy": "gone.npz"}))
    with pytest.raises(SystemExit):
        st.main(["--resume", str(moved)])
    assert "the policy file gone.npz that" in capsys.readouterr().err
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    path = damaged / "batch_00001.npz"
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match="batch_00001.npz is not a whole search-targets batch"):
        st.load_targets(damaged)
    other = tmp_path / "other"
    shutil.copytree(out, other)
    (other / "settings.json").write_text(json.dumps({**settings, "policy_sha256": "0" * 64}))
    with pytest.raises(ValueError, match="batch_00000.npz was searched with another policy"):
        st.load_targets(other)
    (damaged / "batch_00001.npz").unlink()
    (out / "batch_00000.npz").rename(damaged / "batch_00001.npz")
    (damaged / "batch_00000.npz").unlink()
    with pytest.raises(ValueError, match="follows a missing batch"):
        st.load_targets(damaged)


def test_a_stop_keeps_the_finished_batches_and_says_how_to_resume(tmp_path):
    """SIGTERM to the process group (Ctrl-C takes the same path): status 130, one line, the
    batches finished kept whole, and ``--resume`` goes on from them."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "t"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen([sys.executable, "-m", st.__name__, *SMALL, "--batches", "500",
                             "--out", str(out)], env=env, text=True, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not (out / "batch_00001.npz").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    m = re.fullmatch(rf"interrupted: (\d+) batches saved in {out}; resume with: python -m "
                     rf"{st.__name__} --resume {out}", last)
    assert m, last
    _, settings = st.load_targets(out)  # every batch on disk is whole
    assert settings["batches_done"] == int(m.group(1)) >= 2
    settings_file = json.loads((out / "settings.json").read_text())
    (out / "settings.json").write_text(json.dumps({**settings_file, "batches": 4}))
    assert st.main(["--resume", str(out), "--no-progress"]) == 0  # (the plan cut to 4)
    assert st.load_targets(out)[1]["batches_done"] >= 4
