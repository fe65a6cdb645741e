"""Two agents' margins over the same opponent, paired on the deals they were both dealt.

Two tournaments of one agent each against the same opponent (``dragons-egg tournament A
ismcts`` and ``dragons-egg tournament B ismcts``) on the same seed, table size and match
count are dealt the same deal sequences. Each gives, per sequence, the agent's mean match
score minus the opponent's. This script prints the mean over the sequences both played of
A's margin minus B's, with a 95% percentile bootstrap over those sequences (the
tournament's own estimator, ``experiments.evaluation.tournament.stats.bootstrap``). Pairing
on the deals takes their luck out of the comparison, so the interval is narrower than the
two tournaments' own intervals side by side; the opponent's play still differs between the
two, since it answers different moves.

    python results/selfplay-egg/paired.py results/selfplay-egg/ppo-ismcts-6p \
        results/selfplay-tt/ppo-ismcts-6p [more pairs of folders ...]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from dragons_egg.experiments.evaluation.tournament.stats import bootstrap


def margins(folder: Path) -> tuple[dict, dict[int, float]]:
    """The tournament's settings and, per deal sequence, the first agent's mean match score
    minus the second's."""
    config = json.loads((folder / "config.json").read_text())
    if len(config["agents"]) != 2:
        raise SystemExit(f"{folder}: a tournament of two agents is needed, "
                         f"not {config['agents']}")
    me, other = config["agents"]
    sums: dict[int, dict[str, list[float]]] = {}
    with open(folder / "results.jsonl") as f:
        for line in f:
            r = json.loads(line)
            seq = sums.setdefault(r["sequence"], {me: [], other: []})
            for label, score in zip(r["seats"], r["scores"], strict=True):
                seq[label].append(score)
    return config, {s: float(np.mean(v[me]) - np.mean(v[other])) for s, v in sums.items()
                    if v[me] and v[other]}


def compare(a: Path, b: Path) -> str:
    ca, ma = margins(a)
    cb, mb = margins(b)
    for key in ("seed", "num_players", "num_rounds", "rules"):
        if ca[key] != cb[key]:
            raise SystemExit(f"{a} and {b} differ in {key} ({ca[key]} against {cb[key]}): "
                             "their deals are not the same")
    if ca["agents"][1] != cb["agents"][1]:
        raise SystemExit(f"{a} and {b} play different opponents "
                         f"({ca['agents'][1]} against {cb['agents'][1]})")
    both = sorted(set(ma) & set(mb))
    d = np.array([ma[s] - mb[s] for s in both])
    rng = np.random.default_rng(ca["seed"])
    est = bootstrap(d, np.ones_like(d), 2000, rng)
    return (f"{ca['num_players']}p, seed {ca['seed']}, {len(both)} deal sequences: "
            f"({ca['agents'][0]} - {ca['agents'][1]}) - ({cb['agents'][0]} - "
            f"{cb['agents'][1]}) = {est.fmt(sign=True)}")


def main(argv: list[str]) -> None:
    if len(argv) < 2 or len(argv) % 2:
        raise SystemExit(__doc__)
    for a, b in zip(argv[::2], argv[1::2], strict=True):
        print(compare(Path(a), Path(b)))


if __name__ == "__main__":
    main(sys.argv[1:])
