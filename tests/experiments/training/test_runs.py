"""Runs are never overwritten or mixed, and no interruption loses one (issue 22), for both
trainers: a folder that holds a run is refused without ``--resume`` (``--overwrite`` removes
it first), ``eval.csv`` keeps one schema when the evaluation opponents change, a resumed run
writes one row per sample count, Ctrl-C (SIGINT) saves a checkpoint and exits with status 130
with the resume command, a SIGKILL resumes from the last checkpoint, and in each case the
resumed run ends with one evaluation per point and the run plan's count. Settings files and
options are checked by type and range before anything runs."""

import csv
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.experiments.common import runs  # noqa: E402
from dragons_egg.experiments.common.runs import RunInterrupted  # noqa: E402
from dragons_egg.experiments.training import selfplay  # noqa: E402
from dragons_egg.experiments.training.checkpoint import load_checkpoint  # noqa: E402
from dragons_egg.experiments.training.learner import Learner  # noqa: E402
from dragons_egg.experiments.training.selfplay import Run  # noqa: E402

#: A self-play run of seconds: 2 table sizes x 6 matches x 12 steps = 144 samples a rollout.
SP = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12", "--hidden",
      "16", "--epochs", "1", "--minibatch", "32", "--num-rounds", "1", "--eval-opponents",
      "random", "--eval-players", "2", "--eval-matches", "4", "--no-progress",
      "--collectors", "0"]
SP_MODULE = "dragons_egg.experiments.training.selfplay"
PPO_MODULE = "dragons_egg.experiments.training.train_ppo"


def eval_column(run_dir, key="samples"):
    return [r[key] for r in runs.read_eval_csv(run_dir / "eval.csv")]


def files(run_dir):
    """The run's files (not the writer's lock, which records who holds the folder)."""
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and not p.name.startswith(".dragons-egg.")}


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------------------------------
# A folder holds one run.

def test_a_folder_that_holds_a_run_is_refused_without_resume(tmp_path, capsys):
    args = SP + ["--total-samples", "288", "--eval-every", "144", "--checkpoint-every", "144",
                 "--out-dir", str(tmp_path), "--run-name", "x"]
    assert selfplay.main(args) == 0
    run = tmp_path / "x"
    ckpt = run / "checkpoints" / "latest.pt"
    before = files(run)
    capsys.readouterr()
    # the same command again: one line naming both ways on, and nothing touched
    assert selfplay.main(args) == 2
    err = one_line(capsys.readouterr().err)
    assert f"{run} already holds a run" in err
    assert f"--resume {ckpt}" in err and "--run-name" in err and "--overwrite" in err
    assert files(run) == before
    with pytest.raises(ValueError, match="already holds a run"):  # the Python API too
        Run(selfplay.parse_args(args)[0])
    assert files(run) == before
    # --overwrite says what it removes and removes it first: the new run is not mixed with
    # the old one; a file that is not a run's stays
    (run / "notes.txt").write_text("mine")
    assert selfplay.main(args + ["--overwrite"]) == 0
    err = capsys.readouterr().err
    assert f"--overwrite: removing the run in {run}: config.json" in err
    assert "checkpoints/ (1 file)" in err and "eval.csv" in err and "final.npz" in err
    assert eval_column(run) == [144, 288]
    history = json.loads((run / "config_history.json").read_text())
    assert [h["event"] for h in history] == ["start"]
    assert (run / "notes.txt").read_text() == "mine"


