"""Shared helpers for the tests."""

import random

import numpy as np


def random_match(env, rng: random.Random, max_steps: int = 100_000, on_step=None):
    """Play random legal actions through the AEC loop until every agent is done."""
    steps = 0
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            action = None
        else:
            legal = np.flatnonzero(obs["action_mask"])
            assert len(legal) > 0, f"{agent} must act but its mask is empty"
            action = int(legal[rng.randrange(len(legal))])
        if on_step is not None and action is not None:
            on_step(env, agent, obs, info, action)
        env.step(action)
        steps += 1
        assert steps < max_steps, "match did not end"
    return steps


def random_states(env, rng: random.Random):
    """Walk a reset env through a match of random legal moves, yielding ``(agent, obs)``
    before each live step (the caller may inspect the env there)."""
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        yield agent, obs
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
