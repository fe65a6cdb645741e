"""A single-agent Gymnasium view of Dragon's Egg, for Stable-Baselines3 and other single-agent
learners.

:class:`SingleAgentEnv` seats one learner at the table; every other seat is played by an
opponent drawn from a pool. Each episode is one match (``num_rounds`` rounds, so a learner that
wins a round makes tribute choices in the next). :meth:`SingleAgentEnv.step` returns the
learner's own reward earned since its previous move, including round-end rewards that fell on
other players' turns; the match's last reward (the loser's -1 included) arrives with the step
that ends the episode.

Opponents in the pool may be:

- factories: any object with a ``make(seed) -> agent`` method, called once per episode and
  seat with a seed drawn from the episode seed, so every episode gets fresh, seeded opponents
  (``dragons_egg.agents.AgentSpec("heuristic")`` or ``AgentSpec("ppo:path=snap.npz")`` make agents
  from a spec string; they are picklable, so the pool travels to ``SubprocVecEnv`` workers);
- agent objects (with ``start_match``, ``act`` and ``end_round``, as
  :class:`dragons_egg.agents.base.Agent`
  has), reused as they are;
- any callable ``(observation, action_mask) -> action``.

This package resolves no spec strings (it imports nothing from ``agents``): a plain string in
the pool is a ``TypeError`` that says to wrap it in ``dragons_egg.agents.AgentSpec``. There is no
default pool: ``opponents`` is required. The learner's seat and the table size are drawn per episode
from the given sets, from the episode seed.

The env has ``action_masks()`` (so MaskablePPO needs no extra wrapper), is seeded by
``reset(seed)`` (a non-negative integer, numpy integers too) and passes Gymnasium's and SB3's
env checkers. Importing this module registers it with Gymnasium as
``dragons_egg/SingleAgent-v0``; after a plain install,
``gymnasium.make("dragons_egg_env.wrappers:dragons_egg/SingleAgent-v0", opponents=[...])``
imports the module first and works in a fresh interpreter.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, Union, cast, runtime_checkable

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from .actions import NUM_ACTIONS
from .config import MAX_PLAYERS, RulesConfig
from .dragons_egg_v0 import ActionOutOfBoundsError, action_index, match_seed, raw_env
from .observation import ObsArray, layout

GYM_ID = "dragons_egg/SingleAgent-v0"

#: A callable opponent: ``(observation, int8 action mask) -> action``.
Policy = Callable[[ObsArray, npt.NDArray[np.int8]], int]


class AgentLike(Protocol):
    """What the env asks of an opponent object (:class:`dragons_egg.agents.base.Agent` has
    it): told the match, asked for actions, told each round's end."""

    def start_match(self, seat: int, config: RulesConfig,
                    max_players: int | None = None) -> None: ...

    def act(self, observation: ObsArray, action_mask: npt.NDArray[np.int8]) -> int: ...

    def end_round(self, result: dict[str, Any]) -> None: ...


@runtime_checkable
class OpponentFactory(Protocol):
    """Makes a fresh opponent for one episode and seat (see the module docstring)."""

    def make(self, seed: int) -> AgentLike:
        """An agent object (``start_match``, ``act``, ``end_round``), seeded with ``seed``."""
        ...


#: An opponent in the pool: a factory, an agent object or a callable (module docstring).
Opponent = Union[OpponentFactory, AgentLike, Policy]


class _CallableAgent:
    """Adapts a plain callable to the agent protocol."""

    def __init__(self, fn: Policy) -> None:
        self.fn = fn

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None) -> None:
        pass

    def act(self, observation: ObsArray, action_mask: npt.NDArray[np.int8]) -> int:
        return int(self.fn(observation, action_mask))

    def end_round(self, result: dict[str, Any]) -> None:
        pass


def check_weights(weights: Sequence[float] | None, size: int) -> list[float] | None:
    """Opponent weights as floats, one non-negative number per opponent, not all zero
    (``None`` stays ``None``: uniform); else a ``ValueError``."""
    if weights is None:
        return None
    out = [float(w) for w in weights]
    if len(out) != size or any(w < 0 for w in out) or not sum(out):
        raise ValueError("weights must be one non-negative number per opponent, not all zero")
    return out


