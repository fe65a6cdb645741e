"""A tournament's result as typed, frozen dataclasses whose fields are the keys of its
``summary.json``: :meth:`TournamentResult.to_json` is what the file holds and
:meth:`TournamentResult.from_json` reads a saved one back (``from_json(to_json(r)) == r``).

Layout (every :class:`~.stats.Estimate` is ``{"mean", "low", "high", "sequences"}``, with
``low`` and ``high`` ``null`` where the small-sample rule refuses an interval):

- ``labels``; ``agents``: label -> :class:`AgentStats`; ``differences``: ``"a - b"`` ->
  Estimate (pairs that shared a deal sequence); ``head_to_head``: rows of shares, ``null``
  where the pair never met; ``ratings``: label -> :class:`Rating`;
- ``matches``, ``sequences``, ``planned``, ``partial``; ``forfeits``: :class:`Forfeit` records;
- ``by_round``: label -> one :class:`RoundStats` per round of the match;
- ``timing``: :class:`Timing` (the one part that is not the same for the same seed).

A tournament in which no match finished is ``{"matches": 0, "planned", "partial": true,
"forfeits": []}``. Files written before ``sequences`` and ``by_round`` existed still load
(``sequences`` ``None``, ``by_round`` empty); they may give ``low``/``high`` for figures from
fewer than :data:`~.stats.MIN_SEQUENCES` deal sequences, which :meth:`.Estimate.enough` still
tells apart (when ``sequences`` is known).

For code written against the dict summary these classes also answer ``result["key"]``,
``result.get("key")`` and ``"key" in result`` with their fields (new code reads the
attributes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .stats import Estimate


class FieldAccess:
    """Read access by key to a dataclass's fields (``obj["name"]``, ``obj.get("name")``,
    ``"name" in obj``), as the dict summaries before the typed result gave it."""

    def __getitem__(self, key: str) -> Any:
        if key in self.__dataclass_fields__:  # type: ignore[attr-defined]
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The field ``key``, or ``default`` when there is no such field."""
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self.__dataclass_fields__  # type: ignore[attr-defined]

    def keys(self) -> list[str]:
        """The field names, in order."""
        return [f.name for f in fields(self)]  # type: ignore[arg-type]


def _nan_none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


