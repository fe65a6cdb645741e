"""Dragon's Egg on Ray RLlib: the env checker, rewards through the wrapper, PPO iterations
with local and remote sampling, and the exported module as an agent. Skipped when the
``rllib`` extra is not installed."""

import random

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from experiments.rllib import MAIN, DragonsEggMultiAgentEnv, league_mapping_fn, ppo_config  # noqa: E402


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             ignore_reinit_error=True)
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
        from agents import make_agent
        from agents.runner import play_match
        from dragons_egg_env.config import RulesConfig

        bots = [make_agent(f"rllib:path={tmp_path / 'main_module'}", seed=0)] + \
            [make_agent("random", seed=k) for k in range(1, 4)]
        rec = play_match(bots, RulesConfig(num_players=4, num_rounds=1), seed=1)
        assert len(rec.rounds) == 1


def test_train_rllib_script_smoke(tmp_path):
    from experiments.train_rllib import main

    assert main(["--iterations", "1", "--train-batch-size", "128", "--minibatch-size", "64",
                 "--num-epochs", "1", "--rounds", "1", "--out", str(tmp_path / "r"),
                 "--num-cpus", "2", "--checkpoint-every", "1", "--min-return", "-10"]) == 0
    assert (tmp_path / "r" / "main_module").is_dir()
    assert (tmp_path / "r" / "checkpoint_1").is_dir()


def test_bad_arguments(capsys):
    from experiments.train_rllib import main

    with pytest.raises(SystemExit):
        main(["--num-env-runners", "-1"])
    assert "expected >= 0" in capsys.readouterr().err
    from agents import AgentSpecError, make_agent
    with pytest.raises(AgentSpecError, match="exported module folder"):
        make_agent("rllib:path=/nonexistent")
