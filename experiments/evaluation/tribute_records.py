"""The schema of a tribute analysis's unit of work (a line of ``tribute_parts.jsonl``), checked
before any work, as the tournament's lines are (:mod:`.tournament.records`): the JSON parsed by
pydantic (at most :data:`~.tournament.records.MAX_DEPTH` levels), every field typed and
bounded (finite rewards, card counts of the 45 cards, the Dragon's seat), and the line's own
``digest`` (the SHA-256 of the rest of it, written with it) recomputed, so that a damaged or
hand-edited line is refused by file and line. The digest detects damage, not forgery. Lines
written before digests have none; a line without one after a line with one is refused.
"""

from __future__ import annotations

from typing import Annotated, Any

from dragons_egg.experiments.evaluation.tournament.records import check_record, line_digest
from dragons_egg_env.cards import NUM_CARDS


def _model() -> Any:
    """:class:`PartLine`, made when a line is first read (pydantic is imported then)."""
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    Count = Annotated[int, Field(ge=0)]
    Finite = Annotated[float, Field(allow_inf_nan=False, ge=-1e6, le=1e6)]

    class PartLine(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

        play: Count
        lo: Count
        hi: Count
        rewards: dict[str, list[Finite]]
        asked: Annotated[list[Count], Field(min_length=NUM_CARDS, max_length=NUM_CARDS)]
        given: Annotated[list[Count], Field(min_length=NUM_CARDS, max_length=NUM_CARDS)]
        dragons: list[Annotated[int, Field(ge=0, le=7)]]
        digest: str | None = None

        @model_validator(mode="after")
        def _sizes(self) -> PartLine:
            n = self.hi - self.lo
            if n <= 0:
                raise ValueError(f"hi {self.hi} is not above lo {self.lo}")
            if len(self.dragons) != n or any(len(r) != n for r in self.rewards.values()):
                raise ValueError(f"a unit of deals {self.lo}..{self.hi} holds {n} of each")
            return self

    return PartLine


_MODEL: list[Any] = []


def parse_part(line: bytes, where: str) -> dict[str, Any]:
    """One unit of work's line, checked (schema, then digest:
    :func:`~.tournament.records.check_record`), as the dict it holds; a ``ValueError``
    starting with ``where`` naming what is wrong."""
    if not _MODEL:
        _MODEL.append(_model())
    return check_record(line, where, _MODEL[0], "a valid unit of work")


__all__ = ["line_digest", "parse_part"]
