"""Scenario tests on fixed deals, one or more per rule R1..R34 of the rules contract
(``docs/rules.md``), each named after its rule. Every rule flag is tested with both values.

Deals are written with :func:`scenario_helpers.deal_codes`: one hand string per seat and one
``REST`` seat that takes the other cards. :func:`scenario_helpers.run` asserts who acts before
each step, so every scenario also pins down the turn order.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from scenario_helpers import (
    REST,
    deal_codes,
    deal_masks,
    env_run,
    hand,
    legal,
    make_env,
    open_and_clear,
    pile,
    quick_hands,
    quick_moves,
    run,
    start,
)

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS, ask, give, play
from dragons_egg_env.actions import play_dragons as dragon
from dragons_egg_env.cards import (
    ALL_CARDS,
    CARD_CODES,
    EGG,
    NUM_CARDS,
    RANK_MASK,
    card_index,
    card_name,
    codes,
    mask_of,
)
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.observation import layout

DRAGON_CARDS = "BEAST DARKLORD HORSEMAN EXECUTIONER"


def bits(*cards: str) -> int:
    return mask_of(cards)


def obs(env, seat: int) -> np.ndarray:
    return env.observe(f"player_{seat}")["observation"]


def slot(env, seat: int, name: str) -> list[int]:
    """An observation slice of ``player_<seat>`` as a list of ints (binary slices)."""
    return [int(x) for x in obs(env, seat)[layout(env.max_players)[name]]]


def card_slice(env, seat: int, name: str) -> list[str]:
    """A 45-card observation slice of ``player_<seat>`` as card codes."""
    return [CARD_CODES[i] for i, x in enumerate(obs(env, seat)[layout(env.max_players)[name]])
            if x]


def mask_set(env, seat: int) -> set[int]:
    return set(np.flatnonzero(env.observe(f"player_{seat}")["action_mask"]).tolist())


# =========================================================================================
# R1: the 45 cards and their codes

def test_r1_deck_has_45_cards_with_the_api_codes():
    numbered = [f"{n}{s}" for n in range(1, 11) for s in "EWFL"]
    assert CARD_CODES == tuple(numbered + DRAGON_CARDS.split() + ["EGG"])
    assert NUM_CARDS == 45 and mask_of(CARD_CODES) == ALL_CARDS


def test_r1_fixed_deal_holds_every_card_once():
    env = make_env(deal_codes("10F 1E EGG", "BEAST 5W DARKLORD", REST), num_players=3)
    assert env.hand("player_0") == ["1E", "10F", "EGG"]
    assert env.hand("player_1") == ["5W", "BEAST", "DARKLORD"]
    held = [c for a in env.possible_agents for c in env.hand(a)]
    assert len(held) == 45 and set(held) == set(CARD_CODES)
    assert len(env.hand("player_2")) == 39


@pytest.mark.parametrize("change", ["missing", "twice", "unknown"])
def test_r1_deal_that_is_not_the_45_cards_is_an_error(change):
    deal = deal_codes("10F 1E", "2E", REST)
    if change == "missing":
        deal[2].remove("EGG")
    elif change == "twice":
        deal[1].append("1E")
    else:
        deal[1].append("11E")
    env = dragons_egg_v0.raw_env(num_players=3)
    with pytest.raises(ValueError):
        env.reset(seed=0, options={"deals": [deal]})
    if change != "unknown":
        s = E.new_match(RulesConfig(num_players=3))
        with pytest.raises(E.DealError):
            E.deal(s, [mask_of(h) for h in deal])


# =========================================================================================
# R2: Tarokka aliases for display

def test_r2_tarokka_names_of_the_cards():
    tarokka = {"10F": "Master of Coins", "10E": "Master of Swords", "10W": "Master of Glyphs",
               "10L": "Master of Stars", "3E": "3 of Swords", "5L": "5 of Stars",
               "7W": "7 of Glyphs", "2F": "2 of Coins", "EGG": "Artifact", "BEAST": "Beast",
               "DARKLORD": "Darklord", "HORSEMAN": "Horseman", "EXECUTIONER": "Executioner"}
    for code, name in tarokka.items():
        assert card_name(card_index(code), "tarokka") == name
        assert card_name(card_index(code), "dragon") == code
    with pytest.raises(ValueError):
        card_name(0, "tarot")


def test_r2_render_either_deck_on_a_fixed_deal():
    deal = deal_codes("10F 3E EGG", "5L 7W", REST)
    tarokka = dragons_egg_v0.raw_env(num_players=3, render_mode="ansi", deck_style="tarokka")
    tarokka.reset(seed=0, options={"deals": [deal]})
    text = tarokka.render()
    for name in ("Master of Coins", "3 of Swords", "Artifact", "5 of Stars", "7 of Glyphs"):
        assert name in text
    # names of several words are listed apart by commas, codes by spaces
    assert "    3 of Swords, Master of Coins, Artifact\n" in text
    assert "    5 of Stars, 7 of Glyphs\n" in text
    assert "10F" not in text and "EGG" not in text
    dragon_deck = dragons_egg_v0.raw_env(num_players=3, render_mode="ansi")
    dragon_deck.reset(seed=0, options={"deals": [deal]})
    text = dragon_deck.render()
    assert "10F" in text and "EGG" in text and "Master" not in text
    assert "    3E 10F EGG\n" in text
    with pytest.raises(ValueError):
        dragons_egg_v0.raw_env(num_players=3, deck_style="tarot")


# =========================================================================================
# R3: 2..8 players, seats, "left" is seat + 1

@pytest.mark.parametrize("n", [1, 0, 9])
def test_r3_num_players_out_of_range_is_an_error(n):
    with pytest.raises(ConfigError):
        RulesConfig(num_players=n)
    with pytest.raises(ValueError):
        dragons_egg_v0.raw_env(num_players=n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_r3_agents_are_player_0_to_n_minus_1(n):
    env = dragons_egg_v0.raw_env(num_players=n)
    assert env.possible_agents == [f"player_{i}" for i in range(n)]
    assert RulesConfig().num_players == 4


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_r3_play_passes_to_the_left_and_wraps(n):
    singles = ["3E", "3W", "3F", "3L", "4E", "4W"]
    hands = [REST] + singles[: n - 2] + ["10F 2E"]
    s = start(*hands)
    run(s, (n - 1, play(10, 1)))  # the opener sits in the last seat; its left is seat 0
    assert s.current == 0
    for seat in range(n - 1):
        run(s, (seat, PASS))
    assert s.top_rank == 0 and s.current == n - 1


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
def test_r3_quick_round_at_every_table_size(n):
    s = start(*quick_hands(n))
    run(s, *quick_moves(n))
    assert s.results[0].order == tuple(range(n))
    assert s.phase == E.DEAL


# =========================================================================================
# R4: the deal

@pytest.mark.parametrize("n", [2, 4, 7])
def test_r4_random_deal_deals_everything_from_left_of_the_dealer(n):
    s = E.new_match(RulesConfig(num_players=n))
    hands = E.random_deal(s, random.Random(11))
    assert 0 <= s.dealer < n
    E.check_deal(hands, n)  # a partition of the 45 cards, one non-empty hand each
    sizes = [h.bit_count() for h in hands]
    for j in range(n):  # the extra cards go to the first seats left of the dealer
        assert sizes[(s.dealer + 1 + j) % n] == 45 // n + (1 if j < 45 % n else 0)
    again = E.new_match(RulesConfig(num_players=n))
    assert E.random_deal(again, random.Random(11)) == hands and again.dealer == s.dealer


def test_r4_later_rounds_are_dealt_by_the_egg_holder():
    s = start(*quick_hands(4, first=2))  # order 2, 3, 0, 1: seat 1 ends with the Egg
    run(s, *quick_moves(4, first=2))
    assert s.results[0].egg == 1
    hands = E.random_deal(s, random.Random(5))
    assert s.dealer == 1
    assert [h.bit_count() for h in hands] == [11, 11, 12, 11]


def test_r4_explicit_deal_may_have_any_sizes_but_no_empty_hand():
    s = start("EGG", "10F", REST)
    assert [h.bit_count() for h in s.hands] == [1, 1, 43]
    t = E.new_match(RulesConfig(num_players=3))
    with pytest.raises(E.DealError):
        E.deal(t, [bits("EGG"), 0, ALL_CARDS & ~bits("EGG")])
    with pytest.raises(E.DealError):
        E.deal(t, [bits("EGG"), ALL_CARDS & ~bits("EGG")])  # two hands for three seats


def test_r4_hand_sizes_are_public_and_hands_private():
    env = make_env(deal_codes("10F 1E EGG", "2E 3E", REST), num_players=3)
    lay = layout(3)
    for seat, own in ((0, ["1E", "10F", "EGG"]), (1, ["2E", "3E"])):
        assert card_slice(env, seat, "hand") == own
    sizes0 = obs(env, 0)[lay["hand_size"]] * 45
    sizes1 = obs(env, 1)[lay["hand_size"]] * 45
    assert np.allclose(sizes0, [3, 2, 40]) and np.allclose(sizes1, [2, 40, 3])  # relative seats


# =========================================================================================
# R5: round 1 opens with the 10 of Fire

def test_r5_ten_of_fire_opens_alone():
    s = start("5E", "6E", "3E 10E 10F 10W", REST)
    assert s.phase == E.PLAY and s.current == 2
    assert legal(s) == {play(10, 1)}  # forced, even holding three 10s; no pass
    run(s, (2, play(10, 1)))
    assert pile(s) == ["10F"] and hand(s, 2) == "3E 10E 10W"
    assert s.current == 3 and (s.top_rank, s.top_count) == (10, 1)


@pytest.mark.parametrize("k, played, left", [
    (1, "10F", "3E 10E 10W"), (2, "10E 10F", "3E 10W"), (3, "10E 10W 10F", "3E")])
def test_r5_flag_off_opens_with_any_count_of_tens_including_the_ten_of_fire(k, played, left):
    s = start("5E", "6E", "3E 10E 10F 10W", REST, opening_ten_of_fire_alone=False)
    assert s.current == 2
    assert legal(s) == {play(10, 1), play(10, 2), play(10, 3)}
    run(s, (2, play(10, k)))
    assert pile(s) == [played] and hand(s, 2) == left
    assert s.current == 3 and s.top_count == k


@pytest.mark.parametrize("alone", [True, False])
def test_r5_holder_of_only_the_ten_of_fire(alone):
    s = start("5E", "10F 2E", REST, opening_ten_of_fire_alone=alone)
    assert s.current == 1 and legal(s) == {play(10, 1)}


# =========================================================================================
# R6: rounds 2+ open with the Dragon's highest single

def _round_two(round2: tuple, **flags) -> E.State:
    """Round 1 is the quick round of three players (order 0, 1, 2), round 2 is dealt as given."""
    s = start(*quick_hands(3), **flags)
    run(s, *quick_moves(3))
    E.deal(s, deal_masks(*round2))
    return s


def test_r6_dragon_leads_one_card_of_its_highest_number():
    s = _round_two(("3E 5L 9E 9W", "2E 2W 7L", REST), tribute_asks=0)
    assert (s.round_idx, s.dragon, s.phase, s.current) == (1, 0, E.PLAY, 0)
    assert legal(s) == {play(9, 1)}
    run(s, (0, play(9, 1)))
    assert pile(s) == ["9E"] and hand(s, 0) == "3E 5L 9W" and s.current == 1


def test_r6_dragon_without_numbered_card_passes_and_next_leads_freely():
    s = _round_two(("BEAST DARKLORD", "2E 2W 7L", REST), tribute_asks=0)
    assert s.current == 0 and legal(s) == {PASS}
    run(s, (0, PASS))
    assert s.current == 1 and s.top_rank == 0 and s.passed == 0
    assert legal(s) == {play(2, 1), play(2, 2), play(7, 1)}


def test_r6_opening_through_the_env_after_the_tribute():
    env = make_env(deal_codes(*quick_hands(3)), deal_codes("3E 5L 9E 9W", "2E 2W 7L", REST),
                   num_players=3)
    env_run(env, *quick_moves(3))
    assert env.round_index() == 1 and env.phase() == "ask"
    env_run(env, (0, PASS))  # no tribute asked
    assert env.phase() == "play" and env.legal_actions() == [play(9, 1)]
    env_run(env, (0, play(9, 1)))
    assert env.pile() == [["9E"]] and env.agent_selection == "player_1"


# =========================================================================================
# R7: pass or play; forced pass; suit order

def test_r7_forced_pass_is_a_step():
    s = start("10F 1E 1W 4E", REST, "5E 6E")
    open_and_clear(s)
    run(s, (0, play(1, 1)))
    assert pile(s) == ["1E"] and hand(s, 0) == "1W 4E"
    run(s, (1, PASS))
    assert s.current == 2 and legal(s) == {PASS}  # 5E 6E cannot go on a 1
    run(s, (2, PASS))  # the forced pass completes the all-pass
    assert s.top_rank == 0 and s.current == 0


def test_r7_partial_plays_use_suits_earth_water_fire_lightning_and_dragons_in_order():
    s = start("10F 2E 7E 7F 7L", REST, "3E DARKLORD EXECUTIONER")
    open_and_clear(s)
    run(s, (0, play(7, 2)))
    assert pile(s) == ["7E 7F"] and hand(s, 0) == "2E 7L"
    run(s, (1, PASS))
    assert legal(s) == {PASS, dragon(1)}
    run(s, (2, dragon(1)))
    assert s.played & bits("DARKLORD") and hand(s, 2) == "3E EXECUTIONER"


def test_r7_illegal_action_is_refused_and_changes_nothing():
    s = start("10F 2E 7E", REST, "3E")
    before = (s.hands[:], s.current, s.phase, s.pile)
    for bad in (PASS, play(7, 1), play(10, 2), dragon(1), ask("1E"), give("10F"), -1, 134):
        with pytest.raises(E.IllegalActionError):
            E.step(s, bad)
    assert (s.hands, s.current, s.phase, s.pile) == before


# =========================================================================================
# R8: leading

def test_r8_lead_any_count_of_one_number_but_never_a_dragon_card():
    s = start("10F 2E 2W 2F 5L BEAST", REST, "3E")
    open_and_clear(s)
    assert legal(s) == {play(2, 1), play(2, 2), play(2, 3), play(5, 1)}  # no pass, no dragon


def test_r8_leader_without_numbered_card_passes_and_the_next_leads():
    s = start("10F BEAST DARKLORD", REST, "4E 4W")
    open_and_clear(s)
    assert legal(s) == {PASS}
    run(s, (0, PASS))
    assert s.current == 1 and s.top_rank == 0 and s.passed == 0
    assert PASS not in legal(s) and not legal(s) & {dragon(1), dragon(2)}
    assert legal(s) == {play(n, k) for n in range(1, 11) for k in range(1, 5)
                        if k <= (s.hands[1] & RANK_MASK[n]).bit_count()}


def test_r8_egg_and_dragon_cards_never_lead():
    s = _round_two(("BEAST", "2E 2W 7L EGG DARKLORD", REST), tribute_asks=0)
    assert legal(s) == {PASS}
    run(s, (0, PASS))
    assert legal(s) == {play(2, 1), play(2, 2), play(7, 1)}


# =========================================================================================
# R9: following

def test_r9_follow_with_lower_or_equal_number_and_at_least_the_count():
    s = start("10F 2E 6E 6W", "3E 3W 3F 5E 6L 7E 7W 8E 8W 8F 10E BEAST", REST)
    open_and_clear(s)
    run(s, (0, play(6, 2)))
    assert legal(s) == {PASS, play(3, 2), play(3, 3), dragon(1)}
    run(s, (1, play(3, 3)))
    # seat 2 holds 1E 1W 1F 1L, 2W 2F 2L, 3L, ...: counts >= 3 of numbers <= 3, and 3L completes
    assert s.current == 2
    assert legal(s) == {PASS, play(1, 3), play(1, 4), play(2, 3), play(3, 1), dragon(1)}


# =========================================================================================
# R10: pass_locks_out

R10_DEAL = ("10F 2E", "8E 8W 9W 9F 9L 10E BEAST", REST)


@pytest.mark.parametrize("locks", [False, True])
def test_r10_pass_locks_out(locks):
    s = start(*R10_DEAL, pass_locks_out=locks)
    run(s, (0, play(10, 1)), (1, PASS))
    assert s.locked == (0b010 if locks else 0)
    run(s, (2, play(9, 1)))  # 9E: seat 1 holds 9W 9F 9L and is offered the completion
    assert s.phase == E.COMPLETE and s.current == 1
    run(s, (1, PASS))  # decline
    run(s, (0, PASS))
    assert s.locked == (0b011 if locks else 0)
    assert s.current == 1
    if locks:
        assert legal(s) == {PASS, play(9, 3)}  # only a pass, or the completion; no dragon
    else:
        assert legal(s) == {PASS, play(8, 1), play(8, 2), play(9, 1), play(9, 2), play(9, 3),
                            dragon(1)}


def test_r10_locked_passes_count_towards_the_all_pass():
    s = start(*R10_DEAL, pass_locks_out=True)
    run(s, (0, play(10, 1)), (1, PASS), (2, play(9, 1)), (1, PASS), (0, PASS), (1, PASS))
    assert s.top_rank == 0 and s.current == 2 and s.locked == 0


def test_r10_locked_player_may_still_complete():
    s = start(*R10_DEAL, pass_locks_out=True)
    run(s, (0, play(10, 1)), (1, PASS), (2, play(9, 1)), (1, PASS), (0, PASS), (1, play(9, 3)))
    assert s.top_rank == 0 and s.current == 1 and s.locked == 0
    assert hand(s, 1) == "8E 8W 10E BEAST"


@pytest.mark.parametrize("locks", [False, True])
def test_r10_declining_an_offer_never_locks(locks):
    s = start(*R10_DEAL, pass_locks_out=locks)
    run(s, (0, play(10, 1)), (1, play(10, 1)), (2, play(9, 1)))
    assert s.phase == E.COMPLETE and s.current == 1
    run(s, (1, PASS))
    assert s.locked == 0
    run(s, (0, PASS))
    assert s.locked == (0b001 if locks else 0)
    assert legal(s) == {PASS, play(8, 1), play(8, 2), play(9, 1), play(9, 2), play(9, 3),
                        dragon(1)}


@pytest.mark.parametrize("locks", [False, True])
def test_r10_passing_on_an_empty_pile_never_locks(locks):
    s = start("10F BEAST DARKLORD", REST, "4E 4W", pass_locks_out=locks)
    open_and_clear(s)
    run(s, (0, PASS))
    assert s.locked == 0 and s.passed == 0 and s.current == 1


# =========================================================================================
# R11: completing the set of four

def test_r11_completion_ignores_the_count_rule():
    s = start("10F 2E 7E 7W 7F", "3E 7L 10E", REST)
    open_and_clear(s)
    run(s, (0, play(7, 3)))
    assert legal(s) == {PASS, play(7, 1)}  # one 7 on three 7s
    run(s, (1, play(7, 1)))
    assert s.top_rank == 0 and s.plays == [] and s.current == 1
    assert s.played & RANK_MASK[7] == RANK_MASK[7] and hand(s, 1) == "3E 10E"


def test_r11_the_pile_cards_may_come_from_several_plays():
    s = start("10F 2E 7E", "3E 7W 10E", REST)
    open_and_clear(s)
    run(s, (0, play(7, 1)), (1, play(7, 1)))
    assert s.current == 2 and s.phase == E.PLAY
    assert play(7, 2) in legal(s)
    run(s, (2, play(7, 2)))
    assert s.top_rank == 0 and s.current == 2


def test_r11_a_card_cleared_earlier_blocks_the_completion():
    s = start("10F 2E 2W 7E 7W 7F", "3E 7L 10E", REST)
    open_and_clear(s)
    run(s, (0, play(7, 1)), (1, PASS), (2, PASS))  # 7E goes away with this pile
    run(s, (0, play(7, 2)))
    assert pile(s) == ["7W 7F"] and s.current == 1
    assert legal(s) == {PASS}  # 7L alone would not complete: 7E is gone


# =========================================================================================
# R12: completion out of turn

R12_DEAL3 = ("10F 2E 7E", "3E 10E", REST)


def test_r12_completion_offered_out_of_turn():
    s = start("10F 2E 7E", "3E 10E", "4E 7W 7F 7L", REST)
    open_and_clear(s)
    run(s, (0, play(7, 1)))
    assert s.phase == E.COMPLETE and s.current == 2 and s.turn == 1
    assert legal(s) == {PASS, play(7, 3)}
    run(s, (2, play(7, 3)))
    assert s.phase == E.PLAY and s.top_rank == 0 and s.current == 2 and hand(s, 2) == "4E"


@pytest.mark.parametrize("oot", [True, False])
def test_r12_completion_out_of_turn_flag(oot):
    s = start("10F 2E 7E", "3E 10E", "4E 7W 7F 7L", REST, completion_out_of_turn=oot)
    open_and_clear(s)
    run(s, (0, play(7, 1)))
    if oot:
        assert (s.phase, s.current) == (E.COMPLETE, 2)
        return
    assert (s.phase, s.current) == (E.PLAY, 1)
    run(s, (1, PASS))
    assert legal(s) == {PASS, play(4, 1), play(7, 1), play(7, 2), play(7, 3)}
    run(s, (2, play(7, 3)))  # its own turn
    assert s.top_rank == 0 and s.current == 2


def test_r12_decline_is_not_a_turn_and_not_a_pass_towards_the_all_pass():
    s = start(*R12_DEAL3)
    open_and_clear(s)
    run(s, (0, play(7, 1)))
    assert (s.phase, s.current) == (E.COMPLETE, 2)
    run(s, (2, PASS))
    assert (s.phase, s.current, s.passed) == (E.PLAY, 1, 0)
    run(s, (1, PASS))
    assert s.current == 2 and pile(s) == ["7E"]  # the decline did not count
    assert play(7, 3) in legal(s)  # its own turn offers the completion again
    run(s, (2, PASS))
    assert s.top_rank == 0 and s.current == 0


def test_r12_no_offer_when_the_completer_is_the_next_player():
    s = start("10F 2E 7E", REST, "3E 10E")
    open_and_clear(s)
    run(s, (0, play(7, 1)))
    assert (s.phase, s.current) == (E.PLAY, 1)
    run(s, (1, play(7, 3)))
    assert s.top_rank == 0 and s.current == 1


def test_r12_no_offer_when_the_completer_just_played():
    s = start("10F 2E 7E 7W 7F 7L", REST, "3E 10E")
    open_and_clear(s)
    run(s, (0, play(7, 2)))
    assert (s.phase, s.current) == (E.PLAY, 1)
    run(s, (1, PASS), (2, PASS))  # all-pass: it never gets to complete
    assert s.top_rank == 0 and s.current == 0 and hand(s, 0) == "2E 7F 7L"


@pytest.mark.parametrize("oot", [True, False])
def test_r12_offer_after_the_opening_play(oot):
    s = start("10F 2E", "3E", "4E 10E 10W 10L", REST, completion_out_of_turn=oot)
    run(s, (0, play(10, 1)))
    if oot:
        assert (s.phase, s.current, s.turn) == (E.COMPLETE, 2, 1)
        assert legal(s) == {PASS, play(10, 3)}
    else:
        assert (s.phase, s.current) == (E.PLAY, 1)


def test_r12_offer_and_decline_only_in_the_offered_players_observation():
    env = make_env(deal_codes(*R12_DEAL3), num_players=3)
    env_run(env, (0, play(10, 1)), (1, PASS), (2, PASS), (0, play(7, 1)))
    assert env.agent_selection == "player_2" and env.phase() == "complete"
    assert slot(env, 2, "phase") == [0, 1, 0, 0, 0]
    for seat in (0, 1):
        assert slot(env, seat, "phase") == [1, 0, 0, 0, 0]
        assert mask_set(env, seat) == set()
        assert slot(env, seat, "to_act")[(1 - seat) % 3] == 1  # still seat 1's turn
    assert mask_set(env, 2) == {PASS, play(7, 3)}
    before = {seat: obs(env, seat).copy() for seat in (0, 1)}
    env_run(env, (2, PASS))
    for seat in (0, 1):  # the decline changed nothing the others see
        assert np.array_equal(obs(env, seat), before[seat])
    assert slot(env, 2, "phase") == [1, 0, 0, 0, 0] and env.agent_selection == "player_1"


# =========================================================================================
# R13: four cards of a number on the pile clear it

def test_r13_four_of_a_kind_lead_clears_at_once():
    s = start("10F 2E 5E 5W 5F 5L", REST, "3E 10E")
    open_and_clear(s)
    run(s, (0, play(5, 4)))
    assert s.top_rank == 0 and s.current == 0 and legal(s) == {play(2, 1)}
    assert s.played & RANK_MASK[5] == RANK_MASK[5]


def test_r13_four_of_a_kind_follow_clears():
    s = start("10F 2E 9E 9W", "3E 5E 5W 5F 5L 10E", REST)
    open_and_clear(s)
    run(s, (0, play(9, 1)), (1, play(5, 4)))
    assert s.top_rank == 0 and s.current == 1 and hand(s, 1) == "3E 10E"
    assert legal(s) == {play(3, 1), play(10, 1)}


# =========================================================================================
# R14: the completer leads; the players in between lose their turn

def test_r14_completer_leads_and_skipped_players_lose_their_turn():
    s = start("10F 2E 7E", "3E 10E", "4E 5E 7W 7F 7L", REST)
    open_and_clear(s)
    run(s, (0, play(7, 1)), (2, play(7, 3)))  # out of turn, before seat 1
    assert s.current == 2 and s.top_rank == 0 and legal(s) == {play(4, 1), play(5, 1)}
    run(s, (2, play(4, 1)))
    assert s.current == 3  # play continues to the completer's left: seat 1 was skipped


def test_r14_completer_going_out_hands_the_lead_to_its_left():
    s = start("10F 2E 7E", REST, "7W 7F 7L")
    open_and_clear(s)
    run(s, (0, play(7, 1)))
    assert (s.phase, s.current) == (E.COMPLETE, 2)
    run(s, (2, play(7, 3)))
    assert s.finish == [2] and s.current == 0 and s.top_rank == 0


# =========================================================================================
# R15: dragon cards

def test_r15_dragon_card_clears_whatever_the_top_and_its_player_leads():
    s = start("10F 1E 1W 1F 1L 3E", "8E 10E BEAST", REST)
    open_and_clear(s)
    run(s, (0, play(1, 3)))  # the lowest top there is; it keeps 1L: no completion offer
    assert s.current == 1 and legal(s) == {PASS, dragon(1)}
    run(s, (1, dragon(1)))
    assert s.top_rank == 0 and s.plays == [] and s.pile == 0 and s.current == 1
    assert s.played & bits("BEAST") and hand(s, 1) == "8E 10E"
    assert legal(s) == {play(8, 1), play(10, 1)}


def test_r15_no_dragon_card_out_of_turn_or_on_an_empty_pile():
    s = start("10F 2E 7E", "3E 10E", "4E 7W 7F 7L DARKLORD", REST)
    open_and_clear(s)
    run(s, (0, play(7, 1)))
    assert s.phase == E.COMPLETE and legal(s) == {PASS, play(7, 3)}  # no dragon out of turn
    run(s, (2, PASS), (1, PASS))
    assert legal(s) == {PASS, play(4, 1), play(7, 1), play(7, 2), play(7, 3), dragon(1)}
    run(s, (2, play(7, 3)))
    assert legal(s) == {play(4, 1)}  # it leads: the Darklord cannot start a pile


def test_r15_dragon_card_as_the_last_card_goes_out_and_the_left_leads():
    s = start("10F 10E 2E", "BEAST", REST)
    run(s, (0, play(10, 1)), (1, dragon(1)))
    assert s.finish == [1] and s.top_rank == 0 and s.current == 2


# =========================================================================================
# R16: dragons_per_play

def test_r16_one_dragon_card_per_play():
    s = start("10F 2E 2W 2F 2L 3E", "8E 10E BEAST DARKLORD", REST)
    open_and_clear(s)
    run(s, (0, play(2, 3)))
    assert legal(s) == {PASS, dragon(1)}
    run(s, (1, dragon(1)))
    assert hand(s, 1) == "8E 10E DARKLORD" and s.current == 1
    assert legal(s) == {play(8, 1), play(10, 1)}


@pytest.mark.parametrize("k, left", [(1, "8E 10E DARKLORD"), (2, "8E 10E")])
def test_r16_any_dragon_cards_per_play(k, left):
    s = start("10F 2E 2W 2F 2L 3E", "8E 10E BEAST DARKLORD", REST, dragons_per_play="any")
    open_and_clear(s)
    run(s, (0, play(2, 3)))
    assert legal(s) == {PASS, dragon(1), dragon(2)}
    run(s, (1, dragon(k)))
    assert hand(s, 1) == left and s.top_rank == 0 and s.current == 1


def test_r16_bad_value_is_an_error():
    with pytest.raises(ConfigError):
        RulesConfig(dragons_per_play="two")


# =========================================================================================
# R17: all-pass

def test_r17_all_pass_clears_when_every_other_active_player_passed():
    s = start("10F 2E", REST, "3E", "4E")
    run(s, (0, play(10, 1)), (1, PASS))
    assert pile(s) == ["10F"] and s.passed == 0b0010
    run(s, (2, PASS))
    assert pile(s) == ["10F"] and s.passed == 0b0110
    run(s, (3, PASS))
    assert s.top_rank == 0 and s.passed == 0 and s.current == 0


R17_OUT_DEAL = ("10F 3E", REST, "4E 10E", "5E 10W")


def test_r17_all_pass_after_the_latest_player_went_out_needs_everyone():
    s = start(*R17_OUT_DEAL)
    open_and_clear(s)
    run(s, (0, play(3, 1)))  # its last card
    assert s.finish == [0] and s.current == 1
    run(s, (1, PASS), (2, PASS))
    assert pile(s) == ["3E"] and s.current == 3
    run(s, (3, PASS))
    assert s.top_rank == 0 and s.current == 1


def test_r17_a_new_play_restarts_the_count():
    s = start("10F 2E", REST, "3E 9E 9W", "4E")
    run(s, (0, play(10, 1)), (1, PASS), (2, play(9, 1)), (3, PASS), (0, PASS))
    assert s.passed == 0b1001 and pile(s) == ["10F", "9E"] and s.current == 1
    run(s, (1, PASS))
    assert s.top_rank == 0 and s.current == 2


# =========================================================================================
# R18: who leads after a clear

def test_r18_all_pass_leader_is_the_latest_player():
    s = start("10F 2E", REST, "3E 9E 9W", "4E")
    run(s, (0, play(10, 1)), (1, PASS), (2, play(9, 1)), (3, PASS), (0, PASS), (1, PASS))
    assert s.current == 2


R18_DEAL = ("10F 6E", "9E", "4E 6W 9W 10E", REST)


def test_r18_leader_gone_out_lead_goes_to_the_next_active_player():
    s = start(*R18_DEAL)
    run(s, (0, play(10, 1)), (1, play(9, 1)))
    assert s.finish == [1]
    run(s, (2, PASS), (3, PASS), (0, play(6, 1)))
    assert s.finish == [1, 0] and s.current == 2
    run(s, (2, PASS), (3, PASS))  # seat 0 made the latest play, seat 1 is out too
    assert s.top_rank == 0 and s.current == 2


# =========================================================================================
# R19: the Egg is never played; who knows where it is

def test_r19_egg_can_never_be_played_or_lead():
    s = start("10F 2E", "EGG", REST)
    run(s, (0, play(10, 1)))
    assert (s.phase, s.current) == (E.COMPLETE, 2)  # seat 2 holds 10E 10W 10L
    run(s, (2, PASS))
    assert s.current == 1 and legal(s) == {PASS}  # the Egg cannot go on the pile
    run(s, (1, PASS), (2, PASS), (0, play(2, 1)))
    assert s.finish == [0] and (s.phase, s.current) == (E.COMPLETE, 2)
    run(s, (2, PASS), (1, PASS), (2, PASS))
    assert s.top_rank == 0 and s.current == 1  # due to lead, with only the Egg
    assert legal(s) == {PASS}
    run(s, (1, PASS))
    assert s.current == 2 and s.top_rank == 0 and hand(s, 1) == "EGG" and s.finish == [0]


def test_r19_egg_holder_known_only_to_its_holder_until_first_passed():
    env = make_env(deal_codes("10F 2E EGG", "3E 10E", REST), num_players=3)
    assert env.engine_state.egg_known == 0b001
    assert slot(env, 0, "egg_holder") == [1, 0, 0]
    assert slot(env, 1, "egg_holder") == [0, 0, 0] and slot(env, 2, "egg_holder") == [0, 0, 0]
    env_run(env, (0, play(10, 1)), (1, PASS), (2, PASS))  # seat 0 clears: the Egg goes to 1
    assert env.egg_holder() == "player_1" and env.engine_state.egg_known == 0b111
    assert slot(env, 0, "egg_holder") == [0, 1, 0]  # relative seats: 1 is to seat 0's left
    assert slot(env, 1, "egg_holder") == [1, 0, 0]
    assert slot(env, 2, "egg_holder") == [0, 0, 1]


def test_r19_egg_knowledge_resets_with_each_deal():
    s = start("10F EGG", REST, num_rounds=2, tribute_asks=0)
    run(s, (0, play(10, 1)), (1, PASS))  # the Egg passes to seat 1 and seat 0 goes out
    assert s.results[0].order == (0, 1)
    assert s.egg_known == 0b11
    E.deal(s, deal_masks("3E EGG", REST))
    assert s.egg_holder == 0 and s.egg_known == 0b01


@pytest.mark.parametrize("egg_in_tribute", [False, True])
def test_r19_egg_given_in_tribute_known_to_the_two_players_only(egg_in_tribute):
    env = make_env(deal_codes(*quick_hands(3)), deal_codes("3E 9E EGG", "5E", REST),
                   num_players=3, egg_in_tribute=egg_in_tribute)
    env_run(env, *quick_moves(3))
    assert slot(env, 0, "egg_holder") == [1, 0, 0]
    assert slot(env, 1, "egg_holder") == [0, 0, 0] and slot(env, 2, "egg_holder") == [0, 0, 0]
    env_run(env, (0, ask("10L")), (0, PASS))
    assert env.phase() == "give"
    assert (give("EGG") in env.legal_actions()) == egg_in_tribute
    if not egg_in_tribute:
        return
    env_run(env, (0, give("EGG")))
    assert env.egg_holder() == "player_2" and "EGG" in env.hand("player_2")
    assert env.engine_state.egg_known == 0b101
    assert slot(env, 0, "egg_holder") == [0, 0, 1]
    assert slot(env, 2, "egg_holder") == [1, 0, 0]
    assert slot(env, 1, "egg_holder") == [0, 0, 0]


# =========================================================================================
# R20: the Egg holder who clears passes the Egg to its left

def test_r20_egg_passes_on_an_all_pass_clear():
    s = start("10F 2E EGG", "3E 10E", REST)
    run(s, (0, play(10, 1)), (1, PASS), (2, PASS))
    assert hand(s, 0) == "2E" and hand(s, 1) == "3E 10E EGG"
    assert s.egg_holder == 1 and s.egg_known == 0b111 and s.current == 0  # the clearer leads


def test_r20_egg_passes_on_a_completion_clear():
    s = start("10F 2E 7E", "3E 7W 7F 7L 10E EGG", REST)
    open_and_clear(s)
    assert s.egg_holder == 1  # seat 0 cleared: the Egg stays where it is
    run(s, (0, play(7, 1)), (1, play(7, 3)))
    assert hand(s, 1) == "3E 10E" and s.egg_holder == 2 and "EGG" in hand(s, 2)
    assert s.current == 1


def test_r20_egg_passes_on_an_out_of_turn_completion():
    s = start(*R12_DEAL3)  # seat 2 (the rest) holds the Egg
    open_and_clear(s)
    run(s, (0, play(7, 1)), (2, play(7, 3)))
    assert s.egg_holder == 0 and "EGG" in hand(s, 0) and s.current == 2


def test_r20_egg_passes_on_a_four_of_a_kind_clear():
    s = start("2E 10E 10W 10F 10L EGG", "3E", REST, opening_ten_of_fire_alone=False)
    run(s, (0, play(10, 4)))
    assert s.top_rank == 0 and hand(s, 0) == "2E" and s.egg_holder == 1 and s.current == 0


def test_r20_egg_passes_on_a_dragon_clear():
    s = start("10F 2E 2W 2F 2L 3E", "8E 10E BEAST EGG", REST)
    open_and_clear(s)
    run(s, (0, play(2, 3)), (1, dragon(1)))
    assert hand(s, 1) == "8E 10E" and s.egg_holder == 2 and s.current == 1


def test_r20_egg_skips_players_who_are_out():
    s = start("10F 4E", "8E 8W 9E 10E EGG", "9F", REST)
    run(s, (0, play(10, 1)), (1, play(9, 1)), (2, play(9, 1)))
    assert s.finish == [2]
    run(s, (3, PASS), (0, PASS), (1, play(8, 2)), (3, PASS), (0, PASS))
    assert s.egg_holder == 3 and hand(s, 1) == "10E" and s.current == 1


# =========================================================================================
# R21: the Egg holder cannot go out; passing the Egg can empty its hand

def test_r21_holder_of_only_the_egg_is_not_out_until_it_passes_it():
    s = start("10F EGG", "3E 10E", REST)
    run(s, (0, play(10, 1)))
    assert hand(s, 0) == "EGG" and s.active & 1 and s.finish == []
    run(s, (1, PASS), (2, PASS))
    assert hand(s, 0) == "" and s.finish == [0] and s.egg_holder == 1
    assert s.current == 1  # the new Egg holder, left of the one who went out, leads


def test_r21_passing_the_egg_can_end_the_round():
    s = start("10F EGG", REST)
    run(s, (0, play(10, 1)), (1, PASS))
    assert s.results[0].order == (0, 1) and s.phase == E.DEAL


def test_r21_dragon_card_leaving_only_the_egg_passes_it_and_goes_out():
    s = start("10F 10E 2E", "BEAST EGG", REST)
    run(s, (0, play(10, 1)), (1, dragon(1)))
    assert hand(s, 1) == "" and s.finish == [1] and s.egg_holder == 2 and s.current == 2


def test_r21_completing_with_the_last_numbered_cards_passes_the_egg_and_goes_out():
    s = start("10F 10E 2E 7E", "7W 7F 7L EGG", REST)
    open_and_clear(s)
    run(s, (0, play(7, 1)), (1, play(7, 3)))
    assert hand(s, 1) == "" and s.finish == [1] and s.egg_holder == 2 and s.current == 2


# =========================================================================================
# R22: going out

def test_r22_out_player_leaves_the_pile_and_play_continues():
    s = start(*R17_OUT_DEAL)
    open_and_clear(s)
    run(s, (0, play(3, 1)))
    assert s.finish == [0] and not s.active & 1 and hand(s, 0) == ""
    assert pile(s) == ["3E"] and s.current == 1 and play(3, 3) in legal(s)
    run(s, (1, play(3, 3)))  # seat 1 completes on the pile the out player left
    assert s.top_rank == 0 and s.current == 1


def test_r22_first_out_is_the_next_rounds_dragon():
    s = start(*quick_hands(4, first=2))
    run(s, *quick_moves(4, first=2))
    assert s.results[0].order == (2, 3, 0, 1)
    E.deal(s, deal_masks("3E", "4E", "5E", REST))
    assert (s.dragon, s.victim, s.phase, s.current) == (2, 1, E.ASK, 2)


# =========================================================================================
# R23: one active player left

@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_r23_round_ends_with_one_active_player_the_egg_holder_last(n):
    s = start(*quick_hands(n, first=n - 1))
    moves = quick_moves(n, first=n - 1)
    run(s, *moves[:-1])
    assert s.phase == E.PLAY and s.results == []
    run(s, moves[-1])
    last = n - 2
    assert s.results[0].order == (n - 1,) + tuple(range(n - 1))
    assert s.results[0].egg == last and s.egg_holder == last and "EGG" in hand(s, last)
    assert s.phase == E.DEAL and s.current == -1


# =========================================================================================
# R24: deadlock

def _deadlock_moves(last: str) -> list:
    moves = [(2, play(10, 1)), (3, PASS), (0, PASS), (1, PASS)]
    tens = [(2, play(10, 3)), (3, PASS), (0, PASS), (1, PASS)]
    quads = [(2, play(r, 4)) for r in range(9, 0, -1)]
    return moves + (tens + quads if last == "quad" else quads + tens)


@pytest.mark.parametrize("last", ["quad", "all-pass"])
def test_r24_deadlock_ranking_ties_by_seat_order_from_the_leader(last):
    s = start("DARKLORD EGG", "HORSEMAN", REST, "EXECUTIONER")  # seat 2: numbers and Beast
    moves = _deadlock_moves(last)
    run(s, *moves[:-1])
    assert s.phase == E.PLAY
    run(s, moves[-1])
    res = s.results[0]
    # all four players still in; seat 2 was due to lead; 1 card each: 2, 3, 1; Egg last
    assert res.deadlock and res.order == (2, 3, 1, 0)
    assert res.rewards == pytest.approx((-1.0, -1 / 3, 1.0, 1 / 3))


def test_r24_deadlock_ranking_fewer_cards_first():
    s = start("EGG", "HORSEMAN", REST, "BEAST DARKLORD EXECUTIONER")  # seat 2: the 40 numbers
    run(s, *_deadlock_moves("quad"))
    res = s.results[0]
    # seat 2 went out with its last quad; seat 3 was due to lead but holds 3 cards to seat 1's 1
    assert res.deadlock and res.order == (2, 1, 3, 0)


def test_r24_deadlock_after_a_dragon_clear():
    s = start("DARKLORD EGG", "HORSEMAN", REST, "EXECUTIONER")
    moves = _deadlock_moves("all-pass")[:-3] + [(3, dragon(1))]
    run(s, *moves)
    res = s.results[0]
    # seat 3 went out with its dragon; seat 0 (the Egg) was due to lead: ties go 1 then 2
    assert res.deadlock and res.order == (3, 1, 2, 0)


def test_r24_deadlock_through_the_env_info():
    env = make_env(deal_codes("DARKLORD EGG", "HORSEMAN", REST, "EXECUTIONER"))
    env_run(env, *_deadlock_moves("quad"))
    info = env.infos["player_0"]["round_result"]
    assert info["deadlock"] is True
    assert info["finish_order"] == ["player_2", "player_3", "player_1", "player_0"]
    assert info["egg"] == "player_0" and info["dragon"] == "player_2"


def test_r24_no_deadlock_while_an_active_player_holds_a_numbered_card():
    s = start("DARKLORD EGG", "HORSEMAN 1E", REST, "EXECUTIONER")  # seat 2: 39 numbers, Beast
    run(s, *_deadlock_moves("quad")[:-1])
    run(s, (2, play(1, 3)))
    assert (s.phase, s.current) == (E.COMPLETE, 1)  # 1E would complete the 1s
    run(s, (1, PASS), (3, PASS), (0, PASS), (1, PASS))  # all-pass clear: 1E is still held
    assert (s.phase, s.current, s.results) == (E.PLAY, 2, [])
    assert legal(s) == {PASS}  # seat 2 holds only the Beast
    run(s, (2, PASS), (3, PASS), (0, PASS))
    assert s.current == 1 and legal(s) == {play(1, 1)}
    run(s, (1, play(1, 1)), (2, PASS), (3, PASS))
    assert s.results == []
    run(s, (0, PASS))  # now every numbered card is played: deadlock, seat 1 due to lead
    assert s.results[0].deadlock and s.results[0].order == (1, 2, 3, 0)


# =========================================================================================
# R25: finishing order

def test_r25_finishing_order_is_the_order_of_going_out():
    s = start(*R18_DEAL)
    run(s, (0, play(10, 1)), (1, play(9, 1)), (2, PASS), (3, PASS), (0, play(6, 1)),
        (2, PASS), (3, PASS))
    run(s, (2, play(4, 1)), (3, PASS), (2, play(6, 1)), (3, PASS), (2, play(9, 1)), (3, PASS))
    assert s.finish == [1, 0] and s.phase == E.PLAY
    run(s, (2, play(10, 1)))
    res = s.results[0]
    assert res.order == (1, 0, 2, 3) and sorted(res.order) == [0, 1, 2, 3]
    assert (res.dragon, res.egg, res.deadlock) == (1, 3, False)


# =========================================================================================
# R26: num_rounds

@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_r26_match_is_num_rounds_rounds(rounds):
    s = start(*quick_hands(3), num_rounds=rounds)
    for r in range(rounds):
        if r:
            assert s.phase == E.DEAL
            E.deal(s, deal_masks(*quick_hands(3)))
        run(s, *quick_moves(3, tribute=r > 0))
    assert s.phase == E.DONE and len(s.results) == rounds
    with pytest.raises(E.DealError):
        E.deal(s, deal_masks(*quick_hands(3)))


@pytest.mark.parametrize("rounds", [1, 2])
def test_r26_episode_ends_after_the_last_round_in_the_env(rounds):
    deals = [deal_codes(*quick_hands(3))] * rounds
    env = make_env(*deals, num_players=3, num_rounds=rounds)
    for r in range(rounds):
        assert not any(env.terminations.values())
        env_run(env, *quick_moves(3, tribute=r > 0))
    assert all(env.terminations.values()) and env.phase() == "done"


def test_r26_bad_num_rounds_is_an_error():
    assert RulesConfig().num_rounds == 3
    with pytest.raises(ConfigError):
        RulesConfig(num_rounds=0)


# =========================================================================================
# R27: rewards per round

@pytest.mark.parametrize("scheme, n, by_place", [
    ("rank", 2, [1, -1]),
    ("rank", 3, [1, 0, -1]),
    ("rank", 4, [1, 1 / 3, -1 / 3, -1]),
    ("rank", 5, [1, 0.5, 0, -0.5, -1]),
    ("dragon_egg", 2, [1, -1]),
    ("dragon_egg", 4, [1, 0, 0, -1]),
    ("dragon_egg", 5, [1, 0, 0, 0, -1]),
])
def test_r27_reward_scheme(scheme, n, by_place):
    env = make_env(deal_codes(*quick_hands(n, first=1)), num_players=n, reward_scheme=scheme)
    moves = quick_moves(n, first=1)
    env_run(env, *moves[:-1])
    assert all(r == 0 for r in env.rewards.values())
    env_run(env, moves[-1])
    expected = {f"player_{(1 + p) % n}": r for p, r in enumerate(by_place)}
    assert env.rewards == pytest.approx(expected)
    assert sum(env.rewards.values()) == pytest.approx(0.0)
    env.step(PASS)  # round 2: the Dragon asks for nothing; that step rewards nobody
    assert all(r == 0 for r in env.rewards.values())


def test_r27_bad_scheme_is_an_error():
    assert RulesConfig().reward_scheme == "rank"
    with pytest.raises(ConfigError):
        RulesConfig(reward_scheme="winner")


# =========================================================================================
# R28: match score

def test_r28_match_score_is_the_sum_of_round_rewards():
    env = make_env(deal_codes(*quick_hands(3)), deal_codes("3E 10E", "10W", REST),
                   num_players=3, num_rounds=2, tribute_asks=0)
    env_run(env, *quick_moves(3))
    assert env.scores == pytest.approx({"player_0": 1, "player_1": 0, "player_2": -1})
    env_run(env, (0, play(10, 1)), (1, play(10, 1)), (2, PASS), (0, play(3, 1)))
    assert env.engine_state.results[1].order == (1, 0, 2)
    assert env.scores == pytest.approx({"player_0": 1, "player_1": 1, "player_2": -2})
    lay = layout(3)
    assert obs(env, 2)[lay["score"]] * 2 == pytest.approx([-2, 1, 1])  # relative, / num_rounds


# =========================================================================================
# R29: round_result in every agent's info

def test_r29_round_result_info():
    env = make_env(deal_codes(*quick_hands(3, first=1)), num_players=3)
    moves = quick_moves(3, first=1)
    env_run(env, *moves[:-1])
    assert all("round_result" not in info for info in env.infos.values())
    env_run(env, moves[-1])
    expected = {"round": 0, "finish_order": ["player_1", "player_2", "player_0"],
                "dragon": "player_1", "egg": "player_0", "deadlock": False}
    for agent in env.possible_agents:
        assert env.infos[agent]["round_result"] == expected
    assert env.round_index() == 1 and env.phase() == "ask" and env.agent_selection == "player_1"
    env_run(env, (1, PASS))
    assert all("round_result" not in info for info in env.infos.values())


def test_r29_round_result_info_of_the_last_round():
    env = make_env(deal_codes(*quick_hands(2, first=1)), num_players=2, num_rounds=1)
    env_run(env, *quick_moves(2, first=1))
    assert env.phase() == "done" and all(env.terminations.values())
    for agent in env.possible_agents:
        assert env.infos[agent]["round_result"] == {
            "round": 0, "finish_order": ["player_1", "player_0"], "dragon": "player_1",
            "egg": "player_0", "deadlock": False}


# =========================================================================================
# R30: tribute between the Dragon and the last round's Egg holder

def test_r30_dragon_takes_tribute_from_the_egg_holder_only_then_opens():
    s = _round_two(("3E 9E 9W", "5E 6E", REST))  # the Dragon is seat 0, the Egg holder seat 2
    victim_hand = set(codes(s.hands[2]))
    assert (s.phase, s.current, s.dragon, s.victim) == (E.ASK, 0, 0, 2)
    run(s, (0, ask("10L")), (0, ask("1E")))
    assert (s.phase, s.current) == (E.GIVE, 0) and hand(s, 0) == "1E 3E 9E 9W 10L"
    run(s, (0, give("3E")), (0, give("1E")))
    assert hand(s, 0) == "9E 9W 10L" and hand(s, 1) == "5E 6E"
    assert set(codes(s.hands[2])) == victim_hand - {"10L"} | {"3E"}
    assert (s.phase, s.current) == (E.PLAY, 0)
    assert legal(s) == {play(10, 1)}  # R6 after the tribute: the 10 it took is its highest


# =========================================================================================
# R31: the asks

def test_r31_asks_name_a_card_the_dragon_lacks_never_the_egg_nor_twice():
    s = _round_two(("3E 9E 9W", "5E 6E", REST))
    askable = {ask(c) for c in CARD_CODES if c not in ("EGG", "3E", "9E", "9W")}
    assert legal(s) == {PASS} | askable and len(askable) == 41
    run(s, (0, ask("5E")))  # a miss: seat 1 holds it, not the Egg holder
    assert s.phase == E.ASK and s.asks_left == 1 and hand(s, 0) == "3E 9E 9W"
    assert legal(s) == {PASS} | askable - {ask("5E")}
    with pytest.raises(ValueError):
        ask("EGG")


def test_r31_dragon_may_stop_before_asking():
    s = _round_two(("3E 9E 9W", "5E 6E", REST))
    run(s, (0, PASS))
    assert (s.phase, s.current) == (E.PLAY, 0) and legal(s) == {play(9, 1)}
    assert s.asked == 0 and s.hits == 0


@pytest.mark.parametrize("asks", [0, 1, 2, 3, 44])
def test_r31_tribute_asks_flag(asks):
    s = _round_two(("3E 9E 9W", "5E 6E", REST), tribute_asks=asks)
    if asks == 0:  # no tribute at all: the Dragon opens at once
        assert (s.phase, s.current) == (E.PLAY, 0) and legal(s) == {play(9, 1)}
        return
    misses = ["5E", "6E"][: max(0, min(asks, 3) - 1)]  # seat 1 holds these: misses
    for i, card in enumerate(misses):
        assert (s.phase, s.asks_left) == (E.ASK, asks - i)
        run(s, (0, ask(card)))
    run(s, (0, ask("10L")))  # a hit
    if asks <= 3:  # that was the last ask
        assert s.phase == E.GIVE
    else:
        assert (s.phase, s.asks_left) == (E.ASK, asks - 3)
        run(s, (0, PASS))
        assert s.phase == E.GIVE
    assert s.hits == bits("10L") and s.gives_left == 1


def test_r31_tribute_asks_range():
    assert RulesConfig().tribute_asks == 2
    RulesConfig(tribute_asks=44)
    for bad in (-1, 45):
        with pytest.raises(ConfigError):
            RulesConfig(tribute_asks=bad)


# =========================================================================================
# R32: hits and misses

def test_r32_egg_holder_hands_over_a_named_card_and_the_dragon_learns_hit_or_miss():
    env = make_env(deal_codes(*quick_hands(3)), deal_codes("3E 9E 9W", "5E 6E", REST),
                   num_players=3)
    env_run(env, *quick_moves(3))
    env_run(env, (0, ask("10L")))  # a hit
    assert "10L" in env.hand("player_0") and "10L" not in env.hand("player_2")
    assert card_slice(env, 0, "tribute_taken") == ["10L"]
    env_run(env, (0, ask("5E")))  # a miss: seat 1 keeps it
    assert env.hand("player_1") == ["5E", "6E"]
    assert card_slice(env, 0, "tribute_asked") == ["5E", "10L"]
    assert card_slice(env, 0, "tribute_taken") == ["10L"]
    assert env.phase() == "give" and env.agent_selection == "player_0"


# =========================================================================================
# R33: giving back

@pytest.mark.parametrize("asked, gives", [
    (["10L", "1E"], 2), (["10L", "5E"], 1), (["5E", "6E"], 0)])
def test_r33_one_card_back_for_each_card_received(asked, gives):
    s = _round_two(("3E 9E 9W", "5E 6E", REST))
    run(s, *[(0, ask(c)) for c in asked])
    for _ in range(gives):
        assert s.phase == E.GIVE and s.current == 0
        run(s, (0, give("3E" if "3E" in hand(s, 0) else "9W")))
    assert s.phase == E.PLAY and s.current == 0 and s.hands[0].bit_count() == 3
    assert s.given.bit_count() == gives


@pytest.mark.parametrize("egg_in_tribute", [False, True])
def test_r33_give_any_card_including_one_just_received_egg_only_with_the_flag(egg_in_tribute):
    s = _round_two(("3E 9E EGG", "5E", REST), egg_in_tribute=egg_in_tribute)
    assert GIVE_BASE - ASK_BASE == 44 and EGG == 44  # ask actions exist for cards 0..43 only
    with pytest.raises(ValueError):
        ask("EGG")
    run(s, (0, ask("10L")), (0, ask("5E")))
    expected = {give("3E"), give("9E"), give("10L")}
    assert legal(s) == (expected | {give("EGG")} if egg_in_tribute else expected)
    if egg_in_tribute:
        run(s, (0, give("EGG")))
        assert s.egg_holder == 2 and "EGG" in hand(s, 2) and hand(s, 0) == "3E 9E 10L"
        assert s.egg_known == 0b101
    else:
        run(s, (0, give("10L")))  # the card it just took
        assert hand(s, 0) == "3E 9E EGG" and "10L" in hand(s, 2)
    assert s.phase == E.PLAY and s.current == 0


# =========================================================================================
# R34: the exchange is private to the two players

def test_r34_tribute_is_private_to_the_dragon_and_the_egg_holder():
    env = make_env(deal_codes(*quick_hands(3)), deal_codes("3E 9E 9W", "5E 6E", REST),
                   num_players=3)
    env_run(env, *quick_moves(3))
    lay = layout(3)
    assert np.allclose(obs(env, 1)[lay["hand_size"]] * 45, [2, 40, 3])  # seat 1, 2, 0
    env_run(env, (0, ask("10L")), (0, ask("5E")))
    assert np.allclose(obs(env, 1)[lay["hand_size"]] * 45, [2, 39, 4])
    for seat in (0, 2):
        assert card_slice(env, seat, "tribute_asked") == ["5E", "10L"]
        assert card_slice(env, seat, "tribute_taken") == ["10L"]
    env_run(env, (0, give("3E")))
    for seat in (0, 2):
        assert card_slice(env, seat, "tribute_given") == ["3E"]
    for name in ("tribute_asked", "tribute_taken", "tribute_given"):
        assert card_slice(env, 1, name) == []
    assert obs(env, 1)[lay["asks_left"]][0] == 0
    assert np.allclose(obs(env, 1)[lay["hand_size"]] * 45, [2, 40, 3])
