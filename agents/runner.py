"""Play one match between agents through the environment (agents see only their own view)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dragons_egg_env.config import RulesConfig
from dragons_egg_env.dragons_egg_v0 import raw_env

from .base import Agent


@dataclass
class MatchRecord:
    """What a match produced, by seat."""

    scores: list[float]
    #: Per round: the finishing order (seats), the deadlock flag and every seat's R27 reward.
    rounds: list[dict[str, Any]] = field(default_factory=list)
    replay: dict[str, Any] | None = None
    steps: int = 0


def play_match(agents: Sequence[Agent], config: RulesConfig, seed: int,
               deals: list | None = None, max_players: int | None = None,
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
    rec.scores = list(s.scores)
    for rnd, result in zip(rec.rounds, s.results, strict=True):
        rnd["rewards"] = list(result.rewards)
    if keep_replay:
        rec.replay = env.to_replay()
    return rec
