"""One heuristic, one greedy rule: the agents (from their observations) and the ISMCTS rollouts
(from the engine state) choose the same action, and each rule H1..H9 of ``docs/agents.md``
shows in a fixed position."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from support import random_states, shuffled_hidden

from dragons_egg.agents import make_agent
from dragons_egg.agents.heuristic import (
    BIG_HAND,
    DANGER_CARDS,
    HeuristicAgent,
    context_from_state,
    context_from_view,
    heuristic_action,
    heuristic_actions,
    mask_to_int,
)
from dragons_egg.agents.ismcts import (
    ROLLOUTS,
    ISMCTSAgent,
    greedy_rollout_action,
    heuristic_rollout_action,
)
from dragons_egg.agents.simple import GreedyAgent, greedy_choice
from dragons_egg_env import actions as A
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.cards import ALL_CARDS, mask_of
from dragons_egg_env.config import MAX_PLAYERS, TABLE_SIZES, RulesConfig
from dragons_egg_env.observation import Encoder, decode_observation, mask_array

# Rule flags varied over the random matches (every flag the rules read).
FLAG_SETS = (
    {},
    {"tribute_asks": 4, "egg_in_tribute": True},
    {"pass_locks_out": True, "dragons_per_play": "any"},
    {"completion_out_of_turn": False, "tribute_asks": 1},
    {"dragons_per_play": "any", "egg_in_tribute": True, "tribute_asks": 8},
    {"tribute_asks": 0, "opening_ten_of_fire_alone": False, "pass_locks_out": True},
)


def _decision_points(matches_per_size: int):
    """``(env, agent, obs)`` at every decision with two or more legal actions, over seeded
    random matches at every table size, varied rule flags and observation padding."""
    for n in TABLE_SIZES:
        for k in range(matches_per_size):
            flags = FLAG_SETS[(n + k) % len(FLAG_SETS)]
            max_players = MAX_PLAYERS if k % 2 else n  # padded observations too
            env = dragons_egg_v0.raw_env(num_players=n, num_rounds=3, max_players=max_players,
                                         **flags)
            env.reset(seed=1000 * n + k)
            rng = random.Random(k)
            for agent, obs in random_states(env, rng):
                if np.count_nonzero(obs["action_mask"]) > 1:
                    yield env, agent, obs


def _agent_choice(bot, env, agent, obs) -> int:
    bot.start_match(env.agent_name_mapping[agent], env.config, env.max_players)
    return bot.act(obs["observation"], obs["action_mask"])


def test_agents_and_rollouts_choose_the_same_action_on_random_states():
    """The agent path and the rollout path (epsilon 0) agree at every decision point."""
    heuristic, greedy = HeuristicAgent(seed=0), GreedyAgent(seed=0)
    rng = random.Random(0)
    seen: Counter[str] = Counter()
    for env, agent, obs in _decision_points(matches_per_size=6):
        s = env.engine_state
        seen[E.PHASE_NAMES[s.phase]] += 1
        before = s.clone()
        a = _agent_choice(heuristic, env, agent, obs)
        b = heuristic_rollout_action(s, rng, 0.0)
        assert a == b, (f"heuristic: agent {A.describe(a)}, rollout {A.describe(b)} in {s}")
        a = _agent_choice(greedy, env, agent, obs)
        b = greedy_rollout_action(s, rng, 0.0)
        assert a == b, (f"greedy: agent {A.describe(a)}, rollout {A.describe(b)} in {s}")
        assert s.hands == before.hands and s.pile == before.pile  # the policies only read
    assert sum(seen.values()) >= 3000, seen
    assert min(seen[ph] for ph in ("play", "complete", "ask", "give")) >= 50, seen


def test_the_batched_heuristic_chooses_as_the_agent_does():
    """``heuristic_actions`` on stacked observations (each padding) = the agent row by row,
    in every phase, at every table size and flag set."""
    heuristic = HeuristicAgent(seed=0)
    rows: dict[int, tuple[list, list, list]] = {}
    for env, agent, obs in _decision_points(matches_per_size=2):
        o, m, want = rows.setdefault(env.max_players, ([], [], []))
        o.append(obs["observation"])
        m.append(obs["action_mask"])
        want.append(_agent_choice(heuristic, env, agent, obs))
    assert sum(len(w) for _, _, w in rows.values()) > 1000 and len(rows) == len(TABLE_SIZES)
    for max_players, (o, m, want) in rows.items():
        got = heuristic_actions(np.stack(o), np.stack(m), max_players)
        np.testing.assert_array_equal(got, want)
        heuristic.start_match(0, RulesConfig(num_players=max_players), max_players)
        np.testing.assert_array_equal(heuristic.act_batch(np.stack(o), np.stack(m)), want)


def test_contexts_from_the_observation_and_from_the_state_are_equal():
    """Both constructors read the same facts (the rules cannot tell which built them)."""
    checked = 0
    for env, _agent, obs in _decision_points(matches_per_size=1):
        cfg = env.config
        view = decode_observation(obs["observation"], num_rounds=cfg.num_rounds)
        a = context_from_view(view, mask_to_int(obs["action_mask"]))
        b = context_from_state(env.engine_state)
        assert repr(a) == repr(b)
        checked += 1
    assert checked > 500


# -- fixed positions, one or more per rule -------------------------------------------------

def _deal(*hands: str | None) -> list[int]:
    """Hands from card codes; one ``None`` hand takes every card not named."""
    masks = [mask_of(h.split()) if h is not None else 0 for h in hands]
    rest = ALL_CARDS
    for m in masks:
        rest &= ~m
    return [m if h is not None else rest for m, h in zip(masks, hands, strict=True)]


def _state(*hands: str | None, rounds: int = 1, **flags) -> E.State:
    """A match after its first deal. R12 offers are off unless asked for: a hand of "every
    card not named" holds the three other 10s and would be offered them after the opening."""
    flags.setdefault("completion_out_of_turn", False)
    s = E.new_match(RulesConfig(num_players=len(hands), num_rounds=rounds, **flags))
    E.deal(s, _deal(*hands))
    return s