def test_other_folders_that_hold_runs(tmp_path, capsys):
    base = SP + ["--total-samples", "144", "--eval-every", "0", "--out-dir", str(tmp_path)]
    # a run killed before its first checkpoint: nothing to resume, so a new name
    (tmp_path / "early").mkdir()
    (tmp_path / "early" / "config.json").write_text("{}")
    assert selfplay.main(base + ["--run-name", "early"]) == 2
    err = one_line(capsys.readouterr().err)
    assert "no checkpoint to resume" in err and "--run-name" in err
    # an empty folder, or one with empty folders only, holds no run
    (tmp_path / "empty" / "checkpoints").mkdir(parents=True)
    assert selfplay.main(base + ["--run-name", "empty"]) == 0
    ckpt = tmp_path / "empty" / "checkpoints" / "latest.pt"
    capsys.readouterr()
    # resuming into another run's folder would mix the two
    assert selfplay.main(["--resume", str(ckpt), "--run-name", "early"]) == 2
    assert "already holds another run" in one_line(capsys.readouterr().err)
    # --overwrite cannot delete the run --resume continues
    assert selfplay.main(["--resume", str(ckpt), "--overwrite"]) == 2
    assert "--overwrite would delete the run that --resume" in one_line(capsys.readouterr().err)
    assert ckpt.is_file()


# ---------------------------------------------------------------------------------------
# eval.csv: one schema; one row per sample count.

def test_resuming_with_other_evaluation_opponents_adds_columns(tmp_path):
    run = tmp_path / "x"
    assert selfplay.main(SP + ["--total-samples", "288", "--eval-every", "144",
                               "--checkpoint-every", "144", "--out-dir", str(tmp_path),
                               "--run-name", "x"]) == 0
    ckpt = str(run / "checkpoints" / "latest.pt")
    final = (run / "final.npz").stat().st_mtime_ns
    assert selfplay.main(["--resume", ckpt, "--total-samples", "576",
                          "--eval-opponents", "greedy"]) == 0
    assert selfplay.main(["--resume", ckpt, "--total-samples", "720",
                          "--eval-opponents", "random", "greedy", "--eval-players", "3"]) == 0
    with open(run / "eval.csv", newline="") as f:
        lines = list(csv.reader(f))
    header = lines[0]
    assert {"diff_random", "diff_greedy", "diff_greedy_low"} <= set(header)
    assert all(len(cells) == len(header) for cells in lines)  # no value under another header
    rows = runs.read_eval_csv(run / "eval.csv")
    assert [r["samples"] for r in rows] == [144, 288, 432, 576, 720]
    for r in rows:
        assert math.isnan(r["diff_greedy"]) == (r["samples"] <= 288)
        assert math.isnan(r["diff_random"]) == (r["samples"] in (432, 576))
        assert -3 <= r["mean_score"] <= 3
    assert (run / "final.npz").stat().st_mtime_ns > final
    summary = json.loads((run / "summary.json").read_text())
    assert [h["samples"] for h in summary["history"]] == [144, 288, 432, 576, 720]
    assert (run / "learning_curve.png").stat().st_size > 0


def test_an_eval_csv_of_two_schemas_is_named_and_set_aside_on_resume(tmp_path, capsys):
    """Versions before this one appended rows of new opponents under the old header: the
    reader names the line, and a resume keeps the file aside and goes on."""
    run = tmp_path / "x"
    assert selfplay.main(SP + ["--total-samples", "144", "--eval-every", "144",
                               "--checkpoint-every", "144", "--out-dir", str(tmp_path),
                               "--run-name", "x"]) == 0
    path = run / "eval.csv"
    text = path.read_text()
    path.write_text(text + "288,0.5,0.1,,,0.2,,,0.3,,,,,\n")  # more cells than the header
    with pytest.raises(ValueError, match=r"eval\.csv, line 3: 14 cells under a header of 11"):
        runs.read_eval_csv(path)
    capsys.readouterr()
    assert selfplay.main(["--resume", str(run / "checkpoints" / "latest.pt"),
                          "--total-samples", "288"]) == 0
    assert "could not be read" in capsys.readouterr().err
    assert eval_column(run) == [144, 288]
    assert (run / "eval-before-resume-144.csv").read_text() == text + "288,0.5,0.1,,,0.2,,,0.3,,,,,\n"


