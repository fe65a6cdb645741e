"""Whether the seat after the Egg's holder lets the holder's play stand: replays the first
MATCHES matches of a tournament folder (as egg_received.py does) and, at each decision where
the Egg's holder made the latest play and the next active seat to its left is to act in
play order with a play it could make, counts how often that seat passes. If everyone passes,
the all-pass clears the pile and hands that seat the Egg (R17, R20). Split by whether the
deciding seat knows where the Egg is (R19).

    python results/selfplay-egg/egg_defence.py results/selfplay-tt/ppo-ismcts-6p 200
"""
import collections
from multiprocessing import Pool

from egg_received import keys, replayed

from dragons_egg_env import engine as E
from dragons_egg_env.actions import PASS
from dragons_egg_env.replay import iter_replay, replay_moves


def next_active(s, seat):
    for k in range(1, s.n):
        t = (seat + k) % s.n
        if s.active >> t & 1:
            return t
    return -1


def one(key):
    rec, kinds = replayed(key)
    moves = replay_moves(rec.replay)
    out = []
    for k, env in iter_replay(rec.replay):
        if k == len(moves):
            break
        s = env.unwrapped._s
        if s.phase != E.PLAY or s.egg_holder < 0 or s.last_player != s.egg_holder:
            continue
        c = s.current
        if c == s.egg_holder or c != next_active(s, s.egg_holder) or c != s.turn:
            continue
        if len(E.legal_actions(s)) < 2:
            continue
        out.append((kinds[c], bool(s.egg_known >> c & 1), moves[k].action == PASS))
    return out


if __name__ == "__main__":
    with Pool(2) as p:
        events = [e for r in p.imap_unordered(one, keys) for e in r]
    st = collections.defaultdict(lambda: [0, 0])
    for kind, known, passed in events:
        for k in [(kind, "any"), (kind, "known" if known else "unknown")]:
            st[k][0] += 1
            st[k][1] += passed
    for k in sorted(st):
        c = st[k]
        print(k, c[0], f"pass rate={c[1] / c[0]:.3f}")
