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
  missed cards are not (the Dragon only asks for cards it does not hold);
- the opening, while nothing is played this round: in round 1 the seat to act holds the 10
  of Fire (R5); later, the Dragon and any seat after it that passed the lead hold no numbered
  card (R6, R8).

Among the deals consistent with these facts it samples uniformly. It reads nothing but the
view, so it can never use a hidden card's true location. The state itself is built by the
engine (:func:`~dragons_egg_env.engine.state_from_info`), which derives every cache and the
forced opening (R5, R6), and checked by :func:`~dragons_egg_env.engine.check_state`.
"""

from __future__ import annotations

import random

from dragons_egg_env import engine as E
from dragons_egg_env.cards import ALL_CARDS, EGG_BIT, NUMBERED_MASK, TEN_OF_FIRE, iter_cards
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import ObsView


class SamplingError(ValueError):
    """The view admits no consistent deal (a corrupt or inconsistent observation)."""


def sample_world(view: ObsView, config: RulesConfig, rng: random.Random, *,
                 check: bool = True) -> E.State:
    """An engine state consistent with ``view`` (the observer at seat 0).

    With ``check`` (the default) the engine checks the world
    (:func:`~dragons_egg_env.engine.check_state`, less the caches it derives itself: some
    6 us, about a tenth of a sample); an inconsistent view raises :class:`SamplingError`.
    ``check=False`` skips it. Either way the random draws are the same."""
    n = view.num_players
    if config.num_players != n:
        config = RulesConfig(**{**config.to_dict(), "num_players": n})
    round_index = int(round(view.round_fraction * config.num_rounds))
    hands = [0] * n
    hands[0] = view.hand
    slots = [view.hand_sizes[j] if j else 0 for j in range(n)]
    hidden = ALL_CARDS & ~view.hand & ~view.played

    def place(card_mask: int, seat: int) -> None:
        nonlocal hidden
        card_mask &= hidden
        hands[seat] |= card_mask
        slots[seat] -= card_mask.bit_count()
        hidden &= ~card_mask

    known, forbid = _known_facts(view, round_index)
    for cards, seat in known:  # placed first, so that they count against the hand sizes
        place(cards, seat)
    # Deal the rest: the constrained seats first, the most constrained first, from what they
    # may hold. (For the seat to act, their pools are nested, so each draw is uniform given
    # the earlier ones.)
    order = sorted(range(1, n), key=lambda j: (forbid[j] == 0, -forbid[j].bit_count()))
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
    try:
        return _build(view, config, round_index, hands, check)
    except E.StateError as err:
        raise SamplingError(f"the view admits no consistent state: {err}") from err


def _known_facts(view: ObsView, round_index: int) -> tuple[list[tuple[int, int]], list[int]]:
    """What the observer knows about the other hands: ``(cards, seat)`` placements (cards
    known to be in that hand) and, per seat, the cards it cannot hold."""
    n = view.num_players
    known: list[tuple[int, int]] = []
    forbid = [0] * n
    # The tribute (R32..R34), as one of its two players.
    missed = view.tribute_asked & ~view.tribute_taken
    if view.dragon == 0 and view.tribute_payer > 0:
        known.append((view.tribute_given, view.tribute_payer))
        forbid[view.tribute_payer] = missed
    elif view.tribute_payer == 0 and view.dragon > 0:
        known.append((view.tribute_taken, view.dragon))
        forbid[view.dragon] = missed
    # The Egg: with its holder where the observer knows it; else it is dealt with the other
    # hidden cards (nobody is barred from holding it, and players who are out have no room).
    if not view.hand & EGG_BIT and view.egg_holder > 0:
        known.append((EGG_BIT, view.egg_holder))
    # The opening, while nothing is played: in round 1 the seat to act holds the 10 of Fire
    # (R5); later, the Dragon and every seat after it that passed the lead hold no numbered
    # card (R6, R8).
    if view.phase == "play" and not view.played and view.to_act >= 0:
        if round_index == 0:
            if view.to_act > 0:
                known.append((1 << TEN_OF_FIRE, view.to_act))
        elif view.dragon >= 0:
            j = view.dragon
            while j != view.to_act:
                forbid[j] |= NUMBERED_MASK
                j = j + 1 if j + 1 < n else 0
    return known, forbid


#: The engine phase of each phase name an observation shows ("done" also stands for "deal").
_PHASES = {ph.label: ph for ph in E.Phase}


def _build(view: ObsView, config: RulesConfig, round_index: int, hands: list[int],
           check: bool) -> E.State:
    """The engine state of ``view`` with the sampled ``hands`` (relative seats)."""
    n = view.num_players
    phase = _PHASES[view.phase]
    out = [j for j in range(n) if view.out_place[j] >= 0]
    return E.state_from_info(
        config,
        hands=hands,
        phase=phase,
        # R12: an offered completion is in the observer's view only, so the observer acts.
        current=0 if phase == E.COMPLETE else view.to_act,
        turn=view.to_act,
        round_index=round_index,
        played=view.played,
        pile=view.pile,
        top_number=view.top_number,
        top_count=view.top_count if view.top_number else 0,
        last_player=view.last_player,
        passed=view.passed,
        locked=view.locked,
        finish=sorted(out, key=lambda j: view.out_place[j]),
        scores=view.scores,
        dragon=view.dragon,
        victim=view.tribute_payer,
        asked=view.tribute_asked,
        hits=view.tribute_taken,
        given=view.tribute_given,
        asks_left=view.asks_left,
        # R19: the observer knows the holder when its view shows it; else only the (sampled)
        # holder does (the engine's default).
        egg_known=(1 << n) - 1 if view.egg_holder >= 0 else None,
        check=check,
    )


__all__ = ["sample_world", "SamplingError"]
