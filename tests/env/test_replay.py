"""Replays: export as JSON, play back exactly, reject tampering with the step named."""

import json
import random

import numpy as np
import pytest
from support import random_match

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env.replay import ReplayError, iter_replay, replay


def finished_env(n=4, rounds=3, seed=21, **flags):
    env = dragons_egg_v0.env(num_players=n, num_rounds=rounds, **flags)
    env.reset(seed=seed)
    random_match(env, random.Random(seed))
    return env


@pytest.mark.parametrize("n,flags", [(2, {}), (4, {}), (5, {"egg_in_tribute": True}),
                                     (8, {"pass_locks_out": True, "tribute_asks": 3})])
def test_round_trip_through_a_file(tmp_path, n, flags):
    env = finished_env(n=n, **flags)
    path = tmp_path / "match.json"
    env.unwrapped.save_replay(str(path))
    data = json.loads(path.read_text())
    assert data["finished"] and len(data["deals"]) == 3
    again = replay(path)
    a, b = env.unwrapped.engine_state, again.engine_state
    assert a.results == b.results
    assert a.scores == b.scores
    assert a.hands == b.hands
    assert again.to_replay() == data
    for agent in env.possible_agents:
        assert np.array_equal(env.unwrapped._encoder.encode(a, int(agent[7:])),
                              again._encoder.encode(b, int(agent[7:])))


def test_unfinished_match_replays_to_the_same_point():
    env = dragons_egg_v0.env(num_players=3)
    env.reset(seed=4)
    rng = random.Random(0)
    for _ in range(57):
        obs = env.observe(env.agent_selection)
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    data = json.loads(json.dumps(env.unwrapped.to_replay()))
    assert not data["finished"] and len(data["actions"]) == 57
    again = replay(data)
    assert again.agent_selection == env.agent_selection
    assert again.hand(again.agent_selection) == env.unwrapped.hand(env.agent_selection)
    assert again.pile() == env.unwrapped.pile()
    # and it can be played on from there
    again.step(again.legal_actions()[0])


def test_stepping_through_a_replay():
    env = finished_env(n=3, rounds=1)
    data = env.unwrapped.to_replay()
    steps = [k for k, _ in iter_replay(data)]
    assert steps == list(range(len(data["actions"]) + 1))


def test_tampered_action_is_rejected_with_its_step():
    env = finished_env()
    data = env.unwrapped.to_replay()
    # Find a step where some other action would be illegal and swap it in.
    for k, (agent, action) in enumerate(data["actions"]):  # noqa: B007 (agent is read after the loop)
        if action != 0 and k > 5:
            break
    tampered = json.loads(json.dumps(data))
    tampered["actions"][k][1] = 133  # give(EGG): never legal by default
    with pytest.raises(ReplayError, match=f"step {k}: action 133 \\(give EGG\\) by {agent} "
                                          "is not legal"):
        replay(tampered)
    wrong_agent = json.loads(json.dumps(data))
    wrong_agent["actions"][3][0] = "player_9"
    with pytest.raises(ReplayError, match="step 3: the replay says 'player_9' acts"):
        replay(wrong_agent)
    too_long = json.loads(json.dumps(data))
    too_long["actions"].append(too_long["actions"][-1])
    with pytest.raises(ReplayError, match="already over"):
        replay(too_long)


def test_replay_seed_reproduces_matches_without_a_given_seed():
    env = dragons_egg_v0.env()
    first = []
    for k in range(3):  # a first unseeded reset, then resets that continue the generator
        env.reset()
        random_match(env, random.Random(k))
        first.append(env.unwrapped.to_replay())
    for data in first:
        assert isinstance(data["seed"], int)
        other = dragons_egg_v0.env()
        other.reset(seed=data["seed"])
        random_match(other, random.Random(first.index(data)))
        assert other.unwrapped.to_replay()["deals"] == data["deals"]
    # A seeded reset followed by unseeded ones is reproducible as a whole.
    a, b = dragons_egg_v0.env(), dragons_egg_v0.env()
    for e in (a, b):
        e.reset(seed=9)
        e.reset()
    assert a.unwrapped.to_replay()["seed"] == b.unwrapped.to_replay()["seed"] != 9
