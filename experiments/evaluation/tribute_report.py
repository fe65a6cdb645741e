"""The tribute analysis's figures and report (:mod:`.tribute` plays it): each tribute policy's
round-2 reward with its bootstrap interval and its paired difference to the heuristic's
(:func:`summarize`), the heatmaps of the cards the learned tribute asks for and gives back
(:func:`heatmaps`), one report section per play policy (:func:`report`) and the report's head
(:func:`overview`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dragons_egg.experiments.common.plots import save_png
from dragons_egg.experiments.evaluation.tournament import bootstrap
from dragons_egg_env.cards import BEAST, CARD_CODES, EGG, NUM_NUMBERS, SUITS

if TYPE_CHECKING:
    from dragons_egg.experiments.evaluation.tribute import TributeSettings


def summarize(res: dict[str, Any], reps: int = 2000) -> dict[str, Any]:
    rng = np.random.default_rng(res["seed"])
    w = np.ones(len(res["dragons"]))
    out: dict[str, Any] = {"policies": {}, "vs_heuristic": {}}
    for t, r in res["rewards"].items():
        out["policies"][t] = bootstrap(r, w, reps, rng)
    for t, r in res["rewards"].items():
        if t != "heuristic":
            out["vs_heuristic"][t] = bootstrap(r - res["rewards"]["heuristic"], w, reps, rng)
    return out


def heatmaps(res: dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, key, title in ((axes[0], "asked", "asked for"), (axes[1], "given", "given back")):
        counts = res[key]
        grid = np.zeros((5, 10))
        grid[:4] = counts[:BEAST].reshape(NUM_NUMBERS, len(SUITS)).T  # rows: suits
        grid[4, :4] = counts[BEAST:EGG]
        grid[4, 4] = counts[EGG]
        im = ax.imshow(grid, cmap="magma_r")
        ax.set_xticks(range(10), [str(n) for n in range(1, 11)])
        ax.set_yticks(range(5), ["Earth", "Water", "Fire", "Lightning", "dragons/Egg"])
        ax.set_xlabel("number\n(dragon row: Beast, Darklord,\nHorseman, Executioner, Egg)",
                      fontsize="small")
        ax.set_title(f"learned tribute: cards {title}")
        fig.colorbar(im, ax=ax, shrink=0.7)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def report(res: dict[str, Any], summ: dict[str, Any],
           heatmap: str = "tribute_heatmaps.png", note: str = "") -> str:
    """The section of the report for one play policy: every tribute policy's reward, its
    difference to the heuristic's, and the cards the learned tribute asked for and gave;
    ``note`` says the rules where they are not the analysis's defaults."""
    n = res["config"].num_players
    lines = [
        f"## Play policy `{res['play']}`", "",
        f"- play policy at every seat: `{res['play']}`; learned tribute policy: "
        f"`{res['tribute']}`; {n} players; "
        f"{len(res['dragons'])} duplicate deal sequences of {res['config'].num_rounds} rounds"
        f"{note}; seed {res['seed']}",
        "- measure: the Dragon's reward in round 2 (after its tribute), 1 = first, -1 = last;"
        " 95% bootstrap intervals over deal sequences", "",
        "| tribute policy | Dragon's round-2 reward | difference to heuristic |",
        "|---|---|---|",
    ]
    for t in summ["policies"]:
        est = summ["policies"][t]
        diff = summ["vs_heuristic"].get(t)
        lines.append(f"| `{t}` | {est.fmt()} | {diff.fmt(sign=True) if diff else '-'} |")
    vs = summ["vs_heuristic"]
    lines.append("")
    if "learned" in vs:
        d = vs["learned"]
        verdict = ("beats" if d.low > 0 else "loses to" if d.high < 0 else
                   "is not distinguishable from")
        lines.append(f"The learned tribute **{verdict}** the heuristic one (difference "
                     f"{d.fmt(sign=True)}).")
    if "learned-ask" in vs:
        lines.append(f"Its asks alone (with the heuristic's give-back) differ by "
                     f"{vs['learned-ask'].fmt(sign=True)}.")
    if "learned-give" in vs:
        lines.append(f"Its give-back alone (with the heuristic's asks) differs by "
                     f"{vs['learned-give'].fmt(sign=True)}.")
    if "learned" not in vs:  # nothing learned was played, so no cards were recorded
        return "\n".join(lines) + "\n"
    lines += ["",
              "Most asked for by the learned policy: " + ", ".join(
                  f"{CARD_CODES[c]} ({res['asked'][c]})" for c in np.argsort(-res['asked'])[:8]
                  if res['asked'][c]),
              "",
              "Most given back: " + ", ".join(
                  f"{CARD_CODES[c]} ({res['given'][c]})" for c in np.argsort(-res['given'])[:8]
                  if res['given'][c]),
              "", f"![heatmaps]({heatmap})"]
    return "\n".join(lines) + "\n"


def overview(s: TributeSettings, summaries: Sequence[dict[str, Any]], note: str = "") -> str:
    """The report's head: the learned tribute minus the heuristic's under every play policy,
    with its asks and its give-back apart (``note``: as :func:`report`'s)."""
    lines = ["# Tribute analysis", "",
             f"Learned tribute policy `{s.tribute}`, {s.players} players, {s.deals} duplicate "
             f"deal sequences of {s.rules.num_rounds} rounds per play policy"
             f"{note}, seed {s.seed}, {s.engine} engine; the Dragon's "
             "round-2 reward, learned tribute minus the "
             "heuristic's (95% bootstrap intervals over deal sequences):", "",
             "| play policy (every seat) | learned - heuristic | its asks alone | its "
             "give-back alone |", "|---|---|---|---|"]
    for play, summ in zip(s.plays, summaries, strict=True):
        vs = summ["vs_heuristic"]
        cells = [vs[t].fmt(sign=True) if t in vs else "-"
                 for t in ("learned", "learned-ask", "learned-give")]
        lines.append(f"| `{play}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["heatmaps", "overview", "report", "summarize"]
