"""Where a tournament's margin comes from, round by round: per agent and round of the match,
its seats' mean round reward (R27) and, at 2 players, its share of rounds won, the rounds
after the first split by who won the round before (that round's Dragon asks in the tribute,
R31; the loser, the Egg holder, pays, R30/R32). Each figure has a 95% bootstrap interval over
deal sequences under the small-sample rule (:data:`~.stats.MIN_SEQUENCES`).

A result line records each round's finishing order (``rounds[i]["order"]``, seats from the
Dragon to the Egg holder) and its rewards (``rounds[i]["rewards"]``, by seat); a line without
rewards (results from elsewhere) has them from the order by the tournament's reward scheme
(R27)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dragons_egg.agents.runner import reward_units
from dragons_egg_env import engine as E
from dragons_egg_env.config import RulesConfig

from .config import TournamentConfig
from .result import RoundStats
from .schedule import derive
from .stats import bootstrap

#: The seed offset of the per-round figures' bootstrap (its own stream: the other figures of
#: a tournament stay what they were before the breakdown existed).
ROUND_STREAM = 997


def round_rewards(result: dict[str, Any], rules: RulesConfig) -> list[list[float]]:
    """Each recorded round's rewards by seat: the line's own, or from its finishing order by
    R27's reward scheme when the line has none."""
    place = E.place_rewards(rules)
    out = []
    for rd in result["rounds"]:
        if rd.get("rewards") is not None:
            out.append([float(x) for x in rd["rewards"]])
            continue
        rewards = [0.0] * len(rd["order"])
        for p, seat in enumerate(rd["order"]):
            rewards[seat] = place[p]
        out.append(rewards)
    return out


def round_breakdown(tc: TournamentConfig, results: Sequence[dict[str, Any]]
                    ) -> dict[str, list[RoundStats]]:
    """Every agent's :class:`~.result.RoundStats`, one per round of the match (rounds a
    forfeit cut short count where they were played)."""
    n, num_rounds = tc.num_players, tc.num_rounds
    labels = list(dict.fromkeys(tc.labels))
    lidx = {a: i for i, a in enumerate(labels)}
    seqs = sorted({r["sequence"] for r in results})
    sidx = {s: i for i, s in enumerate(seqs)}
    shape = (num_rounds, len(seqs), len(labels))
    reward, count, won = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    # at 2 players, rounds 2+: by who won the round before (the Dragon, the Egg holder)
    d_count, d_won, e_count, e_won = (np.zeros(shape) for _ in range(4))
    rewards = [round_rewards(r, tc.rules_config()) for r in results]
    den = max(n - 1, 1)
    units = [[reward_units(rd, den) for rd in rs] for rs in rewards]
    exact = all(u is not None for us in units for u in us)
    for ri, r in enumerate(results):
        si = sidx[r["sequence"]]
        rounds = r["rounds"][:num_rounds]
        for k, rd in enumerate(rounds):
            first = rd["order"][0]
            before = rounds[k - 1]["order"][0] if k else None
            for seat, label in enumerate(r["seats"]):
                a = lidx[label]
                u = units[ri][k]
                reward[k, si, a] += u[seat] if exact and u is not None else rewards[ri][k][seat]
                count[k, si, a] += 1
                if n != 2:
                    continue
                w = float(first == seat)
                won[k, si, a] += w
                if before is None:
                    continue
                if before == seat:  # it won the round before: this round's Dragon (R31)
                    d_count[k, si, a] += 1
                    d_won[k, si, a] += w
                else:  # it lost it: the Egg holder, who pays (R30, R32)
                    e_count[k, si, a] += 1
                    e_won[k, si, a] += w
    rng = np.random.default_rng(derive(tc.seed, ROUND_STREAM) % (2**63))
    reps = tc.bootstrap
    out: dict[str, list[RoundStats]] = {}
    for label, a in lidx.items():
        rows = []
        for k in range(num_rounds):
            c = count[k, :, a]
            est = bootstrap(reward[k, :, a], c, reps, rng, den=den if exact else 1)
            row = RoundStats(k + 1, int(c.sum()), est.under_rule())
            if n == 2:
                row = RoundStats(
                    k + 1, int(c.sum()), row.reward,
                    bootstrap(won[k, :, a], c, reps, rng).under_rule(),
                    *((bootstrap(d_won[k, :, a], d_count[k, :, a], reps, rng).under_rule(),
                       bootstrap(e_won[k, :, a], e_count[k, :, a], reps, rng).under_rule())
                      if k else (None, None)))
            rows.append(row)
        out[label] = rows
    return out
