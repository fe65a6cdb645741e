"""A benchmark's score card: its schema (pydantic, :data:`SCHEMA`), its figures from the cells'
tournaments (:func:`cell_card`, :func:`headline`), its markdown and its plot.

``scorecard.json`` holds a :class:`ScoreCard`: the schema's version, the suite (name, version,
digest, published or not), the tier, the agent spec, one :class:`CellCard` per cell (mean match
score, mean place and paired difference to the population's own seat, each a 95% interval
under the tournament's small-sample rule, and the per-sequence values a paired comparison of
two cards needs), the headline (the mean of the cells' paired differences) with its interval,
the command that remakes it, ``timing`` (time per move per cell: the one part a rerun does
not repeat) and its own ``digest`` (sha256 of the rest), so a damaged card is refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..tournament.result import TournamentResult
from ..tournament.schedule import derive
from ..tournament.stats import MIN_SEQUENCES, Estimate, bootstrap
from .suite import Cell, canonical

#: The score card's schema and version (a change of the layout is a new version).
SCHEMA: Final = "dragons-egg-benchmark-card/1"


class CardError(ValueError):
    """A score card that cannot be read (one line naming the file and why)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Interval(_Strict):
    """An estimate: mean, 95% interval (``None`` under the small-sample rule), sequences."""

    mean: float | None
    low: float | None
    high: float | None
    sequences: int | None

    def estimate(self) -> Estimate:
        """As the tournament's :class:`~..tournament.stats.Estimate`."""
        return Estimate.from_json(self.model_dump())


class CellCard(_Strict):
    """One cell's figures (see the module's docstring); ``scores`` and ``differences`` are
    the agent's mean match score and its paired difference per deal sequence."""

    key: str
    players: int
    population: str
    seed: int
    sequences: int
    matches: int
    forfeits: int
    mean_score: Interval
    mean_place: Interval
    paired_difference: Interval
    scores: list[float]
    differences: list[float]


class SuiteRef(_Strict):
    """The suite a card was scored on."""

    name: str
    version: str
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    published: bool


class ScoreCard(_Strict):
    """A benchmark's score card (``scorecard.json``, see the module's docstring)."""

    schema_: Literal["dragons-egg-benchmark-card/1"] = Field(alias="schema")
    suite: SuiteRef
    tier: str
    agent: str
    command: str
    cells: list[CellCard]
    headline: Interval
    timing: dict[str, float | None]
    digest: str = ""
    #: The tier's cells the agent cannot play (a learned policy plays tables up to the size
    #: it was trained for), by key, with why; the headline is over the cells it plays.
    not_played: dict[str, str] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def body(self) -> dict[str, Any]:
        """The card's JSON without its digest (and without ``not_played`` when empty, as the
        cards written before it had none)."""
        data = self.model_dump(by_alias=True)
        data.pop("digest")
        if not data["not_played"]:
            data.pop("not_played")
        return data

    def sealed(self) -> ScoreCard:
        """This card with its digest (sha256 of the canonical JSON of the rest)."""
        return self.model_copy(update={"digest": hashlib.sha256(canonical(self.body()))
                                       .hexdigest()})

    def untimed(self) -> dict[str, Any]:
        """The card without ``timing`` and ``digest``: what two runs of one agent repeat."""
        data = self.body()
        data.pop("timing")
        return data

    def to_text(self) -> str:
        """The ``scorecard.json`` text."""
        data = self.model_dump(by_alias=True)
        if not data["not_played"]:
            data.pop("not_played")
        return json.dumps(data, indent=1) + "\n"


