"""``heuristic``: a documented expert rule set for play and tribute (see ``docs/agents.md``).

Numbers are strengths in reverse: a 1 beats everything of its count, a 10 almost nothing. The
rules, in the order they are tried (H-ids are cited in the docs):

Play
- H1 Complete a set whenever it is legal (out of turn or in turn): it sheds cards, clears the
  pile and takes the lead.
- H2 Holding the Egg, clear whenever possible: a dragon card at once, and lead or follow
  with strong plays (the lowest number, all its cards) so the others pass and the all-pass
  clear moves the Egg on (R20).
- H3 Leading otherwise: the weakest number (highest), all its cards, so groups are never
  broken; with one number left (besides dragons) that group ends the round for us.
- H4 Following: the weakest play that beats the top, preferring plays that use a whole group
  and exactly the top count; break a group only for a weak number (6+) or when an opponent is
  about to go out (3 cards or fewer).
- H5 Hold back strength: do not spend 1s or 2s on a pile while no opponent is close to going
  out and our hand is still large (more than 5 cards).
- H6 Dragon cards: play one to take the lead when an opponent is about to go out, or when what
  is left is dragons plus at most one group (then lead the group and go out).
- H7 Otherwise pass.

Tribute
- H8 Ask: dragon cards first, then the strongest numbers (1s, then 2s, ...), never stop early:
  a miss costs nothing and a hit is worth the weak card given back.
- H9 Give back: the Egg when the rules allow it; else the weakest single card (the highest
  number held alone), else the weakest card of the highest number; never a dragon card while a
  numbered card is left.

The rules are one function, :func:`heuristic_action`, over a small :class:`RuleContext`: what
the acting player knows and the rules read. The agent builds the context from its observation
(:func:`context_from_view`); the ISMCTS rollouts build it from the engine state of a sampled
world (:func:`context_from_state`), so both always choose the same action. The rules work on
int bitmasks (cards: :mod:`dragons_egg_env.cards`; actions: :mod:`dragons_egg_env.actions`,
bit ``a`` set means action ``a`` is legal), since the rollouts call them at every step.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dragons_egg_env import engine as E
from dragons_egg_env.actions import (
    ASK_BASE,
    DRAGON_BASE,
    GIVE_BASE,
    NUM_ACTIONS,
    PASS,
    PLAY_BASE,
    play,
)
from dragons_egg_env.cards import (
    DRAGON_MASK,
    EGG,
    EGG_BIT,
    NUM_CARDS,
    NUM_NUMBERS,
    NUMBERED_MASK,
    RANK_MASK,
)
from dragons_egg_env.engine import Phase
from dragons_egg_env.observation import OBS_PHASES, MaskArray, ObsArray, ObsView, layout

from .base import Agent

# -- thresholds: one set, read by the agent and by the ISMCTS rollouts ---------------------
STRONG_NUMBERS = 2      # H5: numbers 1..2 are held back
WEAK_NUMBER = 6         # H4: groups of numbers 6+ may be broken
DANGER_CARDS = 3        # H4, H5, H6: an opponent with this many cards or fewer is about to go out
BIG_HAND = 5            # H5: a hand of more cards than this still holds strength back

# -- bit tables, built from the card and action layouts ------------------------------------
NUMBERS = range(1, NUM_NUMBERS + 1)
SUITS_PER_NUMBER = RANK_MASK[1].bit_count()  # cards of one number: one nibble of the hand
#: Action bits of every ``play(number, count)`` (numbered plays, completions included).
PLAY_ACTIONS = ((1 << (DRAGON_BASE - PLAY_BASE)) - 1) << PLAY_BASE
#: Action bits of every ``play_dragons(count)``.
DRAGON_PLAYS = ((1 << (ASK_BASE - DRAGON_BASE)) - 1) << DRAGON_BASE
#: ``COUNT_PLAYS[c]``: action bits of ``play(number, c)`` for every number (index 0 unused).
COUNT_PLAYS: tuple[int, ...] = (0,) + tuple(
    sum(1 << play(n, c) for n in NUMBERS) for c in range(1, SUITS_PER_NUMBER + 1))
#: ``COMPLETES[r][k]``: the action bit that completes the set of number ``r`` when ``k`` of
#: its cards are on the pile (R11, R12), i.e. ``play(r, 4 - k)``; 0 where none exists.
COMPLETES: tuple[tuple[int, ...], ...] = (((0,) * (SUITS_PER_NUMBER + 1)),) + tuple(
    tuple(1 << play(r, SUITS_PER_NUMBER - k) if 0 < k < SUITS_PER_NUMBER else 0
          for k in range(SUITS_PER_NUMBER + 1))
    for r in NUMBERS)
#: Bit 0 of every number's nibble (one bit per number).
NUMBER_LOW_BITS = sum(1 << (SUITS_PER_NUMBER * (n - 1)) for n in NUMBERS)
#: The three low bits of every nibble (drops what a shift right moves across nibbles).
_NIBBLE_LOW3 = NUMBER_LOW_BITS * 0b0111
#: Plays of the numbers whose groups H4 keeps whole (numbers below ``WEAK_NUMBER``).
H4_KEEP_WHOLE = sum(RANK_MASK[n] for n in NUMBERS if n < WEAK_NUMBER) << PLAY_BASE
#: Plays of the numbers H5 holds back (1..``STRONG_NUMBERS``).
H5_STRONG = sum(RANK_MASK[n] for n in NUMBERS if n <= STRONG_NUMBERS) << PLAY_BASE
ASK_CARDS = (1 << (GIVE_BASE - ASK_BASE)) - 1  # card bits of the ask actions, shifted down
_ASK, _GIVE = Phase.ASK, Phase.GIVE  # plain names: read at every rollout step


class RuleContext:
    """What the rules read at one decision, as the acting player knows it.

    ``phase``: a :class:`~dragons_egg_env.engine.Phase`; ``mask``: the legal actions (bit ``a``
    set: action ``a`` is legal); ``hand``: own cards (Egg included); ``th``: the hand's
    thermometer (per number, the low ``count`` bits of its nibble,
    :func:`~dragons_egg_env.engine.thermometer`), kept because the engine has it at hand;
    ``top_number``/``top_count``: the top play, 0 on an empty pile; ``pile``: the cards on the
    pile; ``min_opponent``: the fewest cards an active opponent holds (``NUM_CARDS`` when
    there is none).
    """

    __slots__ = ("phase", "mask", "hand", "th", "top_number", "top_count", "pile",
                 "min_opponent")

    def __init__(self, phase: int, mask: int, hand: int, th: int, top_number: int,
                 top_count: int, pile: int, min_opponent: int) -> None:
        self.phase = phase
        self.mask = mask
        self.hand = hand
        self.th = th
        self.top_number = top_number
        self.top_count = top_count
        self.pile = pile
        self.min_opponent = min_opponent

    @property
    def holds_egg(self) -> bool:
        """The acting player holds the Egg (it knows where its own cards are)."""
        return bool(self.hand & EGG_BIT)

    @property
    def danger(self) -> bool:
        """An active opponent is about to go out (H4, H5, H6)."""
        return self.min_opponent <= DANGER_CARDS

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"RuleContext({fields})"


def mask_to_int(action_mask: MaskArray) -> int:
    """The int bitmask of an action-mask array (bit ``a`` set where ``action_mask[a]``)."""
    packed = np.packbits(np.asarray(action_mask[:NUM_ACTIONS]) != 0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def context_from_view(view: ObsView, mask: int) -> RuleContext:
    """The context of an agent from its decoded observation and its legal-action bitmask."""
    others = [view.hand_sizes[j] for j in range(1, view.num_players) if view.out_place[j] < 0]
    phase = Phase[view.phase.upper()]
    return RuleContext(phase, mask, view.hand, E.thermometer(view.hand),
                       view.top_number, view.top_count, view.pile,
                       min(others, default=NUM_CARDS))


def context_from_state(s: E.State, mask: int | None = None) -> RuleContext:
    """The context of the seat to act (``s.current``) in an engine state: only what that seat
    knows (its hand, the pile, hand sizes), never another seat's cards. ``mask``: the state's
    legal mask when the caller has it already."""
    p = s.current
    hands = s.hands
    low = NUM_CARDS
    others = s.active & ~(1 << p)
    q = 0
    while others:
        if others & 1:
            k = hands[q].bit_count()
            if k < low:
                low = k
        others >>= 1
        q += 1
    return RuleContext(s.phase, E.legal_mask(s) if mask is None else mask, hands[p], s.th[p],
                       s.top_rank, s.top_count, s.pile, low)


def _low(x: int) -> int:
    """Index of the lowest set bit of ``x`` (``x`` > 0)."""
    return (x & -x).bit_length() - 1


def whole_plays(th: int) -> int:
    """Action bits of ``play(number, all held)`` for each number of a hand's thermometer."""
    return (th & ~((th >> 1) & _NIBBLE_LOW3)) << PLAY_BASE


