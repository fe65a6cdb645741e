"""The matches of a tournament: its deal sequences, the (deal sequence, rotation) of every match,
the seats of each and the seeds, all derived from the tournament seed."""

from __future__ import annotations

import random
from typing import Any

from dragons_egg_env import engine as E
from dragons_egg_env.cards import NUM_CARDS
from dragons_egg_env.config import RulesConfig

from .config import TournamentConfig


def derive(*parts: int) -> int:
    """A 63-bit seed derived from integers (stable across runs and platforms)."""
    rng = random.Random(" ".join(map(str, parts)))
    return rng.getrandbits(63)


def deal_sequence(config: RulesConfig, seed: int) -> list[list[int]]:
    """The hands of every round of one deal sequence: round ``r`` is dealt by R4 from a
    shuffled deck, with seat ``(d + r) mod n`` as dealer (``d`` drawn from the seed)."""
    rng = random.Random(seed)
    n = config.num_players
    first = rng.randrange(n)
    deals = []
    for r in range(config.num_rounds):
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        deals.append(E.deal_from_deck(deck, n, (first + r) % n))
    return deals


def match_tasks(tc: TournamentConfig) -> list[tuple[int, int]]:
    """Every match of the tournament as ``(deal sequence, rotation)``, in match order."""
    return [(seq, rot) for seq in range(tc.num_sequences) for rot in range(tc.num_players)]


def match_seats(tc: TournamentConfig, seq: int, rot: int) -> list[str]:
    """The label at every seat of a match: agent ``j`` of the line-up moves ``rot`` seats
    left."""
    lineup = tc.lineup(seq)
    n = tc.num_players
    return [lineup[(j - rot) % n] for j in range(n)]


def match_key(r: dict[str, Any]) -> tuple[int, int]:
    return r["sequence"], r["rotation"]
