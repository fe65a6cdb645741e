"""How far past the heuristic's tribute can a tribute get with what the Dragon knows?

The tribute fit (:mod:`experiments.tribute_fit`) saves, for every tribute state it gathered,
the exact value ``Q(s, a)`` of every choice on that deal (``data.npz``). This module asks of
those values how much room the heuristic's rules H8/H9 leave, by cross-validation:

1. Every legal choice of every state becomes a row: its class (one number, the dragon cards,
   the Egg or the pass; suits cannot change the game, R7), its gain ``Q(s, a) - Q(s, h)`` over
   the heuristic's choice ``h`` in that state, and what the Dragon knows about it: the tribute
   context (first ask, ask after misses, ask after a hit), the card *group* (a number, the
   dragon cards), how many of that group its hand holds (*count*) and, for the give-back, the
   card's *position*: how many numbers held are higher (0 is the highest number held, the one
   the Dragon must lead alone after the tribute, R6).
2. A *table policy* over a feature set (for instance give-back by position and count) scores
   each key by its mean gain on the training folds, shrunk towards the heuristic (``shrink``
   pseudo-rows of gain 0), and in each held-out state picks the legal class of the best key
   (the heuristic's own choice on ties). ``pooled`` averages the two play policies' means;
   ``robust`` takes the lower of them, so it only leaves the heuristic where both the agent's
   play and the heuristic's play gain.
3. The score is the mean gain per decision of the picks in the held-out folds, with a 95%
   normal interval, per play policy; ``oracle`` is the best class of each state, which sees
   the deal: a bound no policy reaches.

So a learned tribute with these features can beat the heuristic by about the best held-out
gain; the tribute analysis then needs deal sequences enough to show that much, times the
decisions per deal.

``python -m experiments.tribute_headroom --data runs/tribute-fit-v3b/data.npz
[--players 4] [--folds 2] [--shrink 50] [--seed 0] [--out results/tribute-fit/headroom]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from agents.netpolicy import group_counts, tribute_context
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS
from dragons_egg_env.cards import NUM_NUMBERS
from dragons_egg_env.observation import players_for_size
from experiments.cli_args import int_range, table_size
from experiments.tribute_fit import (
    PLAY_POLICIES,
    action_classes,
    concat_chunks,
    interval,
    load_data,
)

#: Feature sets of the table policies, per tribute phase (the columns of :func:`rows`).
FEATURE_SETS: dict[str, dict[str, tuple[str, ...]]] = {
    "ask": {"group": ("context", "group", "count")},
    "give": {"group": ("group", "count"), "position": ("position", "count"),
             "group+position": ("group", "count", "position")},
}
MODES = ("pooled", "robust")
#: Positions from this one on share a key (few hands hold more numbers above a card).
POSITION_CAP = 6
#: Group codes past the numbers 0..9 (number 1..10).
DRAGONS, EGG_GROUP, PASS_GROUP = NUM_NUMBERS, NUM_NUMBERS + 1, NUM_NUMBERS + 2


def rows(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One row per legal tribute choice class of every state of ``data``
    (:func:`experiments.tribute_fit.concat_chunks`): ``state``, ``action`` (the class's
    representative), ``gain`` (over the heuristic's choice), ``give`` (phase), ``context``,
    ``group``, ``count`` and ``position`` (-1 where it does not apply)."""
    obs, mask, q, heur = data["obs"], data["mask"], data["q"], data["heuristic"]
    max_players = players_for_size(obs.shape[1])
    if max_players is None:
        raise ValueError(f"observations of size {obs.shape[1]} match no table padding")
    state, action = np.nonzero(mask)
    keep = (action >= ASK_BASE) | (action == PASS)
    state, action = state[keep], action[keep]
    cls = action_classes(action)
    _, first = np.unique(state * 64 + cls + 8, return_index=True)  # one row per class
    state, action = state[first], action[first]
    give = action >= GIVE_BASE
    card = np.where(give, action - GIVE_BASE, action - ASK_BASE)
    group = np.where(action == PASS, PASS_GROUP, np.where(
        card < 4 * NUM_NUMBERS, card // 4, np.where(card < 4 * NUM_NUMBERS + 4, DRAGONS,
                                                    EGG_GROUP)))
    counts = group_counts(obs)
    count = np.where(group <= DRAGONS, counts[state, np.minimum(group, DRAGONS)], 0)
    held = counts[:, :NUM_NUMBERS] > 0
    at_or_above = np.cumsum(held[:, ::-1], axis=1)[:, ::-1]  # held numbers >= each number
    number = np.minimum(group, NUM_NUMBERS - 1)
    position = np.where(give & (group < NUM_NUMBERS),
                        np.minimum(at_or_above[state, number] - 1, POSITION_CAP), -1)
    return {"state": state, "action": action, "gain": q[state, action] - q[state, heur[state]],
            "give": give, "context": tribute_context(obs, max_players)[state], "group": group,
            "count": count, "position": position}


