"""A tournament's estimator: means with 95% bootstrap intervals over deal sequences
(:class:`Estimate`, :func:`bootstrap`) and the small-sample rule (:data:`MIN_SEQUENCES`);
:mod:`.summary` computes a tournament's figures with them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dragons_egg.agents.runner import reward_units

#: Intervals from fewer deal sequences than this are reported as too few.
MIN_SEQUENCES = 10


@dataclass(frozen=True, eq=False)
class Estimate:
    """A mean with its 95% interval; ``sequences`` is how many deal sequences it rests on
    (``None``: not known, as in a summary written before it was recorded).

    ``low`` and ``high`` are ``None`` where the small-sample rule refuses an interval (fewer
    than :data:`MIN_SEQUENCES` deal sequences, :meth:`under_rule`): a tournament's result and
    its ``summary.json`` (``null``) never give one there. ``mean`` is NaN where nothing was
    measured (``null`` in JSON). Two estimates are equal when every field is, NaN equal to
    NaN, so a result read back from its JSON equals the one written."""

    mean: float
    low: float | None
    high: float | None
    sequences: int | None = None

    @property
    def enough(self) -> bool:
        """Whether the interval rests on at least :data:`MIN_SEQUENCES` deal sequences."""
        return self.sequences is None or self.sequences >= MIN_SEQUENCES

    def under_rule(self) -> Estimate:
        """This estimate with no interval (``low`` and ``high`` ``None``) when it rests on
        fewer than :data:`MIN_SEQUENCES` deal sequences, else itself."""
        return self if self.enough else Estimate(self.mean, None, None, self.sequences)

    def excludes_zero(self) -> bool:
        """Whether it has an interval and the interval leaves out zero."""
        return (self.enough and self.low is not None and self.high is not None
                and (self.low > 0 or self.high < 0))

    def fmt(self, digits: int = 3, sign: bool = False) -> str:
        """``mean [low, high]`` with ``digits`` decimals (``sign``: with ``+`` on positive
        numbers, as for a difference); ``mean [too few sequences: k]`` under the small-sample
        rule."""
        if not self.enough or self.low is None or self.high is None:
            return f"{_num(self.mean, digits, sign)} [too few sequences: {self.sequences}]"
        return (f"{_num(self.mean, digits, sign)} [{_num(self.low, digits, sign)}, "
                f"{_num(self.high, digits, sign)}]")

    def to_json(self) -> dict[str, Any]:
        """``{"mean", "low", "high", "sequences"}``; NaN and a refused interval are ``null``."""
        return {"mean": _json_float(self.mean), "low": _json_float(self.low),
                "high": _json_float(self.high), "sequences": self.sequences}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        """The estimate :meth:`to_json` wrote (``sequences`` absent in older files: ``None``;
        a ``null`` mean: NaN)."""
        mean = data.get("mean")
        return cls(math.nan if mean is None else float(mean), _opt_float(data.get("low")),
                   _opt_float(data.get("high")), data.get("sequences"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Estimate):
            return NotImplemented
        return (_same(self.mean, other.mean) and _same(self.low, other.low)
                and _same(self.high, other.high) and self.sequences == other.sequences)

    def __hash__(self) -> int:
        return hash((None if _nan(self.mean) else self.mean, self.low, self.high,
                     self.sequences))


def _nan(x: float | None) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _same(x: float | None, y: float | None) -> bool:
    return (_nan(x) and _nan(y)) or x == y


def _json_float(x: float | None) -> float | None:
    return None if x is None or _nan(x) else float(x)


def _opt_float(x: Any) -> float | None:
    return None if x is None else float(x)


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


def score_units(results: Sequence[dict[str, Any]], n: int
                ) -> tuple[list[list[int]] | None, int]:
    """Every result's scores in whole units of ``1/(n-1)`` and that denominator (R27), or
    ``(None, 1)`` when some score is not such a multiple (results from elsewhere)."""
    den = max(n - 1, 1)
    units = [reward_units(r["scores"], den) for r in results]
    if any(u is None for u in units):
        return None, 1
    return units, den  # type: ignore[return-value]
