"""``heuristic``: a documented expert rule set for play and tribute (see ``docs/agents.md``).

Numbers are strengths in reverse: a 1 beats everything of its count, a 10 almost nothing. The
rules, in the order they are tried (H-ids are cited in the docs):

Play
- H1 Complete a set whenever it is legal (out of turn or in turn): it sheds cards, clears the
  pile and takes the lead.
- H2 Holding the Egg, clear whenever possible: a dragon card at once, and lead or follow
  with strong plays (the lowest number) so the others pass and the all-pass clear moves the
  Egg on (R20).
- H3 Leading otherwise: the weakest number (highest), all its cards, so groups are never
  broken; with one number left (besides dragons) that group ends the round for us.
- H4 Following: the weakest play that beats the top, preferring plays that use a whole group
  and exactly the top count; break a group only for a weak number (6+) or when an opponent is
  about to go out (3 cards or fewer).
- H5 Hold back strength: do not spend 1s or 2s on a pile while no opponent is close to going
  out and our hand is still large (more than 5 cards).
- H6 Dragon cards: play one to take the lead when an opponent is about to go out, or when what
  is left is dragons plus a single group (then lead the group and go out).
- H7 Otherwise pass.

Tribute
- H8 Ask: dragon cards first, then the strongest numbers (1s, then 2s, ...), never stop early:
  a miss costs nothing and a hit is worth the weak card given back.
- H9 Give back: the Egg when the rules allow it; else the weakest single card (the highest
  number held alone), else the weakest card of the highest number; never a dragon card.
"""

from __future__ import annotations

import numpy as np

from dragons_egg_env.actions import ASK_BASE, DRAGON_BASE, GIVE_BASE, PASS, decode
from dragons_egg_env.cards import EGG_BIT, RANK_MASK

from .base import Agent, legal_from_mask

STRONG_NUMBERS = 2      # H5: numbers 1..2 are held back
WEAK_NUMBER = 6         # H4: numbers 6+ may be split
DANGER_CARDS = 3        # H4, H6: an opponent with this many cards or fewer is about to go out
BIG_HAND = 5            # H5


def number_counts(hand: int) -> list[int]:
    """Cards held of each number (index 1..10; index 0 unused)."""
    return [0] + [(hand & RANK_MASK[n]).bit_count() for n in range(1, 11)]


class HeuristicAgent(Agent):
    """The expert rule set H1..H9 of this module's docstring."""

    name = "heuristic"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        v = self.view(observation)
        if v.phase == "ask":
            return self._ask(legal)
        if v.phase == "give":
            return self._give(legal, v.hand)
        return self._play(legal, v)

    # -- tribute -------------------------------------------------------------------------
    @staticmethod
    def _ask(legal: list[int]) -> int:
        asks = [a for a in legal if ASK_BASE <= a < GIVE_BASE]
        # H8: dragon cards (indices 40..43) first, then numbered cards from the 1s upwards.
        return min(asks, key=lambda a: (0 if a - ASK_BASE >= 40 else 1, a))

    @staticmethod
    def _give(legal: list[int], hand: int) -> int:
        cards = [a - GIVE_BASE for a in legal]
        if 44 in cards:  # H9: the Egg, when egg_in_tribute allows it
            return GIVE_BASE + 44
        counts = number_counts(hand)
        numbered = [c for c in cards if c < 40]
        if not numbered:
            return legal[0]
        singles = [c for c in numbered if counts[c // 4 + 1] == 1]
        pick = max(singles or numbered, key=lambda c: (c // 4, c))
        return GIVE_BASE + pick

    # -- play ----------------------------------------------------------------------------
    def _play(self, legal: list[int], v) -> int:
        plays = [(a,) + decode(a)[1:] for a in legal if 0 < a < DRAGON_BASE]
        dragons = [a for a in legal if DRAGON_BASE <= a < ASK_BASE]
        counts = number_counts(v.hand)
        holds_egg = bool(v.hand & EGG_BIT)
        others = [v.hand_sizes[j] for j in range(1, v.num_players) if v.out_place[j] < 0]
        danger = bool(others) and min(others) <= DANGER_CARDS
        hand_size = v.hand.bit_count() - (1 if holds_egg else 0)

        # H1: complete a set.
        if v.top_number:
            on_pile = (v.pile & RANK_MASK[v.top_number]).bit_count()
            for a, num, cnt in plays:
                if num == v.top_number and on_pile + cnt == 4:
                    return a
        if not plays and not dragons:
            return PASS if PASS in legal else legal[0]
        groups = [n for n in range(1, 11) if counts[n]]

        if not v.top_number:  # leading
            if not plays:
                return legal[0]
            whole = [(a, n, c) for a, n, c in plays if c == counts[n]]
            if len(groups) == 1:  # H3: last group
                return max(whole, key=lambda t: t[2])[0]
            if holds_egg:  # H2: lead strong so that the pile comes back to us
                return min(whole, key=lambda t: t[1])[0]
            return max(whole, key=lambda t: t[1])[0]  # H3: weakest number, whole group

        # Following.
        if holds_egg and dragons:  # H2
            return dragons[0]
        if dragons and (len(groups) <= 1):  # H6: dragon, then lead the last group
            return dragons[0]
        candidates = []
        for a, n, c in plays:
            splits = c < counts[n]
            if splits and n < WEAK_NUMBER and not danger and not holds_egg:
                continue  # H4
            if n <= STRONG_NUMBERS and not danger and not holds_egg and hand_size > BIG_HAND:
                continue  # H5
            # Prefer: no split, exact count, weakest number.
            candidates.append(((not splits), c == v.top_count, n, -c, a))
        if candidates:
            if holds_egg:  # H2: the strongest play is the likeliest to win the pile
                return min(candidates, key=lambda t: (t[2], t[3]))[-1]
            return max(candidates)[-1]
        if dragons and danger:  # H6
            return dragons[0]
        return PASS  # H7
