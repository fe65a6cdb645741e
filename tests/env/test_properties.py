"""Random-play properties over many seeded matches of every table size and rule variant."""

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import random_match

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.cards import ALL_CARDS, EGG_BIT
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import mask_array

configs = st.builds(
    RulesConfig,
    num_players=st.integers(2, 8),
    num_rounds=st.integers(1, 4),
    opening_ten_of_fire_alone=st.booleans(),
    pass_locks_out=st.booleans(),
    completion_out_of_turn=st.booleans(),
    dragons_per_play=st.sampled_from(["one", "any"]),
    tribute_asks=st.sampled_from([0, 1, 2, 5, 44]),
    egg_in_tribute=st.booleans(),
    reward_scheme=st.sampled_from(["rank", "dragon_egg"]),
)


def check_invariants(s: E.State) -> None:
    # The 45 cards are always accounted for: hands and played cards partition the deck.
    seen = s.played
    for h in s.hands:
        assert not seen & h, "a card is in two places"
        seen |= h
    assert seen == ALL_CARDS, "a card went missing"
    assert s.pile & ~s.played == 0
    if s.phase in (E.DEAL, E.DONE):
        return
    # Exactly one active player holds the Egg.
    holders = [q for q in range(s.n) if s.hands[q] & EGG_BIT]
    assert holders == [s.egg_holder]
    assert s.active >> s.egg_holder & 1
    # Players who have gone out hold nothing; active players hold something (the tribute
    # may empty the payer's hand for a moment: it gets as many cards back).
    for q in range(s.n if s.phase in (E.PLAY, E.COMPLETE) else 0):
        assert bool(s.active >> q & 1) == (s.hands[q] != 0)
    # The thermometer cache matches the hands.
    assert s.th == [E.thermometer(h) for h in s.hands]
    # The mask is never empty for the agent to act.
    assert E.legal_mask(s) != 0


def play_engine_match(config: RulesConfig, seed: int) -> E.State:
    rng = random.Random(seed)
    s = E.new_match(config)
    steps = 0
    while s.phase != E.DONE:
        if s.phase == E.DEAL:
            E.deal(s, E.random_deal(s, rng))
        acts = E.legal_actions(s)
        E.step(s, acts[rng.randrange(len(acts))])
        check_invariants(s)
        steps += 1
        assert steps < 20_000
    return s


def check_results(s: E.State) -> None:
    assert len(s.results) == s.config.num_rounds
    for res in s.results:
        assert sorted(res.order) == list(range(s.n)), "a full finishing order"
        assert abs(sum(res.rewards)) < 1e-9, "round rewards sum to zero"
        assert res.rewards[res.dragon] == 1.0 and res.rewards[res.egg] == -1.0
    assert abs(sum(s.scores)) < 1e-9


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, seed=st.integers(0, 2**32 - 1))
def test_engine_random_play_invariants(config, seed):
    s = play_engine_match(config, seed)
    check_results(s)


def test_many_seeded_matches_every_size():
    for n in range(2, 9):
        for seed in range(60):
            s = play_engine_match(RulesConfig(num_players=n, num_rounds=3), seed)
            check_results(s)


def test_egg_holder_is_last_of_every_round_env():
    """Through the env: each round_result ends with the Egg holder and rewards sum to zero."""
    rng = random.Random(7)
    for n in range(2, 9):
        env = dragons_egg_v0.raw_env(num_players=n, num_rounds=3)
        env.reset(seed=n)
        results = []
        round_rewards = []

        for _agent in env.agent_iter():
            obs, rew, term, trunc, info = env.last()
            if term:
                env.step(None)
                continue
            s = env.engine_state
            nres = len(s.results)
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.randrange(len(legal))]))
            if len(s.results) != nres:
                rr = env.infos[env.possible_agents[0]]["round_result"]
                results.append(rr)
                round_rewards.append(dict(env.rewards))
                assert rr["egg"] == rr["finish_order"][-1]
                assert rr["dragon"] == rr["finish_order"][0]
                assert sorted(rr["finish_order"]) == sorted(env.possible_agents)
                assert rr["egg"] == env.possible_agents[s.results[-1].egg]
        assert len(results) == 3
        for rw in round_rewards:
            assert abs(sum(rw.values())) < 1e-9
        assert all(env.terminations.get(a, True) for a in env.possible_agents)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, seed=st.integers(0, 2**32 - 1))
def test_env_mask_equals_engine_legal_set(config, seed):
    env = dragons_egg_v0.raw_env(**config.to_dict())
    env.reset(seed=seed)
    total = {a: 0.0 for a in env.possible_agents}

    def on_step(env_, agent, obs, info, action):
        s = env_.engine_state
        assert env_.possible_agents[s.current] == agent
        expected = mask_array(E.legal_mask(s))
        assert np.array_equal(obs["action_mask"], expected)
        assert np.array_equal(info["action_mask"], expected)
        # Everyone else sees an all-zero mask.
        for other in env_.agents:
            if other != agent:
                assert not env_.observe(other)["action_mask"].any()
                assert not env_.infos[other]["action_mask"].any()

    rng = random.Random(seed)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        total[agent] += rew
        if term or trunc:
            env.step(None)
            continue
        on_step(env, agent, obs, info, None)
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    # Cumulative rewards handed out equal the match scores.
    s = env.engine_state
    for i, a in enumerate(env.possible_agents):
        assert abs(total[a] - s.scores[i]) < 1e-9


def test_same_seed_same_match_bit_for_bit():
    def run(seed):
        env = dragons_egg_v0.env(num_players=5, num_rounds=3)
        env.reset(seed=seed)
        trace = []
        random_match(env, random.Random(99),
                     on_step=lambda e, a, o, i, act: trace.append(
                         (a, act, o["observation"].tobytes(), e.state().tobytes())))
        return trace

    assert run(11) == run(11)
    assert run(11) != run(12)
