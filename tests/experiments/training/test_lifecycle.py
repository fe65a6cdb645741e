"""The run lifecycle both trainers share (issue 46, ``training/lifecycle.py``): a tiny trainer
built on :class:`TrainerRun` claims its folder and refuses a second run in it, records its
config history on resume, calls the hooks in order, turns a Ctrl-C into ``RunInterrupted``
naming its checkpoint, and runs from a command line with one line per way it can stop."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from dragons_egg.experiments.common.runs import RunInterrupted, read_eval_csv
from dragons_egg.experiments.training.callbacks import TrainerCallback
from dragons_egg.experiments.training.lifecycle import TrainerRun


@dataclasses.dataclass(frozen=True)
class Tiny:
    """The settings of a trainer of seconds: it counts ``steps`` timesteps."""

    out_dir: str
    run_name: str = "r"
    steps: int = 3
    lr: float = 0.1
    #: Send SIGINT this many times during the update that reaches this count (0: never).
    ctrl_c_at: int = 0
    ctrl_c_times: int = 1

    def validate(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.run_name


class TinyRun(TrainerRun):
    """One update per timestep, an evaluation and a checkpoint after each."""

    RUN_FILES = ("config.json", "config_history.json", "checkpoints", "eval.csv",
                 "eval-before-resume-*.csv")
    UNIT = "timesteps"
    RESUME_FLAGS = " --trust-me"

    @staticmethod
    def latest_checkpoint(run_dir: Path) -> Path | None:
        path = run_dir / "checkpoints" / "latest.json"
        return path if path.is_file() else None

    def __init__(self, cfg: Tiny, resume: str | None = None, trust: bool = False,
                 overwrite: bool = False, callbacks: tuple[TrainerCallback, ...] = ()) -> None:
        self.begin(cfg, resume, overwrite, callbacks)
        self.count = 0
        self.scalars: list[tuple[str, float, int]] = []
        if resume:
            state = json.loads(Path(resume).read_text())
            self.count, self.history = state["count"], state["history"]
            self.resumed(resume, self.count, Tiny(**state["config"]), state["config_history"])
        self.open_output(bool(resume), self.count,
                         scalar=lambda tag, value, step: self.scalars.append((tag, value, step)))
        self.run_started()

    def save(self) -> Path:
        path = self.run_dir / "checkpoints" / "latest.json"
        path.write_text(json.dumps({"count": self.count, "history": self.history,
                                    "config": dataclasses.asdict(self.cfg),
                                    "config_history": self.config_history}))
        return self.checkpoint_written(path)

    def train(self) -> Path:
        try:
            while self.count < self.cfg.steps:
                with self.hold:
                    if self.count + 1 == self.cfg.ctrl_c_at:
                        for _ in range(self.cfg.ctrl_c_times):
                            os.kill(os.getpid(), signal.SIGINT)
                    self.count += 1
                self.callbacks.on_update_end(self, {"timesteps": self.count})
                self.record_eval({"timesteps": self.count, "mean_score": 0.25 * self.count})
                self.save()
        except KeyboardInterrupt:
            raise self.interrupted(self.count, self.save) from None
        return self.run_ended(self.save())

    def done_line(self, final: Path) -> str:
        return f"wrote {final} at {self.count} timesteps"


class Recorder(TrainerCallback):
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.runs: set[int] = set()

    def on_run_start(self, run: Any) -> None:
        self.runs.add(id(run))
        self.calls.append(("start", run.count))

    def on_update_end(self, run: Any, stats: dict[str, Any]) -> None:
        self.calls.append(("update", stats["timesteps"]))

    def on_eval_end(self, run: Any, row: dict[str, Any]) -> None:
        self.runs.add(id(run))
        row["my_figure"] = 1.5
        self.calls.append(("eval", row["timesteps"]))

    def on_checkpoint(self, run: Any, path: Path) -> None:
        self.calls.append(("checkpoint", json.loads(path.read_text())["count"]))

    def on_run_end(self, run: Any, final: Path) -> None:
        self.calls.append(("end", final))


def test_a_run_claims_its_folder_and_a_second_one_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="steps must be >= 1, got 0"):
        TinyRun(Tiny(str(tmp_path), steps=0))
    assert list(tmp_path.iterdir()) == []  # settings are checked before the folder is made
    run = TinyRun(Tiny(str(tmp_path)))
    assert (run.run_dir / "checkpoints").is_dir()
    assert json.loads((run.run_dir / "config.json").read_text())["steps"] == 3
    (entry,) = json.loads((run.run_dir / "config_history.json").read_text())
    assert entry["event"] == "start" and entry["timesteps"] == 0
    final = run.train()
    with pytest.raises(ValueError) as refused:
        TinyRun(Tiny(str(tmp_path)))
    assert f"--resume {final} --trust-me" in str(refused.value)
    assert "--run-name" in str(refused.value)
    assert [r["timesteps"] for r in read_eval_csv(run.run_dir / "eval.csv")] == [1, 2, 3]
    capsys.readouterr()
    again = TinyRun(Tiny(str(tmp_path)), overwrite=True)
    assert "--overwrite: removing the run in" in capsys.readouterr().err
    assert not (again.run_dir / "eval.csv").exists()
    assert json.loads((again.run_dir / "config_history.json").read_text())[0]["event"] == "start"


def test_the_hooks_are_called_in_order_with_the_run(tmp_path):
    rec = Recorder()
    run = TinyRun(Tiny(str(tmp_path), steps=2), callbacks=(rec,))
    final = run.train()
    assert rec.calls == [("start", 0),
                         ("update", 1), ("eval", 1), ("checkpoint", 1),
                         ("update", 2), ("eval", 2), ("checkpoint", 2),
                         ("checkpoint", 2), ("end", final)]
    assert rec.runs == {id(run)}
    # the figure a hook added went to the history, eval.csv and the scalars
    assert [h["my_figure"] for h in run.history] == [1.5, 1.5]
    assert [r["my_figure"] for r in read_eval_csv(run.run_dir / "eval.csv")] == [1.5, 1.5]
    assert ("eval/my_figure", 1.5, 2) in run.scalars
    assert ("eval/mean_score", 0.5, 2) in run.scalars
    assert not any(tag == "eval/timesteps" for tag, _, _ in run.scalars)


def test_a_resume_records_its_changes_and_restores_eval_csv(tmp_path, capsys):
    first = TinyRun(Tiny(str(tmp_path), steps=2))
    first.train()
    ckpt = first.run_dir / "checkpoints" / "latest.json"
    kept = ckpt.read_text()
    TinyRun(Tiny(str(tmp_path), steps=3), overwrite=True).train()  # 3 rows, no checkpoint kept
    ckpt.write_text(kept)  # the checkpoint at 2 timesteps, and an eval.csv of 3 rows
    capsys.readouterr()
    run = TinyRun(Tiny(str(tmp_path), steps=4, lr=0.2), resume=str(ckpt))
    err = capsys.readouterr().err
    assert f"resuming {ckpt} at 2 timesteps; settings changed:" in err
    assert "  lr: 0.1 -> 0.2" in err and "  steps: 2 -> 4" in err
    start, resume = json.loads((run.run_dir / "config_history.json").read_text())
    assert start["event"] == "start"
    assert resume["event"] == "resume" and resume["timesteps"] == 2
    assert resume["changes"] == {"lr": [0.1, 0.2], "steps": [2, 4]}
    assert resume["checkpoint"] == str(ckpt)
    # eval.csv holds the checkpoint's evaluations; the row after it is kept aside
    assert [r["timesteps"] for r in read_eval_csv(run.run_dir / "eval.csv")] == [1, 2]
    aside = run.run_dir / "eval-before-resume-2.csv"
    assert [r["timesteps"] for r in read_eval_csv(aside)] == [1, 2, 3]
    run.train()
    assert [r["timesteps"] for r in read_eval_csv(run.run_dir / "eval.csv")] == [1, 2, 3, 4]
    saved = json.loads(ckpt.read_text())
    assert [e["event"] for e in saved["config_history"]] == ["start", "resume"]
    # a resume elsewhere than the checkpoint's folder, into another run, is refused
    with pytest.raises(ValueError, match="already holds another run"):
        TinyRun(Tiny(str(tmp_path / "other")), overwrite=False,
                resume=str(_another_run(tmp_path)))


def _another_run(tmp_path: Path) -> Path:
    TinyRun(Tiny(str(tmp_path / "other"))).train()
    path = tmp_path / "elsewhere" / "checkpoints" / "latest.json"
    path.parent.mkdir(parents=True)
    path.write_text((tmp_path / "other" / "r" / "checkpoints" / "latest.json").read_text())
    return path


def test_a_ctrl_c_waits_for_the_update_and_names_its_checkpoint(tmp_path, capsys):
    run = TinyRun(Tiny(str(tmp_path), steps=5, ctrl_c_at=2))
    with pytest.raises(RunInterrupted) as stopped:
        run.train()
    exc = stopped.value
    ckpt = run.run_dir / "checkpoints" / "latest.json"
    # the update in progress finished and was counted before the checkpoint
    assert (exc.checkpoint, exc.count, exc.unit) == (ckpt, 2, "timesteps")
    assert json.loads(ckpt.read_text())["count"] == 2
    assert "Ctrl-C: saving a checkpoint after this update" in capsys.readouterr().err
    assert exc.line("trainer", TinyRun.RESUME_FLAGS) == (
        f"interrupted at 2 timesteps: saved {ckpt}; resume with: trainer --resume {ckpt} "
        "--trust-me")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # let go


def test_a_second_ctrl_c_saves_nothing_and_names_the_last_checkpoint(tmp_path):
    run = TinyRun(Tiny(str(tmp_path), steps=5, ctrl_c_at=3, ctrl_c_times=2))
    with pytest.raises(RunInterrupted) as stopped:
        run.train()
    exc = stopped.value
    ckpt = run.run_dir / "checkpoints" / "latest.json"
    assert exc.checkpoint is None and exc.count == 2
    assert exc.last == ckpt
    assert json.loads(ckpt.read_text())["count"] == 2  # the cut update was not saved


class ExitingRun(TinyRun):
    EXIT_ON_ERROR = True


def test_the_command_runner_ends_each_way_in_one_line(tmp_path, capsys):
    ok = TinyRun.command("trainer", lambda: TinyRun(Tiny(str(tmp_path), run_name="ok")))
    assert ok == 0
    final = tmp_path / "ok" / "checkpoints" / "latest.json"
    assert capsys.readouterr().out == f"wrote {final} at 3 timesteps\n"
    # a refused start: one line, exit status 2, returned or raised as the trainer says
    assert TinyRun.command("trainer", lambda: TinyRun(Tiny(str(tmp_path), run_name="ok"))) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "already holds a run" in err[0]
    with pytest.raises(SystemExit) as exit_:
        ExitingRun.command("trainer", lambda: ExitingRun(Tiny(str(tmp_path), steps=0)))
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "trainer: error: steps must be >= 1, got 0\n"
    # Ctrl-C: 130 and the line that resumes
    code = TinyRun.command("trainer", lambda: TinyRun(Tiny(str(tmp_path), run_name="c",
                                                           steps=4, ctrl_c_at=2)))
    assert code == 130
    ckpt = tmp_path / "c" / "checkpoints" / "latest.json"
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"interrupted at 2 timesteps: saved {ckpt}; resume with: trainer --resume {ckpt} "
        "--trust-me")

    def cut() -> TinyRun:
        raise KeyboardInterrupt
    assert TinyRun.command("trainer", cut) == 130
    assert capsys.readouterr().err == (
        "interrupted before a checkpoint could be saved: nothing saved\n")


def test_run_name_is_a_folder_name_not_a_path(tmp_path):
    """Issue 47: ``--run-name ../../escape`` wrote outside ``--out-dir``."""
    from dragons_egg.experiments.training.selfplay import SelfPlayConfig

    for bad in ("../../escape", "a/b", "..", "x" * 300):
        with pytest.raises(ValueError, match="run_name must be a folder name"):
            SelfPlayConfig(run_name=bad, out_dir=str(tmp_path))
    assert SelfPlayConfig(run_name="mine", out_dir=str(tmp_path)).run_dir == tmp_path / "mine"


LOCK_PROBE = """
import sys, time
from dragons_egg.experiments.training.selfplay import Run, SelfPlayConfig
cfg = SelfPlayConfig.from_dict(dict(table_sizes=(2,), envs_per_size=2, rollout_steps=4,
    hidden=(8,), total_samples=8, eval_opponents=(), out_dir=sys.argv[1], run_name="r",
    progress=False, collectors=0))
run = Run(cfg)
print("running", flush=True)
time.sleep(60)
"""


def test_two_trainers_in_one_run_folder_the_second_is_refused(tmp_path):
    """Issue 47: two trainers with one --run-name; one crashed on the shared temporary
    file. The second is refused at once, naming the first's pid."""
    import subprocess
    import sys

    first = subprocess.Popen([sys.executable, "-c", LOCK_PROBE, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "running"
        second = subprocess.run([sys.executable, "-m", "dragons_egg.experiments.training.selfplay",
                                 "--out-dir", str(tmp_path), "--run-name", "r",
                                 "--total-samples", "8", "--no-progress"],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and "Traceback" not in second.stderr
        assert f"is being written by another process (pid {first.pid} on " in second.stderr
    finally:
        first.kill()
        first.wait()
