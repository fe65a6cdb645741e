"""A tournament's figures (:func:`summarize`): per agent, mean place, Dragon and Egg rates
and mean match score with 95% bootstrap intervals over deal sequences; paired differences;
head-to-head shares; Plackett-Luce ratings; the per-round breakdown (:mod:`.rounds`); all as
a :class:`~.result.TournamentResult`, under the small-sample rule (no interval from fewer than
:data:`~.stats.MIN_SEQUENCES` deal sequences)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dragons_egg_env.extras import explain

from .config import TournamentConfig
from .result import AgentStats, Forfeit, Rating, Sitting, Timing, TournamentResult
from .rounds import round_breakdown
from .schedule import derive, match_key
from .stats import bootstrap, score_units


def summarize(tc: TournamentConfig, results: Sequence[dict[str, Any]]) -> TournamentResult:
    """Per-agent metrics with intervals, pairwise differences (only of pairs that shared a
    deal sequence), head-to-head, ratings and the per-round breakdown; ``matches`` played of
    the ``planned`` ones (``partial`` when fewer) and every ``forfeit``. Results count in match
    order whatever order they come in, so the same matches give the same result. No results:
    :meth:`~.result.TournamentResult.empty`."""
    results = sorted(results, key=match_key)
    planned = tc.num_sequences * tc.num_players
    if not results:
        return TournamentResult.empty(planned)
    n = tc.num_players
    labels = list(dict.fromkeys(tc.labels))
    seqs = sorted({r["sequence"] for r in results})
    sidx = {s: i for i, s in enumerate(seqs)}
    k = len(seqs)
    L = len(labels)
    lidx = {a: i for i, a in enumerate(labels)}
    units, den = score_units(results, n)
    # Per sequence and agent: sums and counts (scores in units of 1/den: whole numbers).
    place_sum = np.zeros((k, L))
    dragon_sum = np.zeros((k, L))
    egg_sum = np.zeros((k, L))
    round_cnt = np.zeros((k, L))
    score_sum = np.zeros((k, L))
    match_cnt = np.zeros((k, L))
    place_hist = np.zeros((L, n), dtype=int)
    wins = np.zeros((L, L))
    meets = np.zeros((L, L))
    for ri, r in enumerate(results):
        si = sidx[r["sequence"]]
        seat_label = [lidx[a] for a in r["seats"]]
        for seat, a in enumerate(seat_label):
            score_sum[si, a] += units[ri][seat] if units is not None else r["scores"][seat]
            match_cnt[si, a] += 1
        for rd in r["rounds"]:
            order = rd["order"]
            for place, seat in enumerate(order):
                a = seat_label[seat]
                place_sum[si, a] += place + 1
                dragon_sum[si, a] += place == 0
                egg_sum[si, a] += place == n - 1
                round_cnt[si, a] += 1
                place_hist[a, place] += 1
            for x in range(n):
                for y in range(x + 1, n):
                    a, b = seat_label[order[x]], seat_label[order[y]]
                    if a != b:
                        wins[a, b] += 1
                        meets[a, b] += 1
                        meets[b, a] += 1
    rng = np.random.default_rng(derive(tc.seed, 999) % (2**63))
    reps = tc.bootstrap
    agents_out = {}
    for a, label in enumerate(labels):
        rc, mc = round_cnt[:, a], match_cnt[:, a]
        agents_out[label] = AgentStats(
            mean_place=bootstrap(place_sum[:, a], rc, reps, rng).under_rule(),
            dragon_rate=bootstrap(dragon_sum[:, a], rc, reps, rng).under_rule(),
            egg_rate=bootstrap(egg_sum[:, a], rc, reps, rng).under_rule(),
            mean_score=bootstrap(score_sum[:, a], mc, reps, rng, den=den).under_rule(),
            matches=int(mc.sum()), rounds=int(rc.sum()),
            place_hist=[int(x) for x in place_hist[a]],
            forfeits=sum(1 for r in results
                         if (r.get("forfeit") or {}).get("label") == label))
    # Paired differences of mean match score over the deal sequences both agents played.
    diffs = {}
    per_seq_score = _safe_div(score_sum, match_cnt * den)
    for a in range(L):
        for b in range(L):
            if a == b:
                continue
            both = (match_cnt[:, a] > 0) & (match_cnt[:, b] > 0)
            if not both.any():
                continue  # never met: no paired difference
            d = per_seq_score[:, a] - per_seq_score[:, b]
            exact = None
            if units is not None:
                total = sum((Fraction(int(score_sum[s, a]), int(match_cnt[s, a]))
                             - Fraction(int(score_sum[s, b]), int(match_cnt[s, b]))
                             for s in np.flatnonzero(both)), Fraction(0))
                exact = float(total / (int(both.sum()) * den))
            w = both.astype(float)
            diffs[f"{labels[a]} - {labels[b]}"] = bootstrap(d * w, w, reps, rng,
                                                          mean=exact).under_rule()
    h2h = [[float(wins[a, b] / meets[a, b]) if meets[a, b] > 0 else None for b in range(L)]
           for a in range(L)]
    return TournamentResult(
        labels=labels, agents=agents_out, differences=diffs, head_to_head=h2h,
        ratings=_ratings(tc, results, labels), matches=len(results), sequences=k,
        planned=planned, partial=len(results) < planned, forfeits=_forfeits(results),
        by_round=round_breakdown(tc, results),
        # the one part that is not the same for the same seed (runner.TIMING_KEYS)
        timing=_timing(results, labels))


def _timing(results: Sequence[dict[str, Any]], labels: list[str]) -> Timing:
    """Each agent's mean time per decision with a choice (``ms_per_move``) and, for a run
    played in several sittings (resumed, perhaps on another machine or beside other work),
    the same per sitting (``sittings``: its number, ``None`` for matches recorded before
    sittings were, its matches and ``ms_per_move``): times compare only within a sitting."""
    groups: dict[int | None, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r.get("sitting"), []).append(r)
    sittings = None
    if len(groups) > 1:
        sittings = [
            Sitting(k, len(rs), {a: _ms_per_move(rs, a) for a in labels})
            for k, rs in sorted(groups.items(), key=lambda kv: -1 if kv[0] is None else kv[0])]
    return Timing({a: _ms_per_move(results, a) for a in labels}, sittings)


def _ms_per_move(results: Sequence[dict[str, Any]], label: str) -> float | None:
    """The mean time ``label``'s agents took per decision with a choice, in milliseconds,
    over the matches that recorded it (``None``: none did, as results of tournaments before
    it was recorded)."""
    think, choices = 0.0, 0
    for r in results:
        if "think" not in r:
            continue
        for seat, a in enumerate(r["seats"]):
            if a == label:
                think += r["think"][seat]
                choices += r["choices"][seat]
    return 1000 * think / choices if choices else None


def _forfeits(results: Sequence[dict[str, Any]]) -> list[Forfeit]:
    """Every forfeited match, in match order: who failed, how, the seeds and the replay."""
    out: list[Forfeit] = []
    for r in results:
        f = r.get("forfeit")
        if f:
            out.append(Forfeit(
                r["sequence"], r["rotation"],
                **{k: f.get(k) for k in ("label", "seat", "kind", "stage", "error", "round",
                                         "step", "match_seed", "agent_seed")},
                replay=f["replay"] if isinstance(f.get("replay"), str) else None))
    return out


def _safe_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x, dtype=float)
    np.divide(x, y, out=out, where=y > 0)
    return out


def _ratings(tc: TournamentConfig, results: Sequence[dict[str, Any]], labels: list[str]
             ) -> dict[str, Rating]:
    """Plackett-Luce ratings (openskill) over every round's full finishing order. An agent
    that fills several seats of a table moves by the mean of its seats' updates."""
    try:
        from openskill.models import PlackettLuce
    except ModuleNotFoundError as exc:  # a MissingExtraError naming the experiments extra
        raise explain(exc, "the tournament's ratings", "experiments") from None

    model = PlackettLuce()
    mu = {a: model.mu for a in labels}
    sigma = {a: model.sigma for a in labels}
    for r in results:
        seats = r["seats"]
        for rd in r["rounds"]:
            place = {seat: p for p, seat in enumerate(rd["order"])}
            teams = [[model.rating(mu=mu[a], sigma=sigma[a])] for a in seats]
            new = model.rate(teams, ranks=[place[j] + 1 for j in range(len(seats))])
            upd: dict[str, list[tuple[float, float]]] = {}
            for j, a in enumerate(seats):
                upd.setdefault(a, []).append((new[j][0].mu, new[j][0].sigma))
            for a, vals in upd.items():
                mu[a] = sum(v[0] for v in vals) / len(vals)
                sigma[a] = sum(v[1] for v in vals) / len(vals)
    return {a: Rating(float(mu[a]), float(sigma[a]), float(mu[a] - 1.96 * sigma[a]),
                      float(mu[a] + 1.96 * sigma[a]), float(mu[a] - 3 * sigma[a]))
            for a in labels}
