"""Shared helpers for the tests."""

import contextlib
import os
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from dragons_egg_env import engine as E
from dragons_egg_env.cards import EGG_BIT, iter_cards

#: The agent shipped before the trainer learned its tribute (a version-4 policy file, with the
#: 4-player give-back table behind the table-size gate), kept under results/.
SHIPPED_V4 = (Path(__file__).resolve().parents[1] / "results" / "selfplay-shipped" / "v4"
              / "ppo_dragons_egg.npz")


def random_match(env, rng: random.Random, max_steps: int = 100_000, on_step=None):
    """Play random legal actions through the AEC loop until every agent is done."""
    steps = 0
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        if term or trunc:
            action = None
        else:
            legal = np.flatnonzero(obs["action_mask"])
            assert len(legal) > 0, f"{agent} must act but its mask is empty"
            action = int(legal[rng.randrange(len(legal))])
        if on_step is not None and action is not None:
            on_step(env, agent, obs, info, action)
        env.step(action)
        steps += 1
        assert steps < max_steps, "match did not end"
    return steps


def random_states(env, rng: random.Random):
    """Walk a reset env through a match of random legal moves, yielding ``(agent, obs)``
    before each live step (the caller may inspect the env there)."""
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        yield agent, obs
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))


def shuffled_hidden(s: E.State, observer: int, rng: random.Random) -> E.State:
    """A copy of ``s`` in which the cards the observer cannot see are reshuffled among the
    other players, keeping each hand's size and everything the observer knows: the Egg stays
    where it is and, for the two tribute players, every card named in the tribute stays put."""
    t = s.clone()
    fixed = EGG_BIT
    if observer in (s.dragon, s.victim):
        fixed |= s.asked | s.hits | s.given
    others = [q for q in range(s.n) if q != observer]
    pool = []
    for q in others:
        pool += list(iter_cards(s.hands[q] & ~fixed))
    rng.shuffle(pool)
    k = 0
    for q in others:
        keep = s.hands[q] & fixed
        free = (s.hands[q] & ~fixed).bit_count()
        hand = keep
        for c in pool[k:k + free]:
            hand |= 1 << c
            t.owner[c] = q
        k += free
        t.hands[q] = hand
    t.th = [E.thermometer(h) for h in t.hands]
    t.mask = -1
    return t


def small_policy(path, seed=0, seconds=100.0, hidden=16, max_players=8):
    """A random policy file of ``max_players`` seats with provenance, as the self-play trainer
    writes them."""
    from dragons_egg.agents.netpolicy import NetPolicy
    from dragons_egg_env.actions import NUM_ACTIONS
    from dragons_egg_env.observation import layout

    rng = np.random.default_rng(seed)
    size = layout(max_players).size
    layers = [(rng.normal(0, 0.1, (size, hidden)).astype(np.float32),
               np.zeros(hidden, np.float32))]
    pi = (rng.normal(0, 0.5, (hidden, NUM_ACTIONS)).astype(np.float32),
          rng.normal(0, 0.5, NUM_ACTIONS).astype(np.float32))
    v = (np.zeros((hidden, 1), np.float32), np.zeros(1, np.float32))
    meta = {"max_players": max_players, "obs_size": size, "num_actions": NUM_ACTIONS,
            "hidden": [hidden], "activation": "tanh",
            "provenance": {"trainer": "test", "samples": 10, "updates": 1, "seconds": seconds}}
    return NetPolicy(layers, pi, v, meta).save(path)


def assert_play_logits_kept(pol, base, seed=0, rows=16):
    """``pol``'s logits below ``GIVE_BASE`` (play, the pass, the asks) equal ``base``'s on
    ``rows`` random observations of a 4-seat table, every action allowed: a tribute term
    written into a policy file leaves every other decision as it was."""
    from dragons_egg_env.actions import GIVE_BASE, NUM_ACTIONS
    from dragons_egg_env.observation import layout

    lay = layout(8)
    x = (np.random.default_rng(seed).random((rows, lay.size)) < 0.2).astype(np.float32)
    seats = lay.field("seat_present")
    x[:, seats.start:seats.start + seats.size] = 0.0
    x[:, seats.start:seats.start + 4] = 1.0
    every = np.ones((rows, NUM_ACTIONS), bool)
    keep = np.arange(NUM_ACTIONS) < GIVE_BASE
    np.testing.assert_array_equal(pol.logits(x, every)[:, keep], base.logits(x, every)[:, keep])


