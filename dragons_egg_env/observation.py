"""The observation layout: named slices of one flat float32 vector, built from ``max_players``.

Seats in the observation are relative to the observer: slot 0 is the observer itself, slot 1
the player to its left, and so on; slots beyond the table size are zero (padding to
``max_players``), so one policy can play any table size up to it. Binary features come first and
are packed from Python ints in one go; a few scaled numbers follow.

:func:`layout` returns the slices; ``docs/observation.md`` is generated from it
(``python -m dragons_egg_env.docs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import engine as E
from .actions import NUM_ACTIONS
from .cards import EGG_BIT, NUM_CARDS

_ACTION_BYTES = (NUM_ACTIONS + 7) // 8


@dataclass(frozen=True)
class Field:
    """One named slice of the observation."""

    name: str
    start: int
    size: int
    binary: bool
    meaning: str

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.size)


@dataclass(frozen=True)
class Layout:
    """The observation (or, with ``state=True``, the full-state) layout for ``max_players``."""

    max_players: int
    fields: tuple[Field, ...]
    num_binary: int
    size: int

    def __getitem__(self, name: str) -> slice:
        for f in self.fields:
            if f.name == name:
                return f.slice
        raise KeyError(f"no observation field {name!r}")

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no observation field {name!r}")


def _spec(m: int, state: bool) -> list[tuple[str, int, bool, str]]:
    spec = [
        ("hand", NUM_CARDS, True, "own hand, one bit per card (R1 order)"),
        ("pile", NUM_CARDS, True, "cards on the current pile"),
        ("top_number", 10, True, "number of the top play, one-hot 1..10 (empty pile: zeros)"),
        ("top_count", 4, True, "count of the top play, one-hot 1..4"),
        ("played", NUM_CARDS, True, "every card played this round, cleared piles included"),
        ("out_place", m * m, True,
         "per relative seat, one-hot finishing place of a player already out this round"),
        ("passed", m, True, "per relative seat: passed since the latest play (R17)"),
        ("locked", m, True, "per relative seat: locked out of this pile (R10)"),
        ("egg_holder", m, True,
         "per relative seat: holds the Egg, where the observer knows it (R19); else zeros"),
        ("to_act", m, True, "per relative seat: whose turn it is in play order"),
        ("last_player", m, True, "per relative seat: made the latest play on the pile"),
        ("dragon", m, True, "per relative seat: this round's Dragon (rounds 2+)"),
        ("tribute_payer", m, True, "per relative seat: last round's Egg holder, who pays tribute"),
        ("seat_present", m, True, "per relative seat: a player sits there"),
        ("phase", 5, True, "one-hot phase: play, complete (an offer to the observer), ask, give, done"),
        ("tribute_asked", NUM_CARDS, True, "cards the Dragon asked for (R31), to the two players only"),
        ("tribute_taken", NUM_CARDS, True, "cards handed to the Dragon (R32), to the two players only"),
        ("tribute_given", NUM_CARDS, True, "cards the Dragon gave back (R33), to the two players only"),
    ]
    if state:
        spec.append(("all_hands", m * NUM_CARDS, True,
                     "every seat's hand (absolute seats; state() only)"))
    spec += [
        ("hand_size", m, False, "per relative seat: cards in hand / 45"),
        ("score", m, False, "per relative seat: match score so far / num_rounds (R28)"),
        ("round", 1, False, "round index / num_rounds"),
        ("asks_left", 1, False, "tribute asks the Dragon has left / 44 (the two players only)"),
    ]
    return spec


@lru_cache(maxsize=None)
def layout(max_players: int, state: bool = False) -> Layout:
    """The layout for tables padded to ``max_players`` seats."""
    fields = []
    pos = 0
    num_binary = 0
    for name, size, binary, meaning in _spec(max_players, state):
        fields.append(Field(name, pos, size, binary, meaning))
        pos += size
        if binary:
            num_binary = pos
    return Layout(max_players, tuple(fields), num_binary, pos)


class Encoder:
    """Encodes a :class:`~dragons_egg_env.engine.State` into the flat vector for one seat."""

    def __init__(self, n: int, max_players: int, num_rounds: int, state: bool = False) -> None:
        self.n = n
        self.m = max_players
        self.num_rounds = num_rounds
        self.lay = layout(max_players, state)
        self.state = state
        lay = self.lay
        self.off = {f.name: f.start for f in lay.fields}
        self.nbytes = (lay.num_binary + 7) // 8
        self.scalar_start = lay.num_binary

    def _rel(self, mask: int, i: int) -> int:
        """Rotate a seat bitmask so that seat ``i`` lands in slot 0."""
        n = self.n
        full = (1 << n) - 1
        return ((mask >> i) | (mask << (n - i))) & full

    def encode(self, s: E.State, i: int) -> np.ndarray:
        """Observation vector of seat ``i`` (``state=True`` encoders: the full state from seat 0)."""
        off = self.off
        n, m = self.n, self.m
        full = self.state
        rel = self._rel
        bits = s.hands[i] | (s.pile << off["pile"]) | (s.played << off["played"])
        r = s.top_rank
        if r:
            bits |= 1 << (off["top_number"] + r - 1)
            bits |= 1 << (off["top_count"] + s.top_count - 1)
        base = off["out_place"]
        for place, q in enumerate(s.finish):
            if place < n:
                bits |= 1 << (base + ((q - i) % n) * m + place)
        bits |= rel(s.passed, i) << off["passed"]
        bits |= rel(s.locked, i) << off["locked"]
        if full or s.egg_known >> i & 1:
            bits |= 1 << (off["egg_holder"] + (s.egg_holder - i) % n)
        ph = s.phase
        if ph == E.COMPLETE and (full or s.current == i):
            phase_bit = 1
        elif ph == E.COMPLETE:
            phase_bit = 0  # R12: the offer is in no other observation
        else:
            phase_bit = (0, 1, 2, 3, 4, 4)[ph]
        bits |= 1 << (off["phase"] + phase_bit)
        if s.turn >= 0:
            bits |= 1 << (off["to_act"] + (s.turn - i) % n)
        if s.last_player >= 0 and r:
            bits |= 1 << (off["last_player"] + (s.last_player - i) % n)
        if s.dragon >= 0:
            bits |= 1 << (off["dragon"] + (s.dragon - i) % n)
            bits |= 1 << (off["tribute_payer"] + (s.victim - i) % n)
        bits |= ((1 << n) - 1) << off["seat_present"]
        party = full or i == s.dragon or i == s.victim
        if party:  # R34: the exchange is private to the two players
            bits |= (s.asked << off["tribute_asked"]) | (s.hits << off["tribute_taken"]) \
                | (s.given << off["tribute_given"])
        if full:
            base = off["all_hands"]
            for q in range(n):
                bits |= s.hands[q] << (base + q * NUM_CARDS)
        out = np.empty(self.lay.size, dtype=np.float32)
        nb = self.scalar_start
        out[:nb] = np.unpackbits(
            np.frombuffer(bits.to_bytes(self.nbytes, "little"), dtype=np.uint8),
            bitorder="little", count=nb)
        hands = s.hands
        sizes = [hands[(i + j) % n].bit_count() / NUM_CARDS for j in range(n)]
        scores = [s.scores[(i + j) % n] / self.num_rounds for j in range(n)]
        pad = [0.0] * (m - n)
        asks = s.asks_left / 44.0 if party else 0.0
        out[nb:] = sizes + pad + scores + pad + [s.round_idx / self.num_rounds, asks]
        return out


def mask_array(mask: int) -> np.ndarray:
    """The int8 action-mask array of an action bitmask."""
    return np.unpackbits(
        np.frombuffer(mask.to_bytes(_ACTION_BYTES, "little"), dtype=np.uint8),
        bitorder="little", count=NUM_ACTIONS).view(np.int8)


__all__ = ["Field", "Layout", "layout", "Encoder", "mask_array", "EGG_BIT"]
