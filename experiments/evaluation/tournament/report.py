"""A tournament's result as plots and a markdown report (rendered from the
:class:`~.result.TournamentResult`, the same one ``summary.json`` holds)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.experiments.common.plots import save_png

from .config import TournamentConfig
from .result import RoundStats, TournamentResult
from .stats import MIN_SEQUENCES, Estimate


def jsonable(x: Any) -> Any:
    """``x`` as plain JSON data: objects with a ``to_json`` method (an
    :class:`~.stats.Estimate`, a :class:`~.result.TournamentResult`) by it, NaN as ``None``."""
    if callable(getattr(x, "to_json", None)):
        return jsonable(x.to_json())
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def plot_summary(summary: TournamentResult, out_dir: Path) -> list[Path]:
    """Ratings with intervals, the head-to-head heatmap and the finishing places."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = summary.labels
    paths = []
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(labels) + 1.5))
    rt = summary.ratings
    ys = np.arange(len(labels))
    mus = [rt[a].mu for a in labels]
    errs = [1.96 * rt[a].sigma for a in labels]
    ax.errorbar(mus, ys, xerr=errs, fmt="o", capsize=4)
    ax.set_yticks(ys, labels)
    ax.set_xlabel("Plackett-Luce rating (mu, 95% interval)")
    ax.set_title("Ratings over full finishing orders")
    fig.tight_layout()
    paths.append(out_dir / "ratings.png")
    save_png(fig, paths[-1])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 2.5, 1.0 * len(labels) + 1.5))
    h = np.array([[np.nan if x is None else x for x in row] for row in summary.head_to_head],
                 dtype=float)
    im = ax.imshow(h, vmin=0, vmax=1, cmap="RdBu")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            if not np.isnan(h[i, j]):
                ax.text(j, i, f"{h[i, j]:.2f}", ha="center", va="center", fontsize=9)
    ax.set_title("Head to head: row finished above column")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    paths.append(out_dir / "head_to_head.png")
    save_png(fig, paths[-1])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    n = len(summary.agents[labels[0]].place_hist)
    width = 0.8 / len(labels)
    for i, a in enumerate(labels):
        hist = np.array(summary.agents[a].place_hist, dtype=float)
        ax.bar(np.arange(1, n + 1) + (i - (len(labels) - 1) / 2) * width,
               hist / max(hist.sum(), 1), width=width, label=a)
    ax.set_xlabel("finishing place (1 = Dragon, last = Egg)")
    ax.set_ylabel("share of rounds")
    ax.set_xticks(range(1, n + 1))
    ax.legend(fontsize=8)
    ax.set_title("Distribution of finishing places")
    fig.tight_layout()
    paths.append(out_dir / "places.png")
    save_png(fig, paths[-1])
    plt.close(fig)
    return paths


def _seats_line(tc: TournamentConfig) -> list[str]:
    """With fewer agents than seats, how many seats of each table every agent fills."""
    counts = tc.seats_filled()
    if not counts or all(c == 1 for c in counts.values()):
        return []
    parts = ", ".join(f"`{a}` {c}" for a, c in counts.items())
    return [f"- seats: {len(counts)} agents for {tc.num_players} seats, so the line-up repeats "
            f"them in order; seats each fills at every table: {parts}"]


def _too_few(summary: TournamentResult) -> bool:
    ests = [e for m in summary.agents.values()
            for e in (m.mean_place, m.dragon_rate, m.egg_rate, m.mean_score)]
    ests += list(summary.differences.values())
    ests += [e for rows in summary.by_round.values() for r in rows for e in _round_cells(r)
             if e is not None]
    return any(not e.enough for e in ests)


#: The start of the report's one line that is not the same for the same seed.
TIMING_LINE = "Time per move"


def _timing_lines(summary: TournamentResult) -> list[str]:
    """The agents' mean time per decision with a choice (results that recorded it); for a
    run played in several sittings, a line per sitting too (every line starts with
    :data:`TIMING_LINE`)."""
    timing = summary.timing

    def cells(ms: dict[str, float | None]) -> str:
        return ", ".join(f"`{a}` {v:.1f} ms" for a, v in ms.items() if v is not None)

    every = cells(timing.ms_per_move)
    if not every:
        return []
    sittings = [(s, c) for s in timing.sittings or [] if (c := cells(s.ms_per_move))]
    if len(sittings) < 2:
        return ["", f"{TIMING_LINE} (decisions with a choice, this run's machine): {every}"]
    lines = [f"{TIMING_LINE} (decisions with a choice) over the {len(sittings)} sittings of "
             "this run (it was resumed; a sitting may have run on another machine or beside "
             f"other work, so compare agents within a sitting): {every}"]
    for s, c in sittings:
        which = ("before sittings were recorded" if s.sitting is None
                 else f"sitting {s.sitting}")
        lines.append(f"{TIMING_LINE}, {which} ({s.matches} matches): {c}")
    # one paragraph, a line each: markdown's hard line break (two spaces) ends all but the last
    return ["", *(x + "  " for x in lines[:-1]), lines[-1]]


def _difference_rows(summary: TournamentResult) -> list[str]:
    labels = summary.labels
    rows = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            est = summary.differences.get(f"{a} - {b}")
            if est is None:
                rows.append(f"| `{a}` - `{b}` | never met (no shared deal sequence) | - |")
                continue
            if est.enough and est.low is not None:
                sig = "yes" if est.excludes_zero() else "no"
            else:
                sig = f"too few sequences ({est.sequences} < {MIN_SEQUENCES})"
            rows.append(f"| `{a}` - `{b}` | {est.fmt()} | {sig} |")
    return rows


