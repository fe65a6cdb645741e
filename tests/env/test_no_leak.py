"""No hidden information reaches an observation (R19, R34, R12)."""

import random

import numpy as np
import pytest
from support import random_states, shuffled_hidden

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("flags", [{}, {"egg_in_tribute": True, "tribute_asks": 5},
                                   {"pass_locks_out": True, "max_players": 8}])
def test_observation_unchanged_when_hidden_cards_shuffled(n, flags):
    rng = random.Random(n)
    env = dragons_egg_v0.raw_env(num_players=n, num_rounds=3, **flags)
    checked = 0
    for seed in range(4):
        env.reset(seed=seed)
        for _agent, _obs in random_states(env, rng):
            s = env.engine_state
            if rng.random() < 0.3:
                for observer in range(n):
                    name = env.possible_agents[observer]
                    before = env.observe(name)
                    env._s = shuffled_hidden(s, observer, rng)
                    after = env.observe(name)
                    env._s = s
                    assert np.array_equal(before["observation"], after["observation"]), \
                        f"{name}'s observation depends on hidden cards (phase {s.phase_name})"
                    assert np.array_equal(before["action_mask"], after["action_mask"])
                    checked += 1
    assert checked > 50


def test_completion_offer_is_only_in_the_offered_players_observation():
    """R12: find an out-of-turn offer and check no other observation shows it."""
    rng = random.Random(3)
    env = dragons_egg_v0.raw_env(num_players=4, num_rounds=1)
    lay = env._encoder.lay
    found = 0
    for seed in range(200):
        env.reset(seed=seed)
        for _agent, _obs in random_states(env, rng):
            s = env.engine_state
            if s.phase == E.COMPLETE:
                found += 1
                offered = s.current
                for q, name in enumerate(env.possible_agents):
                    o = env.observe(name)["observation"]
                    phase = o[lay["phase"]]
                    if q == offered:
                        assert phase[1] == 1.0
                    else:
                        assert phase[0] == 1.0 and phase[1] == 0.0
                        to_act = o[lay["to_act"]]
                        assert to_act[(s.turn - q) % 4] == 1.0  # the turn holder, not the offer
        if found >= 5:
            break
    assert found >= 5


def test_egg_holder_private_after_deal():
    """R19: before the Egg is first passed only its holder sees where it is."""
    env = dragons_egg_v0.raw_env(num_players=4)
    env.reset(seed=0)
    lay = env._encoder.lay
    s = env.engine_state
    for q, name in enumerate(env.possible_agents):
        egg = env.observe(name)["observation"][lay["egg_holder"]]
        if q == s.egg_holder:
            assert egg[0] == 1.0 and egg.sum() == 1.0
        else:
            assert egg.sum() == 0.0
