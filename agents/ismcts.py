"""``ismcts``: information-set Monte Carlo tree search over sampled determinizations.

Single-observer ISMCTS (Cowling, Powley and Whitehouse, 2012): every iteration samples a full
state consistent with what the player knows (:func:`agents.sampling.sample_world`), descends
one shared tree of action sequences, choosing among the actions legal in that determinization
by UCB1 with availability counts from the point of view of the player to move, expands one new
action, finishes the round with a fast rollout policy and backs up every seat's round reward
(R27). The move played is the root action visited most. Search stops at the end of the
current round, so tribute choices are judged by the round they shape.

Options: ``iterations`` (per move, default 200), ``time`` (seconds per move; when set it
replaces the iteration budget), ``c`` (UCB exploration, default 0.7), ``rollout``
(``"greedy"``: epsilon-greedy shedding, or ``"random"``), ``epsilon`` (default 0.2).
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.actions import DRAGON_BASE, GIVE_BASE

from .base import Agent, legal_from_mask
from .sampling import sample_world

# Action bits by play count: COUNT_BITS[c] = every play(number, c).
COUNT_BITS = [0] + [sum(1 << (1 + (n - 1) * 4 + (c - 1)) for n in range(1, 11)) for c in range(1, 5)]
PLAY_BITS = sum(COUNT_BITS)
DRAGON_BITS = 0xF << DRAGON_BASE
GIVE_NUMBERED = ((1 << 40) - 1) << GIVE_BASE
GIVE_EGG = 1 << (GIVE_BASE + 44)


def _random_bit(m: int, rng) -> int:
    k = rng.randrange(m.bit_count())
    for _ in range(k):
        m &= m - 1
    return (m & -m).bit_length() - 1


def rollout_action(s: E.State, rng, epsilon: float) -> int:
    """Epsilon-greedy rollout policy on the engine's mask: most cards, weakest number first;
    complete sets; give back the Egg or the weakest card; otherwise random."""
    m = E.legal_mask(s)
    if m & (m - 1) == 0:
        return m.bit_length() - 1
    if rng.random() < epsilon:
        return _random_bit(m, rng)
    plays = m & PLAY_BITS
    if plays:
        for c in (4, 3, 2, 1):
            x = plays & COUNT_BITS[c]
            if x:
                return x.bit_length() - 1
    if s.phase == E.GIVE:
        if m & GIVE_EGG:
            return GIVE_BASE + 44
        x = m & GIVE_NUMBERED
        return (x or m).bit_length() - 1
    if m & DRAGON_BITS and rng.random() < 0.3:
        return DRAGON_BASE
    if m & 1:
        return 0
    return _random_bit(m, rng)


class _Node:
    __slots__ = ("children", "visits", "reward", "avail", "player")

    def __init__(self, player: int) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.reward = 0.0
        self.avail = 0
        self.player = player


class ISMCTSAgent(Agent):
    """Information-set MCTS (see the module docstring)."""

    name = "ismcts"

    def __init__(self, seed: int | None = None, iterations: int = 200, time: float = 0.0,
                 c: float = 0.7, rollout: str = "greedy", epsilon: float = 0.2) -> None:
        super().__init__(seed)
        if iterations < 1:
            raise ValueError(f"ismcts: iterations must be >= 1, got {iterations}")
        if time < 0:
            raise ValueError(f"ismcts: time must be >= 0 seconds, got {time}")
        if rollout not in ("greedy", "random"):
            raise ValueError(f"ismcts: rollout must be 'greedy' or 'random', got {rollout!r}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"ismcts: epsilon must be in [0, 1], got {epsilon}")
        self.iterations = iterations
        self.time = time
        self.c = c
        self.epsilon = 1.0 if rollout == "random" else epsilon
        self.last_root: _Node | None = None

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        view = self.view(observation)
        root = _Node(-1)
        rng = self.rng
        deadline = _time.perf_counter() + self.time if self.time else None
        it = 0
        while True:
            if deadline is not None:
                if _time.perf_counter() >= deadline and it > 0:
                    break
            elif it >= self.iterations:
                break
            self._iterate(root, sample_world(view, self.config, rng), rng)
            it += 1
        self.last_root = root
        best = max((a for a in legal if a in root.children),
                   key=lambda a: (root.children[a].visits, root.children[a].reward),
                   default=legal[0])
        return best

    def _iterate(self, root: _Node, s: E.State, rng) -> None:
        node = root
        path = []
        c = self.c
        eps = self.epsilon
        while s.phase <= E.GIVE:
            acts = E.bits_of(E.legal_mask(s))
            children = node.children
            untried = [a for a in acts if a not in children]
            for a in acts:
                ch = children.get(a)
                if ch is not None:
                    ch.avail += 1
            if untried:
                a = untried[rng.randrange(len(untried))]
                child = _Node(s.current)
                child.avail = 1
                children[a] = child
                E.step(s, a)
                path.append(child)
                break
            best, best_v = acts[0], -math.inf
            for a in acts:
                ch = children[a]
                v = ch.reward / ch.visits + c * math.sqrt(math.log(ch.avail) / ch.visits)
                if v > best_v:
                    best, best_v = a, v
            node = children[best]
            E.step(s, best)
            path.append(node)
        while s.phase <= E.GIVE:
            E.step(s, rollout_action(s, rng, eps))
        rewards = s.results[-1].rewards
        for nd in path:
            nd.visits += 1
            nd.reward += rewards[nd.player]
