"""One agent against a set of opponents: the evaluation that the trainers (in their loops), the
main job and the evaluation of a run's saved policies (:mod:`..training.evaluate_run`) share.

A duplicate-deal tournament (:mod:`.tournament`) with the agent in one seat and the opponents
in the others, in turn, reported as one row of figures: the agent's mean match score, Dragon
and Egg rates and mean place, and its difference to each opponent it met, each with a 95%
bootstrap interval over deal sequences. The small-sample rule is the tournament's: an interval
from fewer deal sequences than :data:`.tournament.MIN_SEQUENCES` is left out (NaN), never
shown as if it meant something.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dragons_egg.experiments.evaluation.tournament import (
    MIN_SEQUENCES,
    Entrant,
    Estimate,
    TournamentConfig,
    run_matches,
    summarize,
)

#: The row's figures of the agent itself (each also with ``_low`` and ``_high`` where an
#: interval is given).
AGENT_FIGURES = ("mean_score", "dragon_rate", "egg_rate", "mean_place")


def interval(est: Estimate) -> tuple[float, float]:
    """The 95% interval of a tournament :class:`~.tournament.Estimate`, or ``(nan, nan)``
    where the tournament's rule (``Estimate.enough``: at least :data:`.tournament.MIN_SEQUENCES`
    deal sequences) refuses one (or the estimate holds none)."""
    if est.enough and est.low is not None and est.high is not None:
        return est.low, est.high
    return math.nan, math.nan


def evaluate_agent(me: str, opponents: Sequence[str], *, players: int, matches: int,
                   seed: int, num_rounds: int = 3, rules: Mapping[str, Any] | None = None,
                   workers: int = 1, bootstrap: int = 1000) -> dict[str, float]:
    """Play ``me`` (an agent spec) in one seat against ``opponents`` in the others (the
    opponents in turn: seat ``i`` gets ``opponents[(i - 1) % len(opponents)]``) for
    ``matches`` duplicate matches at ``players`` seats, and return the row of figures:
    ``mean_score`` with ``score_low``/``score_high``; ``dragon_rate``, ``egg_rate`` and
    ``mean_place``; and for each opponent that shared a table with ``me``, ``diff_<opponent>``
    (``me`` minus it, paired by deals) with ``_low``/``_high``. An agent that fails is an
    error here, never a forfeit: an evaluation measures a policy, not its robustness."""
    opps = list(opponents)
    if not opps:
        raise ValueError("an evaluation needs at least one opponent")
    lineup: list[str | Entrant] = [me, *(opps[i % len(opps)] for i in range(players - 1))]
    tc = TournamentConfig(agents=lineup, num_players=players, matches=matches, seed=seed,
                          num_rounds=num_rounds, rules=dict(rules or {}), workers=workers,
                          bootstrap=bootstrap, on_agent_error="stop")
    summary = summarize(tc, run_matches(tc, progress=False))
    mine = summary["agents"][me]
    row: dict[str, float] = {"mean_score": mine["mean_score"].mean}
    row["score_low"], row["score_high"] = interval(mine["mean_score"])
    for key in AGENT_FIGURES[1:]:
        row[key] = mine[key].mean
    for opp in dict.fromkeys(opps):
        d = summary["differences"].get(f"{me} - {opp}")
        if d is not None:  # the pair met (an opponent always does while me has a seat)
            row[f"diff_{opp}"] = d.mean
            row[f"diff_{opp}_low"], row[f"diff_{opp}_high"] = interval(d)
    return row


def format_estimate(row: Mapping[str, Any], key: str) -> str:
    """``row[key]`` with its interval (``key_low``, ``key_high``; ``score_low`` and
    ``score_high`` for ``mean_score``), or with the words ``no interval`` where the evaluation
    had too few deal sequences for one."""
    stem = "score" if key == "mean_score" else key
    low, high = row.get(stem + "_low", math.nan), row.get(stem + "_high", math.nan)
    if not (isinstance(low, float) and isinstance(high, float)) or math.isnan(low) \
            or math.isnan(high):
        return f"{row[key]:+.3f} [no interval: fewer than {MIN_SEQUENCES} deal sequences]"
    return f"{row[key]:+.3f} [{low:+.3f}, {high:+.3f}]"


__all__ = ["AGENT_FIGURES", "evaluate_agent", "format_estimate", "interval"]