def _steps(s: E.State, *actions: int) -> E.State:
    for a in actions:
        E.step(s, a)
    return s


def choice(s: E.State, rule: str = "heuristic") -> int:
    """The action both callers choose for the seat to act; fails when they differ."""
    seat, n = s.current, s.n
    obs = Encoder(n, n, s.config.num_rounds).encode(s, seat)
    mask = mask_array(E.legal_mask(s))
    bot = HeuristicAgent(seed=0) if rule == "heuristic" else GreedyAgent(seed=0)
    bot.start_match(seat, s.config, n)
    agent = bot.act(obs, mask)
    policy = heuristic_rollout_action if rule == "heuristic" else greedy_rollout_action
    rollout = policy(s.clone(), random.Random(0), 0.0)
    assert agent == rollout, f"{rule}: agent {A.describe(agent)}, rollout {A.describe(rollout)}"
    return agent


def test_h1_completes_a_set_in_turn():
    # player_1 plays 7L; player_2, next to play, holds the other three 7s (R11).
    s = _steps(_state("10F 1E", "7L 5E", None), A.play(10, 1), A.play(7, 1))
    sevens = mask_of("7E 7W 7F".split())
    assert s.current == 2 and s.phase == E.PLAY and s.hands[2] & sevens == sevens
    assert choice(s) == A.play(7, 3)


def test_h1_completes_a_set_out_of_turn():
    s = _steps(_state("10F 7E 7F 7L 1E", "7W 5E 10E", None, completion_out_of_turn=True),
               A.play(10, 1), A.play(7, 1))
    assert s.phase == E.COMPLETE and s.current == 0
    assert choice(s) == A.play(7, 3)


def _lead_state(p1: str, egg_with_p1: bool) -> E.State:
    """player_0 opens with its only card and goes out; the others pass, so player_1 leads."""
    hand = p1 + (" EGG" if egg_with_p1 else "")
    s = _steps(_state("10F", hand, None), A.play(10, 1), A.PASS, A.PASS)
    assert s.current == 1 and not s.top_rank
    return s


def test_h2_egg_holder_leads_its_strongest_whole_group():
    s = _lead_state("1E 1W 5E 9E 9W", egg_with_p1=True)
    assert choice(s) == A.play(1, 2)


def test_h2_egg_holder_follows_with_the_lowest_number_all_of_it():
    # On a single 10 the Egg holder plays its pair of 4s: strongest, though a single 9 or 7
    # would match the count (the rollout used to prefer the exact count: changed).
    s = _steps(_state("10F 1E", "4E 4W 7E 8E 8W 9F EGG", None), A.play(10, 1))
    assert choice(s) == A.play(4, 2)


def test_h2_egg_holder_clears_with_a_dragon():
    s = _steps(_state("10F 9E BEAST EGG", "5E 5W 10E", None), A.play(10, 1), A.play(5, 1),
               A.PASS)
    assert s.current == 0
    assert choice(s) == A.play_dragons(1)


def test_h3_leads_the_weakest_number_whole():
    s = _lead_state("1E 1W 5E 9E 9W", egg_with_p1=False)
    assert choice(s) == A.play(9, 2)


def test_h3_leads_the_last_group():
    s = _lead_state("6E 6W 6F BEAST", egg_with_p1=False)
    assert choice(s) == A.play(6, 3)


