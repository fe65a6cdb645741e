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
(``"heuristic"``: the heuristic agent's rules on the engine state, the default;
``"greedy"``: epsilon-greedy shedding; ``"random"``), ``epsilon`` (the share of random
rollout moves, default 0.1).
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, DRAGON_BASE, GIVE_BASE

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


DRAGON_CARDS = 0xF << 40  # the dragon cards among card bits
DANGER = 3  # an opponent with this many cards or fewer is about to go out


def heuristic_rollout_action(s: E.State, rng, epsilon: float) -> int:
    """Rollout policy after the rules of the ``heuristic`` agent (``docs/agents.md``, H1..H9),
    computed on the engine state of the determinization for speed: complete sets; holding the
    Egg, clear (a dragon card, strong leads); lead the weakest whole group; follow with the
    weakest whole group that beats the top, breaking groups only of weak numbers or under
    threat, keeping 1s and 2s back; dragon cards under threat; in the tribute ask for dragon
    cards and low numbers and give back the Egg or the weakest card. ``epsilon``: random."""
    m = E.legal_mask(s)
    if m & (m - 1) == 0:
        return m.bit_length() - 1
    if rng.random() < epsilon:
        return _random_bit(m, rng)
    ph = s.phase
    if ph == E.COMPLETE:
        return (m & ~1).bit_length() - 1
    if ph == E.ASK:
        asks = m >> ASK_BASE
        d = asks & DRAGON_CARDS
        x = d or asks
        return ASK_BASE + ((x & -x).bit_length() - 1)
    if ph == E.GIVE:
        if m & GIVE_EGG:
            return GIVE_BASE + 44
        x = m & GIVE_NUMBERED
        return (x or m).bit_length() - 1
    p = s.current
    hand = s.hands[p]
    th = s.th[p]
    holds_egg = s.egg_holder == p
    r = s.top_rank
    plays = m & PLAY_BITS
    if r:
        rem = s.rem
        if not rem & ~hand:  # H1: complete the set
            done = 1 << (rem.bit_count() + 4 * (r - 1))
            if m & done:
                return done.bit_length() - 1
        if holds_egg and m & DRAGON_BITS:  # H2
            return DRAGON_BASE
    if not plays:
        if m & DRAGON_BITS and _danger(s, p):
            return DRAGON_BASE
        return 0 if m & 1 else _random_bit(m, rng)
    size = hand.bit_count()
    danger = _danger(s, p)
    best = -1
    best_key = None
    x = plays
    while x:
        low = x & -x
        a = low.bit_length() - 1
        x ^= low
        num = (a - 1) // 4 + 1
        cnt = (a - 1) % 4 + 1
        held = ((th >> (4 * (num - 1))) & 15).bit_count()
        whole = cnt == held
        if r:
            if not whole and num < 6 and not danger and not holds_egg:
                continue  # H4: keep groups of strong numbers
            if num <= 2 and not danger and not holds_egg and size > 5:
                continue  # H5: hold back 1s and 2s
            key = (whole, cnt == s.top_count, -num if holds_egg else num, -cnt)
        else:
            if not whole:
                continue  # H3: lead whole groups
            key = (True, True, -num if holds_egg else num, cnt)
        if best_key is None or key > best_key:
            best, best_key = a, key
    if best >= 0:
        return best
    if r and m & DRAGON_BITS and danger:  # H6
        return DRAGON_BASE
    if m & 1:
        return 0
    return (plays & -plays).bit_length() - 1


def _danger(s: E.State, p: int) -> bool:
    active = s.active
    for q in range(s.n):
        if q != p and active >> q & 1 and s.hands[q].bit_count() <= DANGER:
            return True
    return False


class _Node:
    __slots__ = ("children", "visits", "reward", "avail", "player")

    def __init__(self, player: int) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.reward = 0.0
        self.avail = 0
        self.player = player


ROLLOUTS = {"heuristic": heuristic_rollout_action, "greedy": rollout_action,
            "random": rollout_action}


class ISMCTSAgent(Agent):
    """Information-set MCTS (see the module docstring)."""

    name = "ismcts"

    def __init__(self, seed: int | None = None, iterations: int = 200, time: float = 0.0,
                 c: float = 0.7, rollout: str = "heuristic", epsilon: float = 0.1) -> None:
        super().__init__(seed)
        if iterations < 1:
            raise ValueError(f"ismcts: iterations must be >= 1, got {iterations}")
        if time < 0:
            raise ValueError(f"ismcts: time must be >= 0 seconds, got {time}")
        if rollout not in ROLLOUTS:
            raise ValueError(f"ismcts: rollout must be one of {', '.join(ROLLOUTS)}; "
                             f"got {rollout!r}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"ismcts: epsilon must be in [0, 1], got {epsilon}")
        self.iterations = iterations
        self.time = time
        self.c = c
        self.epsilon = 1.0 if rollout == "random" else epsilon
        self.rollout = ROLLOUTS[rollout]
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
        policy = self.rollout
        while s.phase <= E.GIVE:
            E.step(s, policy(s, rng, eps))
        rewards = s.results[-1].rewards
        for nd in path:
            nd.visits += 1
            nd.reward += rewards[nd.player]
