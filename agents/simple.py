"""The simplest opponents: ``random`` (uniform over legal actions) and ``greedy``."""

from __future__ import annotations

import numpy as np

from dragons_egg_env.actions import ASK_BASE, DRAGON_BASE, GIVE_BASE, PASS, decode
from dragons_egg_env.cards import EGG

from .base import Agent, legal_from_mask


class RandomAgent(Agent):
    """Uniform over the legal actions."""

    name = "random"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_from_mask(action_mask)
        return legal[self.rng.randrange(len(legal))]


def greedy_choice(legal: list[int]) -> int:
    """The greedy rule on a list of legal actions (see :class:`GreedyAgent`)."""
    plays = [a for a in legal if 0 < a < ASK_BASE]
    if plays:  # most cards first, then the weakest (highest) number; a dragon card last
        return max(plays, key=lambda a: (decode(a)[2], decode(a)[1]) if a < DRAGON_BASE
                   else (decode(a)[1], 0))
    asks = [a for a in legal if ASK_BASE <= a < GIVE_BASE]
    if asks:  # the strongest card: dragon cards, then low numbers
        return min(asks, key=lambda a: (a - ASK_BASE < 40, a))
    gives = [a for a in legal if a >= GIVE_BASE]
    if gives:  # the Egg if allowed, else the weakest numbered card
        egg = GIVE_BASE + EGG
        if egg in legal:
            return egg
        numbered = [a for a in gives if a - GIVE_BASE < 40]
        return max(numbered) if numbered else gives[0]
    return PASS if PASS in legal else legal[0]


class GreedyAgent(Agent):
    """Always shed the play that gets rid of the most cards, weakest numbers first (a dragon
    card only when nothing else sheds); in the tribute ask for dragon cards then low numbers,
    give back the weakest card."""

    name = "greedy"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return greedy_choice(legal_from_mask(action_mask))
