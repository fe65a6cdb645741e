"""PettingZoo conformance: api_test, seed_test and render_test for every table size."""

import warnings

import pytest
from pettingzoo.test import api_test, render_test, seed_test

from dragons_egg_env import dragons_egg_v0

SIZES = range(2, 9)


@pytest.mark.parametrize("rounds", [1, 3])
@pytest.mark.parametrize("n", SIZES)
def test_api_test_every_size(n, rounds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dict observations: api_test's advisory warnings
        for seed in (0, 1, 2):
            env = dragons_egg_v0.env(num_players=n, num_rounds=rounds)
            env.reset(seed=seed)
            api_test(env, num_cycles=600)


@pytest.mark.parametrize("n", SIZES)
def test_api_test_raw_env_padded(n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(dragons_egg_v0.raw_env(num_players=n, max_players=8), num_cycles=400)


@pytest.mark.parametrize("rounds", [1, 3])
@pytest.mark.parametrize("n", SIZES)
def test_seed_test_every_size(n, rounds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(lambda render_mode=None: dragons_egg_v0.env(num_players=n, num_rounds=rounds,
                                                              render_mode=render_mode),
                  num_cycles=300)


@pytest.mark.parametrize("deck_style", ["dragon", "tarokka"])
def test_render_test_text_modes(deck_style):
    def make(render_mode=None):
        return dragons_egg_v0.env(render_mode=render_mode, deck_style=deck_style)
    render_test(make, custom_tests={})


def test_render_ansi_returns_table_and_human_prints(capsys):
    env = dragons_egg_v0.env(render_mode="ansi", num_players=3)
    env.reset(seed=5)
    text = env.render()
    assert isinstance(text, str)
    for agent in env.agents:
        assert agent in text
        for code in env.unwrapped.hand(agent):
            assert code in text  # the spectator view shows every hand
    assert "pile: (empty)" in text and "phase play" in text
    human = dragons_egg_v0.env(render_mode="human", num_players=3)
    human.reset(seed=5)
    assert human.render() is None
    assert capsys.readouterr().out.strip() == text.strip()


def test_render_tarokka_names_and_viewer_view():
    env = dragons_egg_v0.raw_env(render_mode="ansi", deck_style="tarokka", num_players=4)
    env.reset(seed=3)
    text = env.render()
    assert "Master of Coins" in text  # R2: the 10 of Fire
    assert "Artifact" in text  # R2: the Egg
    own = env.render_table(viewer="player_0")
    assert own.count("(hidden)") == 3


def test_registered_with_pettingzoo():
    import pettingzoo

    e = pettingzoo.make("aec", "dragons_egg_v0", num_players=5)
    e.reset(seed=0)
    assert e.agents == [f"player_{i}" for i in range(5)]


def test_spaces_are_the_same_objects():
    env = dragons_egg_v0.env(num_players=6, max_players=8)
    spaces = {id(env.observation_space(a)) for a in env.possible_agents}
    assert len(spaces) == 1
    env.reset(seed=1)
    obs = env.observe(env.agent_selection)
    assert env.observation_space(env.agent_selection).contains(obs)
    assert env.state().shape == env.state_space.shape