def _partial_lines(summary: TournamentResult) -> list[str]:
    if not summary.partial:
        return []
    return [f"**partial: {summary.matches} of {summary.planned} matches** (the run "
            "stopped before its end; `--resume` plays the rest, and the report then covers "
            "every match)", ""]


def _forfeit_lines(summary: TournamentResult) -> list[str]:
    forfeits = summary.forfeits
    if not forfeits:
        return []
    lines = ["", "## Forfeits", "",
             "An agent that raised, returned something other than a legal action or ran past "
             "the move timeout forfeited the match: it finishes last in the round in "
             "progress, and the match ends there.", "",
             "| agent | match (sequence, rotation) | seat | what | error | match seed | replay |",
             "|---|---|---|---|---|---|---|"]
    for f in forfeits:
        error = str(f.error).replace("|", "\\|")
        lines.append(f"| `{f.label}` | {f.sequence}, {f.rotation} | {f.seat} | "
                     f"{f.kind} | {error} | {f.match_seed} | {f.replay or '-'} |")
    return lines


def _empty_report(tc: TournamentConfig, summary: TournamentResult) -> str:
    return "\n".join(["# Tournament report", "", *_partial_lines(summary),
                      f"- agents: {', '.join(f'`{a}`' for a in tc.labels)}",
                      "- no match finished yet: no statistics"]) + "\n"


def _share(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.3f}"


def _round_cells(r: RoundStats) -> list[Estimate | None]:
    return [r.reward, r.won, r.as_dragon, r.as_egg_holder]


def _round_lines(summary: TournamentResult, num_players: int) -> list[str]:
    """The per-round breakdown (:mod:`.rounds`): one row per agent and round."""
    if not summary.by_round:
        return []
    two = num_players == 2
    lines = ["", "## By round", "",
             "Each agent's seats' mean round reward (R27) in each round of the match" + (
                 "; the share of rounds it won; and from round 2 on, the share it won as "
                 "the Dragon (it won the round before and asks in the tribute, R31) and as "
                 "the Egg holder (it lost it and pays, R30/R32)" if two else "") + ".", ""]
    if two:
        lines += ["| agent | round | seat-rounds | mean round reward | rounds won | "
                  "won as the Dragon | won as the Egg holder |", "|---|---:|---:|---|---|---|---|"]
    else:
        lines += ["| agent | round | seat-rounds | mean round reward |", "|---|---:|---:|---|"]
    for a in summary.labels:
        for r in summary.by_round.get(a, []):
            cells = [r.reward.fmt(sign=True)]
            if two:
                cells += [e.fmt() if e is not None else "-"
                          for e in (r.won, r.as_dragon, r.as_egg_holder)]
            lines.append(f"| `{a}` | {r.round} | {r.rounds} | " + " | ".join(cells) + " |")
    return lines


def markdown_report(tc: TournamentConfig, summary: TournamentResult | dict[str, Any],
                    plots: list[Path]) -> str:
    """The report of a tournament's result (or of a ``summary.json``'s data, read with
    :meth:`~.result.TournamentResult.from_json`)."""
    if not isinstance(summary, TournamentResult):
        summary = TournamentResult.from_json(summary)
    if not summary.matches:
        return _empty_report(tc, summary)
    labels = summary.labels
    flags = tc.rule_flags()
    lines = [
        "# Tournament report", "",
        *_partial_lines(summary),
        f"- agents: {', '.join(f'`{a}`' for a in labels)}",
        f"- table: {tc.num_players} players, {tc.num_rounds} rounds a match, rules "
        f"{flags or 'default'}",
        *_seats_line(tc),
        f"- {summary.matches} matches = {summary.sequences} duplicate deal sequences x "
        f"{tc.num_players} rotations, seed {tc.seed}",
        "- intervals: 95% percentile bootstrap over deal sequences "
        f"({tc.bootstrap} resamples)" + (
            f"; `[too few sequences: k]`: a mean from k < {MIN_SEQUENCES} deal sequences, too "
            "few for an interval (none is given, here or in summary.json)"
            if _too_few(summary) else ""), "",
        "| agent | mean place | Dragon rate | Egg rate | mean match score | rating (mu ± 1.96σ) |",
        "|---|---|---|---|---|---|",
    ]
    for a in labels:
        m = summary.agents[a]
        rt = summary.ratings[a]
        lines.append(f"| `{a}` | {m.mean_place.fmt(2)} | {m.dragon_rate.fmt()} | "
                     f"{m.egg_rate.fmt()} | {m.mean_score.fmt()} | "
                     f"{rt.mu:.2f} ± {1.96 * rt.sigma:.2f} |")
    lines += _timing_lines(summary)
    lines += ["", "## Differences in mean match score (row - column, paired by deals)", "",
              "| pair | difference | excludes zero |", "|---|---|---|"]
    lines += _difference_rows(summary)
    lines += _round_lines(summary, tc.num_players)
    lines += ["", "## Head to head", "",
              "Share of rounds in which the row agent finished above the column agent.", "",
              "| | " + " | ".join(f"`{a}`" for a in labels) + " |",
              "|---" * (len(labels) + 1) + "|"]
    h = summary.head_to_head
    for i, a in enumerate(labels):
        cells = [_share(x) for x in h[i]]
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    lines += _forfeit_lines(summary)
    lines += [""] + [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(lines) + "\n"
