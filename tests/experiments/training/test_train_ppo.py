"""Training with MaskablePPO: smoke runs on tiny budgets, checkpoints, resume, bad input, and
the ppo agent."""

import json

import numpy as np
import pytest

from dragons_egg.experiments.training.train_ppo import TrainConfig, main, train

TINY = ["--total-timesteps", "512", "--n-steps", "128", "--batch-size", "64", "--n-epochs", "1",
        "--num-rounds", "1", "--eval-matches", "4", "--eval-every", "256",
        "--snapshot-every", "256", "--checkpoint-every", "256", "--net-arch", "32", "32",
        "--no-progress"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    assert main(TINY + ["--out-dir", str(out), "--run-name", "tiny"]) == 0
    return out / "tiny"


def test_smoke_run_writes_everything(tiny_run):
    for name in ("config.json", "eval.csv", "progress.csv", "learning_curve.png",
                 "checkpoints/final.zip", "checkpoints/final.json",
                 "checkpoints/step_256.zip"):
        assert (tiny_run / name).stat().st_size > 0, name
    cfg = json.loads((tiny_run / "config.json").read_text())
    assert cfg["total_timesteps"] == 512 and cfg["net_arch"] == [32, 32]
    rows = (tiny_run / "eval.csv").read_text().splitlines()
    assert rows[0].startswith("timesteps,seconds,mean_score") and len(rows) >= 3
    meta = json.loads((tiny_run / "checkpoints/final.json").read_text())
    assert meta["num_timesteps"] >= 512 and meta["snapshots"]  # self-play snapshots in the pool
    assert any(e.name.startswith("events.out.tfevents") for e in tiny_run.iterdir())


def test_resume_continues_from_a_checkpoint(tiny_run, tmp_path):
    ckpt = tiny_run / "checkpoints" / "step_256.zip"
    cfg = TrainConfig(**{**json.loads((tiny_run / "config.json").read_text()),
                         "out_dir": str(tmp_path), "run_name": "resumed",
                         "total_timesteps": 768})
    final = train(cfg, resume=str(ckpt), trust=True)  # the run's own checkpoint
    meta = json.loads(final.with_suffix(".json").read_text())
    assert meta["num_timesteps"] >= 768
    assert meta["history"][0]["timesteps"] <= 512  # the earlier evaluations carried over


def test_resume_alone_continues_the_run_in_its_folder_with_its_settings(
        tiny_run, tmp_path, monkeypatch, capsys):
    import shutil

    run = tmp_path / "copy" / "tiny"
    shutil.copytree(tiny_run, run)
    saved = json.loads((run / "config.json").read_text())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    ckpt = str(run / "checkpoints" / "step_256.zip")
    capsys.readouterr()
    assert main(["--resume", ckpt, "--trust-checkpoint", "--total-timesteps", "700"]) == 0
    assert list(cwd.iterdir()) == []  # not runs/ppo-seed0/ with the defaults
    err = capsys.readouterr().err
    assert "total_timesteps: 512 -> 700" in err
    assert "asked 700, will train 768, overshoot 68" in err  # rollouts of 128 x 2 steps
    cfg = json.loads((run / "config.json").read_text())
    assert cfg == {**saved, "total_timesteps": 700, "out_dir": str(run.parent.resolve())}
    assert cfg["eval_matches"] == 4 and cfg["checkpoint_every"] == 256  # not 40 and 50,000
    history = json.loads((run / "config_history.json").read_text())
    assert [h["event"] for h in history] == ["start", "resume"]
    assert history[1]["timesteps"] == 256
    assert history[1]["changes"]["total_timesteps"] == [512, 700]
    # eval.csv continues the checkpoint's evaluations; the later one of the first run is aside
    from dragons_egg.experiments.common.runs import read_eval_csv

    assert [r["timesteps"] for r in read_eval_csv(run / "eval.csv")] == [256, 512, 768]
    aside = read_eval_csv(run / "eval-before-resume-256.csv")
    assert [r["timesteps"] for r in aside] == [256, 512]
    meta = json.loads((run / "checkpoints" / "final.json").read_text())
    assert meta["budget"] == {"asked": 700, "rollout_steps": 256, "will_train": 768,
                              "overshoot": 68, "trained": 768}
    assert meta["num_timesteps"] == 768 and len(meta["config_history"]) == 2
    # 4 matches at 4 players: one deal sequence, no interval (the tournament's rule)
    assert all(r["score_low"] is None and r["diff_heuristic_high"] is None
               for r in meta["history"])


@pytest.mark.parametrize("argv,needle", [
    (["--learning-rate", "0.1"], "--learning-rate cannot change on resume"),
    (["--net-arch", "8"], "--net-arch cannot change on resume"),
    (["--table-sizes", "2", "3"], "cannot change the largest table size"),
])
def test_resume_refuses_what_the_checkpoint_keeps(tiny_run, argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--resume", str(tiny_run / "checkpoints" / "step_256.zip"),
              "--trust-checkpoint"] + argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_ppo_agent_plays_legal_moves_at_any_table_size(tiny_run):
    from dragons_egg.agents import make_agent
    from dragons_egg.agents.runner import play_match
    from dragons_egg_env.config import RulesConfig

    path = tiny_run / "checkpoints" / "final.zip"
    for n in (2, 3, 4):
        config = RulesConfig(num_players=n, num_rounds=1)
        agents = [make_agent(f"ppo:path={path},trust=1", seed=0)] + \
            [make_agent("random", seed=k) for k in range(1, n)]
        rec = play_match(agents, config, seed=n)  # raw_env raises on an illegal move
        assert len(rec.rounds) == 1
    sampler = make_agent(f"ppo:path={path},deterministic=false,trust=1", seed=3)
    sampler.start_match(0, RulesConfig(num_players=4))
    with pytest.raises(ValueError, match="trained for tables of up to 4 players"):
        make_agent(f"ppo:path={path},trust=1", seed=0).start_match(0,
                                                                  RulesConfig(num_players=5))


@pytest.mark.parametrize("argv,needle", [
    (["--total-timesteps", "x"], "Error parsing --total-timesteps"),
    (["--table-sizes", "4", "9"], "num_players must be 2..8"),
    (["--opponents", "wizard"], "unknown agent 'wizard'"),
    (["--vec-env", "gpu"], "vec_env must be dummy or subproc"),
    (["--rules", "[1]"], "expects a JSON object"),
    (["--rules", '{"colour": 1}'], "unknown rule flag"),
    (["--resume", "/nonexistent/ckpt.zip"], "does not exist"),
    (["--config", "/nonexistent.json"], "--config /nonexistent.json: no such file, and not the "
                                        "name of a packaged config (packaged: shipped)"),
])
def test_bad_arguments(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_config_file_and_corrupt_checkpoint(tmp_path, capsys):
    bad_cfg = tmp_path / "c.json"
    bad_cfg.write_text(json.dumps({"total_timesteps": 10, "learning_rat": 0.1}))
    with pytest.raises(SystemExit):
        main(["--config", str(bad_cfg)])
    assert "unknown setting(s) learning_rat" in capsys.readouterr().err
    toml = tmp_path / "c.toml"
    toml.write_text("total_timesteps = 10\nseed = 4\n")
    from dragons_egg.experiments.training.train_ppo import parse_args
    cfg = parse_args(["--config", str(toml), "--seed", "5"]).cfg
    assert (cfg.total_timesteps, cfg.seed) == (10, 5)
    corrupt = tmp_path / "ckpt.zip"
    corrupt.write_bytes(b"not a zip")
    with pytest.raises(SystemExit):
        main(TINY + ["--out-dir", str(tmp_path), "--resume", str(corrupt)])
    assert "corrupt or not an SB3 zip" in capsys.readouterr().err
    from dragons_egg.agents import AgentSpecError, make_agent
    with pytest.raises(AgentSpecError, match="corrupt or not an SB3 zip"):
        make_agent(f"ppo:path={corrupt}")
    with pytest.raises(AgentSpecError, match="does not exist"):
        make_agent("ppo:path=/nope.zip")


def test_same_seed_same_run(tmp_path):
    """Same seed, same learning (torch on one thread, CPU)."""
    runs = []
    for name in ("a", "b"):
        main(TINY + ["--total-timesteps", "256", "--eval-every", "0", "--snapshot-every", "0",
                     "--checkpoint-every", "0", "--out-dir", str(tmp_path), "--run-name", name])
        from sb3_contrib import MaskablePPO
        m = MaskablePPO.load(str(tmp_path / name / "checkpoints" / "final.zip"))
        runs.append(np.concatenate([p.detach().numpy().ravel()
                                    for p in m.policy.parameters()]))
    assert np.array_equal(runs[0], runs[1])
