"""The extra logit terms a policy file may carry, by name: its *heads*.

A policy file (:mod:`dragons_egg.agents.netpolicy`) names its heads in ``meta["heads"]``, a
list of the names below. An additive head adds ``features(obs) @ pi_counts`` to the network's
logits; a file holds at most one, as its ``pi_counts`` array (rows: :attr:`Head.rows`,
columns: the actions):

- ``"counts"``: :func:`count_features`, the own hand's count of each number;
- ``"tribute"``: :func:`tribute_features`, those counts and the count of dragon cards, per
  tribute context (written by the tribute fit, ``dragons_egg.experiments.research.tribute.fit``);
- ``"tribute_by_size"``: :func:`sized_tribute_features`, the same per table size (written by
  the give-back tables: the self-play trainer's own, ``tribute_table``,
  ``dragons_egg.experiments.training.tribute_table``, and the research tool's,
  ``dragons_egg.experiments.research.tribute.headroom``).

The head ``"gate"`` (:data:`GATE`, with ``"tribute_by_size"`` only) is a ``pi_gate`` array of
``(len(TABLE_SIZES), NUM_ACTIONS)``: per table size, a weight on the network's own logit of each
action (0 lets ``pi_counts`` alone choose those actions at that size).

The head ``"size_embedding"`` (:data:`SIZE_EMBEDDING`, with any other) is a ``size_emb``
array of ``(len(TABLE_SIZES), hidden[0])``: per table size, a vector added to the first
layer's pre-activation, a learned embedding of the table size (the trainer's
``ppo.size_embedding``); it is the same as feeding the network a one-hot of the table size.

Files written before heads were named carry a version instead, which says the same thing
(:data:`VERSION_HEADS`): 1 none, 2 ``counts``, 3 ``tribute``, 4 ``tribute_by_size`` (and
``gate`` when the file holds ``pi_gate``). The feature functions are also the research
tools' (``tribute_fit``, ``tribute_headroom``): :func:`group_counts`, :func:`tribute_context`
and :func:`tribute_row` (where a weight sits in ``pi_counts``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dragons_egg_env.cards import NUM_NUMBERS
from dragons_egg_env.config import TABLE_SIZES
from dragons_egg_env.engine import Phase
from dragons_egg_env.observation import OBS_PHASES, ObsArray, layout

#: Weights, biases and features: float32 arrays.
FloatArray = npt.NDArray[np.float32]
#: Counts and indices: int64 arrays.
IntArray = npt.NDArray[np.int64]

#: Size of :func:`count_features`: per number 1..10, one-hot how many of its cards are held.
COUNT_FEATURES = NUM_NUMBERS * 5
#: Card groups of :func:`tribute_features`: the numbers 1..10, then the dragon cards.
GROUPS = NUM_NUMBERS + 1
#: Tribute contexts (:func:`tribute_context`): the first ask, an ask after misses only, an ask
#: after a hit, and every other phase (the give-back; play never has a tribute action).
TRIBUTE_CONTEXTS = ("first ask", "ask after misses", "ask after a hit", "give")
#: Size of :func:`tribute_features`: per context and group, one-hot how many cards are held.
TRIBUTE_FEATURES = len(TRIBUTE_CONTEXTS) * GROUPS * 5
#: Size of :func:`sized_tribute_features`: :func:`tribute_features` per table size.
SIZED_TRIBUTE_FEATURES = len(TABLE_SIZES) * TRIBUTE_FEATURES


def count_features(obs: ObsArray) -> FloatArray:
    """``(..., 50)`` float32: for each number 1..10, one-hot how many of its four cards the own
    hand holds (0..4), read from the observation's ``hand`` bits (its first 40 values; card
    ``(number - 1) * 4 + suit``, R1 order)."""
    obs = np.asarray(obs)
    counts = obs[..., :4 * NUM_NUMBERS].reshape(*obs.shape[:-1], NUM_NUMBERS, 4).sum(-1)
    onehot: npt.NDArray[np.bool_] = counts.astype(np.int64)[..., None] == np.arange(5)
    return onehot.reshape(*obs.shape[:-1], COUNT_FEATURES).astype(np.float32)


def group_counts(obs: ObsArray) -> IntArray:
    """``(..., 11)`` int: how many cards of each number 1..10 (0..4) and how many dragon cards
    (0..4) the own hand holds, from the observation's ``hand`` bits (R1 card order)."""
    obs = np.asarray(obs)
    nums = obs[..., :4 * NUM_NUMBERS].reshape(*obs.shape[:-1], NUM_NUMBERS, 4).sum(-1)
    dragons = obs[..., 4 * NUM_NUMBERS:4 * NUM_NUMBERS + 4].sum(-1, keepdims=True)
    both: npt.NDArray[np.float32] = np.concatenate([nums, dragons], axis=-1)
    return both.astype(np.int64)


