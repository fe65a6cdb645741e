"""The replay format, written: what the environment and the batched engine need to export a
match as a replay, and the record of what a replay check proved.

:func:`build_replay` makes a version 2 replay dict (the format is described in
:mod:`dragons_egg_env.replay`, which reads, checks and plays replays back);
``raw_env.to_replay`` and ``VectorEngine.to_replay`` both go through it. :class:`ReplayCheck`
is what :func:`dragons_egg_env.replay.replay` leaves on the env (``env.replay_check``).

This module sits below both the environment (:mod:`dragons_egg_env.dragons_egg_v0`) and the
replay reader (:mod:`dragons_egg_env.replay`, which imports the environment to play replays
back), so that neither imports the other in a circle, and the batched engine
(:mod:`dragons_egg_env.vector`) writes replays without loading PettingZoo or Gymnasium.
Standard library only (and this package's ``cards`` and ``config`` tables).
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .cards import codes
from .config import RulesConfig

#: The environment a replay plays (its ``env`` field; ``dragons_egg_v0.ENV_NAME``).
ENV_NAME = "dragons_egg_v0"
#: The ``format`` field of every replay.
REPLAY_FORMAT = "dragons-egg-replay"
#: Version 2 records the final scores, a digest and ``partial``; see
#: :mod:`dragons_egg_env.replay` (which still reads version 1).
REPLAY_VERSION = 2
#: The fields of a version 2 replay, in the order they are written.
FIELDS = ("format", "version", "env", "config", "max_players", "seed", "deals", "actions",
          "illegal_move", "finished", "partial", "scores", "digest")


@dataclass(frozen=True)
class ReplayCheck:
    """What a successful replay proved (``env.replay_check`` after :func:`replay`)."""

    source: str | None
    version: int
    #: Moves replayed (the illegal move included).
    steps: int
    #: Every round was played.
    finished: bool
    #: Saved before its end on purpose: the match went on after the last recorded move.
    partial: bool
    #: ``(agent, action)`` that ended the match, if one did.
    illegal_move: tuple[str, int] | None
    #: What the play reproduced exactly.
    verified: tuple[str, ...]
    #: What the file records too little to prove (version 1: ``scores``, ``digest``).
    unverified: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Nothing was left unverified."""
        return not self.unverified

    def __str__(self) -> str:
        end = ("finished" if self.finished else "partial (saved before its end)" if self.partial
               else f"ended by an illegal move of {self.illegal_move[0]}" if self.illegal_move
               else "unfinished")
        text = (f"replay{f' {self.source}' if self.source else ''} (version {self.version}): "
                f"{self.steps} moves, {end}; verified: {', '.join(self.verified)}")
        if self.unverified:
            text += f"; not verifiable: {', '.join(self.unverified)}"
        return text


# -- writing --------------------------------------------------------------------------------
def exact_scores(scores: Sequence[float | int | Fraction | str], num_players: int) -> list[str]:
    """Match scores as exact rationals in strings (``"4/3"``), one per seat. Floats are read as
    the nearest multiple of ``1/(num_players-1)`` (every R27 reward is one), which they must be
    within ``1e-6``; a ``ValueError`` otherwise."""
    if len(scores) != num_players:
        raise ValueError(f"scores has {len(scores)} entries; the table has {num_players} seats")
    out = []
    for seat, x in enumerate(scores):
        if isinstance(x, bool):
            raise ValueError(f"score of seat {seat} is a bool")
        exact = Fraction(x)
        if isinstance(x, float):
            exact = exact.limit_denominator(max(1, num_players - 1))
            if abs(float(exact) - x) > 1e-6:
                raise ValueError(f"score {x!r} of seat {seat} is not a multiple of "
                                 f"1/{num_players - 1}")
        out.append(str(exact))
    return out


def replay_digest(data: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of every version 2 field of ``data`` but ``digest``, as canonical JSON
    (keys sorted, no spaces, ASCII)."""
    body = {k: data[k] for k in FIELDS if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def build_replay(config: RulesConfig | Mapping[str, Any], max_players: int | None, seed: int,
                 deals: Sequence[Sequence[int]], actions: Sequence[tuple[int, int]],
                 scores: Sequence[float | int | Fraction | str], *, finished: bool,
                 illegal_move: tuple[int, int] | None = None) -> dict[str, Any]:
    """A version 2 replay dict, digest included, from a match's record.

    Args:
        config: the rules (a :class:`RulesConfig` or its ``to_dict()``).
        max_players: the observation padding (``None``: the table size).
        seed: the match seed, a non-negative integer.
        deals: per round started, one card bitmask per seat.
        actions: the legal moves in order, as ``(seat, action)``.
        scores: each seat's match score at the end of these moves (floats such as
            ``engine.State.scores``, or exact values; see :func:`exact_scores`).
        finished: every round was played (``engine.State.phase == DONE``).
        illegal_move: ``(seat, action)`` of the illegal move that ended the match after
            ``actions`` (``env()``), else ``None``.

    Nothing is replayed here; :func:`replay` checks the result. A match that is neither
    finished nor ended by an illegal move is written as ``partial``.
    """
    if not isinstance(config, RulesConfig):
        config = RulesConfig.from_kwargs(config)
    n = config.num_players
    if finished and illegal_move is not None:
        raise ValueError("a match that played every round did not end by an illegal move")
    try:
        seed_int = -1 if isinstance(seed, bool) else operator.index(seed)
    except TypeError:
        seed_int = -1
    if seed_int < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    names = [f"player_{q}" for q in range(n)]
    moves = [[names[p], int(a)] for p, a in actions]
    illegal = None
    if illegal_move is not None:
        illegal = [names[illegal_move[0]], int(illegal_move[1])]
        moves.append(list(illegal))
    data: dict[str, Any] = {
        "format": REPLAY_FORMAT,
        "version": REPLAY_VERSION,
        "env": ENV_NAME,
        "config": config.to_dict(),
        "max_players": n if max_players is None else int(max_players),
        "seed": seed_int,
        "deals": [[codes(int(h)) for h in hands] for hands in deals],
        "actions": moves,
        "illegal_move": illegal,
        "finished": bool(finished),
        "partial": not finished and illegal is None,
        "scores": exact_scores(scores, n),
    }
    data["digest"] = replay_digest(data)
    return data


__all__ = ["ENV_NAME", "REPLAY_FORMAT", "REPLAY_VERSION", "FIELDS", "ReplayCheck",
           "exact_scores", "replay_digest", "build_replay"]