def read_card(path: str | Path) -> ScoreCard:
    """The score card in ``path``, checked against the schema and its digest; a
    :class:`CardError` naming the file and what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CardError(f"cannot read score card {p}: {exc}") from None
    if isinstance(data, dict) and data.get("schema") != SCHEMA:
        raise CardError(f"{p} is not a score card of schema {SCHEMA} (schema: "
                        f"{data.get('schema')!r})")
    try:
        card = ScoreCard.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise CardError(f"{p} is not a valid score card: {where}: {err['msg']}") from None
    if card.sealed().digest != card.digest:
        raise CardError(f"{p} is damaged: its digest does not match its contents (a card is "
                        "written whole by the benchmark; remake it)")
    return card


def interval(e: Estimate) -> Interval:
    """An :class:`Interval` of an estimate (under the small-sample rule)."""
    return Interval.model_validate(e.under_rule().to_json())


def _score(line: dict[str, Any], place0_seat: int) -> float:
    return float(line["scores"][place0_seat])


def per_sequence(agent_lines: Sequence[dict[str, Any]], ref_lines: Sequence[dict[str, Any]],
                 n: int) -> tuple[list[float], list[float]]:
    """Per deal sequence (in order): the agent's mean match score at line-up place 0 and its
    paired difference, the mean over rotations of its score at that seat minus the score of
    the population's own occupant of place 0 at that seat in the reference tournament (same
    deals, same seeds). Place 0 sits at seat ``rotation``."""
    ref = {(r["sequence"], r["rotation"]): r for r in ref_lines}
    by_seq: dict[int, list[tuple[float, float]]] = {}
    for r in sorted(agent_lines, key=lambda x: (x["sequence"], x["rotation"])):
        key = (r["sequence"], r["rotation"])
        mine = _score(r, r["rotation"])
        theirs = _score(ref[key], r["rotation"])
        by_seq.setdefault(r["sequence"], []).append((mine, mine - theirs))
    scores, diffs = [], []
    for s in sorted(by_seq):
        rows = by_seq[s]
        if len(rows) != n:
            raise ValueError(f"deal sequence {s} has {len(rows)} of its {n} matches")
        scores.append(sum(x for x, _ in rows) / n)
        diffs.append(sum(d for _, d in rows) / n)
    return scores, diffs


def _mean_interval(values: Sequence[float], reps: int, seed: int) -> Estimate:
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    return bootstrap(arr, np.ones_like(arr), reps, rng, mean=float(arr.mean()))


def cell_card(cell: Cell, summary: TournamentResult, agent_lines: Sequence[dict[str, Any]],
              ref_lines: Sequence[dict[str, Any]], reps: int) -> CellCard:
    """A cell's figures from its two tournaments: the agent's (label ``agent`` at place 0)
    and the reference (the population alone), both complete."""
    scores, diffs = per_sequence(agent_lines, ref_lines, cell.players)
    stats = summary.agents["agent"]
    return CellCard(
        key=cell.key, players=cell.players, population=cell.population, seed=cell.seed,
        sequences=len(scores), matches=len(agent_lines), forfeits=stats.forfeits,
        mean_score=interval(_mean_interval(scores, reps, derive(cell.seed, 1))),
        mean_place=interval(stats.mean_place),
        paired_difference=interval(_mean_interval(diffs, reps, derive(cell.seed, 2))),
        scores=scores, differences=diffs)


def headline(values: Sequence[Sequence[float]], reps: int, seed: int) -> Estimate:
    """The mean over cells (equal weight) of each cell's mean of ``values`` (per deal
    sequence), with a 95% percentile bootstrap that resamples each cell's sequences on its
    own; no interval (the small-sample rule) when a cell has fewer than
    :data:`~..tournament.stats.MIN_SEQUENCES` sequences. ``sequences``: the fewest of a
    cell."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    mean = float(np.mean([a.mean() for a in arrays]))
    fewest = min(len(a) for a in arrays)
    if fewest < MIN_SEQUENCES:
        return Estimate(mean, None, None, fewest)
    rng = np.random.default_rng(seed)
    boots = np.zeros(reps)
    for a in arrays:
        idx = rng.integers(0, len(a), size=(reps, len(a)))
        boots += a[idx].mean(axis=1)
    boots /= len(arrays)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return Estimate(mean, float(lo), float(hi), fewest)


def _fmt(i: Interval, sign: bool = False) -> str:
    return i.estimate().fmt(sign=sign)


def markdown(card: ScoreCard) -> str:
    """The score card as markdown."""
    s = card.suite
    lines = [f"# Score card: `{card.agent}`", "",
             f"Suite {s.name} {s.version} ({'published' if s.published else 'unpublished'}, "
             f"digest `{s.digest}`), tier `{card.tier}`.", "",
             f"**Headline** (mean over the {len(card.cells)} cells of the paired difference "
             f"to the population's own seat): **{_fmt(card.headline, True)}**", "",
             *([f"Not played ({len(card.not_played)} cells of the tier, left out of the "
                "headline): " + "; ".join(f"`{k}`" for k in card.not_played)
                + f". Why: {next(iter(card.not_played.values()))}", ""]
               if card.not_played else []),
             "| players | population | sequences | mean match score | mean place | "
             "paired difference | ms per move |", "|---:|---|---:|---:|---:|---:|---:|"]
    for c in card.cells:
        ms = card.timing.get(c.key)
        lines.append(f"| {c.players} | {c.population} | {c.sequences} | {_fmt(c.mean_score)} "
                     f"| {_fmt(c.mean_place)} | {_fmt(c.paired_difference, True)} | "
                     f"{'-' if ms is None else f'{ms:.2f}'} |")
    forfeits = sum(c.forfeits for c in card.cells)
    lines += ["", "95% bootstrap intervals over deal sequences; `[too few sequences: k]`: fewer "
              f"than {MIN_SEQUENCES}, no interval (the tournament's small-sample rule). "
              "Time per move: decisions with a choice; not repeated by a rerun.",
              f"Forfeits: {forfeits}.", "", f"Remake: `{card.command}`", ""]
    return "\n".join(lines)


def plot(card: ScoreCard, path: Path) -> Path:
    """The paired difference by table size, one line per population, with interval bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dragons_egg.experiments.common.plots import save_png

    fig, ax = plt.subplots(figsize=(7, 4))
    pops = list(dict.fromkeys(c.population for c in card.cells))
    for k, pop in enumerate(pops):
        cells = [c for c in card.cells if c.population == pop]
        x = [c.players + (k - len(pops) / 2) * 0.06 for c in cells]
        y = [c.paired_difference.mean or 0.0 for c in cells]
        err = [[(c.paired_difference.mean or 0) - (c.paired_difference.low or
                                                   c.paired_difference.mean or 0)
                for c in cells],
               [(c.paired_difference.high or c.paired_difference.mean or 0)
                - (c.paired_difference.mean or 0) for c in cells]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=pop)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("players")
    ax.set_ylabel("paired difference to the population's seat")
    ax.set_title(f"{card.agent}: suite {card.suite.version}, tier {card.tier}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = save_png(fig, path)
    plt.close(fig)
    return out
