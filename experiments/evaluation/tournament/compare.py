"""Two tournaments compared on the deals they were both dealt (``dragons-egg tournament compare
A B``, :func:`compare_tournaments`).

Two tournaments played on the same seed, table size, match count and rules are dealt the
same deal sequences (:func:`~.schedule.deal_sequence`) and, with line-ups of the same shape,
seat the agents at the same places of the line-up. For every pair of places of the line-up
(say A's ``ppo-new`` and ``ismcts`` against B's ``ppo-old`` and ``ismcts``: the opponent they
share), each tournament gives per deal sequence the first agent's mean match score minus the
second's (its *margin*); the comparison is the mean over the sequences both played of A's
margin minus B's, with a paired 95% percentile bootstrap over those sequences (the
tournament's estimator, :func:`~.stats.bootstrap`) under the small-sample rule (no interval
from fewer than :data:`~.stats.MIN_SEQUENCES` sequences). Pairing on the deals takes their
luck out of the comparison, so the interval is narrower than the two tournaments' own
intervals side by side; the opponent's play still differs between the two, since it answers
different moves.

A tournament whose seed, table size, match count, rounds, rules or line-up differ is
refused with a :class:`CompareError` naming the setting; its per-match lines may be
``results.jsonl`` or ``results.jsonl.gz``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.agents.runner import reward_units

from .output import (
    OutputError,
    config_defaults,
    read_result_lines,
    read_saved_config,
    same_rules,
)
from .stats import MIN_SEQUENCES, Estimate, bootstrap

#: The settings two compared tournaments must share (they fix the deals).
SHARED_SETTINGS = ("seed", "num_players", "matches", "num_rounds", "rules")


class CompareError(ValueError):
    """Two tournaments that cannot be compared (one line naming why)."""


@dataclass(frozen=True)
class PairComparison:
    """One pair of places of the line-up: A's pair (``a_pair``, ``"x - y"``) and B's
    (``b_pair``), the deal sequences where both tournaments seated both, the mean margins
    over those sequences and the paired difference, A's margin minus B's."""

    a_pair: str
    b_pair: str
    sequences: int
    a_margin: float
    b_margin: float
    difference: Estimate

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {"a_pair": self.a_pair, "b_pair": self.b_pair, "sequences": self.sequences,
                "a_margin": self.a_margin, "b_margin": self.b_margin,
                "difference": self.difference.to_json()}


@dataclass(frozen=True)
class Comparison:
    """Tournament ``a`` against tournament ``b`` (their folders), the settings they share
    and one :class:`PairComparison` per pair of line-up places that met in both."""

    a: str
    b: str
    settings: dict[str, Any]
    bootstrap: int
    pairs: list[PairComparison]

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {"a": self.a, "b": self.b, "settings": dict(self.settings),
                "bootstrap": self.bootstrap, "pairs": [p.to_json() for p in self.pairs]}

    def table(self) -> str:
        """A markdown table of the comparison, with a line on what it rests on."""
        s = self.settings
        lines = [f"A: {self.a}; B: {self.b}; {s['num_players']} players, {s['num_rounds']} "
                 f"rounds a match, {s['matches']} matches, seed {s['seed']}, rules "
                 f"{s['rules'] or 'default'}. A's margin minus B's, paired by deal sequence "
                 f"(95% bootstrap, {self.bootstrap} resamples; `[too few sequences: k]`: "
                 f"fewer than {MIN_SEQUENCES}, no interval):", "",
                 "| pair in A | pair in B | deal sequences | A's margin | B's margin | "
                 "A - B | excludes zero |", "|---|---|---:|---:|---:|---|---|"]
        for p in self.pairs:
            sig = ("yes" if p.difference.excludes_zero() else "no") if p.difference.enough \
                else "too few sequences"
            lines.append(f"| `{p.a_pair}` | `{p.b_pair}` | {p.sequences} | "
                         f"{p.a_margin:+.3f} | {p.b_margin:+.3f} | "
                         f"{p.difference.fmt(sign=True)} | {sig} |")
        return "\n".join(lines)


def _labels(config: dict[str, Any], where: Path) -> list[str]:
    out = []
    for i, a in enumerate(config["agents"]):
        if isinstance(a, str):
            out.append(a)
        elif isinstance(a, dict) and isinstance(a.get("label"), str):
            out.append(a["label"])
        else:
            raise CompareError(f"{where}/config.json: agent {i + 1} ({a!r}) has no label")
    return out


def _shape(labels: Sequence[str]) -> list[int]:
    """The line-up's shape: each place's index among the distinct labels."""
    distinct = list(dict.fromkeys(labels))
    return [distinct.index(a) for a in labels]


def _margins(lines: list[dict[str, Any]], labels: list[str], n: int
             ) -> dict[tuple[int, int], dict[int, Fraction | float]]:
    """Per pair of distinct-label indices ``(i, j)``: per deal sequence where both sat, the
    mean match score of label ``i``'s seats minus label ``j``'s (exact when the scores are
    whole units of ``1/(n-1)``, R27)."""
    distinct = list(dict.fromkeys(labels))
    idx = {a: i for i, a in enumerate(distinct)}
    den = max(n - 1, 1)
    sums: dict[int, dict[int, list[Any]]] = {}
    for r in lines:
        units = reward_units(r["scores"], den)
        seq = sums.setdefault(r["sequence"], {})
        for seat, label in enumerate(r["seats"]):
            if label not in idx:
                raise CompareError(f"a line of deal sequence {r['sequence']} seats {label!r}, "
                                   "which its config.json does not list")
            score: Fraction | float = (Fraction(units[seat], den) if units is not None
                                       else float(r["scores"][seat]))
            tot = seq.setdefault(idx[label], [0, 0])
            tot[0] += score
            tot[1] += 1
    out: dict[tuple[int, int], dict[int, Fraction | float]] = {}
    for i in range(len(distinct)):
        for j in range(i + 1, len(distinct)):
            out[(i, j)] = {s: t[i][0] / t[i][1] - t[j][0] / t[j][1]
                           for s, t in sums.items() if i in t and j in t}
    return out


def _load(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        return read_saved_config(folder), read_result_lines(folder)
    except OutputError as exc:
        raise CompareError(str(exc).replace("nothing to resume in", "no tournament in")
                           ) from None


def compare_tournaments(a: str | os.PathLike[str], b: str | os.PathLike[str], *,
                        bootstrap_reps: int | None = None) -> Comparison:
    """Compare tournament folder ``a`` with ``b`` on the deals both were dealt (see the
    module's docstring): a :class:`Comparison` with one row per pair of line-up places that
    met in both. ``bootstrap_reps``: resamples (default: ``a``'s ``bootstrap`` setting). The
    bootstrap's generator is seeded with the shared tournament seed (one stream, the rows in
    order), so the same folders give the same figures. A :class:`CompareError` names a
    setting that differs, or a folder that holds no tournament."""
    fa, fb = Path(a), Path(b)
    (ca, la), (cb, lb) = _load(fa), _load(fb)
    defaults = config_defaults()
    settings = {k: ca.get(k, defaults[k]) for k in SHARED_SETTINGS}
    for key in SHARED_SETTINGS:
        va, vb = settings[key], cb.get(key, defaults[key])
        same = (same_rules(va, vb, settings["num_players"], settings["num_rounds"])
                if key == "rules" else va == vb)
        if not same:
            raise CompareError(f"{fa} and {fb} differ in {key} ({json.dumps(va)} against "
                               f"{json.dumps(vb)}): they were not dealt the same deals")
    labels_a, labels_b = _labels(ca, fa), _labels(cb, fb)
    if len(labels_a) != len(labels_b) or _shape(labels_a) != _shape(labels_b):
        raise CompareError(f"{fa} and {fb} differ in the line-up ({labels_a} against "
                           f"{labels_b}): their agents do not sit in the same places")
    n = int(settings["num_players"])
    reps = int(bootstrap_reps or ca.get("bootstrap", defaults["bootstrap"]))
    ma, mb = _margins(la, labels_a, n), _margins(lb, labels_b, n)
    da, db = list(dict.fromkeys(labels_a)), list(dict.fromkeys(labels_b))
    # seeded with the tournaments' seed, as results/*/paired.py (which this replaces) was:
    # the figures it printed are the first row's here
    rng = np.random.default_rng(int(settings["seed"]))
    pairs = []
    for (i, j), by_seq in ma.items():
        both = sorted(set(by_seq) & set(mb[(i, j)]))
        if not both:
            continue  # the pair never met in one of them
        d = [by_seq[s] - mb[(i, j)][s] for s in both]
        arr = np.array([float(x) for x in d])
        est = bootstrap(arr, np.ones_like(arr), reps, rng,
                        mean=float(sum(d, Fraction(0)) / len(d))
                        if all(isinstance(x, Fraction) for x in d) else None)
        pairs.append(PairComparison(
            f"{da[i]} - {da[j]}", f"{db[i]} - {db[j]}", len(both),
            float(sum((by_seq[s] for s in both), Fraction(0)) / len(both)),
            float(sum((mb[(i, j)][s] for s in both), Fraction(0)) / len(both)),
            est.under_rule()))
    return Comparison(str(fa), str(fb), settings, reps, pairs)
