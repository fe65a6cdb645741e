"""The observation layout: named slices of one flat float32 vector, built from ``max_players``.

Seats in the observation are relative to the observer: slot 0 is the observer itself, slot 1
the player to its left, and so on; slots beyond the table size are zero (padding to
``max_players``), so one policy can play any table size up to it. Binary features come first and
are packed from Python ints in one go; a few scaled numbers follow.

:func:`layout` returns the slices; ``docs/observation.md`` is generated from it
(``python -m dragons_egg.experiments.tools.docs``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypeAlias, TypeVar, Union

import numpy as np
import numpy.typing as npt

from . import engine as E
from .actions import NUM_ACTIONS
from .cards import NUM_CARDS, codes
from .config import MAX_ASKS, TABLE_SIZES
from .engine import Phase

#: An observation vector, float32: ``(size,)``, or ``(..., size)`` for a batch
#: (``docs/observation.md``).
ObsArray: TypeAlias = npt.NDArray[np.float32]
#: An action mask, 0/1 per action ``(134,)`` or ``(..., 134)``: int8 as the AEC env returns it
#: (``observation["action_mask"]``), bool as the batched engine does.
MaskArray: TypeAlias = Union[npt.NDArray[np.int8], npt.NDArray[np.bool_]]
#: One observation vector, ``(size,)`` float32, as the AEC env returns it: :data:`ObsArray`
#: with its one dimension in the type, so that type checkers read ``obs["observation"]`` (and
#: what numpy derives from it) without ``Any`` (``npt.NDArray``'s shape is ``tuple[Any, ...]``).
ObsVector: TypeAlias = np.ndarray[tuple[int], np.dtype[np.float32]]
#: One int8 action mask, ``(134,)``, as the AEC env returns it (``obs["action_mask"]``,
#: ``info["action_mask"]``), its one dimension in the type as for :data:`ObsVector`.
MaskVector: TypeAlias = np.ndarray[tuple[int], np.dtype[np.int8]]

_ACTION_BYTES = (NUM_ACTIONS + 7) // 8
#: The phases an observation shows, in the order of its ``phase`` slots (``deal`` shows as
#: ``done``: between rounds nobody acts).
OBS_PHASES = (Phase.PLAY, Phase.COMPLETE, Phase.ASK, Phase.GIVE, Phase.DONE)


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
    """The observation (or, with ``state=True``, the full-state) layout for ``max_players``.

    Read it as a mapping from field names to slices: ``layout["hand"]`` is a slice,
    ``"hand" in layout`` tests a name, and iterating (or ``len``) goes over the field names in
    vector order; :meth:`field` gives a name's :class:`Field`.
    """

    max_players: int
    fields: tuple[Field, ...]
    num_binary: int
    size: int

    def __getitem__(self, name: str) -> slice:
        return self.field(name).slice

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no observation field {name!r}; the fields are "
                       f"{', '.join(f.name for f in self.fields)}")

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    def __iter__(self) -> Iterator[str]:
        return (f.name for f in self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def names(self) -> tuple[str, ...]:
        """The field names, in vector order."""
        return tuple(f.name for f in self.fields)


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
        ("phase", len(OBS_PHASES), True,
         "one-hot phase: play, complete (an offer to the observer), ask, give, done"),
        ("tribute_asked", NUM_CARDS, True,
         "cards the Dragon asked for (R31), to the two players only"),
        ("tribute_taken", NUM_CARDS, True,
         "cards handed to the Dragon (R32), to the two players only"),
        ("tribute_given", NUM_CARDS, True,
         "cards the Dragon gave back (R33), to the two players only"),
    ]
    if state:
        spec.append(("all_hands", m * NUM_CARDS, True,
                     "every seat's hand (absolute seats; state() only)"))
    spec += [
        ("hand_size", m, False, f"per relative seat: cards in hand / {NUM_CARDS}"),
        ("score", m, False, "per relative seat: match score so far / num_rounds (R28)"),
        ("round", 1, False, "round index / num_rounds"),
        ("asks_left", 1, False,
         f"tribute asks the Dragon has left / {MAX_ASKS} (the two players only)"),
    ]
    return spec


@cache
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
        self._o = _Offsets(lay)
        self.size = lay.size
        self.nbytes = (lay.num_binary + 7) // 8
        self.scalar_start = lay.num_binary
        self._inv_rounds = 1.0 / num_rounds
        self._order = [[(i + j) % n for j in range(n)] for i in range(n)]
        self._rot = [[(q - i) % n for q in range(n)] for i in range(n)]
        self._pad = [0.0] * (max_players - n)
        self._present = ((1 << n) - 1) << lay.field("seat_present").start

    def encode(self, s: E.State, i: int) -> ObsArray:
        """Observation vector of seat ``i`` (``state=True`` encoders: the full state from
        seat 0)."""
        o = self._o
        n, m = self.n, self.m
        full = self.state
        rot = self._rot[i]  # rot[q]: relative slot of seat q
        bits = s.hands[i] | (s.pile << o.pile) | (s.played << o.played)
        r = s.top_rank
        if r:
            bits |= (1 << (o.top_number + r - 1)) | (1 << (o.top_count + s.top_count - 1))
            bits |= 1 << (o.last_player + rot[s.last_player])
        base = o.out_place
        for place, q in enumerate(s.finish):
            bits |= 1 << (base + rot[q] * m + place)
        seats = (1 << n) - 1
        if s.passed:
            x = s.passed
            bits |= (((x >> i) | (x << (n - i))) & seats) << o.passed
        if s.locked:
            x = s.locked
            bits |= (((x >> i) | (x << (n - i))) & seats) << o.locked
        if full or s.egg_known >> i & 1:
            bits |= 1 << (o.egg_holder + rot[s.egg_holder])
        ph = s.phase
        if ph == E.COMPLETE and not full and s.current != i:
            ph = E.PLAY  # R12: the offer is in no other observation
        bits |= 1 << (o.phase + _PHASE_SLOT[ph])
        if s.turn >= 0:
            bits |= 1 << (o.to_act + rot[s.turn])
        if s.dragon >= 0:
            bits |= (1 << (o.dragon + rot[s.dragon])) | (1 << (o.tribute_payer + rot[s.victim]))
        bits |= self._present
        party = full or i == s.dragon or i == s.victim
        if party and s.asked:  # R34: the exchange is private to the two players
            bits |= (s.asked << o.tribute_asked) | (s.hits << o.tribute_taken) \
                | (s.given << o.tribute_given)
        if full:
            base = o.all_hands
            for q in range(n):
                bits |= s.hands[q] << (base + q * NUM_CARDS)
        out = np.empty(self.size, dtype=np.float32)
        nb = self.scalar_start
        # Positional arguments: keyword parsing costs as much as the unpacking here.
        out[:nb] = np.unpackbits(np.frombuffer(bits.to_bytes(self.nbytes, "little"), np.uint8),
                                 None, nb, "little")
        hands = s.hands
        sc = s.scores
        inv = self._inv_rounds
        order = self._order[i]
        out[nb:] = ([_SIZE[hands[q].bit_count()] for q in order] + self._pad
                    + [sc[q] * inv for q in order] + self._pad
                    + [s.round_idx * inv, s.asks_left / MAX_ASKS if party else 0.0])
        return out


_SIZE = [k / NUM_CARDS for k in range(NUM_CARDS + 1)]  # scaled hand size of k cards
# Phase slot of each engine phase, indexed by the phase's value.
_PHASE_SLOT = tuple(OBS_PHASES.index(Phase.DONE if ph == Phase.DEAL else ph) for ph in Phase)


class _Offsets:
    """Start of each field, as attributes (faster than dict lookups in the hot path)."""

    def __init__(self, lay: Layout) -> None:
        for f in lay.fields:
            setattr(self, f.name, f.start)

    if TYPE_CHECKING:  # every attribute is a field's start, set from the layout above
        def __getattr__(self, name: str) -> int: ...


_MASK_CACHE: dict[int, npt.NDArray[np.int8]] = {}


def mask_array(mask: int) -> npt.NDArray[np.int8]:
    """The int8 action-mask array of an action bitmask (a fresh array each call)."""
    arr: npt.NDArray[np.int8] | None = _MASK_CACHE.get(mask)
    if arr is None:
        arr = np.unpackbits(np.frombuffer(mask.to_bytes(_ACTION_BYTES, "little"), np.uint8),
                            bitorder="little", count=NUM_ACTIONS).view(np.int8)
        if len(_MASK_CACHE) >= 8192:
            _MASK_CACHE.clear()
        _MASK_CACHE[mask] = arr
    return arr.copy()


__all__ = ["Field", "Layout", "layout", "Encoder", "mask_array", "ObsView", "decode_observation",
           "decode", "pad", "players_for_size", "ObsArray", "MaskArray", "ObsVector", "MaskVector",
           "OBS_PHASES"]


def _bits_to_int(x: npt.NDArray[np.float32]) -> int:
    """Int bitmask of a 0/1 vector (bit k = element k)."""
    packed = np.packbits(np.asarray(x, dtype=np.uint8) > 0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def _slot(x: npt.NDArray[np.float32]) -> int:
    """Index of the set element of a one-hot vector, -1 when none is set."""
    nz = np.flatnonzero(x)
    return int(nz[0]) if len(nz) else -1


def _seats(bits: int) -> tuple[int, ...]:
    """The relative seats of a seat bitmask, ascending."""
    return tuple(q for q in range(bits.bit_length()) if bits >> q & 1)


@dataclass(frozen=True)
class ObsView:
    """An observation decoded back into game terms, as its player knows them
    (:func:`decode_observation`).

    Seats are relative (0 = the observer, 1 = the player to its left, ...). Card sets are int
    bitmasks as in :mod:`dragons_egg_env.cards` (bit ``i`` = card ``i``, ``docs/actions.md``),
    the fast form that agents compute with; each has a list of card codes beside it for people
    (``hand_cards``, ``pile_cards``, ``played_cards``, ``tribute_asked_cards``,
    ``tribute_taken_cards``, ``tribute_given_cards``: codes such as ``"7F"``, ``"BEAST"``,
    ``"EGG"``, in card order). The seat bitmasks ``passed`` and ``locked`` have
    ``passed_seats`` and ``locked_seats`` beside them.

    The vector holds the match scores divided by the match's ``num_rounds``
    (``score_fractions``); :attr:`scores` multiplies them back and so needs the view to have
    been decoded with ``num_rounds``.
    """

    num_players: int
    hand: int
    pile: int
    top_number: int            # 0 when the pile is empty
    top_count: int
    played: int
    out_place: tuple[int, ...]  # per relative seat: finishing place, -1 while active
    passed: int                 # relative-seat bitmask
    locked: int
    egg_holder: int             # relative seat, -1 when unknown to the observer
    to_act: int
    last_player: int            # -1 when the pile is empty
    dragon: int                 # -1 in round 1
    tribute_payer: int
    phase: str
    tribute_asked: int
    tribute_taken: int
    tribute_given: int
    hand_sizes: tuple[int, ...]
    score_fractions: tuple[float, ...]  # match scores so far / num_rounds, as in the vector
    round_fraction: float       # round index (0-based) / num_rounds
    asks_left: int
    num_rounds: int | None = None  # the match's rounds, when the decoder was told them

    @property
    def active(self) -> tuple[bool, ...]:
        return tuple(p < 0 for p in self.out_place)

    @property
    def scores(self) -> tuple[float, ...]:
        """Match scores so far per relative seat (R28; not scaled). Needs ``num_rounds``."""
        if self.num_rounds is None:
            raise ValueError("the observation holds the scores divided by num_rounds, which "
                             "this view was not given: decode it with "
                             "decode_observation(obs, num_rounds=N), or read score_fractions")
        return tuple(x * self.num_rounds for x in self.score_fractions)

    @property
    def hand_cards(self) -> list[str]:
        """The own hand as card codes (``"7F"``, ``"BEAST"``, ``"EGG"``), in card order."""
        return codes(self.hand)

    @property
    def pile_cards(self) -> list[str]:
        """The cards on the current pile, as card codes."""
        return codes(self.pile)

    @property
    def played_cards(self) -> list[str]:
        """Every card played this round, as card codes."""
        return codes(self.played)

    @property
    def tribute_asked_cards(self) -> list[str]:
        """The cards the Dragon asked for (R31), as card codes."""
        return codes(self.tribute_asked)

    @property
    def tribute_taken_cards(self) -> list[str]:
        """The cards handed to the Dragon (R32), as card codes."""
        return codes(self.tribute_taken)

    @property
    def tribute_given_cards(self) -> list[str]:
        """The cards the Dragon gave back (R33), as card codes."""
        return codes(self.tribute_given)

    @property
    def passed_seats(self) -> tuple[int, ...]:
        """The relative seats that passed since the latest play (R17), ascending."""
        return _seats(self.passed)

    @property
    def locked_seats(self) -> tuple[int, ...]:
        """The relative seats locked out of this pile (R10), ascending."""
        return _seats(self.locked)


def _check_num_rounds(num_rounds: object) -> int:
    if isinstance(num_rounds, bool) or not isinstance(num_rounds, (int, np.integer)) \
            or num_rounds < 1:
        raise ValueError(f"num_rounds must be an integer >= 1 (the match's rounds), got "
                         f"{num_rounds!r}")
    return int(num_rounds)


def _observation_players(obs: npt.NDArray[np.float32], max_players: int | None) -> int:
    """The ``max_players`` of an observation vector: checked when given, else read from the
    vector's length (each table size pads to a different length)."""
    shape = np.shape(obs)
    if max_players is not None:
        if max_players not in TABLE_SIZES:
            raise ValueError(f"max_players must be one of {TABLE_SIZES[0]}..{TABLE_SIZES[-1]}, "
                             f"got {max_players!r}")
        size = layout(max_players).size
        if shape != (size,):
            raise ValueError(f"observation has shape {shape}; a {max_players}-seat "
                             f"observation has shape ({size},)")
        return max_players
    fits = [m for m in TABLE_SIZES if layout(m).size == shape[0]] if len(shape) == 1 else []
    if len(fits) == 1:
        return fits[0]
    sizes = ", ".join(f"{layout(m).size} ({m} seats)" for m in TABLE_SIZES)
    if len(shape) != 1:
        raise ValueError(f"decode one observation vector at a time; got shape {shape} (its "
                         f"length is one of {sizes})")
    # No table's length (one at most: every max_players has its own).
    raise ValueError(f"an observation vector has {shape[0]} values, which is no "
                     f"observation's length ({sizes}); a state() vector is not an observation")