def test_a_resumed_run_writes_one_row_per_sample_count(tmp_path, monkeypatch, capsys):
    """A run that died after a checkpoint (288) but after an evaluation past it (432): the
    resumed run trains 288..432 again and evaluates at 432 once; the earlier rows are kept
    aside, and a second resume from the same checkpoint does not replace them."""
    run = tmp_path / "x"
    args = SP + ["--total-samples", "720", "--eval-every", "144", "--checkpoint-every", "288",
                 "--out-dir", str(tmp_path), "--run-name", "x"]
    real = Run.iteration

    def crash(self):
        if self.updates == 3:
            raise RuntimeError("power cut")
        return real(self)
    monkeypatch.setattr(Run, "iteration", crash)
    with pytest.raises(RuntimeError, match="power cut"):
        selfplay.main(args)
    monkeypatch.setattr(Run, "iteration", real)
    assert eval_column(run) == [144, 288, 432]
    at288 = run / "checkpoints" / "at288.pt"
    shutil.copy(run / "checkpoints" / "latest.pt", at288)
    assert selfplay.main(["--resume", str(at288)]) == 0
    assert eval_column(run) == [144, 288, 432, 576, 720]
    first_aside = (run / "eval-before-resume-288.csv").read_text()
    assert [r["samples"] for r in runs.read_eval_csv(run / "eval-before-resume-288.csv")] \
        == [144, 288, 432]
    # once more from the same checkpoint: a second file aside, the first kept
    assert selfplay.main(["--resume", str(at288)]) == 0
    assert eval_column(run) == [144, 288, 432, 576, 720]
    assert (run / "eval-before-resume-288.csv").read_text() == first_aside
    second = runs.read_eval_csv(run / "eval-before-resume-288-2.csv")
    assert [r["samples"] for r in second] == [144, 288, 432, 576, 720]


# ---------------------------------------------------------------------------------------
# Ctrl-C.

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_during_an_update_saves_after_it(sig, tmp_path, monkeypatch, capsys):
    """The update Ctrl-C (or a scheduler's SIGTERM, within ``sigterm_interrupts``) lands in
    ends (its samples counted) before the checkpoint is saved; the checkpoint holds the
    weights after it."""
    run = Run(tiny(tmp_path, total_samples=10**6))
    real = Learner.update
    handlers = {s: signal.getsignal(s) for s in runs.STOP_SIGNALS}

    def update(self, ro, adv):
        if run.updates == 1:
            os.kill(os.getpid(), sig)  # in the middle of the update
        return real(self, ro, adv)
    monkeypatch.setattr(Learner, "update", update)
    with pytest.raises(KeyboardInterrupt) as info, runs.sigterm_interrupts():
        run.train()
    exc = info.value
    assert isinstance(exc, RunInterrupted)
    assert exc.checkpoint == run.dir / "checkpoints" / "latest.pt"
    assert exc.count == run.samples == 288 and run.updates == 2
    state = load_checkpoint(exc.checkpoint)
    assert (state["samples"], state["updates"]) == (288, 2)
    for name, value in run.learner.model.state_dict().items():
        assert (state["model"][name] == value).all(), name
    name = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    assert f"{name}: saving a checkpoint after this update" in capsys.readouterr().err
    assert {s: signal.getsignal(s) for s in runs.STOP_SIGNALS} == handlers  # given back
    assert exc.line("prog").endswith(f"resume with: prog --resume {exc.checkpoint}")


