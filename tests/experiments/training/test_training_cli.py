"""The self-play trainer's command line: resume in the checkpoint's run folder with its saved
settings, packaged configs by name, ``--help``, the sample budget, evaluation intervals from
too few deal sequences, and ``ship`` never writing into the package unless told."""

import hashlib
import json
import math
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.experiments.common import runs  # noqa: E402
from dragons_egg.experiments.common.settings import flags_given, packaged_configs  # noqa: E402
from dragons_egg.experiments.evaluation import (
    tournament,  # noqa: E402
    versus,  # noqa: E402
)
from dragons_egg.experiments.training import (
    selfplay,  # noqa: E402
    ship,  # noqa: E402
)
from dragons_egg.experiments.training.selfplay import Run, SelfPlayConfig  # noqa: E402

#: A tiny run: 2 table sizes x 6 matches x 12 steps = 144 learner samples a rollout.
TINY = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12",
        "--hidden", "16", "--epochs", "1", "--minibatch", "32", "--num-rounds", "1",
        "--eval-opponents", "random", "--eval-players", "2", "--eval-matches", "4",
        "--eval-every", "144", "--checkpoint-every", "144", "--no-progress",
        "--collectors", "0"]
ROLLOUT = 144



def interrupted_run(tmp_path, monkeypatch, updates):
    """A run of TINY settings (total 432 samples) stopped by an interrupt before its update
    number ``updates + 1`` (it saves a checkpoint there and exits with status 130); returns
    its folder."""
    real = Run.iteration

    def iteration(self):
        if self.updates == updates:
            raise KeyboardInterrupt
        return real(self)
    monkeypatch.setattr(Run, "iteration", iteration)
    assert selfplay.main(TINY + ["--total-samples", "432", "--out-dir", str(tmp_path / "runs"),
                                 "--run-name", "x"]) == 130
    monkeypatch.setattr(Run, "iteration", real)
    return tmp_path / "runs" / "x"


def eval_samples(run_dir):
    return [r["samples"] for r in runs.read_eval_csv(run_dir / "eval.csv")]


