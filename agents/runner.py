"""Play one match between agents through the environment (agents see only their own view).

Scores are exact: every R27 reward is a rational with denominator ``n - 1`` (the ``rank``
scheme gives ``1 - 2p/(n-1)``, ``dragon_egg`` whole numbers), so the runner counts each seat's
rewards in whole units of ``1/(n-1)`` and divides once: a match score of -1 is ``-1.0``, not
``-0.9999999999999999``, and a zero sum is ``0.0``, not ``1.1e-16``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dragons_egg_env.config import RulesConfig
from dragons_egg_env.dragons_egg_v0 import raw_env
from dragons_egg_env.observation import MaskArray, ObsArray

from .base import Agent


@dataclass
class MatchRecord:
    """What a match produced, by seat."""

    #: Match score of each seat (R28): ``score_units[i] / denominator``, correctly rounded.
    scores: list[float]
    #: Per round: the finishing order (seats), the deadlock flag and every seat's R27 reward
    #: (exact, as the scores).
    rounds: list[dict[str, Any]] = field(default_factory=list)
    replay: dict[str, Any] | None = None
    steps: int = 0
    #: Match scores in whole units of ``1 / denominator`` (``None`` if a reward scheme ever
    #: gives rewards that are not multiples of it; ``scores`` are then plain float sums).
    score_units: list[int] | None = None
    #: ``n - 1``: every R27 reward is a multiple of ``1 / denominator``.
    denominator: int = 1


def reward_units(rewards: Sequence[float], denominator: int) -> list[int] | None:
    """Rewards as whole multiples of ``1 / denominator``, or ``None`` if one is not."""
    units = [round(r * denominator) for r in rewards]
    if any(abs(r * denominator - u) > 1e-6 for r, u in zip(rewards, units, strict=True)):
        return None
    return units


class PolicyAgent(Agent):
    """An agent around a callable ``policy(observation, action_mask) -> action`` (stateless
    from the runner's point of view: it gets no seed and no round results)."""

    name = "policy"

    def __init__(self, policy: Callable[[Any, Any], Any], seed: int | None = None,
                 label: str | None = None) -> None:
        super().__init__(seed)
        if not callable(policy):
            raise TypeError(f"a policy is a callable (observation, mask) -> action, "
                            f"got {policy!r}")
        self.policy = policy
        if label is not None:
            self.spec = label

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        return int(self.policy(observation, action_mask))


def play_match(agents: Sequence[Agent], config: RulesConfig, seed: int,
               deals: Sequence[Sequence[Sequence[str | int]]] | None = None,
               max_players: int | None = None,
               keep_replay: bool = False) -> MatchRecord:
    """Seat ``agents[i]`` at seat ``i`` and play a match with the given seed (and deals)."""
    if len(agents) != config.num_players:
        raise ValueError(f"{len(agents)} agents for a table of {config.num_players}")
    env = raw_env(max_players=max_players, **config.to_dict())
    env.reset(seed=seed, options={"deals": deals} if deals else None)
    for i, agent in enumerate(agents):
        agent.start_match(i, config, env.max_players)
    index = env.agent_name_mapping
    rec = MatchRecord(scores=[0.0] * config.num_players)
    for name in env.agent_iter():
        if env.terminations[name]:
            env.step(None)
            continue
        obs = env.observe(name)
        action = agents[index[name]].act(obs["observation"], obs["action_mask"])
        env.step(action)
        rec.steps += 1
        info = env.infos[name]
        if "round_result" in info:
            res = info["round_result"]
            order = [index[a] for a in res["finish_order"]]
            rec.rounds.append({"order": order, "deadlock": res["deadlock"]})
            for agent in agents:
                agent.end_round(res)
    s = env.engine_state
    den = max(config.num_players - 1, 1)
    units = [reward_units(result.rewards, den) for result in s.results]
    exact = [u for u in units if u is not None]
    if len(exact) == len(units):
        totals = [sum(col) for col in zip(*exact, strict=True)] if exact else \
            [0] * config.num_players
        rec.score_units, rec.denominator = totals, den
        rec.scores = [u / den for u in totals]
        for rnd, u in zip(rec.rounds, exact, strict=True):
            rnd["rewards"] = [x / den for x in u]
    else:  # pragma: no cover - every R27 scheme gives multiples of 1/(n-1)
        rec.scores = list(s.scores)
        for rnd, result in zip(rec.rounds, s.results, strict=True):
            rnd["rewards"] = list(result.rewards)
    if keep_replay:
        rec.replay = env.to_replay()
    return rec
