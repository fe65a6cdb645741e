"""The game in OpenSpiel (issue 50): python_dragons_egg against OpenSpiel's own checks, our
engine, its information states, and OpenSpiel's algorithms."""

import random

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from dragons_egg.agents import make_agent  # noqa: E402
from dragons_egg.agents.openspiel_agents import agent_bot, install_sampler, ismcts_bot  # noqa: E402
from dragons_egg_env import engine as E  # noqa: E402
from dragons_egg_env import openspiel as OS  # noqa: E402
from dragons_egg_env.config import ConfigError, RulesConfig  # noqa: E402

install_sampler()


def load(**params):
    return pyspiel.load_game("python_dragons_egg", params)


def random_flags(rng):
    return {"opening_ten_of_fire_alone": rng.random() < 0.5,
            "pass_locks_out": rng.random() < 0.5,
            "completion_out_of_turn": rng.random() < 0.5,
            "dragons_per_play": rng.choice(["one", "any"]),
            "tribute_asks": rng.choice([0, 1, 2, 5]),
            "egg_in_tribute": rng.random() < 0.5,
            "reward_scheme": rng.choice(["rank", "dragon_egg"])}


@pytest.mark.parametrize("n", range(2, 9))
def test_random_sim_test_with_and_without_serialisation(n):
    game = load(players=n, num_rounds=2)
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)
    pyspiel.random_sim_test(game, num_sims=1, serialize=False, verbose=False)


def test_random_sim_test_on_random_rule_flags():
    rng = random.Random(50)
    for _ in range(4):
        params = {"players": rng.randrange(2, 9), "num_rounds": 2, **random_flags(rng)}
        pyspiel.random_sim_test(load(**params), num_sims=1, serialize=True, verbose=False)


def test_game_type_and_parameters():
    game = load(players=5, num_rounds=4, reward_scheme="dragon_egg")
    gt = game.get_type()
    assert gt.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert gt.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert gt.reward_model == pyspiel.GameType.RewardModel.REWARDS
    assert game.num_players() == 5
    assert (game.min_utility(), game.max_utility()) == (-4.0, 4.0)
    assert game.num_distinct_actions() == 134 and game.max_chance_outcomes() == 45
    assert game.config == RulesConfig(num_players=5, num_rounds=4, reward_scheme="dragon_egg")
    assert set(gt.parameter_specification) == {"players"} | (
        set(RulesConfig.field_names()) - {"num_players"})


