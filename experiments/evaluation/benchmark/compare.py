"""Two score cards compared on the deals both were scored on (``dragons-egg benchmark compare
A.json B.json``, :func:`compare_cards`): per cell, the mean over deal sequences of A's mean
match score minus B's, with a paired 95% bootstrap over the sequences, and the headline, the
mean of the cells' differences, over the cells both cards hold (a card of an agent that cannot
play some table sizes has fewer; the others are named as left out). The suite's deals and every
other seat's seeds are the same on both cards, so the deals' luck falls out of the difference.
Cards of different suites (by digest) or tiers are refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tournament.schedule import derive
from ..tournament.stats import Estimate, bootstrap
from .card import ScoreCard, headline


class CardMismatch(ValueError):
    """Two cards that cannot be compared (one line naming why)."""


@dataclass(frozen=True)
class CellDiff:
    """One cell: A's and B's mean match scores and A minus B, paired by deal sequence."""

    key: str
    a: float
    b: float
    difference: Estimate


@dataclass(frozen=True)
class CardComparison:
    """A's card against B's: the cells and the headline difference."""

    a: str
    b: str
    tier: str
    suite: str
    cells: list[CellDiff]
    headline: Estimate
    #: Cells of the tier one card holds and the other does not (an agent that cannot play
    #: a table size), left out of the comparison.
    left_out: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {"a": self.a, "b": self.b, "tier": self.tier, "suite": self.suite,
                "cells": [{"key": c.key, "a": c.a, "b": c.b,
                           "difference": c.difference.to_json()} for c in self.cells],
                "headline": self.headline.to_json(), "left_out": list(self.left_out)}

    def table(self) -> str:
        """A markdown table of the comparison."""
        lines = [f"A: `{self.a}`; B: `{self.b}`; suite {self.suite}, tier {self.tier}. "
                 "A's mean match score minus B's, paired by deal sequence (95% bootstrap).",
                 "", f"**Headline (mean over cells): {self.headline.fmt(sign=True)}**", "",
                 *([f"Left out (on one card only): {', '.join(self.left_out)}.", ""]
                   if self.left_out else []),
                 "| cell | A | B | A - B | excludes zero |", "|---|---:|---:|---:|---|"]
        for c in self.cells:
            lines.append(f"| {c.key} | {c.a:+.3f} | {c.b:+.3f} | "
                         f"{c.difference.fmt(sign=True)} | "
                         f"{'yes' if c.difference.excludes_zero() else 'no'} |")
        return "\n".join(lines)


def compare_cards(a: ScoreCard, b: ScoreCard) -> CardComparison:
    """A's card minus B's, cell by cell and in the headline (see the module's docstring);
    a :class:`CardMismatch` when they were not scored on the same suite and tier."""
    if a.suite.digest != b.suite.digest:
        raise CardMismatch(f"the cards were scored on different suites ({a.suite.version} "
                           f"{a.suite.digest[:12]} against {b.suite.version} "
                           f"{b.suite.digest[:12]}): their deals differ")
    if a.tier != b.tier:
        raise CardMismatch(f"the cards are of different tiers ({a.tier} against {b.tier}): "
                           "compare cards of one tier")
    # the cells both hold (a card of an agent that cannot play some table sizes has fewer)
    keys_b = {c.key: c for c in b.cells}
    pairs = [(x, keys_b[x.key]) for x in a.cells if x.key in keys_b]
    left_out = tuple(sorted({c.key for c in a.cells} ^ set(keys_b)))
    if not pairs:
        raise CardMismatch("the cards hold no cell in common")
    if any(x.sequences != y.sequences for x, y in pairs):
        raise CardMismatch("the cards do not hold the same deal sequences")
    reps = 2000
    cells, per_seq = [], []
    for x, y in pairs:
        d = np.asarray(x.scores, dtype=float) - np.asarray(y.scores, dtype=float)
        rng = np.random.default_rng(derive(x.seed, 4))
        est = bootstrap(d, np.ones_like(d), reps, rng, mean=float(d.mean())).under_rule()
        cells.append(CellDiff(x.key, float(np.mean(x.scores)), float(np.mean(y.scores)), est))
        per_seq.append(d.tolist())
    head = headline(per_seq, reps, derive(pairs[0][0].seed, 5)).under_rule()
    return CardComparison(a.agent, b.agent, a.tier, f"{a.suite.name} {a.suite.version}", cells,
                          head, left_out)
