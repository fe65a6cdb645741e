"""``ismcts``: information-set Monte Carlo tree search over sampled determinizations.

Single-observer ISMCTS (Cowling, Powley and Whitehouse, 2012): every iteration samples a full
state consistent with what the player knows (:func:`dragons_egg.agents.sampling.sample_world`),
descends one shared tree of action sequences, choosing among the actions legal in that
determinization by UCB1 with availability counts from the point of view of the player to move,
expands one new action, finishes the round with a fast rollout policy and backs up every seat's
round reward (R27). The move played is the root action visited most. Search stops at the end of the
current round, so tribute choices are judged by the round they shape.

Options: ``iterations`` (per move, default 200), ``time`` (seconds per move; when set it
replaces the iteration budget), ``c`` (UCB exploration, default 0.7), ``rollout``
(``"heuristic"``: the heuristic agent's rules H1..H9 on the engine state, the default;
``"greedy"``: the greedy agent's rule; ``"random"``: uniform; or, built in code, any
:data:`RolloutPolicy` callable ``(state, rng, epsilon) -> action``), ``epsilon`` (the share
of random rollout moves, default 0.1). The ``heuristic`` and ``greedy`` rollouts call the very
functions the ``heuristic`` and ``greedy`` agents call, so with ``epsilon=0`` a rollout plays
each seat as that agent would from the seat's own observation.
"""

from __future__ import annotations

import math
import random
import time as _time
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

from dragons_egg_env import engine as E
from dragons_egg_env.observation import MaskArray, ObsArray

from .base import Agent, legal_from_mask
from .heuristic import context_from_state, heuristic_action
from .sampling import sample_world
from .simple import greedy_mask

#: A rollout policy: ``policy(state, rng, epsilon) -> action`` for the seat to act in
#: ``state`` (an engine state of a sampled world), with ``epsilon`` its share of random moves.
RolloutPolicy = Callable[[E.State, random.Random, float], int]


def _random_bit(m: int, rng: random.Random) -> int:
    """A uniformly random set bit of ``m`` (a random legal action of a legal mask)."""
    k = rng.randrange(m.bit_count())
    for _ in range(k):
        m &= m - 1
    return (m & -m).bit_length() - 1


def heuristic_rollout_action(s: E.State, rng: random.Random, epsilon: float) -> int:
    """The ``heuristic`` agent's rules H1..H9
    (:func:`dragons_egg.agents.heuristic.heuristic_action`, the
    same function the agent calls) on the engine state of the sampled world, with a share
    ``epsilon`` of uniformly random moves."""
    m = E.legal_mask(s)
    if not m & (m - 1):
        return m.bit_length() - 1
    if rng.random() < epsilon:
        return _random_bit(m, rng)
    return heuristic_action(context_from_state(s, m))


def greedy_rollout_action(s: E.State, rng: random.Random, epsilon: float) -> int:
    """The ``greedy`` agent's rule (:func:`dragons_egg.agents.simple.greedy_mask`; it reads only
    the legal
    actions) with a share ``epsilon`` of uniformly random moves."""
    m = E.legal_mask(s)
    if not m & (m - 1):
        return m.bit_length() - 1
    if rng.random() < epsilon:
        return _random_bit(m, rng)
    return greedy_mask(m)


def random_rollout_action(s: E.State, rng: random.Random, epsilon: float) -> int:
    """Uniform over the legal actions (``epsilon`` is not read)."""
    m = E.legal_mask(s)
    if not m & (m - 1):
        return m.bit_length() - 1
    return _random_bit(m, rng)


#: The rollout policies an agent spec can name (``rollout=heuristic|greedy|random``).
ROLLOUTS: dict[str, RolloutPolicy] = {
    "heuristic": heuristic_rollout_action,
    "greedy": greedy_rollout_action,
    "random": random_rollout_action,
}


def _is_a(x: object, kind: type) -> bool:
    """``isinstance`` for the ``numbers`` ABCs (numpy scalars too), which type checkers do not
    see ``int`` and ``float`` register with."""
    return isinstance(x, kind)


#: The largest search budget a move may have: ``iterations`` (each adds to the tree, so the
#: budget bounds its memory too: 20,000 iterations of a 4-player move took 4.4 MiB and 26 s
#: here, so this many take about 25 MB and two minutes) and ``time`` (seconds). A larger one
#: is a mistake, such as a digit too many, that would hang the match.
MAX_ITERATIONS = 100_000
MAX_SECONDS = 3600.0


def check_count(name: str, x: Any, low: int, high: int | None = None) -> None:
    """An integer option (a bool is not one) of at least ``low`` (and at most ``high``), or a
    ``ValueError`` naming it."""
    if isinstance(x, bool) or not _is_a(x, Integral) or x < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name} must be an integer in {low}..{high:_}, got {x}")


def check_real(name: str, x: Any, low: float, *, strict: bool = False) -> None:
    """A finite real option of at least ``low`` (above it when ``strict``), or a ``ValueError``
    naming it."""
    if not (_is_a(x, Real) and math.isfinite(x) and (x > low if strict else x >= low)):
        raise ValueError(f"{name} must be a number {'>' if strict else '>='} {low:g}, got {x}")


def check_search(iterations: Any, time: Any, c: Any) -> None:
    """The options every search agent takes: ``iterations`` and ``time``, the per-move budget,
    and ``c``, the exploration constant (``ismcts`` and ``ismcts-net``)."""
    check_count("iterations", iterations, 1, MAX_ITERATIONS)
    if not (_is_a(time, Real) and math.isfinite(time) and 0 <= time <= MAX_SECONDS):
        raise ValueError(f"time must be in 0..{MAX_SECONDS:g} seconds, got {time}")
    check_real("c", c, 0)


def check_options(iterations: int = 200, time: float = 0.0, c: float = 0.7,
                  rollout: str | RolloutPolicy = "heuristic", epsilon: float = 0.1) -> None:
    """Check the options of an ``ismcts`` agent (a ``ValueError`` naming the first bad one).

    The registry calls it when a spec is read (``ismcts:iterations=0`` is an error before any
    match starts); the agent's constructor calls it too."""
    check_search(iterations, time, c)
    if not callable(rollout) and rollout not in ROLLOUTS:
        raise ValueError(f"rollout must be one of {', '.join(ROLLOUTS)}; got {rollout!r}")
    if not (_is_a(epsilon, Real) and 0.0 <= epsilon <= 1.0):
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")


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
                 c: float = 0.7, rollout: str | RolloutPolicy = "heuristic",
                 epsilon: float = 0.1) -> None:
        super().__init__(seed)
        try:
            check_options(iterations=iterations, time=time, c=c, rollout=rollout,
                          epsilon=epsilon)
        except ValueError as exc:
            raise ValueError(f"ismcts: {exc}") from None
        self.iterations = iterations
        self.time = time
        self.c = c
        self.epsilon = 1.0 if rollout == "random" else epsilon
        #: The rollout policy (a plug-in: any :data:`RolloutPolicy`).
        self.rollout: RolloutPolicy = rollout if callable(rollout) else ROLLOUTS[rollout]
        self.last_root: _Node | None = None

    @classmethod
    def check_options(cls, **options: Any) -> None:
        """The spec-time check (:func:`check_options`)."""
        check_options(**options)

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
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

    def _iterate(self, root: _Node, s: E.State, rng: random.Random) -> None:
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
