"""Helpers for scenario tests on fixed deals (``tests/env/test_rules.py``).

A deal is written as one space-separated string of card codes per seat, with exactly one seat
given ``REST``: that seat takes every card the others do not hold, so a deal names only the
cards that matter. :func:`run` drives the engine and checks, before every step, which seat is
to act, so a scenario states who moves as well as what it plays.
"""

from __future__ import annotations

from dragons_egg_env import actions as A
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.cards import CARD_CODES, codes, mask_of
from dragons_egg_env.config import RulesConfig

#: Marks the one seat of a deal that takes the rest of the 45 cards.
REST = None


def deal_codes(*hands: str | None) -> list[list[str]]:
    """One list of card codes per seat (in card order); the ``REST`` seat gets the cards
    nobody else holds."""
    rest = [seat for seat, h in enumerate(hands) if h is REST]
    assert len(rest) == 1, "exactly one seat of a scenario deal takes the REST"
    out: list[list[str]] = []
    used = 0
    for h in hands:
        if h is REST:
            out.append([])
            continue
        m = mask_of(h.split())
        assert not used & m, f"card(s) {codes(used & m)} written into two hands"
        used |= m
        out.append(codes(m))
    out[rest[0]] = [c for c in CARD_CODES if c not in set(codes(used))]
    return out


def deal_masks(*hands: str | None) -> list[int]:
    """The same deal as card bitmasks, for :func:`dragons_egg_env.engine.deal`."""
    return [mask_of(h) for h in deal_codes(*hands)]


def start(*hands: str | None, **flags) -> E.State:
    """A match of ``len(hands)`` players with these rule flags, round 1 dealt as given."""
    s = E.new_match(RulesConfig(num_players=len(hands), **flags))
    E.deal(s, deal_masks(*hands))
    return s


def hand(s: E.State, seat: int) -> str:
    """A seat's hand as a string of codes in card order (``""`` when empty)."""
    return " ".join(codes(s.hands[seat]))


def pile(s: E.State) -> list[str]:
    """The plays on the current pile, oldest first, each as a string of codes."""
    return [" ".join(codes(c)) for _, c in s.plays]


def legal(s: E.State) -> set[int]:
    """The legal actions of the seat to act, as a set."""
    return set(E.legal_actions(s))


def run(s: E.State, *moves: tuple[int, int]) -> None:
    """Apply ``(seat, action)`` moves, asserting before each one that ``seat`` is to act."""
    for seat, action in moves:
        assert s.current == seat, (
            f"expected seat {seat} to act ({A.describe(action)}), but seat {s.current} is to "
            f"act in phase {s.phase_name}: {s!r}")
        E.step(s, action)


def open_and_clear(s: E.State) -> int:
    """Round 1: the 10 of Fire's holder opens with it alone and everyone else passes, so the
    holder leads the next pile. Returns the holder's seat."""
    opener = s.current
    run(s, (opener, A.play(10, 1)))
    for d in range(1, s.n):
        run(s, ((opener + d) % s.n, A.PASS))
    assert s.top_rank == 0 and s.current == opener, s
    return opener


# A round that ends after n - 1 single plays: seat ``first`` opens with the 10 of Fire (round 1)
# or as the Dragon leading its only card (later rounds), the next seats follow with one card each
# and go out; nobody can complete out of turn on the way. Seat ``first - 1`` takes the rest (and
# the Egg) and finishes last: the finishing order is first, first + 1, ..., first - 1.
_QUICK_CARDS = ("10F", "10E", "10W", "10L", "1E", "1W", "1F")


def quick_hands(n: int, first: int = 0) -> tuple[str | None, ...]:
    hands: list[str | None] = [REST] * n
    for i in range(n - 1):
        hands[(first + i) % n] = _QUICK_CARDS[i]
    return tuple(hands)


def quick_moves(n: int, first: int = 0, tribute: bool = False) -> list[tuple[int, int]]:
    """The moves of :func:`quick_hands`; ``tribute``: the Dragon first stops asking (PASS)."""
    moves = [(first, A.PASS)] if tribute else []
    for i in range(n - 1):
        moves.append(((first + i) % n, A.play(10, 1) if i < 4 else A.play(1, 1)))
    return moves


# -- the PettingZoo environment ------------------------------------------------------------

def make_env(*deals: list[list[str]], **flags) -> dragons_egg_v0.raw_env:
    """A ``raw_env`` reset with these deals for its first rounds."""
    env = dragons_egg_v0.raw_env(**flags)
    env.reset(seed=0, options={"deals": list(deals)})
    return env


def env_run(env: dragons_egg_v0.raw_env, *moves: tuple[int, int]) -> None:
    """Step ``(seat, action)`` moves, asserting that ``player_<seat>`` is selected each time."""
    for seat, action in moves:
        assert env.agent_selection == f"player_{seat}", (
            f"expected player_{seat} to act ({A.describe(action)}), got {env.agent_selection}")
        env.step(action)