def decode_observation(obs: npt.NDArray[np.float32], *, num_rounds: int | None = None,
                       max_players: int | None = None) -> ObsView:
    """An observation vector decoded into game terms (:class:`ObsView`); padding seats are
    dropped.

    ``max_players`` (the seats the observation is padded to) is read from the vector's length,
    which differs for every table size; pass it to check it. ``num_rounds`` is the match's
    round count: the vector holds the scores divided by it, so only a view decoded with it
    has :attr:`ObsView.scores` (``score_fractions`` are there either way)."""
    m = _observation_players(obs, max_players)
    rounds = None if num_rounds is None else _check_num_rounds(num_rounds)
    lay = layout(m)
    g = {f.name: obs[f.slice] for f in lay.fields}
    present = g["seat_present"]
    n = int(present.sum())
    places = g["out_place"].reshape(m, m)
    out_place = tuple(_slot(places[j]) for j in range(n))
    return ObsView(
        num_players=n,
        hand=_bits_to_int(g["hand"]),
        pile=_bits_to_int(g["pile"]),
        top_number=_slot(g["top_number"]) + 1,
        top_count=_slot(g["top_count"]) + 1,
        played=_bits_to_int(g["played"]),
        out_place=out_place,
        passed=_bits_to_int(g["passed"][:n]),
        locked=_bits_to_int(g["locked"][:n]),
        egg_holder=_slot(g["egg_holder"][:n]),
        to_act=_slot(g["to_act"][:n]),
        last_player=_slot(g["last_player"][:n]),
        dragon=_slot(g["dragon"][:n]),
        tribute_payer=_slot(g["tribute_payer"][:n]),
        phase=OBS_PHASES[max(_slot(g["phase"]), 0)].label,
        tribute_asked=_bits_to_int(g["tribute_asked"]),
        tribute_taken=_bits_to_int(g["tribute_taken"]),
        tribute_given=_bits_to_int(g["tribute_given"]),
        hand_sizes=tuple(int(round(float(x) * NUM_CARDS)) for x in g["hand_size"][:n]),
        score_fractions=tuple(float(x) for x in g["score"][:n]),
        round_fraction=float(g["round"][0]),
        asks_left=int(round(float(g["asks_left"][0]) * MAX_ASKS)),
        num_rounds=rounds,
    )