def count_groups(hand: int) -> int:
    """How many numbers a hand holds (its groups; dragon cards and the Egg are no group)."""
    h = hand & NUMBERED_MASK
    h |= h >> 1
    h |= h >> 2
    return (h & NUMBER_LOW_BITS).bit_count()


def strongest_ask(mask: int) -> int:
    """H8 (and the greedy rule): ask for a dragon card, else the lowest numbered card; never
    pass while an ask is legal. PASS when no ask is."""
    cards = (mask >> ASK_BASE) & ASK_CARDS
    x = cards & DRAGON_MASK or cards
    return ASK_BASE + _low(x) if x else PASS


def weakest_give(mask: int, hand: int, th: int) -> int:
    """H9: give back the Egg when legal (``egg_in_tribute``, R33), else the weakest single
    card (the highest number held alone), else the weakest card of the highest number; a
    dragon card only when no numbered card is left (then the first in card order)."""
    gives = mask >> GIVE_BASE
    if gives & EGG_BIT:
        return GIVE_BASE + EGG
    numbered = gives & NUMBERED_MASK
    if not numbered:
        return GIVE_BASE + _low(gives) if gives else PASS
    alone = th & ~((th >> 1) & _NIBBLE_LOW3) & NUMBER_LOW_BITS  # numbers held exactly once
    singles = numbered & hand & alone * RANK_MASK[1]
    return GIVE_BASE + ((singles or numbered).bit_length() - 1)