def test_h4_follows_with_the_weakest_whole_group_of_the_top_count():
    s = _steps(_state("10F 1E 5E 5W 6W 7W", "3E 3W 6E 8E 8W 9E", None), A.play(10, 1))
    assert choice(s) == A.play(9, 1)


def test_h4_prefers_a_whole_group_to_the_exact_count():
    # No single is held alone: the weakest whole group (the three 9s), never one 9 of three.
    s = _steps(_state("10F 1E 5E 5W 6W 7W", "4E 4W 9E 9W 9F 3E 3W", None), A.play(10, 1))
    assert choice(s) == A.play(9, 3)


def test_h4_plays_the_weakest_play_that_beats_the_top():
    s = _steps(_state("10F 8E 8W 1E 2L 4L 5L", "3E 3W 7E 7W 9E 9W", None), A.play(10, 1), A.PASS,
               A.PASS, A.play(8, 2))
    assert (s.current, s.top_rank, s.top_count) == (1, 8, 2)
    assert choice(s) == A.play(7, 2)


def _pair_of_threes(p0_rest: str, p1: str) -> E.State:
    """player_0 opens, wins the all-pass and leads a pair of 3s; player_1 is to act."""
    s = _state("10F 3E 3W " + p0_rest, p1, None)
    _steps(s, A.play(10, 1), A.PASS, A.PASS, A.play(3, 2))
    assert (s.current, s.top_rank, s.top_count) == (1, 3, 2)
    return s


def test_h5_holds_back_ones_and_twos_while_the_hand_is_big():
    # Only the pairs of 1s and 2s beat the 3s; six cards, no opponent close to going out.
    s = _pair_of_threes("5E 6E 7E 8E", "1E 1W 2E 2W 9E 9W")
    assert s.hands[1].bit_count() > BIG_HAND and s.hands[0].bit_count() > DANGER_CARDS
    assert choice(s) == A.PASS


def test_h5_spends_strength_in_a_small_hand():
    s = _pair_of_threes("5E 6E 7E 8E", "1E 1W 2E 2W 9E")
    assert s.hands[1].bit_count() <= BIG_HAND
    assert choice(s) == A.play(2, 2)


def test_h5_spends_strength_when_an_opponent_is_about_to_go_out():
    s = _pair_of_threes("5E", "1E 1W 2E 2W 9E 9W")
    assert s.hands[0].bit_count() <= DANGER_CARDS
    assert choice(s) == A.play(2, 2)


def _beaten_pile(p0: str, p2: str) -> E.State:
    """player_1 (holding the Egg and every card not named) plays a pair of 1s, which
    player_2 cannot beat with a number; player_2 is to act."""
    s = _steps(_state(p0, None, p2), A.play(10, 1), A.play(1, 2))
    assert s.current == 2 and (s.top_rank, s.top_count) == (1, 2) and s.egg_holder == 1
    return s


def test_h6_dragon_card_when_an_opponent_is_about_to_go_out():
    s = _beaten_pile("10F 1E 5E 6E", "BEAST 3W 3F 6F 7F 8F 9F")
    assert s.hands[0].bit_count() <= DANGER_CARDS
    assert choice(s) == A.play_dragons(1)


def test_h6_dragon_card_with_a_single_group_left():
    s = _beaten_pile("10F 1E 5E 6E 7E 8E 9L", "9E 9W BEAST")
    assert choice(s) == A.play_dragons(1)  # the rollout used to pass here: changed


def test_h7_passes_otherwise():
    s = _beaten_pile("10F 1E 5E 6E 7E 8E 9L", "BEAST 3W 3F 6F 7F 8F 9F")
    assert min(s.hands[0].bit_count(), s.hands[1].bit_count()) > DANGER_CARDS
    assert choice(s) == A.PASS


def _tribute(dragon: str, **flags) -> E.State:
    """Round 2 of a two-player match: player_0 (out first in round 1) is the Dragon and asks
    player_1, who holds every card not named."""
    s = _state("10F", None, rounds=2, **flags)
    _steps(s, A.play(10, 1))  # player_0 goes out: the round ends
    E.deal(s, _deal(dragon, None))
    assert s.phase == E.ASK and s.current == 0
    return s


def test_h8_asks_for_dragon_cards_then_the_strongest_numbers_and_never_stops():
    s = _tribute("BEAST DARKLORD 1E 5E 5W 9L", tribute_asks=4)
    asked = []
    while s.phase == E.ASK:
        asked.append(choice(s))
        E.step(s, asked[-1])
    assert asked == [A.ask("HORSEMAN"), A.ask("EXECUTIONER"), A.ask("1W"), A.ask("1F")]


