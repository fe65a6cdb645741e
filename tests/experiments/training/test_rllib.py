"""Dragon's Egg on Ray RLlib: the env checker, rewards through the wrapper, PPO iterations
with local and remote sampling, and the exported module as an agent. Skipped when the
``rllib`` extra is not installed.

Every test here runs as if a Ray cluster had been started on the machine and killed: its
``ray_current_cluster`` file is left behind (in a private ``RAY_TMPDIR``). Plain ``ray.init()``
would try to join that cluster (and refuse ``num_cpus``); the training script and these tests
start a private local instance instead (``address="local"``), as they must on a machine where
the user runs Ray."""

import random

import numpy as np
import pytest
from support import stale_ray_cluster

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from dragons_egg.experiments.training.rllib import (  # noqa: E402
    MAIN,
    DragonsEggMultiAgentEnv,
    league_mapping_fn,
    ppo_config,
)


@pytest.fixture(scope="module", autouse=True)
def stale_cluster_file():
    with stale_ray_cluster():
        yield


@pytest.fixture(scope="module")
def ray_local():
    """A private local Ray instance, whatever else runs on the machine."""
    from dragons_egg.experiments.common.runs import sigterm_kept
    from dragons_egg.experiments.training.distributed import ray_init_kwargs

    if not ray.is_initialized():
        with sigterm_kept():  # ray.init's SIGTERM handler (sys.exit) stays out of this process
            ray.init(**ray_init_kwargs(None, num_cpus=2))
    yield
    ray.shutdown()


def test_multi_agent_env_checker():
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    check_multiagent_environments(DragonsEggMultiAgentEnv({"num_players": 3, "num_rounds": 2}))


@pytest.mark.parametrize("n", [2, 4, 6])
def test_random_rollouts_every_seat_receives_its_final_reward(n):
    rng = random.Random(n)
    for seed in range(3):
        env = DragonsEggMultiAgentEnv({"num_players": n, "num_rounds": 2,
                                       "illegal_action": "raise"})
        obs, _ = env.reset(seed=seed)
        returns = {a: 0.0 for a in env.possible_agents}
        last_reward_seen = set()
        while True:
            (agent, o), = obs.items()
            assert set(o) == {"observations", "action_mask"}
            legal = np.flatnonzero(o["action_mask"])
            obs, rew, term, trunc, _ = env.step({agent: int(legal[rng.randrange(len(legal))])})
            for a, r in rew.items():
                returns[a] += r
            if term["__all__"]:
                last_reward_seen = set(rew)
                break
            assert len(obs) == 1
        scores = env.env.unwrapped.scores
        assert last_reward_seen == set(env.possible_agents)  # every seat, at the end
        for a in env.possible_agents:
            assert abs(returns[a] - scores[a]) < 1e-9
        assert abs(sum(returns.values())) < 1e-9


def test_league_mapping_puts_main_at_one_seat():
    mapping = league_mapping_fn(["random", "heuristic", "main_v5"], 4)
    for ep in range(20):
        mods = [mapping(f"player_{i}", f"episode-{ep}") for i in range(4)]
        assert mods.count(MAIN) == 1
        assert set(mods) - {MAIN} <= {"random", "heuristic", "main_v5"}


def test_train_rllib_script_smoke(tmp_path):
    """``python -m dragons_egg.experiments.training.train_rllib`` without ``--address`` starts its own instance
    (and shuts it down), next to the stale cluster file."""
    from dragons_egg.experiments.training.train_rllib import main

    if ray.is_initialized():  # the script must start Ray itself here
        ray.shutdown()
    assert main(["--iterations", "1", "--train-batch-size", "128", "--minibatch-size", "64",
                 "--num-epochs", "1", "--rounds", "1", "--out", str(tmp_path / "r"),
                 "--num-cpus", "2", "--checkpoint-every", "1", "--min-return", "-10"]) == 0
    assert not ray.is_initialized()
    assert (tmp_path / "r" / "main_module").is_dir()
    assert (tmp_path / "r" / "checkpoint_1").is_dir()
    # the exported module plays as the rllib agent; it was trained for 4 seats
    from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent, parse_spec
    from dragons_egg.agents.runner import play_match
    from dragons_egg_env.config import RulesConfig

    spec = f"rllib:path={tmp_path / 'r' / 'main_module'}"
    parse_spec(spec)
    check_spec_for_table(spec, 4)
    bot = make_agent(spec, seed=0)
    with pytest.raises(ValueError, match="trained for tables of up to 4 players"):
        bot.start_match(0, RulesConfig(num_players=5, num_rounds=1))
    rec = play_match([bot] + [make_agent("random", seed=k) for k in range(1, 3)],
                     RulesConfig(num_players=3, num_rounds=1), seed=2)
    assert len(rec.rounds) == 1
    (tmp_path / "empty").mkdir()
    with pytest.raises(AgentSpecError, match="empty is not an exported RLlib module folder"):
        parse_spec(f"rllib:path={tmp_path / 'empty'}")


