"""How far past the heuristic's tribute can a tribute get with what the Dragon knows?

The tribute fit (:mod:`dragons_egg.experiments.research.tribute.fit`) saves, for every tribute
state it
gathered, the exact value ``Q(s, a)`` of every choice on that deal (``data.npz``). This module asks
of those values how much room the heuristic's rules H8/H9 leave, by cross-validation:

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
4. ``--validate-deals N`` then plays the give-back table of each feature set of
   ``--validate-features`` and mode of ``--validate-modes`` (comma-separated lists; default
   ``position`` and ``robust``), fitted on every state, as the Dragon's
   give-back with the heuristic's asks (:class:`TableTribute`) in the tribute analysis
   (:mod:`dragons_egg.experiments.evaluation.tribute`: fresh duplicate deal sequences, each play
   policy of ``--validate-play``) against the heuristic's tribute: what the cross-validated gain is
   worth in play.
5. ``--export-policy BASE.npz`` writes ``OUT/policy.npz``: the base policy (the one the data
   was gathered with) whose give-back at ``--players`` seats is the pooled table over card
   group and count (a policy file with the heads ``tribute_by_size`` and ``gate``,
   :func:`table_policy`); every other table size plays exactly as the base. The agent shipped
   before the one the package holds now (``results/selfplay-shipped/v4/``) is such a file;
   the package's ``ppo`` learned its tribute in the trainer (``docs/training.md``).

So a learned tribute with these features can beat the heuristic by about the best held-out
gain per decision, times the decisions per deal sequence; the tribute analysis needs deal
sequences enough to show that much.

``python -m dragons_egg.experiments.research.tribute.headroom --data runs/tribute-fit-v3b/data.npz
[--players 4] [--folds 2] [--shrink 50] [--seed 0] [--validate-deals 20000
--validate-play ppo,heuristic --workers 2] [--export-policy BASE.npz]
[--out results/tribute-fit/headroom]``
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dragons_egg.agents.base import Agent
from dragons_egg.agents.heads import group_counts, tribute_context
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.experiments.common.args import int_range, table_size
from dragons_egg.experiments.common.plots import save_png
from dragons_egg.experiments.common.runs import claim_output
from dragons_egg.experiments.research.tribute.data import (
    StateArrays,
    concat_chunks,
    file_digest,
    load_data,
)
from dragons_egg.experiments.research.tribute.model import interval
from dragons_egg.experiments.research.tribute.settings import PLAY_POLICIES
from dragons_egg.experiments.training.counterfactual import COLUMN_GROUP, action_classes
from dragons_egg.experiments.training.tribute_table import EXPORT_SCALE
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS
from dragons_egg_env.cards import NUM_NUMBERS
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import require_cli
from dragons_egg_env.observation import players_for_size

if TYPE_CHECKING:
    from dragons_egg.agents.netpolicy import NetPolicy

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


def choice_features(obs: np.ndarray, state: np.ndarray, action: np.ndarray,
                    max_players: int) -> dict[str, np.ndarray]:
    """What the Dragon knows about choosing ``action`` in observation ``obs[state]`` (arrays
    of rows): ``give`` (phase), ``context`` (:func:`dragons_egg.agents.heads.tribute_context`),
    ``group`` (number - 1, :data:`DRAGONS`, :data:`EGG_GROUP` or :data:`PASS_GROUP`),
    ``count`` (how many of the group the hand holds) and, for a numbered card given back,
    ``position`` (numbers held above it, at most :data:`POSITION_CAP`; else -1)."""
    give = action >= GIVE_BASE
    column = COLUMN_GROUP[np.maximum(action - ASK_BASE, 0)]
    group = np.where(action == PASS, PASS_GROUP, np.where(column < 0, EGG_GROUP, column))
    counts = group_counts(obs)
    count = np.where(group <= DRAGONS, counts[state, np.minimum(group, DRAGONS)], 0)
    held = counts[:, :NUM_NUMBERS] > 0
    at_or_above = np.cumsum(held[:, ::-1], axis=1)[:, ::-1]  # held numbers >= each number
    number = np.minimum(group, NUM_NUMBERS - 1)
    position = np.where(give & (group < NUM_NUMBERS),
                        np.minimum(at_or_above[state, number] - 1, POSITION_CAP), -1)
    return {"give": give, "context": tribute_context(obs, max_players)[state], "group": group,
            "count": count, "position": position}


def rows(data: StateArrays) -> dict[str, np.ndarray]:
    """One row per legal tribute choice class of every state of ``data``
    (:func:`dragons_egg.experiments.research.tribute.data.concat_chunks`): ``state``, ``action``
    (the class's
    representative), ``gain`` (over the heuristic's choice) and :func:`choice_features`."""
    obs, mask, q, heur = data["obs"], data["mask"], data["q"], data["heuristic"]
    max_players = players_for_size(obs.shape[1])
    if max_players is None:
        raise ValueError(f"observations of size {obs.shape[1]} match no table padding")
    state, action = np.nonzero(mask)
    keep = (action >= ASK_BASE) | (action == PASS)
    state, action = state[keep], action[keep]
    cls = action_classes(action)
    _, first = np.unique(np.stack([state, cls], 1), axis=0, return_index=True)  # one a class
    state, action = state[first], action[first]
    return {"state": state, "action": action, "gain": q[state, action] - q[state, heur[state]],
            **choice_features(obs, state, action, max_players)}


def _pick(state: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Index of the highest-scoring row of each state (rows grouped by ``state``)."""
    order = np.lexsort((-score, state))
    _, first = np.unique(state[order], return_index=True)
    return order[first]


def _scores(key: np.ndarray, gain: np.ndarray, play: np.ndarray, train: np.ndarray,
            nkeys: int, mode: str, shrink: float) -> np.ndarray:
    """Each key's score from the ``train`` rows: its mean gain per play policy, shrunk towards
    the heuristic's (``shrink`` rows of gain 0), then averaged (``pooled``) or the lower
    taken (``robust``)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    means: list[npt.NDArray[np.float64]] = []
    for p in range(len(PLAY_POLICIES)):
        m = train & (play == p)
        means.append(np.bincount(key[m], gain[m], nkeys)
                     / (np.bincount(key[m], minlength=nkeys) + shrink))
    scores: npt.NDArray[np.float64] = (np.minimum(*means) if mode == "robust"
                                       else np.mean(means, axis=0))
    return scores


def _phase_rows(r: dict[str, np.ndarray], data: StateArrays, phase: str,
                players: int) -> npt.NDArray[np.bool_]:
    sel: npt.NDArray[np.bool_] = (r["give"] == (phase == "give")) & (data["n"][r["state"]]
                                                                     == players)
    return sel


def cross_validate(r: dict[str, np.ndarray], data: StateArrays, phase: str,
                   features: tuple[str, ...] | None, mode: str, players: int, folds: int,
                   shrink: float, seed: int) -> dict[str, np.ndarray]:
    """Held-out gain per decision of the table policy over ``features`` (``None``: the
    oracle) in ``phase`` at ``players`` seats, per play policy. Folds are drawn per state."""
    sel = _phase_rows(r, data, phase, players)
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
        picked: list[npt.NDArray[np.intp]] = []
        for f in range(folds):
            score = _scores(key, gain, play, fold != f, key.max() + 1, mode, shrink)
            test = np.flatnonzero(fold == f)
            picked.append(test[_pick(state[test], score[key[test]] + 1e-9 * is_heur[test])])
        chosen = np.concatenate(picked)
    return {name: gain[chosen][play[chosen] == p]
            for p, name in enumerate(PLAY_POLICIES)}


def fit_table(r: dict[str, np.ndarray], data: StateArrays, features: tuple[str, ...],
              mode: str, players: int, shrink: float) -> dict[tuple[int, ...], float]:
    """The give-back table policy over ``features`` fitted on every state at ``players``
    seats (no folds): key -> score, as :class:`TableTribute` plays it."""
    sel = _phase_rows(r, data, "give", players)
    keys, key = np.unique(np.stack([r[f][sel] for f in features], 1), axis=0,
                          return_inverse=True)
    play = data["play"][r["state"][sel]]
    score = _scores(key.ravel(), r["gain"][sel], play, np.ones(len(play), bool), len(keys),
                    mode, shrink)
    return {tuple(int(x) for x in k): float(v) for k, v in zip(keys, score, strict=True)}


class TableTribute(Agent):
    """A give-back table policy (:func:`fit_table`) as an agent, for the tribute analysis:
    it gives back the legal card whose key of ``features`` scores highest, where that beats
    the key of the heuristic's give-back (H9); otherwise, and for every ask, it does what the
    heuristic does (H8). A key the table lacks scores 0, the heuristic's level, as keys
    without training rows do in :func:`cross_validate`."""

    name = "table-tribute"
    memoryless = True

    def __init__(self, table: dict[tuple[int, ...], float], features: tuple[str, ...],
                 seed: int | None = None) -> None:
        super().__init__(seed)
        self.table = table
        self.features = features
        self.heuristic = HeuristicAgent(seed=seed)

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None
                    ) -> None:
        super().start_match(seat, config, max_players)
        self.heuristic.start_match(seat, config, max_players)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        a = self.heuristic.act(observation, action_mask)
        legal = np.flatnonzero(action_mask)
        legal = legal[legal >= GIVE_BASE]
        if a < GIVE_BASE or len(legal) < 2:
            return a
        f = choice_features(np.asarray(observation)[None], np.zeros(len(legal), int), legal,
                            self.max_players)
        score = np.array([self.table.get(tuple(int(f[k][i]) for k in self.features), 0.0)
                          for i in range(len(legal))])
        best = int(np.argmax(score))
        return int(legal[best]) if score[best] > score[legal == a][0] else a


def validate(r: dict[str, np.ndarray], data: StateArrays, features: str,
             play_specs: list[str], deals: int, players: int, shrink: float, seed: int,
             workers: int, mode: str = "robust") -> list[dict[str, Any]]:
    """The give-back table over ``FEATURE_SETS["give"][features]`` (fitted in ``mode`` on
    every state) played in the tribute analysis (the heuristic's asks, ``deals`` fresh
    duplicate deal sequences, each play policy of ``play_specs``) against the heuristic's
    tribute."""
    from dragons_egg.experiments.evaluation import tribute as ta

    feats = FEATURE_SETS["give"][features]
    table = fit_table(r, data, feats, mode, players, shrink)
    factory = functools.partial(TableTribute, table, feats)
    out = []
    for spec in play_specs:
        res = ta.run(spec, deals, players, seed, tribute_spec=factory, workers=workers,
                     policies=("heuristic", "learned"))
        d = ta.summarize(res)["vs_heuristic"]["learned"]
        changed = float(np.mean(res["rewards"]["learned"] != res["rewards"]["heuristic"]))
        out.append({"play": spec, "features": features, "mode": mode, "deals": deals,
                    "seed": seed,
                    "difference": [d.mean, d.low, d.high], "changed_share": changed,
                    "table": [[*k, v] for k, v in table.items()]})
    return out


#: The give-back feature set a policy file's ``tribute_by_size`` head can hold (its
#: ``pi_counts`` has a weight per table size, tribute context, card group and count held,
#: :func:`dragons_egg.agents.heads.sized_tribute_features`).
EXPORT_FEATURES = "group"



def table_policy(policy: NetPolicy, table: dict[tuple[int, ...], float], meta: dict[str, Any],
                 players: int) -> NetPolicy:
    """``policy`` (a :class:`dragons_egg.agents.netpolicy.NetPolicy` without ``pi_counts``) with its
    give-back at ``players`` seats chosen by a give-back ``table`` over (group, count), as a
    policy with the heads ``tribute_by_size`` and ``gate``
    (:func:`dragons_egg.experiments.training.tribute_table.giveback_policy`, which the trainer's
    own give-back table is written with): at that table size the give columns' own logits are
    switched off and the table's scores are their logits. Every other table size, and play,
    the pass and the asks at every size, are left exactly as they were. A key the table lacks
    scores 0. The Egg, where the rules let it be given back (R33; no data holds such states),
    scores above every key, as in H9. Among the cards of the best key the first legal column
    is given (suits cannot change the game, R7); :class:`TableTribute` keeps the heuristic's
    choice on ties instead."""
    from dragons_egg.experiments.training.tribute_table import KEYS, giveback_policy

    scores = np.zeros(KEYS)
    for (group, count), value in table.items():
        if group <= DRAGONS:  # the Egg's key, if any, is scored by giveback_policy
            scores[group * 5 + count] = value
    new: NetPolicy = giveback_policy(policy, {players: scores}, meta)
    return new


def export(data_path: str | Path, base_path: str | Path, out: Path, players: int,
           shrink: float, command: str = "") -> Path:
    """Fit the pooled give-back table over (group, count) on every ``players``-seat state of
    ``data_path`` and write ``base_path`` with it (:func:`table_policy`) to
    ``out/policy.npz``; its provenance counts the base policy's training seconds and the
    data's gathering seconds. The data must come from the base policy's play."""
    from dragons_egg.agents.netpolicy import load_policy_file

    base = load_policy_file(base_path)  # a PolicyFileError (a ValueError) naming a bad file
    chunks, meta = load_data(data_path)
    if meta.get("policy_sha256") != file_digest(base_path):
        raise ValueError(f"tribute-fit data {data_path} was gathered with another policy than "
                         f"{base_path} (its values come from that policy's play)")
    data = concat_chunks(chunks)
    if not (data["n"] == players).any():
        raise ValueError(f"{data_path} holds no {players}-player states")
    feats = FEATURE_SETS["give"][EXPORT_FEATURES]
    table = fit_table(rows(data), data, feats, "pooled", players, shrink)
    prov = dict(base.meta.get("provenance", {}))
    info = {"data": str(data_path), "data_policy_sha256": meta["policy_sha256"],
            "gather_seconds": float(meta["seconds"]), "players": players, "shrink": shrink,
            "features": list(feats), "mode": "pooled", "scale": EXPORT_SCALE,
            "base_policy": str(base_path), "base_seconds": float(prov.get("seconds", 0.0)),
            "table": [[*k, v] for k, v in table.items()]}
    new_prov = {**prov, "seconds": round(info["base_seconds"] + info["gather_seconds"], 1),
                "tribute_table": info}
    if command:
        new_prov["command"] = command
    pol = table_policy(base, table, {**base.meta, "provenance": new_prov}, players)
    out.mkdir(parents=True, exist_ok=True)
    path = pol.save(out / "policy.npz")
    path.with_suffix(".json").write_text(json.dumps(new_prov, indent=1) + "\n")
    return path


def run(data_path: str | Path, players: int = 4, folds: int = 2, shrink: float = 50.0,
        seed: int = 0, validate_features: tuple[str, ...] = (),
        validate_play: tuple[str, ...] = (),
        validate_deals: int = 0, validate_seed: int = 0, workers: int = 1,
        validate_modes: tuple[str, ...] = ("robust",)) -> dict[str, Any]:
    """Every feature set and mode of :data:`FEATURE_SETS`, and the oracle, scored as in the
    module docstring; with ``validate_deals``, the give-back table over each feature set of
    ``validate_features``, fitted in each mode of ``validate_modes``, played in the tribute
    analysis (:func:`validate`). JSON-ready."""
    for mode in validate_modes if validate_deals else ():
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    for name in validate_features if validate_deals else ():
        if name not in FEATURE_SETS["give"]:
            raise ValueError(f"unknown give-back feature set {name!r}; choose from "
                             f"{', '.join(FEATURE_SETS['give'])}")
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
    if validate_deals:
        out["validation"] = [v for mode in validate_modes for name in validate_features
                             for v in validate(r, data, name, list(validate_play),
                                               validate_deals, players, shrink, validate_seed,
                                               workers, mode)]
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
    if s.get("validation"):
        lines += ["", "**Played** (`tribute_analysis`, the heuristic's asks, the give-back "
                  "table fitted on every state, fresh duplicate deal sequences): the Dragon's "
                  "round-2 reward minus the heuristic tribute's, 95% bootstrap interval", "",
                  "| play policy | give-back features | mode | deals | difference | "
                  "deals whose result changed |", "|---|---|---|---|---|---|"]
        for v in s["validation"]:
            m, lo, hi = v["difference"]
            lines.append(f"| `{v['play']}` | {v['features']} | {v.get('mode', 'robust')} | "
                         f"{v['deals']} (seed "
                         f"{v['seed']}) | {m:+.4f} [{lo:+.4f}, {hi:+.4f}] | "
                         f"{v['changed_share']:.1%} |")
    missing = [p for p in FEATURE_SETS if p not in {row["phase"] for row in s["results"]}]
    if missing:
        lines += ["", f"The data holds no {' or '.join(missing)} states at this table size."]
    return "\n".join(lines) + "\n\n![gains](headroom.png)\n"


def plot(s: dict[str, Any], path: Path) -> Path:
    """Held-out gains per decision of every table policy (left) and, with a validation, the
    played differences per deal sequence (right), with their 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    res = [r for r in s["results"] if r["features"] != "oracle"]
    played = s.get("validation") or []
    fig, axes = plt.subplots(1, 2 if played else 1, figsize=(13 if played else 8,
                                                            0.5 * len(res) + 1.5),
                             squeeze=False)
    ax = axes[0, 0]
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
    ax.set_title(f"Cross-validated, {s['players']} players")
    ax.legend()
    if played:
        ax = axes[0, 1]
        y = np.arange(len(played))
        mid = np.array([v["difference"][0] for v in played])
        err = np.array([[v["difference"][0] - v["difference"][1],
                         v["difference"][2] - v["difference"][0]] for v in played]).T
        ax.errorbar(mid, y, xerr=err, fmt="o", capsize=3, color="black")
        ax.axvline(0, color="grey", lw=1)
        ax.set_yticks(y, [f"give: {v['features']} ({v.get('mode', 'robust')}), {v['play']} "
                          "play" for v in played])
        ax.invert_yaxis()
        ax.set_xlabel("round-2 reward, table minus heuristic tribute")
        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.set_title(f"Played, {played[0]['deals']:,} deal sequences each")
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=prog or "python -m dragons_egg.experiments.research.tribute.headroom",
        description="Cross-validated room past the heuristic's tribute, from a tribute-fit "
        "data file.")
    p.add_argument("--data", required=True,
                   help="data.npz written by dragons_egg.experiments.research.tribute.fit")
    p.add_argument("--players", type=table_size, default=4)
    p.add_argument("--folds", type=int_range(2), default=2)
    p.add_argument("--shrink", type=float, default=50.0,
                   help="pseudo-rows of gain 0 in every key's mean (default 50)")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--validate-deals", type=int_range(0), default=0,
                   help="play the give-back tables in the tribute analysis on this many "
                   "fresh deal sequences (default 0: do not)")
    p.add_argument("--validate-modes", default="robust",
                   help=f"comma-separated fit modes of the tables played, of {', '.join(MODES)}"
                   " (default robust)")
    p.add_argument("--validate-features", default="position",
                   help="comma-separated give-back feature sets to play, of "
                   f"{', '.join(FEATURE_SETS['give'])} (default position)")
    p.add_argument("--validate-play", default="ppo,heuristic",
                   help="comma-separated play policy specs to play it under "
                   "(default ppo,heuristic)")
    p.add_argument("--validate-seed", type=int_range(0), default=101)
    p.add_argument("--workers", type=int_range(1), default=1,
                   help="processes for the validation (the results do not depend on it)")
    p.add_argument("--export-policy", default="",
                   help="also write OUT/policy.npz: this policy file (the one the data was "
                   "gathered with) giving back by the pooled table over card group and count "
                   "at --players seats only")
    p.add_argument("--out", default="runs/tribute-headroom",
                   help="output folder; one that holds an earlier analysis is refused unless "
                   "--overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the analysis the --out folder holds")
    args = p.parse_args(argv)
    require_cli(p.prog, "experiments")  # the plot (and the validation's progress bar)
    try:  # before the work: a folder that cannot be written, or holds an earlier analysis
        out = claim_output(args.out, ("summary.json", "report.md", "headroom.png",
                                      "policy.npz", "policy.json"),
                           overwrite=args.overwrite, what="headroom analysis")
    except ValueError as exc:
        p.error(f"--out: {exc}")
    if not args.shrink >= 0:
        p.error(f"--shrink must be 0 or more, not {args.shrink}")
    play = tuple(x.strip() for x in args.validate_play.split(",") if x.strip())
    feats = tuple(x.strip() for x in args.validate_features.split(",") if x.strip())
    unknown = [f for f in feats if f not in FEATURE_SETS["give"]]
    if unknown or not feats:
        p.error(f"--validate-features: unknown give-back feature set {unknown[:1] or ''}; "
                f"choose from {', '.join(FEATURE_SETS['give'])}")
    modes = tuple(x.strip() for x in args.validate_modes.split(",") if x.strip())
    if not modes or any(m not in MODES for m in modes):
        p.error(f"--validate-modes: choose from {', '.join(MODES)}, not {args.validate_modes!r}")
    if args.validate_deals:
        from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent

        for spec in play or ("",):
            try:
                check_spec_for_table(spec, args.players)
                make_agent(spec, seed=0)
            except (AgentSpecError, ValueError) as exc:
                p.error(f"--validate-play: {exc}")
    try:
        s = run(args.data, args.players, args.folds, args.shrink, args.seed,
                feats, play, args.validate_deals, args.validate_seed,
                args.workers, modes)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s["command"] = f"{p.prog} " + " ".join(
        sys.argv[1:] if argv is None else argv)
    if args.export_policy:
        try:
            s["exported"] = str(export(args.data, args.export_policy, out, args.players,
                                       args.shrink, s["command"]))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    (out / "summary.json").write_text(json.dumps(s, indent=1) + "\n")
    (out / "report.md").write_text(report(s))
    plot(s, out / "headroom.png")
    print(report(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["FEATURE_SETS", "MODES", "choice_features", "rows", "cross_validate", "fit_table",
           "TableTribute", "validate", "table_policy", "export", "run", "report", "main"]