def check_pool(opponents: Any, weights: Sequence[float] | None, kind: str, resolve_with: str,
               problem: Callable[[Any], str | None]) -> tuple[list[Any], list[float] | None]:
    """The opponent pool of a single-learner view, checked: the one check of
    :meth:`SingleAgentEnv.set_pool` and
    :meth:`dragons_egg_env.vector_env.SingleAgentVectorEnv.set_opponents`. ``opponents`` must
    be a non-empty sequence (of ``kind``, as the error says), without spec strings (which this
    package does not resolve: ``resolve_with`` names what does), of items that ``problem``
    accepts (it returns why an item is no opponent, else ``None``); the weights are checked
    by :func:`check_weights`. Returns the pool as a list and the weights."""
    if isinstance(cast(object, opponents), (str, bytes)):  # callers without types
        raise TypeError(f"opponents is a sequence of {kind}, got the string {opponents!r}")
    if not isinstance(opponents, Sequence):
        raise TypeError(f"opponents is a sequence of {kind}, got {opponents!r}")
    pool = list(opponents)
    if not pool:
        raise ValueError("the opponent pool is empty")
    for opp in pool:
        if isinstance(opp, str):
            raise TypeError(f"opponent {opp!r} is a spec string, which this package does not "
                            f"resolve: pass {resolve_with}({opp!r})")
        why = problem(opp)
        if why is not None:
            raise TypeError(why)
    return pool, check_weights(weights, len(pool))


def _not_an_opponent(opp: Any) -> str | None:
    if not (isinstance(opp, OpponentFactory) or hasattr(opp, "act") or callable(opp)):
        return (f"an opponent is a factory with make(seed), an agent with act() "
                f"or a callable (observation, mask) -> action; got {opp!r}")
    return None