def test_sigterm_stops_as_ctrl_c_only_where_asked():
    """Outside ``sigterm_interrupts`` SIGTERM keeps its default action (the process ends);
    within, it raises KeyboardInterrupt, and a handler installed meanwhile by code such as
    ``ray.init`` (one that exits at once) is replaced again by ``sigterm_kept``; outside, it
    gives back the default action."""
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with runs.sigterm_interrupts():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs between bytecodes
        with runs.sigterm_kept():
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        # a worker forked meanwhile (a tournament pool's) still ends on SIGTERM
        child = os.fork()
        if child == 0:
            try:
                time.sleep(30)
            finally:
                os._exit(3)
        time.sleep(0.2)
        os.kill(child, signal.SIGTERM)
        _, status = os.waitpid(child, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with runs.sigterm_kept():  # outside (a library call): the default action is given back
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


STOPPED_IN_EXEC = """
from dragons_egg.experiments.common.runs import stops_on_sigterm

@stops_on_sigterm
def main():
    try:  # the interrupt leaves an exec of source text, as in a namedtuple made by an import
        exec("raise KeyboardInterrupt")
    except KeyboardInterrupt:
        print("interrupted at 1 samples: saved x")
        return 130
    return 0

raise SystemExit(main())
"""


def test_a_command_that_caught_an_interrupt_in_an_exec_ends_with_its_status(tmp_path):
    """An interrupt that passed through an ``exec`` of source text (a Ctrl-C or SIGTERM during
    an import that makes namedtuples or dataclasses: matplotlib's, at the first learning curve)
    and was handled by the command: ``python -m`` ends with the command's status, 130, not by
    SIGINT (-2), which CPython does unless the mark is cleared."""
    (tmp_path / "stopped_in_exec.py").write_text(STOPPED_IN_EXEC)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "stopped_in_exec"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stdout == "interrupted at 1 samples: saved x\n"
    plain = STOPPED_IN_EXEC.replace("@stops_on_sigterm", "")  # the CPython behaviour it mends
    (tmp_path / "plain_exec.py").write_text(plain)
    proc = subprocess.run([sys.executable, "-m", "plain_exec"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGINT, proc.stderr


def test_a_second_ctrl_c_stops_at_once_without_saving(tmp_path, monkeypatch):
    run = Run(tiny(tmp_path, total_samples=10**6))
    run.iteration()
    saved = run.save()
    before = saved.read_bytes()
    real = Learner.update

    def update(self, ro, adv):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # the second cuts the update
        return real(self, ro, adv)
    monkeypatch.setattr(Learner, "update", update)
    with pytest.raises(KeyboardInterrupt) as info:
        run.train()
    exc = info.value
    assert isinstance(exc, RunInterrupted) and exc.checkpoint is None and exc.last == saved
    assert saved.read_bytes() == before  # the torn state was not saved
    assert "nothing saved since the last checkpoint" in exc.line("prog")


def _launch(module, args, cwd):
    """The trainer in its own process group, as a terminal runs it (Ctrl-C signals the whole
    group)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _wait_for_rows(proc, path, rows, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before it was interrupted:\n{proc.stderr.read()}")
        try:
            if len(path.read_text().splitlines()) > rows:
                return
        except OSError:
            pass
        time.sleep(0.005)
    pytest.fail("the run did not evaluate in time")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_selfplay_run_interrupted_and_resumed_keeps_its_plan(sig, tmp_path, monkeypatch):
    """Interrupted by Ctrl-C or by SIGTERM to its whole process group (a scheduler's stop;
    status 130, one line: where it saved and the resume command) or killed (resumed from its
    last checkpoint), the resumed run has one eval.csv row per evaluation point and trains
    exactly the run plan's samples."""
    total, every = 144 * 60, 576
    args = SP + ["--total-samples", str(total), "--eval-every", str(every),
                 "--checkpoint-every", str(2 * every), "--out-dir", "runs", "--run-name", "x"]
    run = tmp_path / "runs" / "x"
    proc = _launch(SP_MODULE, args, tmp_path)
    _wait_for_rows(proc, run / "eval.csv", 3 if sig == signal.SIGKILL else 1)
    os.killpg(proc.pid, sig)
    err = proc.communicate(timeout=300)[1]
    monkeypatch.chdir(tmp_path)
    if sig != signal.SIGKILL:
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        last = err.strip().splitlines()[-1]
        assert re.fullmatch(r"interrupted at [\d,]+ samples: saved runs/x/checkpoints/latest\.pt;"
                            r" resume with: python -m dragons_egg\.experiments\.training\.selfplay "
                            r"--resume runs/x/checkpoints/latest\.pt", last), last
        words = shlex.split(last.split("resume with: ")[1])  # the printed command, as given
    else:
        assert proc.returncode == -signal.SIGKILL
        words = ["python", "-m", SP_MODULE, "--resume", "runs/x/checkpoints/latest.pt"]
    assert words[:3] == ["python", "-m", SP_MODULE]
    assert selfplay.main(words[3:]) == 0
    assert eval_column(run) == list(range(every, total + 1, every))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["samples"] == summary["budget"]["will_train"] == total
    history = json.loads((run / "config_history.json").read_text())
    assert [h["event"] for h in history] == ["start", "resume"]


# ---------------------------------------------------------------------------------------
# The SB3 trainer.

PPO = ["--n-steps", "128", "--batch-size", "64", "--n-epochs", "1", "--num-rounds", "1",
       "--eval-matches", "4", "--net-arch", "32", "32", "--no-progress"]


def _sb3_module():
    pytest.importorskip("sb3_contrib")
    from dragons_egg.experiments.training import train_ppo

    return train_ppo


@pytest.fixture()
def sb3():
    return _sb3_module()


def test_sb3_a_folder_that_holds_a_run_is_refused_without_resume(sb3, tmp_path, capsys):
    args = PPO + ["--total-timesteps", "256", "--eval-every", "0", "--snapshot-every", "0",
                  "--checkpoint-every", "0", "--out-dir", str(tmp_path), "--run-name", "p"]
    assert sb3.main(args) == 0
    run = tmp_path / "p"
    before = files(run)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        sb3.main(args)
    assert exit_.value.code == 2
    err = one_line(capsys.readouterr().err)
    assert f"--resume {run / 'checkpoints' / 'final.zip'} --trust-checkpoint" in err
    assert "--run-name" in err
    assert files(run) == before
    assert sb3.main(args + ["--overwrite"]) == 0
    err = capsys.readouterr().err
    assert f"--overwrite: removing the run in {run}: config.json" in err
    assert "progress.csv" in err
    assert eval_column(run, "timesteps") == [256]


def _sb3_rows_and_plan(sb3, run, total, every):
    meta = json.loads((run / "checkpoints" / "final.json").read_text())
    assert meta["num_timesteps"] == meta["budget"]["will_train"] == total
    assert eval_column(run, "timesteps") == list(range(every, total + 1, every))
    assert [h["timesteps"] for h in meta["history"]] == list(range(every, total + 1, every))


def test_sb3_ctrl_c_in_a_rollout_or_an_update_saves_the_last_whole_update(
        sb3, tmp_path, monkeypatch, capsys):
    """Ctrl-C in the middle of a rollout drops its steps (the checkpoint is the last update's,
    at a rollout boundary); Ctrl-C in an update waits for it. Either way the resumed run
    ends at the plan's count with one evaluation per point."""
    from sb3_contrib import MaskablePPO

    total, every = 1536, 512
    args = PPO + ["--total-timesteps", str(total), "--eval-every", str(every),
                  "--snapshot-every", "512", "--checkpoint-every", "300",
                  "--out-dir", str(tmp_path)]
    # in a rollout: at 640 steps (the third rollout, 512..768)
    real_step = sb3.SelfPlayCallback._on_step

    def step(self):
        if self.model.num_timesteps == 640:
            raise KeyboardInterrupt
        return real_step(self)
    monkeypatch.setattr(sb3.SelfPlayCallback, "_on_step", step)
    assert sb3.main(args + ["--run-name", "a"]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    ckpt = tmp_path / "a" / "checkpoints" / "step_512.zip"
    assert last == (f"interrupted at 512 timesteps: saved {ckpt}; resume with: python -m "
                    f"{PPO_MODULE} --resume {ckpt} --trust-checkpoint")
    assert json.loads(ckpt.with_suffix(".json").read_text())["num_timesteps"] == 512
    monkeypatch.setattr(sb3.SelfPlayCallback, "_on_step", real_step)
    assert sb3.main(shlex.split(last.split("resume with: python -m " + PPO_MODULE)[1])) == 0
    _sb3_rows_and_plan(sb3, tmp_path / "a", total, every)
    # in an update: the one that ends the second rollout (at 512)
    real_train = MaskablePPO.train

    def train(self):
        if self.num_timesteps == 512:
            os.kill(os.getpid(), signal.SIGINT)
        return real_train(self)
    monkeypatch.setattr(MaskablePPO, "train", train)
    capsys.readouterr()
    assert sb3.main(args + ["--run-name", "b"]) == 130
    err = capsys.readouterr().err
    assert "Ctrl-C: saving a checkpoint after this update" in err
    assert "interrupted at 512 timesteps" in err.strip().splitlines()[-1]
    monkeypatch.setattr(MaskablePPO, "train", real_train)
    assert sb3.main(["--resume", str(tmp_path / "b" / "checkpoints" / "step_512.zip"),
                     "--trust-checkpoint"]) == 0
    _sb3_rows_and_plan(sb3, tmp_path / "b", total, every)


def test_sb3_a_killed_run_resumes_from_its_last_checkpoint_to_its_plan(
        sb3, tmp_path, monkeypatch):
    """Checkpoints are taken between updates (a ``checkpoint_every`` of 300 in rollouts of
    256: at 512), so a run resumed from the last one after a crash keeps its plan."""
    total, every = 1536, 512
    args = PPO + ["--total-timesteps", str(total), "--eval-every", str(every),
                  "--snapshot-every", "0", "--checkpoint-every", "300",
                  "--out-dir", str(tmp_path), "--run-name", "k"]
    real_step = sb3.SelfPlayCallback._on_step

    def step(self):
        if self.model.num_timesteps == 1100:
            raise RuntimeError("power cut")
        return real_step(self)
    monkeypatch.setattr(sb3.SelfPlayCallback, "_on_step", step)
    with pytest.raises(RuntimeError, match="power cut"):
        sb3.main(args)
    monkeypatch.setattr(sb3.SelfPlayCallback, "_on_step", real_step)
    run = tmp_path / "k"
    assert sorted(p.name for p in (run / "checkpoints").glob("*.zip")) == [
        "step_1024.zip", "step_512.zip", "step_768.zip"]  # at rollout starts
    latest = sb3.latest_checkpoint(run)
    assert latest == run / "checkpoints" / "step_1024.zip"
    assert sb3.main(["--resume", str(latest), "--trust-checkpoint"]) == 0
    _sb3_rows_and_plan(sb3, run, total, every)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sb3_ctrl_c_to_the_whole_process_group_with_env_processes(sig, sb3, tmp_path,
                                                                   monkeypatch):
    """A terminal's Ctrl-C, or a scheduler's SIGTERM, reaches the env processes too
    (``--vec-env subproc``): they leave it to the trainer, which saves, closes them and exits
    with status 130 in one line."""
    total, every = 2048, 512
    args = PPO + ["--total-timesteps", str(total), "--eval-every", str(every),
                  "--snapshot-every", "0", "--checkpoint-every", "0", "--vec-env", "subproc",
                  "--out-dir", "runs", "--run-name", "s"]
    run = tmp_path / "runs" / "s"
    proc = _launch(PPO_MODULE, args, tmp_path)
    _wait_for_rows(proc, run / "eval.csv", 1)
    os.killpg(proc.pid, sig)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]
    assert re.match(r"interrupted at ([\d,]+) timesteps: saved runs/s/checkpoints/step_\1\.zip; "
                    r"resume with: ", last.replace(",", "")), last
    monkeypatch.chdir(tmp_path)
    words = shlex.split(last.split("resume with: ")[1])
    assert words[:3] == ["python", "-m", PPO_MODULE]
    assert sb3.main(words[3:] + ["--vec-env", "dummy"]) == 0
    _sb3_rows_and_plan(sb3, run, total, every)


# ---------------------------------------------------------------------------------------
# Settings checked by type and range, before anything runs.

#: A self-play run of seconds, as a settings file: the bad setting is written over it, so that
#: where it is not refused (as before) the run that follows is short.
SELFPLAY_TINY = {"collectors": 0, "table_sizes": [2, 3], "envs_per_size": 6, "rollout_steps": 12,
                 "hidden": [16],
                 "epochs": 1, "minibatch": 32, "num_rounds": 1, "total_samples": 144,
                 "eval_every": 0, "eval_opponents": [], "checkpoint_every": 0,
                 "progress": False}
SELFPLAY_BAD = [
    ('"lr_schedule": "cosine"', "lr_schedule: expected one of 'constant', 'linear', got "
                                "'cosine'"),
    ('"hidden": 5', "hidden: expected a list of integers, got 5"),
    ('"hidden": [64, 0]', "hidden must be positive ints, got (64, 0)"),
    ('"total_samples": "1000"', "total_samples: expected an integer, got '1000'"),
    ('"seed": 1e400', "seed: expected an integer, got inf"),
    ('"seed": -1', "seed must be in 0..4294967295, got -1"),
    ('"clip_range": -1', "clip_range must be > 0, got -1"),
    ('"ent_coef": NaN', "ent_coef: expected a finite number, got nan"),
    ('"learning_rate": Infinity', "learning_rate: expected a finite number, got inf"),
    ('"progress": 1', "progress: expected true or false, got 1"),
    ('"tribute_lambda": "x"', "tribute_lambda: expected a finite number or null (None), "
                              "got 'x'"),
    ('"learning_rat": 0.1', "unknown setting(s) learning_rat (did you mean: learning_rat -> "
                            "learning_rate?)"),
]


def _settings_file(path, tiny_settings, bad):
    """A JSON file of ``tiny_settings`` with the member ``bad`` (JSON text) last, so that it
    wins."""
    text = json.dumps(tiny_settings)[:-1] + ", " + bad + "}"
    path.write_text(text)
    return json.loads(text)


def test_a_settings_file_must_hold_an_object(tmp_path, capsys):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    with pytest.raises(SystemExit) as exit_:
        selfplay.main(["--config", str(path)])
    assert exit_.value.code == 2
    assert "settings must be an object of name: value, got list" in \
        one_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv,needle", [
    (["--ent-coef", "nan"], "ent_coef: expected a finite number, got nan"),
    (["--clip-range", "-1"], "clip_range must be > 0, got -1.0"),
    (["--max-grad-norm", "0"], "max_grad_norm must be > 0, got 0.0"),
    (["--gae-lambda", "1.5"], "gae_lambda must be in [0, 1], got 1.5"),
])
def test_selfplay_options_are_checked_before_anything_runs(argv, needle, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        selfplay.main(argv + SP + ["--total-samples", "144", "--eval-every", "0",
                                   "--out-dir", str(tmp_path)])
    assert exit_.value.code == 2
    assert needle in one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


#: An SB3 run of seconds, as a settings file (see SELFPLAY_TINY).
PPO_TINY = {"total_timesteps": 256, "n_steps": 128, "batch_size": 64, "n_epochs": 1,
            "num_rounds": 1, "eval_every": 0, "eval_matches": 4, "snapshot_every": 0,
            "checkpoint_every": 0, "net_arch": [32, 32], "progress": False}
PPO_BAD = [
    ('"lr_schedule": "cosine"', "unknown setting(s) lr_schedule"),
    ('"net_arch": 5', "net_arch: expected a list of integers, got 5"),
    ('"total_timesteps": "1000"', "total_timesteps: expected an integer, got '1000'"),
    ('"seed": 1e400', "seed: expected an integer, got inf"),
    ('"clip_range": -1', "clip_range must be > 0, got -1"),
    ('"ent_coef": NaN', "ent_coef: expected a finite number, got nan"),
    ('"eval_opponents": []', "eval_opponents must name at least one agent"),
    ('"rules": [1]', "rules: expected an object (name: value), got [1]"),
]


SETTINGS_CASES = ([("selfplay", SELFPLAY_TINY, *case) for case in SELFPLAY_BAD]
                  + [("sb3", PPO_TINY, *case) for case in PPO_BAD])


@pytest.mark.parametrize("trainer,tiny_settings,bad,needle", SETTINGS_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in SETTINGS_CASES])
def test_settings_files_are_checked_before_anything_runs(trainer, tiny_settings, bad, needle,
                                                         tmp_path, monkeypatch, capsys):
    """Both trainers read settings the same way (one base config, one reader): a bad file is
    one line naming the setting, exit status 2 and no run folder, from the command line and
    from the Python API alike."""
    module = selfplay if trainer == "selfplay" else _sb3_module()
    cls = module.SelfPlayConfig if trainer == "selfplay" else module.TrainConfig
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "bad.json"
    data = _settings_file(path, tiny_settings, bad)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--config", str(path)])
    assert exit_.value.code == 2
    err = one_line(capsys.readouterr().err)
    assert needle in err, err
    assert list(tmp_path.iterdir()) == [path]  # no run folder
    with pytest.raises(ValueError, match=re.escape(needle)):  # the Python API
        cls.from_dict(data).validate()


def test_sb3_toml_settings_and_options_are_checked(sb3, tmp_path, capsys):
    toml = tmp_path / "bad.toml"
    toml.write_text('seed = 1e400\n')
    tiny_flags = PPO + ["--total-timesteps", "256", "--eval-every", "0", "--snapshot-every",
                        "0", "--checkpoint-every", "0", "--out-dir", str(tmp_path / "runs")]
    for argv, needle in ((["--config", str(toml)], "seed: expected an integer, got inf"),
                         (["--ent-coef", "nan"], "ent_coef: expected a finite number, got nan"),
                         (["--clip-range", "-1"], "clip_range must be > 0, got -1.0")):
        with pytest.raises(SystemExit) as exit_:
            sb3.main(argv + tiny_flags)
        assert exit_.value.code == 2
        assert needle in one_line(capsys.readouterr().err)
    assert not (tmp_path / "runs").exists()


def test_claim_output_refuses_earlier_results_and_unwritable_folders(tmp_path):
    """``common.runs.claim_output``, which the commands writing one report check their
    output folder with before any work."""
    from dragons_egg.experiments.common.runs import claim_output

    out = tmp_path / "a" / "b"
    assert claim_output(out, ("summary.json",)) == out and out.is_dir()  # made
    (out / "notes.txt").write_text("mine")  # not a result of the command: no matter
    (out / "empty").mkdir()
    assert claim_output(out, ("summary.json", "empty")) == out  # an empty folder holds nothing
    (out / "summary.json").write_text("{}")
    with pytest.raises(ValueError, match=r"holds earlier analysis \(summary.json\): give another "
                       "folder, or --overwrite"):
        claim_output(out, ("summary.json",), what="analysis")
    assert claim_output(out, ("summary.json",), overwrite=True) == out
    assert (out / "summary.json").read_text() == "{}"  # replaced by the command, not here
    with pytest.raises(ValueError, match="is a file, not a folder"):
        claim_output(out / "notes.txt", ())
    with pytest.raises(ValueError, match="cannot make the folder"):
        claim_output(out / "notes.txt" / "x", ())


def test_claim_output_with_clear_removes_the_earlier_run_first(tmp_path, capsys):
    """``clear``: ``--overwrite`` removes the earlier run's entries (said), so that numbered
    files of a longer run are not left beside the new run's; other files stay."""
    out = tmp_path / "r"
    (out / "checkpoint_30").mkdir(parents=True)
    (out / "checkpoint_30" / "state.pkl").write_text("x")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds earlier run \(checkpoint_30/ \(1 file\)\)"):
        runs.claim_output(out, ["checkpoint_*"], what="run", clear=True)
    runs.claim_output(out, ["checkpoint_*"], overwrite=True, what="run", clear=True)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert "--overwrite: removing the run in" in capsys.readouterr().err
