"""Last places (the Egg at the round's end, R23) by seat, counted from the seat dealt the Egg
(R4, R19), by agent, from a tournament folder's results alone (its deals follow from its
seed): offset 0 is the seat dealt the Egg, 1 the next seat to its left, which a clear by
that seat passes it to (R20), and so on.

    python results/selfplay-egg/egg_offsets.py results/selfplay-tt/ppo-ismcts-{4,5,6,7,8}p
"""
import collections
import json
import sys

from dragons_egg.experiments.evaluation.tournament.schedule import deal_sequence, derive
from dragons_egg_env.cards import EGG_BIT
from dragons_egg_env.config import RulesConfig

for folder in sys.argv[1:]:
    cfg = json.load(open(folder + "/config.json"))
    n, seed = cfg["num_players"], cfg["seed"]
    rules = RulesConfig(num_players=n, num_rounds=cfg["num_rounds"])
    last = collections.defaultdict(lambda: [0, 0])  # (agent, offset) -> [seats, last]
    for line in open(folder + "/results.jsonl"):
        r = json.loads(line)
        deals = deal_sequence(rules, derive(seed, r["sequence"]))
        for k, rnd in enumerate(r["rounds"]):
            egg = next(i for i, h in enumerate(deals[k]) if h & EGG_BIT)
            for s in range(n):
                kind = "ppo" if r["seats"][s].startswith("ppo") else r["seats"][s]
                c = last[(kind, (s - egg) % n)]
                c[0] += 1
                c[1] += rnd["order"][-1] == s
    kinds = sorted({k for k, _ in last})
    print(f"{folder} ({n} players): last-place rate by offset from the seat dealt the Egg")
    print("offset " + " ".join(f"{k:>8}" for k in kinds))
    for off in range(n):
        print(f"{off:>6} " + " ".join(f"{last[(k, off)][1] / last[(k, off)][0]:>8.3f}"
                                      for k in kinds))