class SingleAgentEnv(gymnasium.Env[ObsArray, int]):
    """One learner against a pool of opponents (see the module docstring).

    Args:
        opponents: the pool (required); each seat draws one per episode (uniformly, or by
            ``weights``): factories, agent objects or callables (module docstring).
        table_sizes: table sizes to draw from per episode (2..8).
        seats: learner seats to draw from (default: every seat); seats that do not exist at a
            drawn table size are skipped.
        num_rounds: rounds per match (R26).
        max_players: observation padding; default the largest table size.
        illegal_action: ``"terminate"`` (the episode ends, the learner gets -1, as
            ``dragons_egg_v0.env()`` does; the default, which Gymnasium's checker needs) or
            ``"raise"``. An action that is not an integer (a float, whole or not, a bool, a
            string) is an ``ActionOutOfBoundsError`` either way, as in the AEC env.
        **rule_flags: any rule flag of :class:`~dragons_egg_env.config.RulesConfig`.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 2}

    def __init__(self, opponents: Sequence[Opponent],
                 table_sizes: Sequence[int] = (4,), seats: Sequence[int] | None = None,
                 num_rounds: int = 3, max_players: int | None = None,
                 weights: Sequence[float] | None = None, illegal_action: str = "terminate",
                 render_mode: str | None = None, **rule_flags: Any) -> None:
        super().__init__()
        sizes = tuple(table_sizes)
        if not sizes:
            raise ValueError("table_sizes must name at least one table size")
        for n in sizes:
            RulesConfig.from_kwargs({**rule_flags, "num_players": n, "num_rounds": num_rounds})
        self.table_sizes = sizes
        self.max_players = max_players or max(sizes)
        if self.max_players < max(sizes) or self.max_players > MAX_PLAYERS:
            raise ValueError(f"max_players must be in {max(sizes)}..{MAX_PLAYERS}, "
                             f"got {self.max_players}")
        self.seats = tuple(seats) if seats is not None else tuple(range(max(sizes)))
        if not self.seats or any(not 0 <= s < max(sizes) for s in self.seats):
            raise ValueError(f"seats must be within 0..{max(sizes) - 1}, got {self.seats}")
        if not any(s < n for s in self.seats for n in sizes):
            raise ValueError("no learner seat exists at any of the table sizes")
        if illegal_action not in ("terminate", "raise"):
            raise ValueError(f"illegal_action must be 'terminate' or 'raise', "
                             f"got {illegal_action!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.num_rounds = num_rounds
        self.rule_flags = dict(rule_flags)
        self.pool: list[Opponent] = []
        self.weights: list[float] | None = None
        self.set_pool(opponents, weights)
        size = layout(self.max_players).size
        self.observation_space = spaces.Box(-1.0, 1.0, (size,), np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._env: raw_env | None = None
        self._agents: dict[str, AgentLike] = {}
        self._mask = np.zeros(NUM_ACTIONS, dtype=bool)
        self._episode_rng: random.Random | None = None

    # -- the pool -------------------------------------------------------------------------
    def set_pool(self, opponents: Sequence[Opponent], weights: Sequence[float] | None = None
                 ) -> None:
        """Replace the opponent pool (takes effect at the next episode)."""
        self.pool, self.weights = check_pool(opponents, weights, "opponents",
                                             "dragons_egg.agents.AgentSpec", _not_an_opponent)

    def add_opponent(self, opponent: Opponent, weight: float | None = None) -> None:
        """Add one opponent (for self-play snapshots)."""
        pool = self.pool + [opponent]
        weights = None
        if self.weights is not None or weight is not None:
            old = self.weights or [1.0] * len(self.pool)
            weights = old + [1.0 if weight is None else weight]
        self.set_pool(pool, weights)

    def pool_size(self) -> int:
        return len(self.pool)

    def _draw_opponent(self, rng: random.Random, seed: int) -> AgentLike:
        opp = rng.choices(self.pool, weights=self.weights)[0]
        if isinstance(opp, OpponentFactory):
            return opp.make(seed)
        if hasattr(opp, "act"):
            return cast(AgentLike, opp)
        return _CallableAgent(opp)

    # -- Gymnasium API --------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[ObsArray, dict[str, Any]]:
        if seed is not None:
            seed = match_seed(seed)  # numpy integers too; Gymnasium takes Python ints only
        super().reset(seed=seed)
        rng = random.Random(int(self.np_random.integers(2**63)))
        sizes = [n for n in self.table_sizes if any(s < n for s in self.seats)]
        n = rng.choice(sizes)
        self.learner = rng.choice([s for s in self.seats if s < n])
        env = raw_env(num_players=n, num_rounds=self.num_rounds, max_players=self.max_players,
                      **self.rule_flags)
        env.reset(seed=rng.getrandbits(63), options=options)
        self._env = env
        self._learner_name = env.possible_agents[self.learner]
        self._agents = {}
        for q, name in enumerate(env.possible_agents):
            if q != self.learner:
                agent = self._draw_opponent(rng, rng.getrandbits(63))
                agent.start_match(q, env.config, self.max_players)
                self._agents[name] = agent
        self._pending = 0.0
        self._done = False
        self._advance()
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[ObsArray, float, bool, bool, dict[str, Any]]:
        if self._env is None:
            raise RuntimeError("reset() needs to be called before step()")
        if self._done:
            raise RuntimeError("the episode is over: call reset()")
        env = self._env
        a = action_index(action)
        if a is None:
            raise ActionOutOfBoundsError(
                f"action {action!r} is outside the action space Discrete({NUM_ACTIONS}) (an "
                f"integer, not a bool or a float)")
        if not (0 <= a < NUM_ACTIONS and self._mask[a]):
            if self.illegal_action == "raise":
                env.step(a)  # raises IllegalMoveError naming the action and the legal ones
            self._done = True
            info = self._info()
            info["illegal_action"] = a
            return self._obs(), -1.0, True, False, info
        self._pending = 0.0
        env.step(a)
        self._collect()
        self._advance()
        reward, self._pending = self._pending, 0.0
        return self._obs(), float(reward), self._done, False, self._info()

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """The learner's legal actions now (bool), for MaskablePPO."""
        return self._mask.copy()

    def render(self) -> str | None:  # type: ignore[override]
        # Gymnasium types frames as its RenderFrame type variable; this env's only mode is text.
        if self._env is None or self.render_mode is None:
            return None
        return self._env.render_table(viewer=self._learner_name)

    # -- internals ------------------------------------------------------------------------
    def _match(self) -> raw_env:
        """The match of the episode (``reset()`` makes it; :meth:`step` checks that first)."""
        assert self._env is not None, "reset() makes the match"
        return self._env

    def _collect(self) -> None:
        """Add the learner's reward of the last env step; pass round ends to the opponents."""
        env = self._match()
        self._pending += env.rewards.get(self._learner_name, 0.0)
        info = env.infos.get(self._learner_name, {})
        if "round_result" in info:
            for agent in self._agents.values():
                agent.end_round(info["round_result"])

    def _advance(self) -> None:
        """Let the opponents play until the learner must act or the match is over."""
        env = self._match()
        learner = self._learner_name
        while True:
            if env.phase() == "done":
                self._done = True
                self._mask[:] = False
                return
            agent = env.agent_selection
            obs = env.observe(agent)
            if agent == learner:
                self._last_obs = obs["observation"]
                self._mask = obs["action_mask"].astype(bool)
                return
            env.step(self._agents[agent].act(obs["observation"], obs["action_mask"]))
            self._collect()

    def _obs(self) -> ObsArray:
        if self._done:
            return self._match().observe(self._learner_name)["observation"]
        return self._last_obs

    def _info(self) -> dict[str, Any]:
        env = self._match()
        return {"seat": self.learner, "num_players": env.config.num_players,
                "round": env.round_index(), "scores": env.scores,
                "action_mask": self._mask.copy()}


if GYM_ID not in gymnasium.registry:
    gymnasium.register(id=GYM_ID, entry_point=f"{__name__}:SingleAgentEnv")

__all__ = ["SingleAgentEnv", "OpponentFactory", "AgentLike", "Opponent", "Policy", "GYM_ID"]