@pytest.mark.parametrize("runners", [0, 1])
def test_one_ppo_iteration(ray_local, runners, tmp_path):
    cfg = ppo_config({"num_players": 4, "num_rounds": 1, "illegal_action": "raise"},
                     num_env_runners=runners, train_batch_size=256, minibatch_size=64,
                     num_epochs=1, snapshot_every=1, min_return=float("-inf"),
                     hidden=(32, 32))
    algo = cfg.build_algo()
    try:
        res = algo.train()
        assert res["num_env_steps_sampled_lifetime"] >= 256
        assert res["league_size"] == 3  # random, heuristic and the first snapshot of main
        assert "main_v1" in algo.config.policies or algo.get_module("main_v1") is not None
        algo.get_module(MAIN).save_to_path(str(tmp_path / "main_module"))
    finally:
        algo.stop()
    if runners == 0:
        from dragons_egg.agents import make_agent
        from dragons_egg.agents.runner import play_match
        from dragons_egg_env.config import RulesConfig

        bots = [make_agent(f"rllib:path={tmp_path / 'main_module'}", seed=0)] + \
            [make_agent("random", seed=k) for k in range(1, 4)]
        rec = play_match(bots, RulesConfig(num_players=4, num_rounds=1), seed=1)
        assert len(rec.rounds) == 1


def test_bad_arguments(capsys):
    from dragons_egg.experiments.training.train_rllib import main

    with pytest.raises(SystemExit):
        main(["--num-env-runners", "-1"])
    assert "expected >= 0" in capsys.readouterr().err
    from dragons_egg.agents import AgentSpecError, make_agent, parse_spec
    with pytest.raises(AgentSpecError, match="exported module folder"):
        make_agent("rllib:path=/nonexistent")
    with pytest.raises(AgentSpecError, match="is a file"):
        parse_spec(f"rllib:path={__file__}")
    with pytest.raises(AgentSpecError, match="path is required"):
        parse_spec("rllib")


def test_without_address_ray_starts_a_private_local_instance():
    from dragons_egg.experiments.training.distributed import ray_init_kwargs

    assert ray_init_kwargs(None, 3)["address"] == "local"
    assert ray_init_kwargs(None, 3)["num_cpus"] == 3
    assert ray_init_kwargs("auto", 3) == {"address": "auto", "include_dashboard": False,
                                          "log_to_driver": False}


def test_a_rerun_into_a_run_folder_is_refused(tmp_path, capsys):
    """``--out`` holding an earlier run (numbered checkpoints that a new run would not all
    replace) is an error naming what it holds and ``--overwrite``, before Ray starts."""
    from dragons_egg.experiments.training.train_rllib import main

    out = tmp_path / "r"
    (out / "checkpoint_30").mkdir(parents=True)
    (out / "checkpoint_30" / "state.pkl").write_bytes(b"x")
    (out / "history.json").write_text("[]")
    running = ray.is_initialized()
    with pytest.raises(SystemExit) as info:
        main(["--out", str(out)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "holds earlier RLlib run (checkpoint_30/ (1 file), history.json)" in err
    assert "--overwrite" in err
    assert (out / "checkpoint_30" / "state.pkl").exists()
    assert ray.is_initialized() == running  # refused before it started Ray


def test_train_rllib_stopped_by_sigterm_keeps_its_iterations(tmp_path):
    """SIGTERM to the trainer (``kill``, ``timeout``; Ctrl-C takes the same path) while it
    trains: the iteration in progress finishes, its checkpoint and the module are saved,
    history.json holds every finished iteration, status 130 with one line. Then
    ``--overwrite`` starts a new run there with the earlier one's files removed. (SIGTERM to
    the whole process group also stops Ray's own processes, and Ray then ends the driver:
    docs/rllib.md.)"""
    import json
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "r"
    args = [sys.executable, "-m", "dragons_egg.experiments.training.train_rllib",
            "--train-batch-size", "128", "--minibatch-size", "64", "--num-epochs", "1",
            "--rounds", "1", "--num-cpus", "2", "--checkpoint-every", "0", "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(args + ["--iterations", "1000"], env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    history = out / "history.json"
    deadline = time.monotonic() + 300
    while not (history.exists() and json.loads(history.read_text())):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    m = re.fullmatch(r"interrupted after (\d+) of 1000 iterations: saved (\S+) and the module "
                     r"(\S+) \(agent spec rllib:path=\S+\); train-rllib does not resume .*", last)
    assert m, last
    done = int(m.group(1))
    assert done >= 1 and m.group(2) == str(out / f"checkpoint_{done}")
    assert [r["iteration"] for r in json.loads(history.read_text())] == list(range(1, done + 1))
    assert (out / f"checkpoint_{done}").is_dir() and (out / "main_module").is_dir()
    from dragons_egg.agents import make_agent
    make_agent(f"rllib:path={out / 'main_module'}", seed=0)  # the saved module plays

    proc = subprocess.run(args + ["--iterations", "1", "--overwrite"], env=env, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"--overwrite: removing the run in {out}" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint_final", "env_config.json",
                                                     "history.json", "main_module"]
    assert len(json.loads(history.read_text())) == 1