def decode(obs: npt.NDArray[np.float32], max_players: int, num_rounds: int) -> ObsView:
    """Deprecated, kept for one release (with a ``DeprecationWarning``): use
    ``decode_observation(obs, num_rounds=num_rounds)``, which reads ``max_players`` from the
    vector's length and is not named like :func:`dragons_egg_env.actions.decode`. Same view,
    same checks."""
    warnings.warn("dragons_egg_env.observation.decode(obs, max_players, num_rounds) is "
                  "deprecated: use decode_observation(obs, num_rounds=num_rounds) (max_players "
                  "is read from the vector's length)", DeprecationWarning, stacklevel=2)
    if max_players not in TABLE_SIZES:
        raise ValueError(f"max_players must be one of {TABLE_SIZES[0]}..{TABLE_SIZES[-1]}, got "
                         f"{max_players!r}")
    _check_num_rounds(num_rounds)
    return decode_observation(obs, num_rounds=num_rounds, max_players=max_players)


def players_for_size(size: int) -> int | None:
    """The ``max_players`` whose observation has ``size`` values (``None``: no table's), e.g.
    to read a trained policy's padding from its input size."""
    return next((m for m in TABLE_SIZES if layout(m).size == size), None)


_Scalar = TypeVar("_Scalar", bound=np.generic)