def _pick(state: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Index of the highest-scoring row of each state (rows grouped by ``state``)."""
    order = np.lexsort((-score, state))
    _, first = np.unique(state[order], return_index=True)
    return order[first]


def cross_validate(r: dict[str, np.ndarray], data: dict[str, np.ndarray], phase: str,
                   features: tuple[str, ...] | None, mode: str, players: int, folds: int,
                   shrink: float, seed: int) -> dict[str, np.ndarray]:
    """Held-out gain per decision of the table policy over ``features`` (``None``: the
    oracle) in ``phase`` at ``players`` seats, per play policy. Folds are drawn per state."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    sel = (r["give"] == (phase == "give")) & (data["n"][r["state"]] == players)
    state, gain = r["state"][sel], r["gain"][sel]
    play = data["play"][state]
    is_heur = r["action"][sel] == data["heuristic"][state]
    if features is None:
        chosen = _pick(state, gain)
    else:
        _, key = np.unique(np.stack([r[f][sel] for f in features], 1), axis=0,
                           return_inverse=True)
        key = key.ravel()
        fold = np.random.default_rng(seed).integers(0, folds, len(data["q"]))[state]
        chosen = []
        for f in range(folds):
            train = fold != f
            means = []
            for p in range(len(PLAY_POLICIES)):
                m = train & (play == p)
                means.append(np.bincount(key[m], gain[m], key.max() + 1)
                             / (np.bincount(key[m], minlength=key.max() + 1) + shrink))
            score = np.minimum(*means) if mode == "robust" else np.mean(means, axis=0)
            test = np.flatnonzero(fold == f)
            chosen.append(test[_pick(state[test], score[key[test]] + 1e-9 * is_heur[test])])
        chosen = np.concatenate(chosen)
    return {name: gain[chosen][play[chosen] == p]
            for p, name in enumerate(PLAY_POLICIES)}


def run(data_path: str | Path, players: int = 4, folds: int = 2, shrink: float = 50.0,
        seed: int = 0) -> dict[str, Any]:
    """Every feature set and mode of :data:`FEATURE_SETS`, and the oracle, scored as in the
    module docstring; JSON-ready."""
    chunks, meta = load_data(data_path)
    data = concat_chunks(chunks)
    if not (data["n"] == players).any():
        raise ValueError(f"{data_path} holds no {players}-player states (it holds "
                         f"{sorted(set(data['n'].tolist()))})")
    r = rows(data)
    out: dict[str, Any] = {"data": str(data_path), "players": players, "folds": folds,
                           "shrink": shrink, "seed": seed,
                           "policy_sha256": meta.get("policy_sha256"), "results": []}
    for phase, sets in FEATURE_SETS.items():
        if not (r["give"] == (phase == "give"))[data["n"][r["state"]] == players].any():
            continue  # no state of this phase at this table size (reported as missing)
        cases = [(name, feats, mode) for name, feats in sets.items() for mode in MODES]
        for name, feats, mode in [*cases, ("oracle", None, "pooled")]:
            res = cross_validate(r, data, phase, feats, mode, players, folds, shrink, seed)
            out["results"].append({
                "phase": phase, "features": name, "mode": mode if feats else "-",
                **{play: [*interval(g), len(g)] for play, g in res.items()}})
    return out


def report(s: dict[str, Any]) -> str:
    lines = ["# Tribute headroom", "",
             f"- data: `{s['data']}`; {s['players']} players; {s['folds']}-fold "
             f"cross-validation by state (seed {s['seed']}); shrink {s['shrink']:g}",
             "- gain per decision over the heuristic's choice (H8/H9), held out, with 95% "
             "normal intervals; `oracle` sees the deal (a bound no policy reaches)", "",
             "| phase | features | mode | " + " | ".join(f"{p} play" for p in PLAY_POLICIES)
             + " | states |", "|---|---|---|" + "---|" * len(PLAY_POLICIES) + "---|"]
    for row in s["results"]:
        cells = [f"{row[p][0]:+.4f} [{row[p][1]:+.4f}, {row[p][2]:+.4f}]"
                 for p in PLAY_POLICIES]
        n = "/".join(str(row[p][3]) for p in PLAY_POLICIES)
        lines.append(f"| {row['phase']} | {row['features']} | {row['mode']} | "
                     + " | ".join(cells) + f" | {n} |")
    missing = [p for p in FEATURE_SETS if p not in {row["phase"] for row in s["results"]}]
    if missing:
        lines += ["", f"The data holds no {' or '.join(missing)} states at this table size."]
    return "\n".join(lines) + "\n\n![gains](headroom.png)\n"


def plot(s: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = [r for r in s["results"] if r["features"] != "oracle"]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(res) + 1.5))
    y = np.arange(len(res))
    for k, p in enumerate(PLAY_POLICIES):
        mid = np.array([r[p][0] for r in res])
        err = np.array([[r[p][0] - r[p][1], r[p][2] - r[p][0]] for r in res]).T
        ax.errorbar(mid, y + (k - 0.5) * 0.25, xerr=err, fmt="o", capsize=3,
                    label=f"{p} play")
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(y, [f"{r['phase']}: {r['features']} ({r['mode']})" for r in res])
    ax.invert_yaxis()
    ax.set_xlabel("held-out gain per decision over the heuristic (95% interval)")
    ax.set_title(f"Tribute headroom at {s['players']} players")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Cross-validated room past the heuristic's "
                                "tribute, from a tribute-fit data file.")
    p.add_argument("--data", required=True, help="data.npz written by experiments.tribute_fit")
    p.add_argument("--players", type=table_size, default=4)
    p.add_argument("--folds", type=int_range(2), default=2)
    p.add_argument("--shrink", type=float, default=50.0,
                   help="pseudo-rows of gain 0 in every key's mean (default 50)")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--out", default="runs/tribute-headroom")
    args = p.parse_args(argv)
    if not args.shrink >= 0:
        p.error(f"--shrink must be 0 or more, not {args.shrink}")
    try:
        s = run(args.data, args.players, args.folds, args.shrink, args.seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    s["command"] = "python -m experiments.tribute_headroom " + " ".join(
        sys.argv[1:] if argv is None else argv)
    (out / "summary.json").write_text(json.dumps(s, indent=1) + "\n")
    (out / "report.md").write_text(report(s))
    plot(s, out / "headroom.png")
    print(report(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["FEATURE_SETS", "MODES", "rows", "cross_validate", "run", "report", "main"]
