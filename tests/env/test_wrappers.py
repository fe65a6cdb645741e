"""The single-agent Gymnasium view used for SB3 training."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from dragons_egg.agents import AgentSpec
from dragons_egg_env.wrappers import GYM_ID, SingleAgentEnv


def random_episode(env, rng, seed):
    obs, info = env.reset(seed=seed)
    rewards = []
    while True:
        assert env.observation_space.contains(obs)
        mask = env.action_masks()
        assert mask.any()
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        rewards.append(r)
        if term or trunc:
            return rewards, info


def test_gymnasium_and_sb3_checkers():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(SingleAgentEnv(opponents=[AgentSpec("random"), AgentSpec("heuristic")],
                             table_sizes=(2, 3, 5)))
    sb3_check_env(SingleAgentEnv(opponents=[AgentSpec("random")]))


def test_registered_with_gymnasium():
    env = gymnasium.make(GYM_ID, opponents=[AgentSpec("random")], table_sizes=(3,))
    obs, info = env.reset(seed=1)
    assert info["num_players"] == 3 and obs.shape == env.observation_space.shape


def test_learner_rewards_match_the_table_and_the_loser_sees_minus_one():
    """The learner's episode return equals its match score, every round's reward arrives
    (also those earned on other players' turns), and across many episodes the learner's -1
    for finishing last arrives."""
    rng = np.random.default_rng(0)
    env = SingleAgentEnv(opponents=[AgentSpec("heuristic")], num_rounds=3)
    saw_last = 0
    for ep in range(40):
        rewards, info = random_episode(env, rng, ep)
        score = info["scores"][f"player_{info['seat']}"]
        assert abs(sum(rewards) - score) < 1e-9
        table = env._env  # rewards over the whole table sum to zero
        assert abs(sum(table.scores.values())) < 1e-9
        if rewards[-1] <= -1.0 + 1e-9:
            saw_last += 1
    assert saw_last > 0, "the loser's -1 never arrived"


def test_learner_returns_sum_to_zero_over_the_table():
    """The same match (same seed, every seat played by the deterministic greedy rule) seen
    by a learner at each seat in turn: the four returns sum to zero."""
    from dragons_egg.agents.simple import greedy_choice

    for seed in range(5):
        returns = []
        for seat in range(4):
            env = SingleAgentEnv(opponents=[AgentSpec("greedy")], seats=[seat])
            obs, info = env.reset(seed=seed)
            total = 0.0
            while True:
                obs, r, term, _, info = env.step(
                    greedy_choice([int(a) for a in np.flatnonzero(env.action_masks())]))
                total += r
                if term:
                    break
            returns.append(total)
        assert abs(sum(returns)) < 1e-9, returns
        assert min(returns) < 0 < max(returns)


def test_seat_and_table_size_are_drawn_from_the_seed():
    env = SingleAgentEnv(opponents=[AgentSpec("random")], table_sizes=(2, 4, 6), seats=[0, 1, 5])
    draws = set()
    for seed in range(40):
        _, info = env.reset(seed=seed)
        draws.add((info["num_players"], info["seat"]))
        assert info["seat"] < info["num_players"]
    assert len({n for n, _ in draws}) == 3 and 5 in {s for _, s in draws}
    a = [env.reset(seed=7)[0] for _ in range(2)]
    assert np.array_equal(a[0], a[1])


def test_vec_envs_and_pool_updates():
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    def make():
        return SingleAgentEnv(opponents=[AgentSpec("random")])
    for cls in (DummyVecEnv, SubprocVecEnv):
        venv = cls([make, make])
        venv.seed(3)
        venv.reset()
        venv.env_method("add_opponent", AgentSpec("greedy"))
        assert venv.env_method("pool_size") == [2, 2]
        masks = np.stack(venv.env_method("action_masks"))
        actions = [int(np.flatnonzero(m)[0]) for m in masks]
        venv.step(np.array(actions))
        venv.close()


def test_callable_and_agent_opponents():
    from dragons_egg.agents import make_agent

    calls = []

    def first_legal(obs, mask):
        calls.append(1)
        return int(np.flatnonzero(mask)[0])
    env = SingleAgentEnv(opponents=[first_legal, make_agent("greedy", seed=0)], weights=[1, 0])
    random_episode(env, np.random.default_rng(0), 0)
    assert calls


def test_illegal_learner_action():
    env = SingleAgentEnv(opponents=[AgentSpec("random")])
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    obs, r, term, trunc, info = env.step(illegal)
    assert (r, term, info["illegal_action"]) == (-1.0, True, illegal)
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)
    strict = SingleAgentEnv(opponents=[AgentSpec("random")], illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="illegal move"):
        strict.step(illegal)


@pytest.mark.parametrize("kwargs,needle", [
    ({"opponents": []}, "pool is empty"),
    ({"opponents": ["heuristic"]}, r"spec string.*dragons_egg.agents.AgentSpec\('heuristic'\)"),
    ({"opponents": "heuristic"}, "a sequence of opponents"),
    ({"opponents": [3]}, "an opponent is a factory"),
    ({"table_sizes": (9,)}, "num_players must be 2..8"),
    ({"table_sizes": ()}, "at least one table size"),
    ({"seats": [7]}, "seats must be within"),
    ({"illegal_action": "ignore"}, "illegal_action must be"),
    ({"weights": [1, 2]}, "weights must be one"),
    ({"bogus_flag": 1}, "unknown rule flag"),
])
def test_bad_arguments(kwargs, needle):
    kwargs = {"opponents": [AgentSpec("random")], **kwargs}
    with pytest.raises((ValueError, TypeError), match=needle):
        SingleAgentEnv(**kwargs)


def test_opponents_are_required_and_specs_checked():
    from dragons_egg.agents import AgentSpecError

    with pytest.raises(TypeError, match="opponents"):
        SingleAgentEnv()
    with pytest.raises(AgentSpecError, match="unknown agent 'wizard'"):
        AgentSpec("wizard")


def test_step_before_reset():
    with pytest.raises(RuntimeError, match="reset\\(\\) needs to be called"):
        SingleAgentEnv(opponents=[AgentSpec("random")]).step(0)