@dataclass(frozen=True)
class AgentStats(FieldAccess):
    """One agent's figures: mean finishing place (1 = Dragon), Dragon and Egg rates (over
    its seats' rounds), mean match score (R28), how many matches and seat-rounds they rest
    on, how often it finished in each place, and its forfeits."""

    mean_place: Estimate
    dragon_rate: Estimate
    egg_rate: Estimate
    mean_score: Estimate
    matches: int
    rounds: int
    place_hist: list[int]
    forfeits: int

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` form."""
        return {"mean_place": self.mean_place.to_json(),
                "dragon_rate": self.dragon_rate.to_json(),
                "egg_rate": self.egg_rate.to_json(), "mean_score": self.mean_score.to_json(),
                "matches": self.matches, "rounds": self.rounds,
                "place_hist": list(self.place_hist), "forfeits": self.forfeits}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentStats:
        """Read back what :meth:`to_json` wrote."""
        return cls(mean_place=Estimate.from_json(data["mean_place"]),
                   dragon_rate=Estimate.from_json(data["dragon_rate"]),
                   egg_rate=Estimate.from_json(data["egg_rate"]),
                   mean_score=Estimate.from_json(data["mean_score"]),
                   matches=int(data["matches"]), rounds=int(data["rounds"]),
                   place_hist=[int(x) for x in data["place_hist"]],
                   forfeits=int(data.get("forfeits", 0)))


@dataclass(frozen=True)
class Rating(FieldAccess):
    """A Plackett-Luce rating: ``mu``, ``sigma``, ``mu -/+ 1.96 sigma`` and the ordinal
    ``mu - 3 sigma``."""

    mu: float
    sigma: float
    low: float
    high: float
    ordinal: float

    def to_json(self) -> dict[str, float]:
        """The ``summary.json`` form."""
        return {"mu": self.mu, "sigma": self.sigma, "low": self.low, "high": self.high,
                "ordinal": self.ordinal}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rating:
        """Read back what :meth:`to_json` wrote."""
        return cls(**{k: float(data[k]) for k in ("mu", "sigma", "low", "high", "ordinal")})


@dataclass(frozen=True)
class RoundStats(FieldAccess):
    """One agent's figures in one round of the match (``round``: 1 is the first), over its
    seats' rounds (``rounds`` of them), each with a 95% bootstrap interval over deal sequences
    under the small-sample rule:

    - ``reward``: its seats' mean round reward (R27);
    - at 2 players only (``None`` otherwise): ``won``, the share of those rounds it won; and
      from the second round on, split by who won the round before, ``as_dragon`` (it won:
      it is this round's Dragon and asks in the tribute, R31) and ``as_egg_holder`` (it lost:
      it holds the Egg and pays, R30/R32), each the share of those rounds it won.

    ``summary.json`` leaves out the keys that are ``None``."""

    round: int
    rounds: int
    reward: Estimate
    won: Estimate | None = None
    as_dragon: Estimate | None = None
    as_egg_holder: Estimate | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` form (``None`` figures left out)."""
        out: dict[str, Any] = {"round": self.round, "rounds": self.rounds,
                               "reward": self.reward.to_json()}
        for key in ("won", "as_dragon", "as_egg_holder"):
            est = getattr(self, key)
            if est is not None:
                out[key] = est.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundStats:
        """Read back what :meth:`to_json` wrote."""
        opt = {k: Estimate.from_json(data[k]) for k in ("won", "as_dragon", "as_egg_holder")
               if data.get(k) is not None}
        return cls(int(data["round"]), int(data["rounds"]), Estimate.from_json(data["reward"]),
                   **opt)


#: The keys of a forfeit record, in order.
FORFEIT_KEYS = ("sequence", "rotation", "label", "seat", "kind", "stage", "error", "round",
                "step", "match_seed", "agent_seed", "replay")


@dataclass(frozen=True)
class Forfeit(FieldAccess):
    """A forfeited match (see :mod:`dragons_egg.agents.runner`): its deal sequence and
    rotation, the agent that failed, its seat, how (``kind``, ``stage``, ``error``), where
    (``round`` from 0, ``step``), the match's and the agent's seeds, and the replay's path in
    the output folder (``None`` without one). A key missing from an older file is ``None``."""

    sequence: int
    rotation: int
    label: str | None = None
    seat: int | None = None
    kind: str | None = None
    stage: str | None = None
    error: str | None = None
    round: int | None = None
    step: int | None = None
    match_seed: int | None = None
    agent_seed: int | None = None
    replay: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` form."""
        return {k: getattr(self, k) for k in FORFEIT_KEYS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Forfeit:
        """Read back what :meth:`to_json` wrote."""
        rest: dict[str, Any] = {k: data.get(k) for k in FORFEIT_KEYS[2:]}
        return cls(int(data["sequence"]), int(data["rotation"]), **rest)


@dataclass(frozen=True)
class Sitting(FieldAccess):
    """The matches one sitting of a resumed run played (``sitting``: its number, ``None``
    for matches recorded before sittings were) and its agents' time per decision."""

    sitting: int | None
    matches: int
    ms_per_move: dict[str, float | None]

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` form."""
        return {"sitting": self.sitting, "matches": self.matches,
                "ms_per_move": dict(self.ms_per_move)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Sitting:
        """Read back what :meth:`to_json` wrote."""
        return cls(data.get("sitting"), int(data["matches"]), dict(data["ms_per_move"]))


@dataclass(frozen=True)
class Timing(FieldAccess):
    """Each agent's mean milliseconds per decision with a choice (``None``: not recorded)
    and, for a run played in several sittings, the same per sitting (``None`` otherwise;
    left out of ``summary.json`` then)."""

    ms_per_move: dict[str, float | None] = field(default_factory=dict)
    sittings: list[Sitting] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` form."""
        out: dict[str, Any] = {"ms_per_move": dict(self.ms_per_move)}
        if self.sittings is not None:
            out["sittings"] = [s.to_json() for s in self.sittings]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Timing:
        """Read back what :meth:`to_json` wrote."""
        sittings = data.get("sittings")
        return cls(dict(data.get("ms_per_move") or {}),
                   None if sittings is None else [Sitting.from_json(s) for s in sittings])


@dataclass(frozen=True)
class TournamentResult(FieldAccess):
    """What :func:`~.output.run_tournament` and :func:`~.stats.summarize` return, field for
    field the keys of ``summary.json`` (see the module's docstring)."""

    labels: list[str]
    agents: dict[str, AgentStats]
    differences: dict[str, Estimate]
    head_to_head: list[list[float | None]]
    ratings: dict[str, Rating]
    matches: int
    sequences: int
    planned: int
    partial: bool
    forfeits: list[Forfeit]
    by_round: dict[str, list[RoundStats]]
    timing: Timing

    @classmethod
    def empty(cls, planned: int) -> TournamentResult:
        """The result of a tournament in which no match finished."""
        return cls([], {}, {}, [], {}, 0, 0, planned, True, [], {}, Timing())

    def to_json(self) -> dict[str, Any]:
        """What ``summary.json`` holds (plain JSON data: NaN is ``null``)."""
        if not self.matches:
            return {"matches": 0, "planned": self.planned, "partial": True,
                    "forfeits": [f.to_json() for f in self.forfeits]}
        return {
            "labels": list(self.labels),
            "agents": {a: m.to_json() for a, m in self.agents.items()},
            "differences": {k: e.to_json() for k, e in self.differences.items()},
            "head_to_head": [[_nan_none(x) for x in row] for row in self.head_to_head],
            "ratings": {a: r.to_json() for a, r in self.ratings.items()},
            "matches": self.matches, "sequences": self.sequences, "planned": self.planned,
            "partial": self.partial, "forfeits": [f.to_json() for f in self.forfeits],
            "by_round": {a: [r.to_json() for r in rows] for a, rows in self.by_round.items()},
            "timing": self.timing.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TournamentResult:
        """A saved ``summary.json`` read back (older files: see the module's docstring); a
        ``ValueError`` naming the key when it is not a tournament's summary."""
        try:
            if not data.get("matches") and "agents" not in data:
                return cls([], {}, {}, [], {}, 0, 0, int(data.get("planned", 0)), True,
                           [Forfeit.from_json(f) for f in data.get("forfeits") or []], {},
                           Timing())
            matches = int(data["matches"])
            planned = int(data.get("planned", matches))
            return cls(
                labels=list(data["labels"]),
                agents={a: AgentStats.from_json(m) for a, m in data["agents"].items()},
                differences={k: Estimate.from_json(e)
                             for k, e in data["differences"].items()},
                head_to_head=[[None if x is None else float(x) for x in row]
                              for row in data["head_to_head"]],
                ratings={a: Rating.from_json(r) for a, r in data["ratings"].items()},
                matches=matches, sequences=int(data["sequences"]), planned=planned,
                partial=bool(data.get("partial", matches < planned)),
                forfeits=[Forfeit.from_json(f) for f in data.get("forfeits") or []],
                by_round={a: [RoundStats.from_json(r) for r in rows]
                          for a, rows in (data.get("by_round") or {}).items()},
                timing=Timing.from_json(data.get("timing") or {}))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a tournament's summary: {type(exc).__name__} "
                             f"{exc}") from None