@pytest.mark.parametrize("params,needle", [
    ({"players": 9}, "num_players must be 2..8, got 9"),
    ({"tribute_asks": 45}, "tribute_asks must be 0..44, got 45"),
    ({"dragons_per_play": "two"}, "dragons_per_play must be one of one, any"),
])
def test_bad_parameters_are_the_env_errors(params, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        OS.DragonsEggGame(params)
    assert "\n" not in str(info.value)


def play_deal(state, deck, dealer=None):
    if dealer is not None:
        state.apply_action(dealer)
    for c in deck:
        state.apply_action(c)


def test_differential_against_the_engine():
    rng = random.Random(7)
    for n in range(2, 9):
        flags = random_flags(rng) if n % 2 else {}
        config = RulesConfig(num_players=n, num_rounds=2, **flags)
        st = load(players=n, num_rounds=2, **flags).new_initial_state()
        s = E.new_match(config)
        steps = 0
        while not st.is_terminal():
            assert st.is_chance_node() == (s.phase == E.DEAL)
            if s.phase == E.DEAL:
                if s.round_idx == 0:
                    s.dealer = rng.randrange(n)
                    st.apply_action(s.dealer)
                else:
                    s.dealer = s.results[-1].egg
                deck = list(range(45))
                rng.shuffle(deck)
                play_deal(st, deck)
                E.deal(s, E.deal_from_deck(deck, n, s.dealer))
                assert st.m.s.hands == s.hands
                continue
            assert st.current_player() == s.current
            legal = E.legal_actions(s)
            assert st.legal_actions() == legal
            a = rng.choice(legal)
            assert st.action_to_string(st.current_player(), a) == E.describe(a)
            rounds = len(s.results)
            E.step(s, a)
            st.apply_action(a)
            steps += 1
            want = list(s.results[-1].rewards) if len(s.results) > rounds else [0.0] * n
            assert st.rewards() == want
            assert st.returns() == s.scores
            assert st.m.s.results == s.results
        assert s.phase == E.DONE and steps > 0
        assert len(st.history()) <= st.get_game().max_game_length()


def swapped_decks(rng, n, p):
    """Two decks that deal the same to seat p and swap a card between two other seats."""
    deck = list(range(45))
    rng.shuffle(deck)
    i, j = 0, 1  # deck positions of seats dealer+1 and dealer+2 (dealer = p)
    other = deck[:]
    other[i], other[j] = other[j], other[i]
    return deck, other


@pytest.mark.parametrize("n", [3, 5, 8])
def test_same_information_state_same_tensors_and_no_leak(n):
    rng = random.Random(n)
    game = load(players=n, num_rounds=1)
    a, b = game.new_initial_state(), game.new_initial_state()
    p = 0
    deck, other = swapped_decks(rng, n, p)
    play_deal(a, deck, dealer=p)
    play_deal(b, other, dealer=p)
    seats = ((p + 1) % n, (p + 2) % n)
    # seats dealer+1, dealer+2 got the swapped cards: their information differs, p's does not
    compared = 0
    while not a.is_terminal() and not b.is_terminal():
        if a.m.public != b.m.public or a.current_player() != b.current_player():
            break
        if a.information_state_string(p) == b.information_state_string(p):
            assert a.information_state_tensor(p) == b.information_state_tensor(p)
            assert a.observation_string(p) == b.observation_string(p)
            assert a.observation_tensor(p) == b.observation_tensor(p)
            compared += 1
        else:
            break
        for q in seats:
            assert a.information_state_string(q) != b.information_state_string(q)
            assert a.information_state_tensor(q) != b.information_state_tensor(q)
        legal = sorted(set(a.legal_actions()) & set(b.legal_actions()))
        if not legal:
            break
        act = rng.choice(legal)
        a.apply_action(act)
        b.apply_action(act)
    assert compared > 3


def test_resampled_state_is_in_the_same_information_state():
    rng = random.Random(3)
    for n in (2, 4, 7):
        st = load(players=n, num_rounds=2, tribute_asks=3).new_initial_state()
        checked = 0
        while not st.is_terminal():
            if st.is_chance_node():
                outs = st.chance_outcomes()
                st.apply_action(outs[rng.randrange(len(outs))][0])
                continue
            p = st.current_player()
            w = st.resample_from_infostate(p, pyspiel.UniformProbabilitySampler(0.0, 1.0))
            assert w.information_state_string(p) == st.information_state_string(p)
            assert w.observation_tensor(p) == st.observation_tensor(p)
            assert w.legal_actions() == st.legal_actions()
            E.check_state(w.m.s)
            checked += 1
            st.apply_action(rng.choice(st.legal_actions()))
        assert checked > 10


@pytest.mark.parametrize("n", [2, 4, 8])
def test_openspiel_ismcts_and_our_agents_play_full_matches_in_evaluate_bots(n):
    from open_spiel.python.algorithms import evaluate_bots
    game = load(players=n, num_rounds=1)
    bots = [ismcts_bot(game, 3, seed=1)] + [agent_bot(make_agent("heuristic", seed=q), q, game)
                                    for q in range(1, n)]
    returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(0))
    assert len(returns) == n and abs(sum(returns)) < 1e-9
    # one round: each seat's return is the reward of a different place (R27)
    assert sorted(returns) == sorted(E.new_match(RulesConfig(num_players=n)).place_rewards)


def test_openspiel_ismcts_agent_spec_plays_our_env():
    from dragons_egg_env.dragons_egg_v0 import env
    e = env(num_players=3, num_rounds=1)
    e.reset(seed=5)
    agents = {a: make_agent("openspiel-ismcts:iterations=4" if i == 0 else "random", seed=i)
              for i, a in enumerate(e.agents)}
    for i, a in enumerate(e.agents):
        agents[a].start_match(i, e.unwrapped.config)
    moves = 0
    for a in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
            continue
        e.step(agents[a].act(obs["observation"], obs["action_mask"]))
        moves += 1
    assert moves > 10 and abs(sum(e.unwrapped.scores.values())) < 1e-9


@pytest.mark.parametrize("spec,needle", [
    ("openspiel-ismcts:iterations=0", "iterations must be an integer >= 1"),
    ("openspiel-ismcts:c=-1", "c must be a number >= 0"),
])
def test_bad_openspiel_specs(spec, needle):
    from dragons_egg.agents import AgentSpecError, parse_spec
    with pytest.raises(AgentSpecError, match=needle):
        parse_spec(spec)


def test_without_the_extra_the_spec_and_the_module_name_it_in_one_line(tmp_path):
    import subprocess
    import sys

    from extras_blocker import blocking_env
    code = ("from dragons_egg.agents import parse_spec\n"
            "try:\n"
            "    parse_spec('openspiel-ismcts:iterations=5')\n"
            "except ImportError as e:\n"
            "    print('SPEC', e)\n"
            "try:\n"
            "    import dragons_egg_env.openspiel\n"
            "except ImportError as e:\n"
            "    print('MODULE', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=blocking_env(tmp_path / "site", ["pyspiel"]),
                          timeout=120, check=False)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert len(lines) == 2, proc.stdout
    for line, head in zip(lines, ("SPEC", "MODULE"), strict=True):
        assert line.startswith(head) and "'openspiel' extra" in line and "pip install" in line