def pad(obs: npt.NDArray[_Scalar], from_players: int, to_players: int) -> npt.NDArray[_Scalar]:
    """An observation built for ``from_players`` seats, re-laid for ``to_players`` seats
    (``to_players >= from_players``), exactly as if the env had been created with
    ``max_players=to_players``. Lets a policy trained with padding play any smaller table."""
    if to_players == from_players:
        return obs
    if to_players < from_players:
        raise ValueError(f"cannot pad an observation of {from_players} seats down to "
                         f"{to_players}")
    src, dst = layout(from_players), layout(to_players)
    if obs.shape[-1] != src.size:
        raise ValueError(f"observation has {obs.shape[-1]} values; a {from_players}-seat "
                         f"observation has {src.size}")
    out = np.zeros(obs.shape[:-1] + (dst.size,), dtype=obs.dtype)
    m, k = from_players, to_players
    for f in src.fields:
        g = dst.field(f.name)
        x = obs[..., f.slice]
        if f.size == g.size:
            out[..., g.slice] = x
        elif f.size == m:  # one value per seat
            out[..., g.start:g.start + m] = x
        elif f.size == m * m:  # per seat, one-hot place
            y = out[..., g.slice].reshape(obs.shape[:-1] + (k, k))
            y[..., :m, :m] = x.reshape(obs.shape[:-1] + (m, m))
            out[..., g.slice] = y.reshape(obs.shape[:-1] + (k * k,))
        else:  # pragma: no cover - every field is one of the kinds above
            raise AssertionError(f"field {f.name} cannot be padded")
    return out