def test_resume_continues_in_the_checkpoints_folder_with_its_settings(tmp_path, monkeypatch,
                                                                     capsys):
    run_dir = interrupted_run(tmp_path, monkeypatch, updates=2)
    assert eval_samples(run_dir) == [144, 288]
    saved = json.loads((run_dir / "config.json").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    ckpt = str(run_dir / "checkpoints" / "latest.pt")
    # --resume alone: the run's folder and settings, not the defaults (eval_matches 200,
    # checkpoint_every 250,000, runs/selfplay-seed0/)
    assert selfplay.main(["--resume", ckpt]) == 0
    assert list(elsewhere.iterdir()) == []
    assert json.loads((run_dir / "config.json").read_text()) == saved
    assert saved["eval_matches"] == 4 and saved["checkpoint_every"] == 144
    assert eval_samples(run_dir) == [144, 288, 432]
    err = capsys.readouterr().err
    assert "resuming" in err and "with its saved settings" in err
    history = json.loads((run_dir / "config_history.json").read_text())
    assert [h["event"] for h in history] == ["start", "resume"]
    assert history[1]["samples"] == 288 and history[1]["changes"] == {}
    # one override, and a flag given with its default value: both are changes
    assert selfplay.main(["--resume", ckpt, "--total-samples", "576",
                          "--checkpoint-every", "250000"]) == 0
    err = capsys.readouterr().err
    assert "total_samples: 432 -> 576" in err and "checkpoint_every: 144 -> 250000" in err
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg == {**saved, "total_samples": 576, "checkpoint_every": 250000}
    assert eval_samples(run_dir) == [144, 288, 432, 576]
    history = json.loads((run_dir / "config_history.json").read_text())
    assert [h["event"] for h in history] == ["start", "resume", "resume"]
    assert history[2]["samples"] == 432
    assert history[2]["changes"] == {"total_samples": [432, 576],
                                     "checkpoint_every": [144, 250000]}
    # the checkpoint carries the history into what ship writes
    dest = tmp_path / "agent.npz"
    assert ship.main([ckpt, "--dest", str(dest)]) == 0
    prov = json.loads(dest.with_suffix(".json").read_text())
    assert [h["event"] for h in prov["config_history"]] == ["start", "resume", "resume"]
    assert prov["command"] == ""  # not the shipped agent's command


def test_resume_keeps_evaluations_past_the_checkpoint_aside(tmp_path, monkeypatch, capsys):
    """Interrupted after an evaluation the last checkpoint does not have: eval.csv goes back
    to the checkpoint's evaluations and the new ones continue them."""
    run_dir = interrupted_run(tmp_path, monkeypatch, updates=1)
    assert eval_samples(run_dir) == [144]
    cfg = json.loads((run_dir / "config.json").read_text())
    # an evaluation the checkpoint has not seen (as if made after it)
    runs.append_eval_csv(run_dir / "eval.csv", {"samples": 250, "seconds": 1.0})
    assert selfplay.main(["--resume", str(run_dir / "checkpoints" / "latest.pt")]) == 0
    assert eval_samples(run_dir) == [144, 288, 432]
    aside = run_dir / "eval-before-resume-144.csv"
    assert [r["samples"] for r in runs.read_eval_csv(aside)] == [144, 250]
    assert "eval-before-resume-144.csv" in capsys.readouterr().err
    assert json.loads((run_dir / "config.json").read_text()) == cfg


@pytest.mark.parametrize("argv,needle", [
    (["--hidden", "32"], "--hidden cannot change on resume"),
    (["--max-players", "4", "--table-sizes", "2", "3"], "--max-players cannot change on resume"),
    (["--total-samples", "0"], "total_samples must be >= 1"),
])
def test_resume_refuses_what_the_checkpoint_cannot_take(argv, needle, tmp_path, capsys):
    run = Run(tiny(tmp_path, run_name="r"))
    ckpt = run.save()
    with pytest.raises(SystemExit) as exc:
        selfplay.parse_args(["--resume", str(ckpt)] + argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_resume_needs_a_checkpoint_in_a_run_folder(tmp_path, capsys):
    run = Run(tiny(tmp_path, run_name="r"))
    ckpt = run.save()
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "x.pt").write_bytes(ckpt.read_bytes())
    for argv, needle in ((["--resume", str(loose / "x.pt")], "not in a run folder"),
                         (["--resume", str(tmp_path / "none.pt")], "does not exist")):
        with pytest.raises(SystemExit) as exc:
            selfplay.parse_args(argv)
        assert exc.value.code == 2 and needle in capsys.readouterr().err
    # with a folder given, a loose checkpoint continues there (the change recorded)
    cfg = selfplay.parse_args(["--resume", str(loose / "x.pt"), "--run-name", "moved"]).cfg
    assert cfg.run_dir == tmp_path / "moved" and cfg.ppo.hidden == (16,)
    moved = Run(cfg, resume=str(loose / "x.pt"))
    history = json.loads((moved.dir / "config_history.json").read_text())
    assert history[-1]["changes"] == {"run_name": ["r", "moved"]}


def test_flags_given_are_read_from_the_words_not_the_values():
    words = ["--seed", "0", "--total_samples=5", "--no-progress", "--eval-opponents", "a", "b",
             "--tribute-lambda", "None"]
    # a group's setting by its path (its flag is flat)
    assert flags_given(words, SelfPlayConfig) == {"seed", "total_samples", "progress",
                                                  "eval_opponents", "ppo.tribute_lambda"}
    assert flags_given(["--", "--seed", "1"], SelfPlayConfig) == set()


def test_packaged_configs_by_name_from_any_directory(tmp_path, monkeypatch, capsys):
    from dragons_egg.experiments.training import train_ppo

    monkeypatch.chdir(tmp_path)
    packaged = json.loads(packaged_configs()["selfplay-shipped"].read_text())
    cfg, resume = selfplay.parse_args(["--config", "selfplay-shipped", "--seed", "5"])[:2]
    assert resume is None
    assert cfg == selfplay.config_from_dict({**packaged, "seed": 5})
    assert cfg.run_name == "ppo-shipped" and cfg.ppo.epochs == 4
    tcfg = train_ppo.parse_args(["--config", "shipped"]).cfg
    assert (tcfg.total_timesteps, tcfg.n_envs) == (3_000_000, 4)
    # a wrong name lists the trainer's own packaged configs
    with pytest.raises(SystemExit) as exc:
        selfplay.parse_args(["--config", "shipped"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "not the name of a packaged config (packaged: selfplay-shipped)" in err
    with pytest.raises(SystemExit) as exc:
        train_ppo.parse_args(["--config", "selfplay-shipped"])
    assert exc.value.code == 2
    assert "not the name of a packaged config (packaged: shipped)" in capsys.readouterr().err
    # an existing file is a file, even with a packaged config's name
    (tmp_path / "selfplay-shipped").write_text(json.dumps({"seed": 9}))
    cfg = selfplay.parse_args(["--config", "selfplay-shipped"]).cfg
    assert cfg.seed == 9 and cfg.run_name == ""


def test_help_names_the_module_and_lists_config_and_resume(capsys):
    with pytest.raises(SystemExit) as exc:
        selfplay.parse_args(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python -m dragons_egg.experiments.training.selfplay" in out
    for word in ("--config", "selfplay-shipped", "--resume", "CHECKPOINT.pt",
                 "config_history.json", "--total-samples"):
        assert word in out, word
    from dragons_egg.experiments.research.tribute import fit as tribute_fit

    with pytest.raises(SystemExit):
        tribute_fit.parse_args(["--help"])
    out = capsys.readouterr().out
    assert "usage: python -m dragons_egg.experiments.research.tribute.fit" in out
    assert "--data" in out and "DATA.npz" in out and "--config" in out


def test_help_under_python_m_names_the_module(tmp_path):
    """Run as ``python -m``, the settings class lives in ``__main__``: still the module's
    name, not a file path."""
    proc = subprocess.run([sys.executable, "-m", "dragons_egg.experiments.training.selfplay", "--help"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m dragons_egg.experiments.training.selfplay ")
    assert "--resume" in proc.stdout and "--config" in proc.stdout


def test_the_run_says_how_far_past_its_sample_budget_it_goes(tmp_path, capsys):
    run = Run(tiny(tmp_path, total_samples=150))
    capsys.readouterr()
    run.train()
    err = capsys.readouterr().err
    assert f"not a multiple of the rollout size {ROLLOUT}" in err
    assert "asked 150, will train 288, overshoot 138" in err
    summary = json.loads((run.dir / "summary.json").read_text())
    assert summary["budget"] == {"asked": 150, "rollout_samples": ROLLOUT, "will_train": 288,
                                 "overshoot": 138, "trained": 288}
    exact = Run(tiny(tmp_path, total_samples=2 * ROLLOUT, run_name="exact"))
    capsys.readouterr()
    assert exact.announce_budget()["overshoot"] == 0
    assert "overshoot" not in capsys.readouterr().err
    league = Run(tiny(tmp_path, total_samples=150, opponent_share=0.5, run_name="league"))
    capsys.readouterr()
    assert league.announce_budget()["will_train"] is None
    assert f"up to {ROLLOUT - 1:,} past it" in capsys.readouterr().err


def test_evaluation_intervals_follow_the_tournaments_minimum(tmp_path, monkeypatch):
    """4 matches at 2 players are 2 deal sequences: no interval (NaN, an empty cell in
    eval.csv), by the tournament's own rule: lowering its minimum brings them back."""
    cfg = tiny(tmp_path, eval_opponents=("random",), eval_players=2, eval_matches=4,
               num_rounds=1)
    def evaluate():
        return versus.evaluate_agent("greedy", cfg.eval_opponents, players=cfg.eval_players,
                                     matches=cfg.eval_matches, seed=0,
                                     num_rounds=cfg.num_rounds)

    few = evaluate()
    assert not math.isnan(few["diff_random"]) and not math.isnan(few["mean_score"])
    for k in ("score_low", "score_high", "diff_random_low", "diff_random_high"):
        assert math.isnan(few[k]), k
    assert "no interval: fewer than 10 deal sequences" in \
        versus.format_estimate(few, "diff_random")
    monkeypatch.setattr(tournament.stats, "MIN_SEQUENCES", 2)  # where Estimate reads it
    enough = evaluate()
    assert enough["diff_random_low"] <= enough["diff_random"] <= enough["diff_random_high"]
    assert enough["diff_random"] == few["diff_random"]
    monkeypatch.undo()
    # a run's eval.csv: empty cells, read back as NaN; the learning curve is drawn
    run = Run(tiny(tmp_path, eval_every=144, eval_opponents=("random",), eval_players=2,
                   eval_matches=4, num_rounds=1, total_samples=288))
    run.train()
    lines = (run.dir / "eval.csv").read_text().splitlines()
    header = lines[0].split(",")
    for line in lines[1:]:
        cells = dict(zip(header, line.split(","), strict=True))
        assert cells["diff_random_low"] == "" and cells["diff_random_high"] == ""
        assert cells["diff_random"] != ""
    rows = runs.read_eval_csv(run.dir / "eval.csv")
    assert [r["samples"] for r in rows] == [144, 288]
    assert all(math.isnan(r["diff_random_low"]) for r in rows)
    assert (run.dir / "learning_curve.png").stat().st_size > 0
    summary = json.loads((run.dir / "summary.json").read_text())  # strict JSON: null
    assert summary["history"][0]["diff_random_low"] is None


def test_ship_never_writes_into_the_package_unless_told(tmp_path, monkeypatch, capsys):
    from dragons_egg.agents.ppo import SHIPPED

    before = hashlib.sha256(SHIPPED.read_bytes()).hexdigest()
    run = Run(tiny(tmp_path, run_name="s"))
    ckpt = run.save()
    listing = sorted(p.name for p in tmp_path.rglob("*"))
    for argv, needle in (([str(ckpt)], "--dest FILE.npz, or --into-package"),
                         ([str(ckpt), "--dest", str(tmp_path / "a.npz"), "--into-package"],
                          "not allowed with")):
        with pytest.raises(SystemExit) as exc:
            ship.main(argv)
        assert exc.value.code == 2 and needle in capsys.readouterr().err
    assert hashlib.sha256(SHIPPED.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == listing
    # --into-package writes the package's agent (here a stand-in for it) with the command
    # that trains the shipped agent
    stand_in = tmp_path / "pkg" / "ppo_dragons_egg.npz"
    stand_in.parent.mkdir()
    monkeypatch.setattr(ship, "SHIPPED", stand_in)
    assert ship.main([str(ckpt), "--into-package"]) == 0
    prov = json.loads(stand_in.with_suffix(".json").read_text())
    assert prov["command"] == ship.SHIPPED_COMMAND
    assert ship.SHIPPED_COMMAND.endswith("--config selfplay-shipped")
