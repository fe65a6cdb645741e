"""The simplest opponents: ``random`` (uniform over legal actions) and ``greedy``.

The greedy rule is one function over the legal-action bitmask, :func:`greedy_mask`
(:func:`greedy_action` on a :class:`~dragons_egg.agents.heuristic.RuleContext`): the ``greedy``
agent and the ISMCTS ``rollout=greedy`` policy both call it, so they always choose the same action.
"""

from __future__ import annotations

from dragons_egg_env.actions import GIVE_BASE, PASS
from dragons_egg_env.cards import EGG, EGG_BIT, NUMBERED_MASK
from dragons_egg_env.observation import MaskArray, ObsArray

from .base import Agent, legal_from_mask
from .heuristic import (
    COUNT_PLAYS,
    DRAGON_PLAYS,
    PLAY_ACTIONS,
    SUITS_PER_NUMBER,
    RuleContext,
    mask_to_int,
    strongest_ask,
)

#: Play counts from the most cards to the fewest (the greedy order).
_COUNTS_DOWN = tuple(range(SUITS_PER_NUMBER, 0, -1))


class RandomAgent(Agent):
    """Uniform over the legal actions."""

    name = "random"
    memoryless = True

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        legal = legal_from_mask(action_mask)
        return legal[self.rng.randrange(len(legal))]


def greedy_mask(m: int) -> int:
    """The greedy rule on a legal-action bitmask (``-1`` when nothing is legal).

    Play: the numbered play with the most cards, the weakest (highest) number among those
    (completions included, R11, R12); a dragon card only when no numbered play is legal, then
    as many as allowed (R16). Tribute: ask for a dragon card, else the lowest numbered card
    (as H8); give back the Egg when allowed (R33), else the weakest numbered card (the highest
    in card order), a dragon card only when no numbered card is left. Otherwise pass.
    """
    if not m & (m - 1):  # one legal action (or none)
        return m.bit_length() - 1
    plays = m & PLAY_ACTIONS
    if plays:
        for c in _COUNTS_DOWN:
            x = plays & COUNT_PLAYS[c]
            if x:
                return x.bit_length() - 1
    dragons = m & DRAGON_PLAYS
    if dragons:
        return dragons.bit_length() - 1  # the most dragon cards allowed
    ask = strongest_ask(m)
    if ask != PASS:
        return ask
    gives = m >> GIVE_BASE
    if gives:
        if gives & EGG_BIT:
            return GIVE_BASE + EGG
        x = gives & NUMBERED_MASK
        return GIVE_BASE + (x.bit_length() - 1 if x else (gives & -gives).bit_length() - 1)
    return PASS if m & 1 else (m & -m).bit_length() - 1


def greedy_action(ctx: RuleContext) -> int:
    """The greedy rule in a rule context: it reads only the legal actions, ``ctx.mask``."""
    return greedy_mask(ctx.mask)


def greedy_choice(legal: list[int]) -> int:
    """The greedy rule on a list of legal actions (see :func:`greedy_mask`)."""
    m = 0
    for a in legal:
        m |= 1 << a
    return greedy_mask(m)


class GreedyAgent(Agent):
    """Always shed the play that gets rid of the most cards, weakest numbers first (a dragon
    card only when no numbered play is legal); in the tribute ask for dragon cards then low
    numbers, give back the weakest card. It reads only its legal actions, so it does not
    decode the observation."""

    name = "greedy"
    memoryless = True

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        return greedy_mask(mask_to_int(action_mask))
