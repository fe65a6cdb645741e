"""Determinization: engine states sampled consistently with what one player knows.

:func:`sample_world` turns a player's observation (decoded as an
:class:`~dragons_egg_env.observation.ObsView`) into a full engine
:class:`~dragons_egg_env.engine.State` in which that player sits at seat 0 (seats are
relative). Its own hand, the pile, the played cards, hand sizes, who is out, who passed, the
phase and the scores are copied; the hidden cards are dealt at random to the other players,
consistently with:

- hand sizes;
- the Egg: with its known holder, else dealt like any other hidden card (so it lands with an
  active player, in proportion to the room left in its hand);
- tribute knowledge (R32..R34): as the Dragon, cards given back are in the payer's hand and
  cards asked for and missed are not; as the payer, cards taken are in the Dragon's hand and
  missed cards are not (the Dragon only asks for cards it does not hold).

Among the deals consistent with these facts it samples uniformly. It reads nothing but the
view, so it can never use a hidden card's true location.
"""

from __future__ import annotations

import random

from dragons_egg_env import engine as E
from dragons_egg_env.cards import ALL_CARDS, EGG, EGG_BIT, RANK_MASK, TEN_OF_FIRE, iter_cards
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import ObsView


class SamplingError(ValueError):
    """The view admits no consistent deal (a corrupt or inconsistent observation)."""


def sample_world(view: ObsView, config: RulesConfig, rng: random.Random) -> E.State:
    """An engine state consistent with ``view`` (the observer at seat 0)."""
    n = view.num_players
    if config.num_players != n:
        config = RulesConfig(**{**config.to_dict(), "num_players": n})
    s = E.State(config)
    hands = [0] * n
    hands[0] = view.hand
    active = [view.out_place[j] < 0 for j in range(n)]
    slots = [view.hand_sizes[j] if j else 0 for j in range(n)]
    hidden = ALL_CARDS & ~view.hand & ~view.played

    def place(card_mask: int, seat: int) -> None:
        nonlocal hidden
        card_mask &= hidden
        hands[seat] |= card_mask
        slots[seat] -= card_mask.bit_count()
        hidden &= ~card_mask

    # Cards known from the tribute first, so that they count against the hand sizes.
    forbid = [0] * n
    missed = view.tribute_asked & ~view.tribute_taken
    if view.dragon == 0 and view.tribute_payer > 0:
        place(view.tribute_given, view.tribute_payer)
        forbid[view.tribute_payer] = missed
    elif view.tribute_payer == 0 and view.dragon > 0:
        place(view.tribute_taken, view.dragon)
        forbid[view.dragon] = missed
    # The Egg: with its holder where the observer knows it; else it is dealt with the other
    # hidden cards (nobody is barred from holding it, and players who are out have no room).
    if not view.hand & EGG_BIT and view.egg_holder > 0:
        place(EGG_BIT, view.egg_holder)
    # Deal the rest: the constrained seat first, from what it may hold.
    order = sorted(range(1, n), key=lambda j: forbid[j] == 0)
    for j in order:
        if slots[j] < 0:
            raise SamplingError(f"relative seat {j} holds fewer cards than it is known to hold")
        if not slots[j]:
            continue
        pool = list(iter_cards(hidden & ~forbid[j]))
        if len(pool) < slots[j]:
            raise SamplingError(f"not enough cards for relative seat {j}")
        chosen = 0
        for c in rng.sample(pool, slots[j]):
            chosen |= 1 << c
        place(chosen, j)
    if hidden:
        raise SamplingError("cards left over after the deal: hand sizes disagree")
    _fill_state(s, view, hands, active)
    return s


_PHASES = {"play": E.PLAY, "complete": E.COMPLETE, "ask": E.ASK, "give": E.GIVE}


def _fill_state(s: E.State, view: ObsView, hands: list[int], active: list[bool]) -> None:
    n = view.num_players
    s.hands = hands
    s.th = [E.thermometer(h) for h in hands]
    for seat, h in enumerate(hands):
        for c in iter_cards(h):
            s.owner[c] = seat
    s.egg_holder = s.owner[EGG]
    # The observer knows the holder when its view shows it; else only the (sampled) holder does.
    s.egg_known = s.all_seats if view.egg_holder >= 0 else 1 << s.egg_holder
    s.active = sum(1 << j for j in range(n) if active[j])
    s.finish = sorted((j for j in range(n) if not active[j]), key=lambda j: view.out_place[j])
    s.pile = view.pile
    s.played = view.played
    s.top_rank = view.top_number
    s.top_count = view.top_count if view.top_number else 0
    s.rem = RANK_MASK[view.top_number] & ~view.pile if view.top_number else 0
    s.last_player = view.last_player
    s.passed = view.passed
    s.locked = view.locked
    s.phase = _PHASES.get(view.phase, E.DONE)
    s.round_idx = int(round(view.round_fraction * s.config.num_rounds))
    s.scores = list(view.scores)
    s.dragon = view.dragon
    s.victim = view.tribute_payer
    s.asked = view.tribute_asked
    s.hits = view.tribute_taken
    s.given = view.tribute_given
    s.asks_left = view.asks_left
    s.gives_left = view.tribute_taken.bit_count() - view.tribute_given.bit_count()
    s.turn = view.to_act
    s.current = 0 if s.phase == E.COMPLETE else view.to_act
    s.opening_mask = 0
    if s.phase == E.PLAY and not view.played and not view.top_number:
        if s.round_idx == 0 and s.owner[TEN_OF_FIRE] == s.current:  # R5
            if s.config.opening_ten_of_fire_alone:
                s.opening_mask = 1 << 37
            else:
                s.opening_mask = s.th[s.current] >> 36 << 37
        elif s.round_idx > 0 and s.current == s.dragon:  # R6
            th = s.th[s.current]
            s.opening_mask = 1 << (1 + ((th.bit_length() - 1) & ~3)) if th else 1
    s.mask = -1


__all__ = ["sample_world", "SamplingError"]
