"""``ismcts-net``: information-set MCTS guided by the learned network (PUCT, AlphaZero-style).

Single-observer ISMCTS (:mod:`dragons_egg.agents.ismcts`) whose rollouts are replaced by the
policy network's two heads. Every iteration samples a full state consistent with what the
player knows (:func:`dragons_egg.agents.sampling.sample_world`) and descends one shared tree of
action sequences. At a node, among the actions legal in this determinization, it picks the
highest PUCT score ``Q(a) + c * P(a) * sqrt(avail(a)) / (1 + N(a))``, from the point of view
of the player to move: ``P`` is the node's prior (the softmax of the network's masked logits
for the mover's observation in the determinization that first reached the node) renormalised
over the actions legal now (an action that determinization did not allow, as another sampled
hand may, counts with the uniform share ``1 / len(legal)``), ``Q`` the mean value of the
action (the node's first-play value, the network's value for the mover, while unvisited),
``N`` its visits and ``avail`` how often it was legal when the node was visited (availability
counts, as in ISMCTS). An action without a node yet gets one: the state is stepped, evaluated
(one network forward on the observations of the seats that chose on the path and of the
seat to move: their values, and the new node's prior) and the descent stops. Each node on
the path adds the value of the seat that chose the action into it (in this determinization).
A round that ended is valued by its rewards (R27) plus, between rounds, the network's values
at a random deal of the next round. The move played is
the root action visited most (ties: the higher mean value).

The value head predicts, for the seat whose observation it reads, the sum of that seat's
rewards until the end of the match (gamma = 1), so values mix the current round's outcome and
the rounds after it, as the policy was trained to.

Options: ``path`` (a ``.npz`` policy file, :mod:`dragons_egg.agents.netpolicy`; ``""``: the
shipped ``ppo`` policy), ``iterations`` (per move, default 200), ``time`` (seconds per move;
when > 0 it replaces the iteration budget, at least one iteration), ``c`` (PUCT exploration,
default 1.5), ``depth`` (default 0: before a leaf is valued, up to that many moves are played
by the network's most likely action, within the round), ``temperature`` (default 1: the
priors are the softmax of the logits divided by it; above 1 flattens them, so that search
looks further past the policy's first choice), ``rules_mismatch`` (default ``warn``: at the
start of a match under other rules than the policy file was trained under, warn once, as
``ppo`` does, :func:`dragons_egg.agents.ppo.warn_rules_mismatch`; ``ignore``: play on
silently). The search itself always plays the game's own rules.
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import Encoder, MaskArray, ObsArray, mask_array, pad

from .base import Agent, legal_from_mask
from .ismcts import check_count, check_real, check_search
from .netpolicy import NetPolicy
from .ppo import (
    SHIPPED,
    CheckpointError,
    check_checkpoint,
    check_rules_mismatch,
    check_table,
    checkpoint_format,
    checkpoint_players,
    net_policy,
    warn_rules_mismatch,
)
from .sampling import sample_world

#: Encoders by (seats, policy max_players, rounds): one per table kind, shared by agents.
_ENCODERS: dict[tuple[int, int, int], Encoder] = {}


def _encoder(n: int, max_players: int, num_rounds: int) -> Encoder:
    key = (n, max_players, num_rounds)
    enc = _ENCODERS.get(key)
    if enc is None:
        enc = _ENCODERS[key] = Encoder(n, max_players, num_rounds)
    return enc


def check_options(path: str = "", iterations: int = 200, time: float = 0.0, c: float = 1.5,
                  depth: int = 0, temperature: float = 1.0, rules_mismatch: str = "warn"
                  ) -> None:
    """Check the options of an ``ismcts-net`` agent (a ``ValueError`` naming the first bad
    one), cheaply: the policy file is checked as ``ppo`` checks it, without building the
    agent (:func:`dragons_egg.agents.ppo.check_checkpoint`)."""
    check_search(iterations, time, c)
    check_count("depth", depth, 0, 1000)
    check_real("temperature", temperature, 0, strict=True)
    check_rules_mismatch(rules_mismatch)
    _policy_path(path)


def _policy_path(path: str) -> Path:
    """``path`` as a policy file (``""``: the shipped policy); a :class:`CheckpointError`
    (a ``ValueError``) for a missing or bad file and for an SB3 checkpoint."""
    p = Path(path) if path else SHIPPED
    if checkpoint_format(p) != "net":
        raise CheckpointError(f"path: {p} is a Stable-Baselines3 checkpoint; ismcts-net needs a "
                              ".npz policy file with a value head (as written by "
                              "dragons_egg.experiments.training.selfplay)")
    check_checkpoint(p)
    return p


class _Node:
    """A node of the shared tree: the statistics of each action taken from it."""

    __slots__ = ("children", "visits", "total", "avail", "prior", "fpu")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        #: N(a), summed values W(a) (of the seat that chose a) and availability counts.
        self.visits: dict[int, int] = {}
        self.total: dict[int, float] = {}
        self.avail: dict[int, int] = {}
        #: The prior over the actions legal where the node was first valued (None until a
        #: decision state reached it), and its first-play value (the mover's value there).
        self.prior: dict[int, float] | None = None
        self.fpu = 0.0

    def mean(self, a: int) -> float:
        """Q(a): the mean value of action ``a`` (the first-play value while unvisited)."""
        n = self.visits.get(a, 0)
        return self.total[a] / n if n else self.fpu


def _choosers(path: list[tuple[_Node, int, int]]) -> list[int]:
    """The seats that chose an action on ``path``, in order of first appearance: the only
    seats whose values the backup reads."""
    return list(dict.fromkeys(seat for _, _, seat in path))


def _prior(row: list[float], acts: list[int], temperature: float = 1.0) -> dict[int, float]:
    """The softmax of ``row / temperature`` (one observation's logits) over ``acts``."""
    zs = [row[a] / temperature for a in acts]
    top = max(zs)
    ws = [math.exp(z - top) for z in zs]
    inv = 1.0 / sum(ws)
    return {a: w * inv for a, w in zip(acts, ws, strict=True)}


class NetISMCTSAgent(Agent):
    """ISMCTS with PUCT guided by a policy network (see the module docstring)."""

    name = "ismcts-net"

    def __init__(self, seed: int | None = None, path: str = "", iterations: int = 200,
                 time: float = 0.0, c: float = 1.5, depth: int = 0,
                 temperature: float = 1.0, rules_mismatch: str = "warn") -> None:
        super().__init__(seed)
        try:
            check_options(path=path, iterations=iterations, time=time, c=c, depth=depth,
                          temperature=temperature, rules_mismatch=rules_mismatch)
        except ValueError as exc:
            raise ValueError(f"ismcts-net: {exc}") from None
        self.path = _policy_path(path)
        self.net: NetPolicy = net_policy(self.path)
        self.rules_mismatch = rules_mismatch
        self.policy_players = self.net.max_players
        self.iterations = int(iterations)
        self.time = float(time)
        self.c = float(c)
        self.depth = int(depth)
        self.temperature = float(temperature)
        self.last_root: _Node | None = None
        #: Iterations of the last move searched (0 when the move was forced).
        self.iterations_done = 0

    @classmethod
    def check_options(cls, **options: Any) -> None:
        """The spec-time check (:func:`check_options`)."""
        check_options(**options)

    @classmethod
    def table_limit(cls, path: str = "", iterations: int = 200, time: float = 0.0,
                    c: float = 1.5, depth: int = 0, temperature: float = 1.0,
                    rules_mismatch: str = "warn") -> int:
        return checkpoint_players(_policy_path(path))

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None
                    ) -> None:
        """As :meth:`Agent.start_match`; a table larger than the policy's is a
        :class:`~dragons_egg.agents.ppo.CheckpointError`, and other rules than the policy's
        warn once (unless ``rules_mismatch="ignore"``)."""
        super().start_match(seat, config, max_players)
        check_table(self.path, self.policy_players, self.max_players)
        warn_rules_mismatch(self.path, self.net, config, self.rules_mismatch)

    # --- the search ---------------------------------------------------------------------

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            self.iterations_done = 0
            return legal[0]
        view = self.view(observation)
        root = _Node()
        obs = pad(np.asarray(observation, dtype=np.float32), self.max_players,
                  self.policy_players)
        logits, value = self.net.logits_and_value(obs, np.asarray(action_mask, dtype=bool))
        root.prior = _prior(logits.tolist(), legal, self.temperature)
        root.fpu = float(value)
        rng = self.rng
        config = self.config
        deadline = _time.perf_counter() + self.time if self.time > 0 else None
        budget = self.iterations
        it = 0
        while True:
            if deadline is not None:
                if it > 0 and _time.perf_counter() >= deadline:
                    break
            elif it >= budget:
                break
            self._iterate(root, sample_world(view, config, rng))
            it += 1
        self.iterations_done = it
        self.last_root = root
        visits = root.visits
        played = [a for a in legal if a in visits]
        if not played:  # pragma: no cover - one iteration visits a root action
            prior = root.prior
            return max(legal, key=lambda a: prior.get(a, 0.0))
        return max(played, key=lambda a: (visits[a], root.mean(a)))

    def _iterate(self, root: _Node, s: E.State) -> None:
        """One iteration on the determinization ``s`` (changed in place)."""
        node = root
        path: list[tuple[_Node, int, int]] = []
        c = self.c
        while True:
            if s.phase > E.GIVE:
                values = self._leaf_values(s, _choosers(path))
                break
            acts = E.bits_of(E.legal_mask(s))
            prior = node.prior
            if prior is None:  # first reached in a decision state: value it, stop here
                values = self._expand(node, s, acts, _choosers(path))
                break
            # P over the actions legal here: the stored prior, renormalised; an action the
            # first determinization did not allow gets the uniform share 1/len(acts)
            uniform = 1.0 / len(acts)
            ps = [prior.get(a, uniform) for a in acts]
            scale = c / sum(ps)
            avail, visits, total, fpu = node.avail, node.visits, node.total, node.fpu
            best, best_score = acts[0], -math.inf
            for a, p in zip(acts, ps, strict=True):
                k = avail.get(a, 0) + 1
                avail[a] = k
                n = visits.get(a, 0)
                q = total[a] / n if n else fpu
                score = q + scale * p * math.sqrt(k) / (1 + n)
                if score > best_score:
                    best, best_score = a, score
            path.append((node, best, s.current))
            E.step(s, best)
            child = node.children.get(best)
            if child is None:
                child = node.children[best] = _Node()
                if s.phase > E.GIVE:
                    values = self._leaf_values(s, _choosers(path))
                else:
                    values = self._expand(child, s, E.bits_of(E.legal_mask(s)),
                                          _choosers(path))
                break
            node = child
        for nd, a, seat in path:
            nd.visits[a] = nd.visits.get(a, 0) + 1
            nd.total[a] = nd.total.get(a, 0.0) + values[seat]

    def _rows(self, s: E.State, seats: list[int]) -> ObsArray:
        """The observations of ``s`` of ``seats``, padded to the policy's seats (one row
        each)."""
        enc = _encoder(s.n, self.policy_players, s.config.num_rounds)
        out = np.empty((len(seats), enc.size), dtype=np.float32)
        for k, j in enumerate(seats):
            out[k] = enc.encode(s, j)
        return out

    def _values(self, s: E.State, seats: list[int]) -> dict[int, float]:
        """The network's value of ``s`` for each of ``seats``."""
        vs: list[float] = self.net.value(self._rows(s, seats)).tolist()
        return dict(zip(seats, vs, strict=True))

    def _row(self, s: E.State, seat: int) -> ObsArray:
        enc = _encoder(s.n, self.policy_players, s.config.num_rounds)
        return enc.encode(s, seat)[None]

    def _expand(self, node: _Node, s: E.State, acts: list[int], seats: list[int]
                ) -> dict[int, float]:
        """Value the decision state ``s`` that ``node`` stands for: set the node's prior and
        first-play value, and return the value of each of ``seats`` (the seats that chose on
        the path to it; after ``depth`` greedy moves)."""
        mover = s.current
        mask = mask_array(E.legal_mask(s))
        if not self.depth:
            want = seats if mover in seats else [*seats, mover]
            logits, values = self.net.logits_and_value(self._rows(s, want), mask,
                                                       row=want.index(mover))
            node.prior = _prior(logits.tolist(), acts, self.temperature)
            vs = dict(zip(want, values.tolist(), strict=True))
            node.fpu = vs[mover]
            return vs
        logits, value = self.net.logits_and_value(self._row(s, mover), mask)
        row: list[float] = logits[0].tolist()
        node.prior = _prior(row, acts, self.temperature)
        node.fpu = float(value[0])
        E.step(s, max(acts, key=row.__getitem__))
        for _ in range(self.depth - 1):
            if s.phase > E.GIVE:
                break
            m = E.legal_mask(s)
            if m & (m - 1):
                z = self.net.logits(self._row(s, s.current), mask_array(m))
                E.step(s, int(np.argmax(z[0])))
            else:
                E.step(s, m.bit_length() - 1)
        if s.phase > E.GIVE:
            return self._leaf_values(s, seats)
        return self._values(s, seats)

    def _leaf_values(self, s: E.State, seats: list[int]) -> dict[int, float]:
        """The value of each of ``seats`` in a state whose round ended: its round reward
        (R27), plus, between rounds, the network's value at a random deal of the next
        round."""
        rewards = s.results[-1].rewards
        if s.phase != E.DEAL:
            return {j: rewards[j] for j in seats}
        E.deal(s, E.random_deal(s, self.rng))
        return {j: rewards[j] + v for j, v in self._values(s, seats).items()}


__all__ = ["NetISMCTSAgent", "check_options"]