def test_h9_gives_back_the_weakest_single_card():
    # The hand is 1E 3E 3W 7F 10E 10L plus the Beast it asked for: 7F is the highest number
    # held alone (the rollout used to give back 10L, breaking the pair: changed).
    s = _tribute("1E 3E 3W 7F 10E 10L", tribute_asks=1)
    E.step(s, choice(s))
    assert s.phase == E.GIVE and s.hits == mask_of(["BEAST"])
    assert choice(s) == A.give("7F")


def test_h9_without_a_single_gives_the_weakest_card_of_the_highest_number():
    s = _tribute("3E 3W 10E 10L", tribute_asks=1)
    E.step(s, choice(s))
    assert choice(s) == A.give("10L")


def test_h9_gives_back_the_egg_when_allowed():
    s = _tribute("1E 3E 3W 7F EGG", tribute_asks=1, egg_in_tribute=True)
    E.step(s, choice(s))
    assert choice(s) == A.give("EGG")


# -- the greedy rule -------------------------------------------------------------------------

def test_greedy_sheds_the_most_cards_weakest_number_first():
    s = _steps(_state("10F 1E", "3E 3W 6E 6W 9E", None), A.play(10, 1))
    assert choice(s, "greedy") == A.play(6, 2)


def test_greedy_plays_a_dragon_card_only_when_no_numbered_play_is_legal():
    # Two dragon cards may go down together (R16 "any"); one 7 still sheds first.
    s = _steps(_state("10F 1E", "7E BEAST DARKLORD", None, dragons_per_play="any"),
               A.play(10, 1))
    assert choice(s, "greedy") == A.play(7, 1)  # the agent used to play both dragons: changed
    s = _steps(_state("10F 8E 8W 1E", "7E BEAST DARKLORD", None, dragons_per_play="any"),
               A.play(10, 1), A.PASS, A.PASS, A.play(8, 2))
    assert choice(s, "greedy") == A.play_dragons(2)  # the rollout used to pass or play one


def test_greedy_tribute_asks_strong_and_gives_weak():
    s = _tribute("BEAST 1E 3E 3W 7F 10E 10L", tribute_asks=2)
    assert choice(s, "greedy") == A.ask("DARKLORD")  # the rollout used to stop asking
    _steps(s, A.ask("DARKLORD"), A.ask("HORSEMAN"))
    assert choice(s, "greedy") == A.give("10L")


def test_greedy_choice_on_a_list_is_the_same_rule():
    legal = [A.PASS, A.play(3, 1), A.play(3, 2), A.play(9, 1), A.play_dragons(1)]
    assert greedy_choice(legal) == A.play(3, 2)
    assert greedy_choice([A.PASS, A.play_dragons(1)]) == A.play_dragons(1)


# -- ISMCTS takes its rollout as a plug-in --------------------------------------------------

def test_ismcts_rollout_names_and_plug_in():
    assert ISMCTSAgent(rollout="heuristic").rollout is heuristic_rollout_action
    assert ISMCTSAgent(rollout="greedy").rollout is greedy_rollout_action
    assert set(ROLLOUTS) == {"heuristic", "greedy", "random"}
    assert make_agent("ismcts:rollout=random", seed=0).rollout is ROLLOUTS["random"]
    calls = Counter()

    def passive(s: E.State, rng: random.Random, epsilon: float) -> int:
        calls[epsilon] += 1
        return heuristic_action(context_from_state(s))

    bot = ISMCTSAgent(seed=0, iterations=20, rollout=passive, epsilon=0.25)
    s = _steps(_state("10F 1E", "3E 3W 6E 8E 8W 9E", None), A.play(10, 1))
    bot.start_match(1, s.config, s.n)
    obs = Encoder(s.n, s.n, 1).encode(s, 1)
    action = bot.act(obs, mask_array(E.legal_mask(s)))
    assert E.legal_mask(s) >> action & 1
    assert calls and set(calls) == {0.25}


@pytest.mark.parametrize("bad", ["smart", 3])
def test_ismcts_rejects_an_unknown_rollout(bad):
    with pytest.raises(ValueError, match="rollout must be one of heuristic, greedy, random"):
        ISMCTSAgent(rollout=bad)


def test_the_rollout_context_holds_only_what_the_seat_knows():
    """Reshuffling the cards the acting seat cannot see changes nothing in its context."""
    rng = random.Random(3)
    checked = 0
    for env, _agent, _obs in _decision_points(matches_per_size=1):
        s = env.engine_state
        t = shuffled_hidden(s, s.current, rng)
        assert repr(context_from_state(t)) == repr(context_from_state(s))
        checked += 1
    assert checked > 500