def tiny(tmp_path, **kw):
    """The settings of a self-play run of seconds (2 table sizes x 6 matches x 12 steps = 144
    learner samples a rollout), ``kw`` overriding; its folder is under ``tmp_path``."""
    from dragons_egg.experiments.training.selfplay import SelfPlayConfig

    base = dict(table_sizes=(2, 3), envs_per_size=6, rollout_steps=12, hidden=(16,),
                epochs=1, minibatch=32, total_samples=300, eval_every=0,
                eval_opponents=(), checkpoint_every=0, out_dir=str(tmp_path), progress=False,
                collectors=0)  # in this process: the Ray collectors have tests of their own
    base.update(kw)
    # num_rounds and eval_players as the settings of before the rules (migrated)
    return SelfPlayConfig.from_dict(base)


def tribute_state(seed=0, n=4):
    """A 2-round match played by heuristics up to the Dragon's first ask (R30, R31)."""
    from dragons_egg.agents.heuristic import HeuristicAgent
    from dragons_egg_env.actions import NUM_ACTIONS
    from dragons_egg_env.config import RulesConfig
    from dragons_egg_env.observation import Encoder

    config = RulesConfig(num_players=n, num_rounds=2)
    rng = random.Random(seed)
    s = E.new_match(config)
    heur = HeuristicAgent(seed=0)
    heur.start_match(0, config)
    enc = Encoder(n, n, 2)
    while s.phase != E.Phase.ASK:
        if s.phase == E.Phase.DEAL:
            E.deal(s, E.random_deal(s, rng))
            continue
        mask = np.zeros(NUM_ACTIONS, bool)
        mask[E.legal_actions(s)] = True
        E.step(s, heur.act(enc.encode(s, s.current), mask))
    return s


@contextlib.contextmanager
def stale_ray_cluster():
    """As if a Ray cluster had been started on this machine and killed: its
    ``ray_current_cluster`` file left behind, naming a cluster that is gone, in a private Ray
    temp dir (``RAY_TMPDIR``; short, since Ray's socket paths must fit in 107 bytes), and no
    ``RAY_ADDRESS``. Plain ``ray.init()`` would try to join that cluster; the trainers start a
    private instance instead."""
    tmp = tempfile.mkdtemp(prefix="de-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    os.makedirs(os.path.join(tmp, "ray"))
    with open(os.path.join(tmp, "ray", "ray_current_cluster"), "w") as f:
        f.write("127.0.0.1:1")
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAY_TMPDIR", tmp)
            mp.delenv("RAY_ADDRESS", raising=False)
            yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def interrupter_source(variable: str) -> str:
    """The source of ``Interrupter``, a test bot for a module written at test time (it needs
    ``os`` and ``HeuristicAgent`` imported there): the heuristic, which in the match numbered
    ``$variable`` (counted from 1 in its process) raises KeyboardInterrupt at its first move,
    as Ctrl-C would."""
    return f'''
class Interrupter(HeuristicAgent):
    """The heuristic; in the match numbered ${variable} (counted from 1 in this process)
    it raises KeyboardInterrupt at its first move, as Ctrl-C would."""

    matches = 0

    def start_match(self, seat, config, max_players=None):
        super().start_match(seat, config, max_players)
        Interrupter.matches += 1

    def act(self, observation, mask):
        stop = os.environ.get("{variable}")
        if stop and Interrupter.matches == int(stop):
            raise KeyboardInterrupt
        return super().act(observation, mask)
'''


def tournament_cli(argv, capsys):
    """Run the tournament's command line in this process: (exit status, stdout, stderr)."""
    from dragons_egg.experiments.evaluation.tournament import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(path):
    """The JSON objects of a file of one per line (a tournament's ``results.jsonl``)."""
    import json
    from pathlib import Path

    return [json.loads(x) for x in Path(path).read_text().splitlines() if x]

