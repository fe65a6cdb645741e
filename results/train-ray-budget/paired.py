"""The two policies' mean match scores paired by deal sequence: both tournaments were played
on the same deals (seed 2024) with the policy in the same seats, so the per-sequence
difference of its mean score cancels the luck of the deal. Prints the sequences, the mean
difference (first minus second) and its 95% bootstrap interval.

python results/train-ray-budget/paired.py \
    results/train-ray-budget/tournament-ray-pipelined/results.jsonl \
    results/train-ray-budget/tournament-in-process/results.jsonl
"""
import json
import sys

import numpy as np


def per_sequence(path):
    """The policy's (the ``ppo:`` seats') mean match score in each deal sequence."""
    out = {}
    for line in open(path):
        r = json.loads(line)
        out.setdefault(r["sequence"], []).extend(
            s for s, a in zip(r["scores"], r["seats"], strict=True) if a.startswith("ppo"))
    return {k: float(np.mean(v)) for k, v in out.items()}


a, b = per_sequence(sys.argv[1]), per_sequence(sys.argv[2])
keys = sorted(set(a) & set(b))
d = np.array([a[k] - b[k] for k in keys])
rng = np.random.default_rng(0)
boots = [rng.choice(d, len(d)).mean() for _ in range(10000)]
low, high = np.percentile(boots, [2.5, 97.5])
print(f"{len(keys)} deal sequences: {d.mean():+.3f} [{low:+.3f}, {high:+.3f}]")