def heuristic_action(ctx: RuleContext) -> int:
    """The action the rules H1..H9 choose in ``ctx`` (``-1`` when nothing is legal)."""
    m = ctx.mask
    if not m & (m - 1):  # one legal action (or none)
        return m.bit_length() - 1
    phase = ctx.phase
    if phase == _ASK:
        return strongest_ask(m)  # H8
    if phase == _GIVE:
        return weakest_give(m, ctx.hand, ctx.th)  # H9
    return _play(ctx, m)  # PLAY, or a COMPLETE offer (R12)


def _play(ctx: RuleContext, m: int) -> int:
    """H1..H7 on a legal mask of the play phase (or of a completion offer)."""
    top = ctx.top_number
    if top:  # H1: complete the set of the top number (R11 in turn, R12 out of turn)
        done = COMPLETES[top][(ctx.pile & RANK_MASK[top]).bit_count()]
        if m & done:
            return done.bit_length() - 1
    plays = m & PLAY_ACTIONS
    dragons = m & DRAGON_PLAYS
    if not plays and not dragons:
        return PASS if m & 1 else _low(m)  # H7
    hand = ctx.hand
    egg = hand & EGG_BIT
    if not top:  # leading (no dragon card can lead, R8)
        if not plays:
            return _low(m)
        whole = plays & whole_plays(ctx.th)
        x = whole or plays
        if egg:  # H2: lead strong (the lowest number), so the pile comes back to us
            return _low(x)
        return x.bit_length() - 1  # H3: the weakest number, whole; the last group goes out
    # Following.
    if dragons and (egg or count_groups(hand) <= 1):
        return DRAGON_BASE  # H2: clear to pass the Egg on; H6: clear, then lead the last group
    if plays and egg:
        # H2: the strongest play wins the pile likeliest: the lowest number, all of it.
        sh = (_low(plays) - PLAY_BASE) & ~(SUITS_PER_NUMBER - 1)
        return (plays & (RANK_MASK[1] << (PLAY_BASE + sh))).bit_length() - 1
    danger = ctx.min_opponent <= DANGER_CARDS
    whole = whole_plays(ctx.th)
    x = plays
    if x and not danger:
        x &= ~(x & ~whole & H4_KEEP_WHOLE)  # H4: break a group only of a weak number
        if hand.bit_count() > BIG_HAND:  # (no Egg here, H2 came first)
            x &= ~H5_STRONG  # H5: keep 1s and 2s while the hand is big
    if x:
        # H4: a whole group if any, then exactly the top count if any, then the weakest
        # (highest) number, then the fewest of its cards.
        x = x & whole or x
        x = x & COUNT_PLAYS[ctx.top_count] or x
        sh = (x.bit_length() - 1 - PLAY_BASE) & ~(SUITS_PER_NUMBER - 1)
        return _low(x & (RANK_MASK[1] << (PLAY_BASE + sh)))
    if dragons and danger:
        return DRAGON_BASE  # H6: take the lead before an opponent goes out
    return PASS if m & 1 else _low(m)  # H7


