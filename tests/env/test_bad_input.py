"""Bad input of every kind gets a clear error naming the problem."""

import json

import numpy as np
import pytest

from dragons_egg_env import actions as A
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.__main__ import main as demo_main
from dragons_egg_env.cards import CARD_CODES, card_index, mask_of
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.replay import ReplayError, replay

FULL_DEAL = [list(CARD_CODES[i::4]) for i in range(4)]


def test_unknown_rule_flag_is_named():
    with pytest.raises(ConfigError, match="'pass_lock_out'"):
        dragons_egg_v0.env(pass_lock_out=True)
    with pytest.raises(ValueError, match="unknown rule flag"):
        RulesConfig.from_kwargs({"colour": "red"})


@pytest.mark.parametrize("kwargs,needle", [
    ({"num_players": 1}, "num_players must be 2..8"),
    ({"num_players": 9}, "num_players must be 2..8"),
    ({"num_players": "4"}, "num_players must be an int"),
    ({"num_rounds": 0}, "num_rounds must be >= 1"),
    ({"tribute_asks": 45}, "tribute_asks must be 0..44"),
    ({"dragons_per_play": "two"}, "dragons_per_play must be one of one, any"),
    ({"reward_scheme": "score"}, "reward_scheme must be one of"),
    ({"pass_locks_out": 1}, "pass_locks_out must be a bool"),
    ({"egg_in_tribute": "yes"}, "egg_in_tribute must be a bool"),
])
def test_bad_flag_values_are_named(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        RulesConfig(**kwargs)
    with pytest.raises(ValueError, match=needle):
        dragons_egg_v0.raw_env(**kwargs)


@pytest.mark.parametrize("kwargs,needle", [
    ({"max_players": 3}, "max_players must be an int in 4..8"),
    ({"max_players": 9}, "max_players"),
    ({"render_mode": "rgb"}, "render_mode must be one of"),
    ({"deck_style": "tarot"}, "deck_style must be"),
])
def test_bad_env_arguments(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        dragons_egg_v0.env(**kwargs)


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d[:3], "has 3 hands; the table has 4 seats"),
    (lambda d: [d[0] + ["7Q"]] + d[1:], "round 0, seat 0: unknown card code '7Q'"),
    (lambda d: [d[0] + [d[1][0]]] + [d[1][1:]] + d[2:] if False else
     [d[0] + [d[1][0]]] + d[1:], "dealt twice"),
    (lambda d: [d[0][1:]] + d[1:], "missing from the deal"),
    (lambda d: [[]] + [d[1] + d[0]] + d[2:], "seat 0 is empty"),
    (lambda d: ["1E 2E"] + d[1:], "a hand is a list of card codes"),
    (lambda d: [d[0] + ["1E"]] + d[1:], "appears twice"),
])
def test_malformed_deal_is_a_clear_value_error(mutate, needle):
    env = dragons_egg_v0.env()
    deal = mutate([list(h) for h in FULL_DEAL])
    with pytest.raises(ValueError, match=needle):
        env.reset(seed=0, options={"deals": [deal]})


def test_deals_option_must_be_a_list():
    with pytest.raises(ValueError, match="options\\['deals'\\] must be a list"):
        dragons_egg_v0.env().reset(options={"deals": "1E"})


def test_unknown_option_keys_are_ignored():
    env = dragons_egg_v0.env()
    env.reset(seed=0, options={"something_else": 1})
    assert env.agents


def test_engine_deal_errors():
    s = E.new_match(RulesConfig(num_players=2))
    with pytest.raises(E.DealError, match="needs 2 hands"):
        E.deal(s, [mask_of(CARD_CODES)])
    with pytest.raises(E.DealError, match="not a card bitmask"):
        E.deal(s, [1 << 50, 1])


def test_raw_env_illegal_move_raises_naming_agent_action_and_legal():
    env = dragons_egg_v0.raw_env()
    env.reset(seed=0)
    agent = env.agent_selection  # holds the 10 of Fire: only play(10, 1) is legal
    with pytest.raises(dragons_egg_v0.IllegalMoveError) as exc:
        env.step(A.PASS)
    msg = str(exc.value)
    assert agent in msg and "action 0 (pass)" in msg and "37 (play 1 x 10)" in msg
    assert isinstance(exc.value, ValueError)
    env.step(A.play(10, 1))  # the state was not changed by the illegal attempt


def test_engine_illegal_action_leaves_state_unchanged():
    s = E.new_match(RulesConfig())
    E.deal(s, [mask_of(h) for h in FULL_DEAL])
    before = repr(s)
    with pytest.raises(E.IllegalActionError, match="legal: 37 \\(play 1 x 10\\)"):
        E.step(s, A.play(1, 1))
    assert repr(s) == before


