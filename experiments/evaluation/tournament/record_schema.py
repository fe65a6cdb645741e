"""The pydantic models of a tournament's per-match line (:mod:`.records` reads every line
against :class:`MatchLine`; this module is imported when a line is first read, so that
importing the tournament package does not load pydantic)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: How far a score may be from the sum of its rounds' rewards, and a sum from zero (the runner
#: writes exact sums; JSON keeps 17 significant digits).
TOLERANCE = 1e-9

Finite = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class RoundLine(_Strict):
    """One round of a match: the seats in finishing order, whether it ended in a deadlock
    (R24), and every seat's R27 reward."""

    order: list[Count]
    deadlock: bool
    rewards: list[Finite]
    #: The forfeit round of a forfeited match (``agents.runner``'s docstring).
    forfeit: bool = False


class ForfeitLine(BaseModel):
    """How an agent failed the match it forfeited (``agents.runner.Forfeit``, with its label,
    seeds and the path of its replay)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    label: str
    seat: Count
    kind: str
    stage: str
    error: str
    step: Count
    #: The index of the forfeit round (from 0).
    round: Count
    match_seed: Count
    agent_seed: Count
    #: The replay's path in the folder (``replays/...``), or the replay itself in memory.
    replay: str | dict[str, Any] | None = None


class MatchLine(_Strict):
    """A match's line in ``results.jsonl`` (``tournament.runner.play_task``'s record, with
    ``sitting`` and ``digest``)."""

    sequence: Count
    rotation: Count
    seats: list[str]
    scores: list[Finite]
    rounds: list[RoundLine]
    steps: Count
    seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    #: Per seat: seconds thinking on decisions with a choice, and how many (lines written
    #: before they were recorded have neither).
    think: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = None
    choices: list[Count] | None = None
    forfeit: ForfeitLine | None = None
    #: With ``save_replays``: the match's replay in the folder (``replays/seqS-rotR.json.gz``),
    #: or the replay itself in memory (a forfeited match keeps its replay in ``forfeit``).
    replay: str | dict[str, Any] | None = None
    sitting: Annotated[int, Field(ge=1)] = 1
    digest: str | None = None

    @field_validator("seats")
    @classmethod
    def _table(cls, seats: list[str]) -> list[str]:
        if not 2 <= len(seats) <= 8:
            raise ValueError(f"a table has 2..8 seats, not {len(seats)}")
        return seats

    @model_validator(mode="after")
    def _consistent(self) -> MatchLine:
        n = len(self.seats)
        for name in ("scores", "think", "choices"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"{name} has {len(value)} entries for {n} seats")
        if self.rotation >= n:
            raise ValueError(f"rotation {self.rotation} is not a seat of {n}")
        totals = [0.0] * n
        for k, rnd in enumerate(self.rounds, 1):
            if sorted(rnd.order) != list(range(n)) or len(rnd.rewards) != n:
                raise ValueError(f"round {k} does not place each of the {n} seats once")
            if abs(math.fsum(rnd.rewards)) > TOLERANCE * n:
                raise ValueError(f"round {k}'s rewards sum to {math.fsum(rnd.rewards)!r}, "
                                 "not zero")
            totals = [t + r for t, r in zip(totals, rnd.rewards, strict=True)]
        off = [i for i in range(n) if abs(self.scores[i] - totals[i]) > TOLERANCE * n]
        if off:
            i = off[0]
            raise ValueError(f"seat {i}'s score {self.scores[i]!r} is not the sum of its "
                             f"rounds' rewards ({totals[i]!r})")
        if self.forfeit is not None and self.forfeit.seat >= n:
            raise ValueError(f"the forfeit's seat {self.forfeit.seat} is not a seat of {n}")
        return self


__all__ = ["ForfeitLine", "MatchLine", "RoundLine", "TOLERANCE"]
