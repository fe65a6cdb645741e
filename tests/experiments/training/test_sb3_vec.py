"""The SB3 VecEnv on the batched engine (dragons_egg.experiments.training.sb3_vec): SB3's VecEnv protocol, the
masks sb3-contrib reads, and MaskablePPO training on it unchanged."""

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.logger import Logger

from dragons_egg.experiments.training.sb3_vec import SB3VectorEnv
from dragons_egg_env.vector_env import SingleAgentVectorEnv


def first_legal(obs, mask):
    return mask.argmax(axis=1)


class CountingEnv(SingleAgentVectorEnv):
    """Counts the learner actions that reach the engine and checks each is legal."""

    steps = 0

    def step(self, actions):
        masks = self.action_masks()
        acts = np.asarray(actions)
        assert masks[np.arange(self.num_envs), acts].all(), "an illegal action got through"
        CountingEnv.steps += 1
        return super().step(actions)


def test_vecenv_protocol_and_masks():
    vec = SB3VectorEnv(num_envs=4, opponents=[first_legal], seed=0)
    vec.seed(3)
    obs = vec.reset()
    assert obs.shape == (4, vec.observation_space.shape[0])
    assert [i["seat"] for i in vec.reset_infos] == vec.venv.learner_seats.tolist()
    assert is_masking_supported(vec)
    masks = get_action_masks(vec)
    assert masks.shape == (4, 134) and masks.dtype == np.bool_
    assert np.array_equal(masks, vec.venv.action_masks())
    assert len(vec.env_method("action_masks", indices=[1, 3])) == 2
    assert vec.get_attr("num_players") == [4] * 4
    assert vec.env_is_wrapped(object) == [False] * 4
    returns = np.zeros(4)
    done_seen = 0
    for _ in range(200):
        masks = get_action_masks(vec)
        obs, rew, dones, infos = vec.step(masks.argmax(axis=1))
        assert rew.dtype == np.float32 and len(infos) == 4
        returns += rew
        for b in np.flatnonzero(dones):
            info = infos[b]
            assert info["terminal_observation"].shape == obs[b].shape
            assert info["TimeLimit.truncated"] is False
            assert info["episode"]["r"] == pytest.approx(returns[b], abs=1e-5)
            assert info["episode"]["r"] == pytest.approx(
                info["final_info"]["final_scores"][info["final_info"]["seat"]], abs=1e-5)
            returns[b] = 0
            done_seen += 1
    assert done_seen > 0
    vec.close()


def test_same_seed_same_rollout():
    def trace():
        vec = SB3VectorEnv(num_envs=3, opponents=[first_legal], seed=0)
        vec.seed(5)
        out = [vec.reset()]
        for _ in range(40):
            o, r, d, _ = vec.step(get_action_masks(vec).argmax(axis=1))
            out += [o, r, d]
        return out

    assert all(np.array_equal(x, y) for x, y in zip(trace(), trace(), strict=True))


def test_maskable_ppo_learns_unchanged():
    CountingEnv.steps = 0
    vec = SB3VectorEnv(CountingEnv(4, [first_legal], num_players=3, num_rounds=1, seed=0))
    model = MaskablePPO("MlpPolicy", vec, n_steps=32, batch_size=64, n_epochs=1, seed=0,
                        device="cpu")
    model.set_logger(Logger(None, []))  # no empty /tmp/SB3-<time> folder left behind
    model.learn(256)
    assert model.num_timesteps >= 256
    assert CountingEnv.steps >= 256 // 4  # every step went through the mask check