def test_env_illegal_move_terminates_with_minus_one(caplog):
    env = dragons_egg_v0.env(num_players=3)
    env.reset(seed=0)
    offender = env.agent_selection
    env.step(A.PASS)
    assert "Illegal move" in caplog.text
    assert all(env.terminations.values())
    assert env._cumulative_rewards[offender] == -1.0
    assert all(env._cumulative_rewards[a] == 0.0 for a in env.agents if a != offender)
    assert env.phase() == "done"
    seen = []
    for agent in env.agent_iter():
        _, rew, term, _, _ = env.last()
        assert term
        seen.append((agent, rew))
        env.step(None)
    assert dict(seen)[offender] == -1.0 and len(seen) == 3


@pytest.mark.parametrize("action", [-1, A.NUM_ACTIONS, 3.5, "play", None, True])
def test_out_of_bounds_action(action):
    for make in (dragons_egg_v0.env, dragons_egg_v0.raw_env):
        env = make()
        env.reset(seed=0)
        with pytest.raises(dragons_egg_v0.ActionOutOfBoundsError, match="outside the action"):
            env.step(action)


def test_numpy_integer_actions_are_accepted():
    env = dragons_egg_v0.env()
    env.reset(seed=0)
    env.step(np.int64(A.play(10, 1)))
    assert env.engine_state.plays


def test_order_is_enforced():
    env = dragons_egg_v0.env()
    for call in (lambda: env.step(0), lambda: env.observe("player_0"), env.state, env.render,
                 env.agent_iter):
        with pytest.raises(dragons_egg_v0.OrderError, match="reset\\(\\) needs to be called"):
            call()
    env.reset(seed=0)
    it = iter(env.agent_iter())
    next(it)
    with pytest.raises(dragons_egg_v0.OrderError, match="need to call step"):
        next(it)


def test_action_helpers_reject_bad_values():
    with pytest.raises(ValueError, match="number must be 1..10"):
        A.play(11, 1)
    with pytest.raises(ValueError, match="count must be 1..4"):
        A.play(3, 5)
    with pytest.raises(ValueError, match="the Egg can never be asked for"):
        A.ask("EGG")
    with pytest.raises(ValueError, match="unknown card code 'ZZ'"):
        A.give("ZZ")
    with pytest.raises(ValueError, match="out of range"):
        A.describe(500)
    assert card_index("10f") == card_index("10F")


@pytest.mark.parametrize("argv,needle", [
    (["--players", "9"], "expected 2..8"),
    (["--seed", "x"], "expected an integer"),
    (["--deck-style", "tarot"], "invalid choice"),
    (["--bogus"], "unrecognized arguments"),
])
def test_demo_bad_arguments(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        demo_main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_corrupt_replays(tmp_path):
    env = dragons_egg_v0.env()
    env.reset(seed=0)
    data = env.unwrapped.to_replay()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ReplayError, match="not valid JSON"):
        replay(bad)
    with pytest.raises(ReplayError, match="cannot read replay"):
        replay(tmp_path / "missing.json")
    with pytest.raises(ReplayError, match="not a Dragon's Egg replay"):
        replay({**data, "format": "other"})
    with pytest.raises(ReplayError, match="config is invalid"):
        replay({**data, "config": {**data["config"], "num_players": 11}})
    with pytest.raises(ReplayError, match="deals are invalid"):
        replay({**data, "deals": [[["1E"]] * 4]})
    with pytest.raises(ReplayError, match="step 0: malformed action"):
        replay({**data, "actions": [["player_0"]]})
    json.dumps(data)


# -- seeds, options and deals ---------------------------------------------------------------
def test_numpy_integer_seeds_are_their_int():
    a, b = dragons_egg_v0.env(), dragons_egg_v0.env()
    a.reset(seed=np.int64(3))
    b.reset(seed=3)
    assert a.unwrapped.deals == b.unwrapped.deals
    assert type(a.unwrapped.to_replay()["seed"]) is int
    c = dragons_egg_v0.env()
    c.reset(seed=np.uint8(3))
    assert c.unwrapped.deals == b.unwrapped.deals


def test_negative_seed_is_refused_not_played_as_its_absolute_value():
    env = dragons_egg_v0.env()
    with pytest.raises(ValueError, match="seed must be a non-negative integer or None, got -3"):
        env.reset(seed=-3)
    with pytest.raises(ValueError, match="non-negative"):
        env.reset(seed=np.int64(-3))


@pytest.mark.parametrize("seed", [b"3", "3", 3.0, 3.5, True, [3], np.float64(3)])
def test_seeds_of_other_types_are_refused(seed):
    env = dragons_egg_v0.env()
    with pytest.raises(TypeError, match="seed must be a non-negative integer or None, got "
                                        f"{type(seed).__name__}"):
        env.reset(seed=seed)


@pytest.mark.parametrize("options", [["deals"], "deals", 3, (("deals", []),)])
def test_options_must_be_a_dict(options):
    with pytest.raises(TypeError, match="options must be a dict .* or None, got "
                                        f"{type(options).__name__}"):
        dragons_egg_v0.env().reset(seed=0, options=options)


def test_more_deals_than_rounds_is_an_error():
    env = dragons_egg_v0.env(num_rounds=2)
    with pytest.raises(ValueError, match="holds 3 deals but the match has 2 round\\(s\\)"):
        env.reset(seed=0, options={"deals": [FULL_DEAL] * 3})
    env.reset(seed=0, options={"deals": [FULL_DEAL] * 2})


