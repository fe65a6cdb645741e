"""A .npz policy refuses an observation of another padding with an error that names both seat
counts (not numpy's matmul shape error)."""

from __future__ import annotations

import numpy as np
import pytest

from dragons_egg.agents.netpolicy import NetPolicy, cached_policy, load_policy_file
from dragons_egg.agents.ppo import SHIPPED
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.observation import layout, pad


def _policy(max_players: int, hidden: int = 8) -> NetPolicy:
    rng = np.random.default_rng(max_players)
    size = layout(max_players).size

    def w(*shape: int) -> np.ndarray:
        return rng.normal(size=shape).astype(np.float32)

    return NetPolicy([(w(size, hidden), w(hidden))], (w(hidden, NUM_ACTIONS), w(NUM_ACTIONS)),
                     (w(hidden, 1), w(1)), {"max_players": max_players})


def _observation(num_players: int, max_players: int | None = None):
    env = dragons_egg_v0.raw_env(num_players=num_players, max_players=max_players)
    env.reset(seed=1)
    return env.observe(env.agent_selection)


def test_shipped_policy_names_the_seat_counts_of_a_smaller_observation():
    policy = cached_policy(SHIPPED)
    assert policy.max_players == 8
    obs = _observation(4)
    with pytest.raises(ValueError, match=r"this policy plays up to 8 seats \(max_players=8, 435 "
                                         r"values\), but the observation is a 4-seat one "
                                         r"\(max_players=4, 347 values\): pad it first, "
                                         r"dragons_egg_env\.observation\.pad\(obs, 4, 8\)"):
        policy.logits(obs["observation"], obs["action_mask"])
    with pytest.raises(ValueError, match="max_players=4"):
        policy.value(obs["observation"][None])
    # Padded as the message says, it plays (and equals the env's own 8-seat observation).
    padded = pad(obs["observation"], 4, 8)
    assert np.array_equal(padded, _observation(4, 8)["observation"])
    z = policy.logits(padded, obs["action_mask"])
    assert z.shape == (NUM_ACTIONS,) and np.isfinite(z[obs["action_mask"] == 1]).all()


def test_larger_observation_and_bad_lengths_are_clear_errors():
    small = _policy(2)
    obs = _observation(4)
    with pytest.raises(ValueError, match=r"up to 2 seats \(max_players=2, 315 values\), but the "
                                         r"observation is a 4-seat one \(max_players=4, 347 "
                                         r"values\): the policy cannot play a table of that size"):
        small.logits(obs["observation"], obs["action_mask"])
    with pytest.raises(ValueError, match=r"shape \(100,\), which is no Dragon's Egg observation"):
        small.logits(np.zeros(100, np.float32), obs["action_mask"])
    ok = _observation(2)
    batch = np.stack([ok["observation"]] * 3)
    assert small.logits(batch, np.stack([ok["action_mask"]] * 3)).shape == (3, NUM_ACTIONS)
    assert small.value(batch).shape == (3,)


def test_save_writes_through_a_temporary_file_of_its_own(tmp_path, monkeypatch):
    """Issue 47: the temporary file was the fixed ``NAME.tmp`` (another writer's, or one left
    behind, was written over or stopped the save: here a folder of that name), and was not
    on the disk before it took the name. Now each save has its own, and a failed save leaves
    neither a temporary file nor a changed policy file."""
    path = tmp_path / "p.npz"
    (tmp_path / "p.npz.tmp").mkdir()  # what a fixed temporary name runs into
    _policy(4).save(path)
    again = load_policy_file(path)
    assert again.meta["digest"]
    before = path.read_bytes()

    def fails(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", fails)
    with pytest.raises(OSError, match="No space"):
        _policy(4, hidden=16).save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz", "p.npz.tmp"]
