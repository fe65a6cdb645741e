"""The Egg after it is passed (R20), by agent: replays the first MATCHES matches of a
tournament folder (same seeds, so the same matches, bit for bit), follows the Egg through
every round and, for each time a seat is passed the Egg, whether that seat ends the round
holding it (last, R23). Split by the cards left in the receiver's hand (Egg aside) and by
whether it still holds a dragon card (a dragon card clears the pile and so passes the Egg on,
R15, R20). Passes only: the seat dealt the Egg is not counted (the first column of
egg_offsets.py covers it).

    python results/selfplay-egg/egg_received.py results/selfplay-tt/ppo-ismcts-6p 400
"""
import collections
import json
import sys
from multiprocessing import Pool

from dragons_egg.agents.runner import play_match
from dragons_egg.experiments.evaluation.tournament.config import TournamentConfig
from dragons_egg.experiments.evaluation.tournament.schedule import (
    deal_sequence,
    derive,
    match_seats,
)
from dragons_egg_env.cards import DRAGON_MASK, EGG_BIT, codes
from dragons_egg_env.replay import iter_replay

folder, nmatch = sys.argv[1], int(sys.argv[2])
cfg = json.load(open(folder + "/config.json"))
tc = TournamentConfig(agents=cfg["agents"], num_players=cfg["num_players"],
                      matches=cfg["matches"], seed=cfg["seed"])
keys = [(json.loads(line)["sequence"], json.loads(line)["rotation"])
        for line in open(folder + "/results.jsonl")][:nmatch]


def replayed(key):
    """The match of ``(sequence, rotation)`` as the tournament played it, with its replay."""
    seq, rot = key
    config = tc.rules_config()
    ent = tc.by_label()
    deals = deal_sequence(config, derive(tc.seed, seq))
    seats = match_seats(tc, seq, rot)
    agents = [ent[label].make(derive(tc.seed, seq, rot, j)) for j, label in enumerate(seats)]
    rec = play_match(agents, config, seed=derive(tc.seed, seq, rot),
                     deals=[[codes(h) for h in hs] for hs in deals], keep_replay=True)
    return rec, ["ppo" if s.startswith("ppo") else s for s in seats]


def one(key):
    rec, kinds = replayed(key)
    events = []  # per pass of the Egg: (receiver's agent, cards left, dragons held, ended last)
    last_holder, rnd, recv, res = None, -1, [], []
    for _, env in iter_replay(rec.replay):
        s = env.unwrapped._s
        if s.round_idx != rnd:  # a new round: close the last one
            if recv and rnd >= 0:
                for seat, left, dragons in recv:
                    events.append((kinds[seat], left, dragons, seat == res[rnd].egg))
            rnd, recv, last_holder, res = s.round_idx, [], None, s.results
        h = s.egg_holder
        if h >= 0 and last_holder is not None and h != last_holder:
            recv.append((h, bin(s.hands[h] & ~EGG_BIT).count("1"),
                         bin(s.hands[h] & DRAGON_MASK).count("1")))
        if h >= 0:
            last_holder = h
    res = s.results
    for seat, left, dragons in recv:
        events.append((kinds[seat], left, dragons, seat == res[-1].egg))
    return events


if __name__ == "__main__":
    with Pool(2) as p:
        events = [e for ev in p.imap_unordered(one, keys) for e in ev]
    st = collections.defaultdict(lambda: [0, 0])
    for kind, left, dragons, last in events:
        for k in [(kind, "all"), (kind, f"dragons={min(dragons, 1)}"),
                  (kind, f"cards<={4 if left <= 4 else 99}")]:
            st[k][0] += 1
            st[k][1] += last
    for k in sorted(st):
        c = st[k]
        print(k, c[0], f"P(last|received)={c[1] / c[0]:.3f}")
