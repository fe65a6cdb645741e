"""The observation encoder and its decoder agree with the engine state."""

import random

import numpy as np
import pytest
from support import random_states

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.cards import codes
from dragons_egg_env.observation import decode, decode_observation, layout


@pytest.mark.parametrize("n,m", [(2, 2), (4, 4), (4, 8), (7, 8)])
def test_decode_inverts_encode(n, m):
    rng = random.Random(n * 10 + m)
    env = dragons_egg_v0.raw_env(num_players=n, max_players=m, num_rounds=3)
    env.reset(seed=m)
    checked = 0
    for _agent, obs in random_states(env, rng):
        s = env.engine_state
        i = s.current
        v = decode_observation(obs["observation"], num_rounds=3)
        rel = lambda q, i=i: (q - i) % n  # noqa: E731
        assert v.num_players == n
        assert v.hand == s.hands[i]
        assert v.pile == s.pile and v.played == s.played
        assert v.top_number == s.top_rank and (v.top_count == s.top_count or not s.top_rank)
        assert v.hand_sizes == tuple(s.hands[(i + j) % n].bit_count() for j in range(n))
        assert v.scores == pytest.approx(tuple(s.scores[(i + j) % n] for j in range(n)))
        assert v.out_place == tuple(s.finish.index((i + j) % n) if (i + j) % n in s.finish
                                    else -1 for j in range(n))
        assert v.to_act == 0 or s.phase == E.COMPLETE
        if s.egg_known >> i & 1:
            assert v.egg_holder == rel(s.egg_holder)
        else:
            assert v.egg_holder == -1
        if s.dragon >= 0:
            assert v.dragon == rel(s.dragon) and v.tribute_payer == rel(s.victim)
        assert v.phase == s.phase_name
        assert v.hand_cards == codes(s.hands[i]) == env.hand(f"player_{i}")
        assert v.pile_cards == codes(s.pile) and v.played_cards == codes(s.played)
        assert v.passed_seats == tuple(j for j in range(n) if s.passed >> ((i + j) % n) & 1)
        assert v.locked_seats == tuple(j for j in range(n) if s.locked >> ((i + j) % n) & 1)
        checked += 1
    assert checked > 50


def test_layout_is_generated_from_max_players():
    small, big = layout(2), layout(8)
    assert big.size > small.size
    assert big.field("out_place").size == 64 and small.field("out_place").size == 4
    assert layout(4, state=True).size == layout(4).size + 4 * 45


@pytest.mark.parametrize("n,m", [(2, 4), (3, 8), (4, 4), (5, 6)])
def test_pad_equals_encoding_with_max_players(n, m):
    from dragons_egg_env.observation import pad

    rng = random.Random(n)
    small = dragons_egg_v0.raw_env(num_players=n, num_rounds=2)
    big = dragons_egg_v0.raw_env(num_players=n, num_rounds=2, max_players=m)
    small.reset(seed=1)
    big.reset(seed=1)
    for _ in range(80):
        if small.phase() == "done":
            break
        for agent in small.possible_agents:
            a = small.observe(agent)["observation"]
            b = big.observe(agent)["observation"]
            assert np.array_equal(pad(a, n, m), b)
        legal = small.legal_actions()
        act = legal[rng.randrange(len(legal))]
        small.step(act)
        big.step(act)


def test_pad_rejects_bad_input():
    from dragons_egg_env.observation import pad

    with pytest.raises(ValueError, match="cannot pad an observation of 6 seats down to 4"):
        pad(np.zeros(layout(6).size, np.float32), 6, 4)
    with pytest.raises(ValueError, match="a 4-seat observation has"):
        pad(np.zeros(10, np.float32), 4, 6)


def test_layout_supports_in_iteration_and_len():
    lay = layout(4)
    assert "hand" in lay and "asks_left" in lay
    assert "nope" not in lay and 0 not in lay and None not in lay
    names = list(lay)
    assert names == [f.name for f in lay.fields] == list(lay.names())
    assert len(lay) == len(lay.fields) and names[0] == "hand"
    assert {name: lay[name] for name in lay}["pile"] == lay.field("pile").slice
    assert "all_hands" in layout(4, state=True) and "all_hands" not in lay
    with pytest.raises(KeyError, match="no observation field 'nope'; the fields are hand, pile"):
        lay["nope"]


def test_decode_observation_reads_the_layout_from_the_length():
    for n, m in [(2, 2), (3, 3), (3, 8), (8, 8)]:
        env = dragons_egg_v0.raw_env(num_players=n, num_rounds=4, max_players=m)
        env.reset(seed=2)
        obs = env.observe(env.agent_selection)["observation"]
        view = decode_observation(obs, num_rounds=4)
        assert view == decode_observation(obs, num_rounds=4, max_players=m)
        assert view.num_players == n and view.hand_cards == env.hand(env.agent_selection)
    with pytest.raises(ValueError, match="a 4-seat observation has shape"):
        decode_observation(obs, max_players=4)
    with pytest.raises(ValueError, match=r"has 300 values, which is no observation's length "
                                         r"\(315 \(2 seats\), 330 \(3 seats\)"):
        decode_observation(np.zeros(300, np.float32))
    with pytest.raises(ValueError, match="a state\\(\\) vector is not an observation"):
        decode_observation(env.state())
    with pytest.raises(ValueError, match="one observation vector at a time"):
        decode_observation(obs[None])


def test_decode_observation_scores_need_the_round_count():
    env = dragons_egg_v0.raw_env(num_players=3, num_rounds=4)
    env.reset(seed=2, options={"deals": []})
    env.engine_state.scores = [1.0, -0.5, -0.5]
    obs = env.observe("player_1")["observation"]
    view = decode_observation(obs)  # no silent default of 1 round: no scores either
    assert view.num_rounds is None and view.hand_cards == env.hand("player_1")
    assert view.score_fractions == (-0.125, -0.125, 0.25)
    with pytest.raises(ValueError, match=r"decode_observation\(obs, num_rounds=N\)"):
        _ = view.scores
    assert decode_observation(obs, num_rounds=4).scores == (-0.5, -0.5, 1.0)
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(ValueError, match="num_rounds must be an integer >= 1"):
            decode_observation(obs, num_rounds=bad)


def test_decode_is_deprecated_and_keeps_working():
    env = dragons_egg_v0.raw_env(num_players=3, num_rounds=4)
    env.reset(seed=2)
    obs = env.observe(env.agent_selection)["observation"]
    with pytest.warns(DeprecationWarning,
                      match=r"use decode_observation\(obs, num_rounds=num_rounds\)"):
        old = decode(obs, 3, 4)
    assert old == decode_observation(obs, num_rounds=4) and old.round_fraction == 0.0
    with pytest.raises(TypeError, match="num_rounds"):
        decode(obs, 3)  # the scores are divided by num_rounds: no silent default of 1
    with pytest.warns(DeprecationWarning):
        for bad in (0, -1, 1.5, True, "4", None):
            with pytest.raises(ValueError, match="num_rounds must be an integer >= 1"):
                decode(obs, 3, bad)
        with pytest.raises(ValueError, match="a 4-seat observation has shape"):
            decode(obs, 4, 4)
        with pytest.raises(ValueError, match="max_players must be one of 2..8"):
            decode(obs, 9, 4)
