"""What the tribute fit writes besides the policy: the values card by card
(:func:`card_values`, plotted by :func:`plot_card_values`) and ``report.md`` (:func:`report`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from dragons_egg.agents.heads import group_counts
from dragons_egg.experiments.common.plots import save_png
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS, PASS
from dragons_egg_env.cards import NUM_NUMBERS

from .data import Batch, Float64Array, concat_chunks


class CardValues(TypedDict):
    """What the gathered values say, card by card (:func:`card_values`; ``None`` where a
    card was never legal)."""

    ask_gain: list[float | None]
    ask_gain_2se: list[float | None]
    ask_states: list[int]
    give_value: list[float | None]
    give_value_2se: list[float | None]
    give_states: list[int]
    #: Per number 1..10, the gain of asking for it by how many of it (0..3) the Dragon holds.
    ask_gain_by_number_and_count_held: list[list[float | None]]


def card_values(chunks: Sequence[Batch]) -> CardValues:
    """What the gathered values say, card by card (all states, both play policies): the mean
    gain of asking for each card over passing, the same by how many cards of its number the
    Dragon holds, and the mean value of giving back each card relative to the state's mean
    give (with two standard errors)."""
    d = concat_chunks(chunks)
    q, m = d["q"], d["mask"]
    ask = m[:, PASS]
    gain = q[ask][:, ASK_BASE:GIVE_BASE] - q[ask][:, [PASS]]
    give = q[~ask][:, GIVE_BASE:]
    with np.errstate(invalid="ignore"):
        give = give - np.nanmean(give, axis=1, keepdims=True)

    def mean_se(x: Float64Array) -> tuple[list[float | None], list[float | None], list[int]]:
        import warnings

        n = (~np.isnan(x)).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # cards never legal: NaN, said so
            mu = np.nanmean(x, axis=0) if len(x) else np.full(x.shape[1], np.nan)
            se = np.nanstd(x, axis=0) / np.sqrt(n)
        clean = [None if not np.isfinite(v) else float(v) for v in mu]
        return clean, [None if not np.isfinite(v) else float(2 * v) for v in se], n.tolist()

    held = group_counts(d["obs"][ask])
    by_count: list[list[float | None]] = []
    for k in range(NUM_NUMBERS):
        row: list[float | None] = []
        for c in range(4):
            x = gain[held[:, k] == c][:, 4 * k:4 * k + 4]
            row.append(float(np.nanmean(x)) if np.isfinite(x).any() else None)
        by_count.append(row)
    a_mu, a_se, a_n = mean_se(gain)
    g_mu, g_se, g_n = mean_se(give)
    return {"ask_gain": a_mu, "ask_gain_2se": a_se, "ask_states": a_n,
            "give_value": g_mu, "give_value_2se": g_se, "give_states": g_n,
            "ask_gain_by_number_and_count_held": by_count}


def plot_card_values(values: CardValues, path: Path) -> Path:
    """Bar charts of :func:`card_values`: the gain of each ask and the value of each give."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dragons_egg_env.cards import CARD_CODES

    fig, axes = plt.subplots(2, 1, figsize=(13, 6.5))
    for ax, means, ses, n, title in (
            (axes[0], values["ask_gain"], values["ask_gain_2se"], GIVE_BASE - ASK_BASE,
             "ask: mean round reward gained over passing"),
            (axes[1], values["give_value"], values["give_value_2se"], NUM_ACTIONS - GIVE_BASE,
             "give back: mean round reward relative to the state's mean give")):
        mu = np.array([np.nan if v is None else v for v in means])
        se = np.array([np.nan if v is None else v for v in ses])
        ax.bar(range(n), np.nan_to_num(mu), yerr=np.nan_to_num(se), color="tab:blue",
               ecolor="grey", capsize=1.5)
        ax.set_xticks(range(n), CARD_CODES[:n], rotation=90, fontsize=7)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
    return path


def report(info: dict[str, Any]) -> str:
    lines = ["# Tribute fit", "",
             f"Base policy `{info['base_policy']}` (trained {info['base_seconds']:,.1f} s); "
             f"{info['states']:,} states fitted in {info['seconds']:,.1f} s; "
             f"{info['held_out_states']:,} held out.", "",
             "Held-out states: mean round reward (R27) of the Dragon after each way of choosing "
             "(the rest of the round played by the play policy, later tribute choices by the "
             "heuristic). *oracle* sees the deal; *uniform* is the mean over legal choices.", "",
             "| play / phase | states | fitted | heuristic | old | uniform | oracle | "
             "fitted - heuristic [95%] |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    held = {k: v for k, v in info["held_out"].items() if k != "by_size"}
    for key, r in held.items():
        m, lo, hi = r["fitted_minus_heuristic"]
        lines.append(f"| {key} | {r['states']:,} | {r['fitted']:.3f} | {r['heuristic']:.3f} | "
                     f"{r['old']:.3f} | {r['uniform']:.3f} | {r['oracle']:.3f} | "
                     f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
    by_size = info["held_out"].get("by_size", {})
    if by_size:
        keys = list(held)
        lines += ["", "Fitted - heuristic on the held-out states by table size (states):", "",
                  "| players | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
        for n, row in by_size.items():
            cells = [f"{row[k][0]:+.3f} [{row[k][1]:+.3f}, {row[k][2]:+.3f}] ({row[k][3]:,})"
                     if k in row else "" for k in keys]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    from dragons_egg_env.cards import CARD_CODES

    cv = info["card_values"]
    ranked = sorted((v, c) for c, v in enumerate(cv["ask_gain"]) if v is not None)[::-1]
    given = sorted((v, c) for c, v in enumerate(cv["give_value"]) if v is not None)[::-1]
    lines += ["", "What the values say, card by card (all states; `card_values.png`):", "",
              "- asks, best first (gain over passing): " + ", ".join(
                  f"{CARD_CODES[c]} {v:+.3f}" for v, c in ranked[:12]),
              "- gives, best first (relative to the mean give): " + ", ".join(
                  f"{CARD_CODES[c]} {v:+.3f}" for v, c in given[:8]), "",
              "Gain of asking for a number by how many of it the Dragon holds:", "",
              "| number | held 0 | held 1 | held 2 | held 3 |", "|---|---:|---:|---:|---:|"]
    for k, row in enumerate(cv["ask_gain_by_number_and_count_held"]):
        held_cells = " | ".join("" if v is None else f"{v:+.3f}" for v in row)
        lines.append(f"| {k + 1} | {held_cells} |")
    lines += ["", "![card values](card_values.png)"]
    return "\n".join(lines) + "\n"
