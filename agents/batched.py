"""Seat any scalar agent in the batched single-learner env: :class:`AgentPolicy`.

``dragons_egg_env.vector_env.SingleAgentVectorEnv`` takes batched policies as opponents.
:class:`AgentPolicy` turns an existing agent (a spec such as ``"heuristic"``,
``"ismcts:iterations=50"``, ``"ppo:path=snap.npz"``, an :class:`dragons_egg.agents.AgentSpec`, or
any factory ``seed -> agent``) into one: it keeps one agent object per (match, seat) it plays, tells
it ``start_match`` at every new match and ``end_round`` at every round end, and calls ``agent.act``
row by row.

It is slow by design: Python per match and per move, exactly as fast as the agent itself (a
batched torch policy called once per engine step is the fast path). A memoryless agent with
its own :meth:`dragons_egg.agents.base.Agent.act_batch` (the heuristic) plays all its rows in one
call. Agent objects are reused across the matches of a slot (``start_match`` resets them), made on
first use with a seed derived from ``seed``, the match slot and the seat, so a seeded env plays the
same games.

:func:`batch_policy` is the other way round: a spec's actions for rows of observations at one
table in one call, where the spec has such a form (a deterministic policy file, a memoryless
agent); the tribute analysis (``dragons_egg.experiments.evaluation.tribute``) plays its batched
engine with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import MaskArray, ObsArray, pad

from . import AgentSpec, make_agent
from .base import Agent
from .ppo import PPOAgent

#: Rows of observations and their masks -> one action per row.
BatchFn = Callable[[ObsArray, MaskArray], npt.NDArray[np.int64]]


def _batches(agent: Any) -> bool:
    """The agent is memoryless and has its own :meth:`Agent.act_batch` (which promises the
    actions of :meth:`Agent.act`), so the rows of every match and seat can go in one call."""
    return bool(getattr(agent, "memoryless", False)) and isinstance(agent, Agent) \
        and type(agent).act_batch is not Agent.act_batch


class AgentPolicy:
    """A :class:`dragons_egg_env.vector_env.MatchAwarePolicy` playing a scalar agent.

    Args:
        agent: a spec string, an :class:`AgentSpec` (or any object with ``make(seed)``), or a
            callable ``seed -> agent``.
        seed: base seed of the agents it makes.
    """

    def __init__(self, agent: str | AgentSpec | Callable[[int], Agent] | Any,
                 seed: int = 0) -> None:
        if isinstance(agent, str):
            agent = AgentSpec(agent)  # checks the spec now
        if hasattr(agent, "make"):
            self._make: Callable[[int], Any] = agent.make
        elif callable(agent):
            self._make = agent
        else:
            raise TypeError(f"AgentPolicy takes a spec string, an AgentSpec or a factory "
                            f"seed -> agent, got {agent!r}")
        self.label = str(agent) if isinstance(agent, AgentSpec) else \
            getattr(agent, "__name__", type(agent).__name__)
        self.seed = int(seed)
        self._agents: dict[tuple[int, int], Any] = {}
        #: Seats this policy plays in each match slot now.
        self._seats: dict[int, list[int]] = {}

    def _agent(self, b: int, s: int) -> Any:
        agent = self._agents.get((b, s))
        if agent is None:
            seed = int(np.random.SeedSequence([self.seed, b, s]).generate_state(1)[0]) >> 1
            agent = self._agents[(b, s)] = self._make(seed)
        return agent

    def start_matches(self, matches: npt.NDArray[np.int64], seats: npt.NDArray[np.bool_],
                      config: RulesConfig, max_players: int) -> None:
        for b, row in zip(matches.tolist(), seats, strict=True):
            mine = np.flatnonzero(row).tolist()
            self._seats[b] = mine
            for s in mine:
                self._agent(b, s).start_match(s, config, max_players)

    def act_rows(self, obs: ObsArray, mask: npt.NDArray[np.bool_], matches: npt.NDArray[np.int64],
                 seats: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        agents = []
        for b, s in zip(matches.tolist(), seats.tolist(), strict=True):
            if s not in self._seats.get(b, ()):
                raise RuntimeError(f"match {b}: AgentPolicy({self.label}) was not started at "
                                   f"seat {s} (start_matches first)")
            agents.append(self._agents[(b, s)])
        if agents and _batches(agents[0]):
            batch: npt.NDArray[np.int64] = agents[0].act_batch(obs, mask)  # all rows at once
            return batch  # (the same actions as row by row)
        out = np.empty(len(matches), np.int64)
        for i, agent in enumerate(agents):
            out[i] = int(agent.act(obs[i], mask[i]))
        return out

    def end_rounds(self, matches: npt.NDArray[np.int64], results: list[dict[str, Any]]
                   ) -> None:
        for b, res in zip(matches.tolist(), results, strict=True):
            for s in self._seats.get(b, ()):
                self._agents[(b, s)].end_round(res)

    def __call__(self, obs: ObsArray, mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        raise TypeError("AgentPolicy keeps one agent per match and seat: it is driven through "
                        "start_matches/act_rows/end_rounds (SingleAgentVectorEnv does that)")

    def __repr__(self) -> str:
        return f"AgentPolicy({self.label!r}, seed={self.seed})"


def batch_policy(spec: str | Callable[[int], Agent], config: RulesConfig, seed: int
                 ) -> BatchFn | None:
    """``spec``'s actions for rows of observations and masks at ``config``'s table (unpadded:
    ``config.num_players`` seats), the actions its agent's :meth:`Agent.act` takes on each;
    ``None`` when it has no such form. It has one as a deterministic policy file (``ppo``/``net``
    on a ``.npz``: the argmax of its logits on the rows padded to the policy's seats) or a
    memoryless agent (its ``act_batch``: the heuristic's own, or ``act`` row by row; a random
    one draws from one generator, not from one per seat); not as a factory, an agent with
    memory or a sampling policy file. The agent is made with ``seed`` and started at seat 0 of
    ``config`` (so a policy file under other rules than its own warns once, as in a match)."""
    if not isinstance(spec, str):
        return None
    agent = make_agent(spec, seed=seed)
    n = config.num_players
    agent.start_match(0, config, n)
    net = agent.net if isinstance(agent, PPOAgent) else None
    if isinstance(agent, PPOAgent) and agent.deterministic and net is not None:
        m = agent.policy_players

        def greedy(obs: ObsArray, mask: MaskArray) -> npt.NDArray[np.int64]:
            out: npt.NDArray[np.int64] = np.argmax(net.logits(pad(obs, n, m), mask), axis=-1)
            return out
        return greedy
    if agent.memoryless and getattr(agent, "deterministic", True):
        return agent.act_batch  # its own, or act row by row
    return None


__all__ = ["AgentPolicy", "BatchFn", "batch_policy"]