def test_one_deal_without_the_per_round_list_gets_a_hint():
    env = dragons_egg_v0.env()
    with pytest.raises(ValueError, match="looks like the hands of one deal: wrap it in a list, "
                                         "options=\\{'deals': \\[\\[hand_0, hand_1, ...\\]\\]\\}"):
        env.reset(seed=0, options={"deals": FULL_DEAL})
    env.reset(seed=0, options={"deals": [FULL_DEAL]})
    assert env.unwrapped.hand("player_0") == sorted(FULL_DEAL[0], key=card_index)


def test_later_rounds_without_a_deal_are_dealt_from_the_seed():
    a, b = dragons_egg_v0.env(num_rounds=3), dragons_egg_v0.env(num_rounds=3)
    for e in (a, b):
        e.reset(seed=7, options={"deals": [FULL_DEAL]})
        while len(e.unwrapped.deals) < 3:
            e.step(e.unwrapped.legal_actions()[0])
    assert a.unwrapped.deals == b.unwrapped.deals
    assert a.unwrapped.deals[0] == [mask_of(h) for h in FULL_DEAL]


# -- inspection before reset, agent names -----------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda e: e.hand("player_0"), lambda e: e.scores, lambda e: e.phase(),
    lambda e: e.legal_actions(), lambda e: e.egg_holder(), lambda e: e.last(),
    lambda e: e.last(observe=False), lambda e: e.pile(), lambda e: e.finish_order(),
    lambda e: e.round_index(), lambda e: e.engine_state, lambda e: e.render_table(),
    lambda e: e.illegal_move, lambda e: e.to_replay(),
])
@pytest.mark.parametrize("make", [dragons_egg_v0.env, dragons_egg_v0.raw_env])
def test_inspection_before_reset_is_an_order_error(make, call):
    env = make()
    with pytest.raises(dragons_egg_v0.OrderError, match="reset\\(\\) needs to be called before"):
        call(env)


@pytest.mark.parametrize("call", [
    lambda e: e.observe("player_9"), lambda e: e.hand("player_9"),
    lambda e: e.render_table(viewer="player_9"), lambda e: e.observation_space("player_9"),
    lambda e: e.action_space("player_9"),
])
def test_unknown_agent_names_list_the_agents(call):
    env = dragons_egg_v0.env(num_players=3)
    env.reset(seed=0)
    with pytest.raises(dragons_egg_v0.UnknownAgentError) as exc:
        call(env)
    assert str(exc.value) == ("unknown agent 'player_9'; the agents are player_0, player_1, "
                              "player_2")
    assert isinstance(exc.value, KeyError) and isinstance(exc.value, ValueError)
    with pytest.raises(dragons_egg_v0.UnknownAgentError, match="unknown agent \\['player_0'\\]"):
        env.observe(["player_0"])


# -- actions follow Discrete.contains ---------------------------------------------------------
@pytest.mark.parametrize("action", [3.0, 37.0, np.float64(37.0), np.array(37.0), np.bool_(True),
                                    np.array([37])])
def test_whole_number_floats_are_refused_everywhere(action):
    """``Discrete.contains`` refuses floats: ``step(3.0)`` used to end the match (3 is illegal
    here) while ``step(37.0)`` was played."""
    from gymnasium.spaces import Discrete

    assert not Discrete(A.NUM_ACTIONS).contains(action)
    for make in (dragons_egg_v0.env, dragons_egg_v0.raw_env):
        env = make()
        env.reset(seed=0)
        with pytest.raises(dragons_egg_v0.ActionOutOfBoundsError, match="outside the action"):
            env.step(action)
        assert env.phase() == "play" and not env.unwrapped.engine_state.plays


@pytest.mark.parametrize("action", [A.play(10, 1), np.int64(A.play(10, 1)),
                                    np.uint8(A.play(10, 1)), np.array(A.play(10, 1))])
def test_integer_actions_accepted_as_discrete_contains_does(action):
    from gymnasium.spaces import Discrete

    assert Discrete(A.NUM_ACTIONS).contains(action)
    env = dragons_egg_v0.env()
    env.reset(seed=0)
    env.step(action)
    assert env.unwrapped.engine_state.plays


def test_single_agent_env_takes_numpy_seeds_and_refuses_float_actions():
    from dragons_egg_env.wrappers import SingleAgentEnv

    def first_legal(obs, mask):
        return int(np.flatnonzero(mask)[0])

    env = SingleAgentEnv(opponents=[first_legal], table_sizes=(3,))
    obs, info = env.reset(seed=np.int64(3))
    again, _ = SingleAgentEnv(opponents=[first_legal], table_sizes=(3,)).reset(seed=3)
    assert np.array_equal(obs, again)
    with pytest.raises(ValueError, match="non-negative"):
        env.reset(seed=-1)
    legal = int(np.flatnonzero(env.action_masks())[0])
    with pytest.raises(dragons_egg_v0.ActionOutOfBoundsError, match="outside the action space"):
        env.step(float(legal))
    env.step(np.int64(legal))