def tribute_context(obs: ObsArray, max_players: int) -> IntArray:
    """Index into :data:`TRIBUTE_CONTEXTS` of each observation (padded to ``max_players``):
    in the ask phase (R31) 0 before any ask, 1 after asks that all missed, 2 after a hit (the
    observation's ``tribute_asked`` and ``tribute_taken`` bits, R32); else 3."""
    obs = np.asarray(obs)
    lay = layout(max_players)
    ph, asked, taken = (lay.field(k) for k in ("phase", "tribute_asked", "tribute_taken"))
    ask = obs[..., ph.start + OBS_PHASES.index(Phase.ASK)] > 0.5
    n_asked = obs[..., asked.start:asked.start + asked.size].sum(-1)
    n_taken = obs[..., taken.start:taken.start + taken.size].sum(-1)
    ctx = np.where(n_taken > 0, 2, np.where(n_asked > 0, 1, 0))
    out: npt.NDArray[np.int_] = np.where(ask, ctx, 3)
    return out.astype(np.int64)


def tribute_features(obs: ObsArray, max_players: int) -> FloatArray:
    """``(..., TRIBUTE_FEATURES)`` float32: the one-hot :func:`group_counts` (55 values) in
    the block of the observation's :func:`tribute_context`, zeros in the other blocks."""
    obs = np.asarray(obs)
    onehot = (group_counts(obs)[..., None] == np.arange(5)).reshape(*obs.shape[:-1], -1)
    blocks = tribute_context(obs, max_players)[..., None] == np.arange(len(TRIBUTE_CONTEXTS))
    out: npt.NDArray[np.bool_] = blocks[..., :, None] & onehot[..., None, :]
    return out.reshape(*obs.shape[:-1], TRIBUTE_FEATURES).astype(np.float32)


def tribute_row(context: int | str, group: int, count: int = 0,
                players: int | None = None) -> int:
    """The row of ``pi_counts`` (head ``tribute``; with ``players``, head
    ``tribute_by_size``) that :func:`tribute_features` sets for ``count`` cards (0..4) of card
    ``group`` (0..9: number - 1, 10: the dragon cards) held in tribute ``context`` (an index
    or a name of :data:`TRIBUTE_CONTEXTS`)."""
    ctx = TRIBUTE_CONTEXTS.index(context) if isinstance(context, str) else context
    row = (ctx * GROUPS + group) * 5 + count
    if players is not None:
        row += TABLE_SIZES.index(players) * TRIBUTE_FEATURES
    return row


def table_size(obs: ObsArray, max_players: int) -> IntArray:
    """How many players sit at the table of each observation (padded to ``max_players``): the
    count of its ``seat_present`` bits."""
    obs = np.asarray(obs)
    f = layout(max_players).field("seat_present")
    seats: npt.NDArray[np.float32] = np.rint(obs[..., f.start:f.start + f.size].sum(-1))
    return seats.astype(np.int64)