def _row_ints(bits: npt.NDArray[np.bool_]) -> list[int]:
    """The int bitmask of each row of a 0/1 array (bit ``k`` = column ``k``)."""
    packed = np.packbits(bits, axis=1, bitorder="little")
    return [int.from_bytes(r.tobytes(), "little") for r in packed]


def heuristic_actions(obs: ObsArray, mask: MaskArray, max_players: int
                      ) -> npt.NDArray[np.int64]:
    """H1..H9 for a batch of observations padded to ``max_players`` seats, and their masks:
    the actions :meth:`HeuristicAgent.act` takes row by row, with the rule contexts read from
    the arrays at once instead of decoding each observation (several times faster)."""
    obs = np.asarray(obs)
    lay = layout(max_players)
    m = max_players

    def field(name: str) -> npt.NDArray[np.bool_]:
        return obs[:, lay.field(name).slice] > 0.5

    def slot(name: str) -> npt.NDArray[np.intp]:  # one-hot index, -1 when none is set
        x = field(name)
        return np.where(x.any(axis=1), x.argmax(axis=1), -1)

    hands, piles = _row_ints(field("hand")), _row_ints(field("pile"))
    masks = _row_ints(np.asarray(mask)[:, :NUM_ACTIONS] != 0)
    top_number, top_count = slot("top_number") + 1, slot("top_count") + 1
    phases = np.maximum(slot("phase"), 0)
    seats = np.arange(m)
    n = field("seat_present").sum(axis=1)
    active = ~field("out_place").reshape(len(obs), m, m).any(axis=2)
    sizes = np.rint(obs[:, lay.field("hand_size").slice] * NUM_CARDS).astype(np.int64)
    others = active & (seats >= 1) & (seats < n[:, None])
    low = np.where(others, sizes, NUM_CARDS).min(axis=1)
    out = np.empty(len(obs), np.int64)
    for i, mk in enumerate(masks):
        if not mk & (mk - 1):
            out[i] = mk.bit_length() - 1
            continue
        hand = hands[i]
        out[i] = heuristic_action(RuleContext(
            OBS_PHASES[phases[i]], mk, hand, E.thermometer(hand), int(top_number[i]),
            int(top_count[i]), piles[i], int(low[i])))
    return out


class HeuristicAgent(Agent):
    """The expert rule set H1..H9 of this module's docstring."""

    name = "heuristic"
    memoryless = True

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        mask = mask_to_int(action_mask)
        if not mask & (mask - 1):
            return mask.bit_length() - 1
        return heuristic_action(context_from_view(self.view(observation), mask))

    def act_batch(self, observations: ObsArray, action_masks: MaskArray
                  ) -> npt.NDArray[np.int64]:
        """:func:`heuristic_actions`: the same actions as :meth:`act`, read at once."""
        return heuristic_actions(observations, action_masks, self.max_players)
