"""A tournament's statistics: means with 95% bootstrap intervals over deal sequences
(:class:`Estimate`), paired differences, head-to-head shares and Plackett-Luce ratings
(:func:`summarize`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dragons_egg.agents.runner import reward_units
from dragons_egg_env.extras import explain

from .config import TournamentConfig
from .schedule import derive, match_key

#: Intervals from fewer deal sequences than this are reported as too few.
MIN_SEQUENCES = 10


@dataclass
class Estimate:
    """A mean with its 95% interval; ``sequences`` is how many deal sequences it rests on
    (``None``: not known). ``summary.json`` holds ``{mean, low, high}``."""

    mean: float
    low: float
    high: float
    sequences: int | None = None

    @property
    def enough(self) -> bool:
        """Whether the interval rests on at least :data:`MIN_SEQUENCES` deal sequences."""
        return self.sequences is None or self.sequences >= MIN_SEQUENCES

    def fmt(self, digits: int = 3, sign: bool = False) -> str:
        """``mean [low, high]`` with ``digits`` decimals (``sign``: with ``+`` on positive
        numbers, as for a difference)."""
        if not self.enough:
            return f"{_num(self.mean, digits, sign)} [too few sequences: {self.sequences}]"
        return (f"{_num(self.mean, digits, sign)} [{_num(self.low, digits, sign)}, "
                f"{_num(self.high, digits, sign)}]")


def _num(x: float, digits: int, sign: bool = False) -> str:
    """``x`` with ``digits`` decimals, never ``-0.000`` (``sign``: ``+`` before a positive
    one)."""
    text = f"{x:{'+' if sign else ''}.{digits}f}"
    if float(text) == 0:
        return text.lstrip("+-")
    return text


def bootstrap(sums: np.ndarray, counts: np.ndarray, reps: int, rng: np.random.Generator,
              den: int = 1, mean: float | None = None) -> Estimate:
    """The mean ``sum(sums) / (sum(counts) * den)`` over deal sequences with a percentile
    bootstrap that resamples sequences (``sums`` and ``counts`` per sequence; ``mean``
    overrides the point estimate, e.g. with an exact one)."""
    used = counts > 0
    if not used.any():
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    if mean is None:
        mean = float(sums.sum()) / (float(counts.sum()) * den)
    k = len(sums)
    idx = rng.integers(0, k, size=(reps, k))
    tot = counts[idx].sum(axis=1)
    ok = tot > 0
    boots = sums[idx].sum(axis=1)[ok] / (tot[ok] * den)
    lo, hi = np.percentile(boots, [2.5, 97.5]) if len(boots) else (mean, mean)
    return Estimate(mean, float(lo), float(hi), int(used.sum()))


def _score_units(results: Sequence[dict[str, Any]], n: int) -> tuple[list[list[int]] | None, int]:
    """Every result's scores in whole units of ``1/(n-1)`` and that denominator (R27), or
    ``(None, 1)`` when some score is not such a multiple (results from elsewhere)."""
    den = max(n - 1, 1)
    units = [reward_units(r["scores"], den) for r in results]
    if any(u is None for u in units):
        return None, 1
    return units, den  # type: ignore[return-value]


def summarize(tc: TournamentConfig, results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-agent metrics with intervals, pairwise differences (only of pairs that shared a
    deal sequence), head-to-head and ratings; ``matches`` played of the ``planned`` ones
    (``partial`` when fewer) and every ``forfeit``. Results count in match order whatever
    order they come in, so the same matches give the same summary."""
    results = sorted(results, key=match_key)
    n = tc.num_players
    labels = list(dict.fromkeys(tc.labels))
    seqs = sorted({r["sequence"] for r in results})
    sidx = {s: i for i, s in enumerate(seqs)}
    k = len(seqs)
    L = len(labels)
    lidx = {a: i for i, a in enumerate(labels)}
    units, den = _score_units(results, n)
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
        agents_out[label] = {
            "mean_place": bootstrap(place_sum[:, a], rc, reps, rng),
            "dragon_rate": bootstrap(dragon_sum[:, a], rc, reps, rng),
            "egg_rate": bootstrap(egg_sum[:, a], rc, reps, rng),
            "mean_score": bootstrap(score_sum[:, a], mc, reps, rng, den=den),
            "matches": int(mc.sum()),
            "rounds": int(rc.sum()),
            "place_hist": place_hist[a].tolist(),
            "forfeits": sum(1 for r in results if (r.get("forfeit") or {}).get("label") == label),
        }
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
            diffs[f"{labels[a]} - {labels[b]}"] = bootstrap(d * w, w, reps, rng, mean=exact)
    h2h = np.where(meets > 0, wins / np.maximum(meets, 1), np.nan)
    ratings = _ratings(tc, results, labels)
    planned = tc.num_sequences * n
    return {"labels": labels, "agents": agents_out, "differences": diffs,
            "head_to_head": h2h.tolist(), "ratings": ratings,
            "matches": len(results), "sequences": k, "planned": planned,
            "partial": len(results) < planned, "forfeits": _forfeits(results),
            # the one part that is not the same for the same seed (runner.TIMING_KEYS)
            "timing": _timing(results, labels)}


def _timing(results: Sequence[dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    """Each agent's mean time per decision with a choice (``ms_per_move``) and, for a run
    played in several sittings (resumed, perhaps on another machine or beside other work),
    the same per sitting (``sittings``: its number, ``None`` for matches recorded before
    sittings were, its matches and ``ms_per_move``): times compare only within a sitting."""
    out: dict[str, Any] = {"ms_per_move": {a: _ms_per_move(results, a) for a in labels}}
    groups: dict[int | None, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r.get("sitting"), []).append(r)
    if len(groups) > 1:
        out["sittings"] = [
            {"sitting": k, "matches": len(rs),
             "ms_per_move": {a: _ms_per_move(rs, a) for a in labels}}
            for k, rs in sorted(groups.items(), key=lambda kv: -1 if kv[0] is None else kv[0])]
    return out


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


def _forfeits(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every forfeited match, in match order: who failed, how, the seeds and the replay."""
    out = []
    for r in results:
        f = r.get("forfeit")
        if f:
            out.append({"sequence": r["sequence"], "rotation": r["rotation"],
                        **{k: f.get(k) for k in ("label", "seat", "kind", "stage", "error",
                                                 "round", "step", "match_seed",
                                                 "agent_seed")},
                        "replay": f["replay"] if isinstance(f.get("replay"), str) else None})
    return out


def _safe_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.divide(x, y, out=np.zeros_like(x, dtype=float), where=y > 0)


def _ratings(tc: TournamentConfig, results: Sequence[dict[str, Any]], labels: list[str]
             ) -> dict[str, dict[str, float]]:
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
    return {a: {"mu": mu[a], "sigma": sigma[a], "low": mu[a] - 1.96 * sigma[a],
                "high": mu[a] + 1.96 * sigma[a], "ordinal": mu[a] - 3 * sigma[a]}
            for a in labels}
