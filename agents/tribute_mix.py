"""``TributeMix``: one agent's play with the tribute (R30..R34) taken from a tribute policy.

The tribute analysis (``dragons_egg.experiments.evaluation.tribute``) seats it at every seat to
measure what tribute choices are worth under one play policy: every decision outside the ask
and give phases is the play agent's; in them the tribute policy decides
(:data:`TRIBUTE_POLICIES`), and the cards it asked for and gave back are recorded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.engine import Phase
from dragons_egg_env.observation import OBS_PHASES, MaskArray, ObsArray, layout

from .base import Agent
from .batched import BatchFn
from .heuristic import HeuristicAgent

#: The tribute policies: ``none`` (ask for nothing: pass at once), ``random`` (uniform asks
#: and gives), ``heuristic`` (the rules H8/H9 of :mod:`dragons_egg.agents.heuristic`),
#: ``learned`` (the ``learner`` agent's asks and give-back), ``learned-ask`` and
#: ``learned-give`` (the learner's asks with the heuristic's give-back, and the other way
#: round).
TRIBUTE_POLICIES = ("none", "random", "heuristic", "learned", "learned-ask", "learned-give")


class TributeMix(Agent):
    """Plays with ``play``; in the ask and give phases uses the tribute policy ``tribute``
    (``learned``: the agent ``learner``, by default ``play``) and records what it asks for
    (:attr:`asked`) and gives back (:attr:`given`), as card indices."""

    name = "tribute-mix"

    def __init__(self, play: Agent, tribute: str, seed: int | None = None,
                 learner: Agent | None = None) -> None:
        super().__init__(seed)
        if tribute not in TRIBUTE_POLICIES:
            raise ValueError(f"unknown tribute policy {tribute!r}; choose from "
                             f"{', '.join(TRIBUTE_POLICIES)}")
        self.play = play
        self.tribute = tribute
        self.learner = play if learner is None else learner
        self.heuristic = HeuristicAgent(seed=seed)
        self.asked: list[int] = []
        self.given: list[int] = []
        self._phase = layout(self.max_players)["phase"]

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None
                    ) -> None:
        """Start the match for itself, the play agent, the learner and the heuristic."""
        super().start_match(seat, config, max_players)
        self.play.start_match(seat, config, max_players)
        if self.learner is not self.play:
            self.learner.start_match(seat, config, max_players)
        self.heuristic.start_match(seat, config, max_players)
        self._phase = layout(self.max_players)["phase"]

    def end_round(self, result: dict[str, Any]) -> None:
        """Tell the play agent and the learner (the heuristic keeps no memory)."""
        self.play.end_round(result)
        if self.learner is not self.play:
            self.learner.end_round(result)

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        """The play agent's action outside the tribute; the tribute policy's in it (R31..R33:
        an ask, the pass that ends the asks, a give-back)."""
        phase = OBS_PHASES[int(np.flatnonzero(observation[self._phase])[0])]
        if phase not in (Phase.ASK, Phase.GIVE):  # play / complete
            return self.play.act(observation, action_mask)
        legal = [int(a) for a in np.flatnonzero(action_mask)]
        if self.tribute == "none":
            a = PASS if PASS in legal else legal[0]
        elif self.tribute == "random":
            a = legal[self.rng.randrange(len(legal))]
        elif self.tribute == "learned" or self.tribute == f"learned-{phase.name.lower()}":
            a = self.learner.act(observation, action_mask)
        else:  # heuristic, or the heuristic's half of learned-ask / learned-give
            a = self.heuristic.act(observation, action_mask)
        if ASK_BASE <= a < GIVE_BASE:
            self.asked.append(a - ASK_BASE)
        elif a >= GIVE_BASE:
            self.given.append(a - GIVE_BASE)
        return a


def tribute_actions(t: str, obs: ObsArray, mask: npt.NDArray[np.bool_], learned: BatchFn,
                    heuristic: BatchFn, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Tribute policy ``t``'s actions on rows of tribute decisions (asks or give-backs,
    R31..R33; bool masks), as :class:`TributeMix` takes them, with the learned and the
    heuristic policies in batched form (:data:`~dragons_egg.agents.batched.BatchFn`);
    ``random`` draws from ``rng``, one generator for all rows."""
    ask = mask[:, ASK_BASE:GIVE_BASE].any(axis=1)
    if t == "none":
        out: npt.NDArray[np.int64] = np.where(mask[:, PASS], PASS, np.argmax(mask, axis=1))
        return out
    if t == "random":
        u = rng.random(mask.shape) * mask  # a uniform legal action: the largest draw
        drawn: npt.NDArray[np.int64] = np.argmax(u, axis=1)
        return drawn
    use = np.zeros(len(mask), bool) if t == "heuristic" else \
        np.ones(len(mask), bool) if t == "learned" else ask if t == "learned-ask" else ~ask
    acts = np.empty(len(mask), np.int64)
    if use.any():
        acts[use] = learned(obs[use], mask[use])
    if (~use).any():
        acts[~use] = heuristic(obs[~use], mask[~use])
    return acts


__all__ = ["TRIBUTE_POLICIES", "TributeMix", "tribute_actions"]