def size_index(obs: ObsArray, max_players: int) -> IntArray:
    """Index into :data:`dragons_egg_env.config.TABLE_SIZES` of each observation's
    :func:`table_size`; an observation whose seat count is no table size is a ValueError."""
    n = table_size(obs, max_players)
    if n.size and (n.min() < TABLE_SIZES[0] or n.max() > TABLE_SIZES[-1]):
        raise ValueError(f"an observation's seat_present bits count {int(n.min())}..{int(n.max())} "
                         f"seats; a table has {TABLE_SIZES[0]} to {TABLE_SIZES[-1]}")
    return n - TABLE_SIZES[0]


def sized_tribute_features(obs: ObsArray, max_players: int) -> FloatArray:
    """``(..., SIZED_TRIBUTE_FEATURES)`` float32: :func:`tribute_features` in the block of the
    observation's table size (2, 3, ... 8 in :data:`TABLE_SIZES` order), zeros in the others.
    A ``tribute_by_size`` head can so treat each table size apart."""
    obs = np.asarray(obs)
    feats = tribute_features(obs, max_players)
    blocks = size_index(obs, max_players)[..., None] == np.arange(len(TABLE_SIZES))
    out: FloatArray = blocks[..., :, None] * feats[..., None, :]
    return out.reshape(*obs.shape[:-1], SIZED_TRIBUTE_FEATURES).astype(np.float32)


@dataclass(frozen=True)
class Head:
    """An additive logit term: ``logits += features(obs, max_players) @ pi_counts``."""

    name: str
    #: Rows of its ``pi_counts`` (the length of its features).
    rows: int
    #: ``features(obs, max_players)``: ``(..., rows)`` float32.
    features: Callable[[ObsArray, int], FloatArray]


def _counts(obs: ObsArray, max_players: int) -> FloatArray:
    return count_features(obs)


#: The additive heads, by name (a policy file holds at most one, as ``pi_counts``).
HEADS: dict[str, Head] = {h.name: h for h in (
    Head("counts", COUNT_FEATURES, _counts),
    Head("tribute", TRIBUTE_FEATURES, tribute_features),
    Head("tribute_by_size", SIZED_TRIBUTE_FEATURES, sized_tribute_features),
)}
#: The gate head: ``pi_gate``, a per-table-size weight on the network's own logits, allowed
#: with the additive head :data:`GATED` only.
GATE = "gate"
GATED = "tribute_by_size"
#: The size-embedding head: ``size_emb``, a per-table-size vector added to the first layer's
#: pre-activation; allowed with any other head.
SIZE_EMBEDDING = "size_embedding"
#: Every head name a policy file may list.
HEAD_NAMES = (*HEADS, GATE, SIZE_EMBEDDING)
#: The heads of files written before heads were named, by their ``version`` (without
#: ``pi_counts`` none; ``gate`` is added for a version-4 file that holds ``pi_gate``).
VERSION_HEADS: dict[int, tuple[str, ...]] = {1: (), 2: ("counts",), 3: ("tribute",),
                                             4: ("tribute_by_size",)}


def check_heads(heads: object) -> tuple[str, ...]:
    """``heads`` as a tuple of known names, at most one additive head, ``gate`` only with
    :data:`GATED`, no name twice; a ValueError saying what is wrong otherwise."""
    if not isinstance(heads, (list, tuple)) or not all(isinstance(h, str) for h in heads):
        raise ValueError(f"heads must be a list of names, got {heads!r}")
    out = tuple(heads)
    unknown = [h for h in out if h not in HEAD_NAMES]
    if unknown:
        raise ValueError(f"unknown head {unknown[0]!r}; heads: {', '.join(HEAD_NAMES)}")
    if len(set(out)) != len(out):
        raise ValueError(f"heads {list(out)} name a head twice")
    additive = [h for h in out if h in HEADS]
    if len(additive) > 1:
        raise ValueError(f"heads {list(out)} name {len(additive)} additive heads; a policy "
                         "holds one pi_counts")
    if GATE in out and additive != [GATED]:
        raise ValueError(f"the head {GATE!r} needs the head {GATED!r}")
    return out


def additive_head(heads: tuple[str, ...]) -> Head | None:
    """The additive head among ``heads`` (checked by :func:`check_heads`), or None."""
    return next((HEADS[h] for h in heads if h in HEADS), None)
