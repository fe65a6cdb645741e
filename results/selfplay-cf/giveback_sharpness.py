"""How sharp a policy's 4-player give-back is: the probability of its most likely give-back
at the first give-back of each of 300 seeded 2-round matches played by the heuristic (where it
has more than one legal action; a match whose Dragon has no choice counts none).
Run from the repository root:

    python results/selfplay-cf/giveback_sharpness.py [POLICY.npz ...]
"""

import random
import sys

import numpy as np

from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.agents.netpolicy import load_policy_file
from dragons_egg_env import engine as E
from dragons_egg_env.actions import GIVE_BASE, NUM_ACTIONS
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import Encoder

POLICIES = sys.argv[1:] or ["results/selfplay-shipped/policies/snapshot_120179708.npz",
                            "results/selfplay-cf/policy.npz"]


def first_giveback_top(pol, seed: int, n: int = 4) -> float | None:
    config = RulesConfig(num_players=n, num_rounds=2)
    rng = random.Random(seed)
    s = E.new_match(config)
    heur = HeuristicAgent(seed=0)
    heur.start_match(0, config, pol.max_players)
    enc = Encoder(n, pol.max_players, 2)
    while s.phase != E.Phase.DONE:
        if s.phase == E.Phase.DEAL:
            E.deal(s, E.random_deal(s, rng))
            continue
        mask = np.zeros(NUM_ACTIONS, bool)
        mask[E.legal_actions(s)] = True
        obs = enc.encode(s, s.current)
        if mask[GIVE_BASE:].any() and mask.sum() > 1:
            z = pol.logits(obs[None], mask[None])[0]
            p = np.exp(z - z.max())
            return float(p.max() / p.sum())
        E.step(s, heur.act(obs, mask))
    return None


for path in POLICIES:
    pol = load_policy_file(path)
    top = np.array([t for seed in range(300) if (t := first_giveback_top(pol, seed)) is not None])
    print(f"{path}: {len(top)} give-backs; most likely give-back's probability: median "
          f"{np.median(top):.3f}, above 0.99 in {(top > 0.99).mean():.0%}, above 0.9 in "
          f"{(top > 0.9).mean():.0%}")
