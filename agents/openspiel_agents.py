"""OpenSpiel's bots as our agents, and our agents as OpenSpiel bots (the ``openspiel`` extra).

- ``openspiel-ismcts`` (options ``iterations``, default 200, and ``c``, default 2.0): the
  Python ISMCTS bot of OpenSpiel (``open_spiel.python.algorithms.ismcts``) with random
  rollouts, searching the game ``python_dragons_egg`` from a world sampled from the agent's
  observation. The C++ ``pyspiel.ISMCTSBot`` cannot be used: it calls the state's C++
  ``ResampleFromInfostate``, which a Python game's ``resample_from_infostate`` does not
  override (``docs/openspiel.md``).
- :class:`AgentBot`: one of our agents as a ``pyspiel.Bot`` that plays the pyspiel game.

pyspiel is imported only when such an agent or bot is made; without the extra that is a
one-line error naming it.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import require
from dragons_egg_env.observation import MaskArray, ObsArray, mask_array

from .base import Agent, legal_from_mask
from .ismcts import check_count, check_real
from .sampling import sample_world


def install_sampler() -> None:
    """Import the game (registering ``python_dragons_egg``) and hand it our determinisation
    (:func:`dragons_egg.agents.sampling.sample_world`) for ``resample_from_infostate``."""
    require("the OpenSpiel game", "openspiel")
    from dragons_egg_env import openspiel as OS

    OS.set_world_sampler(sample_world)


def game_params(config: RulesConfig) -> dict[str, Any]:
    """The ``pyspiel.load_game`` parameters of a rule configuration."""
    d = config.to_dict()
    d["players"] = d.pop("num_players")
    return d


class OpenSpielISMCTSAgent(Agent):
    """OpenSpiel's Python ISMCTS bot as an agent (see the module docstring)."""

    name = "openspiel-ismcts"

    def __init__(self, seed: int | None = None, iterations: int = 200, c: float = 2.0) -> None:
        super().__init__(seed)
        try:
            self.check_options(iterations=iterations, c=c)
        except ValueError as exc:
            raise ValueError(f"openspiel-ismcts: {exc}") from None
        install_sampler()
        self.iterations = iterations
        self.c = c
        self._game: Any = None
        self._bot: Any = None

    @classmethod
    def check_options(cls, iterations: int = 200, c: float = 2.0) -> None:
        """A ``ValueError`` naming a bad option; a missing extra is a one-line error."""
        check_count("iterations", iterations, 1, 100_000)
        check_real("c", c, 0)
        require("the openspiel-ismcts agent", "openspiel")

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None) -> None:
        super().start_match(seat, config, max_players)
        import pyspiel  # type: ignore[import-not-found, import-untyped, unused-ignore]

        self._game = pyspiel.load_game("python_dragons_egg", game_params(config))
        self._bot = ismcts_bot(self._game, self.iterations, self.c,
                               self.rng.randrange(2 ** 31), use_observation_string=True)

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        if self._game is None:
            self.start_match(self.seat, self.config, self.max_players)
        state = state_from_observation(self._game, self.view(observation), self.config,
                                       self.seat, self.rng)
        action = int(self._bot.step(state))
        return action if action in legal else legal[0]


def ismcts_bot(game: Any, iterations: int = 200, c: float = 2.0, seed: int = 0, *,
               use_observation_string: bool = False) -> Any:
    """OpenSpiel's Python ``ISMCTSBot`` on ``game`` with one random rollout per iteration,
    ``allow_inconsistent_action_sets`` (the determinisations' legal sets differ) and a
    ``restart_at`` (``evaluate_bots`` calls it; the bot keeps no state between moves)."""
    install_sampler()
    from open_spiel.python.algorithms import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        ismcts,
        mcts,
    )

    class Bot(ismcts.ISMCTSBot):  # type: ignore[misc]
        def restart_at(self, state: Any) -> None:
            self.reset()

    rs = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=rs)
    return Bot(game, evaluator, c, iterations, random_state=rs,
               use_observation_string=use_observation_string,
               allow_inconsistent_action_sets=True)


def state_from_observation(game: Any, view: Any, config: RulesConfig, seat: int,
                           rng: random.Random) -> Any:
    """A ``python_dragons_egg`` state consistent with ``view`` (an observation of ``seat``):
    a world drawn by :func:`~dragons_egg.agents.sampling.sample_world`, seats made absolute.
    Its histories are empty: search it with ``use_observation_string=True``."""
    w = sample_world(view, config, rng)
    n = config.num_players

    def ab(j: int) -> int:
        return j if j < 0 else (j + seat) % n

    def abm(mask: int) -> int:
        return sum(1 << ab(j) for j in range(n) if mask >> j & 1)

    hands = [0] * n
    for j in range(n):
        hands[ab(j)] = w.hands[j]
    s = E.state_from_info(
        config, hands=hands, phase=w.phase, current=ab(w.current), turn=ab(w.turn),
        round_index=w.round_idx, played=w.played, pile=w.pile, top_number=w.top_rank,
        top_count=w.top_count, last_player=ab(w.last_player), passed=abm(w.passed),
        locked=abm(w.locked), finish=[ab(j) for j in w.finish],
        scores=[w.scores[(q - seat) % n] for q in range(n)], dragon=ab(w.dragon),
        victim=ab(w.victim), asked=w.asked, hits=w.hits, given=w.given,
        asks_left=w.asks_left, egg_known=abm(w.egg_known),
        plays=[(ab(p), c) for p, c in w.plays])
    state = game.new_initial_state()
    state.m.s = s
    return state


def _bot_base() -> Any:
    import pyspiel  # type: ignore[import-not-found, import-untyped, unused-ignore]

    return pyspiel.Bot


def agent_bot(agent: Agent, player_id: int, game: Any) -> Any:
    """One of our agents as a ``pyspiel.Bot`` for seat ``player_id`` of a
    ``python_dragons_egg`` game (it acts on our observation of the state)."""
    install_sampler()
    base = _bot_base()

    class AgentBot(base):  # type: ignore[misc, valid-type]
        """Our agent as an OpenSpiel bot."""

        def __init__(self) -> None:
            base.__init__(self)
            self.agent = agent
            self.player_id = player_id
            self.game = game
            agent.start_match(player_id, game.config)

        def restart_at(self, state: Any) -> None:
            agent.start_match(player_id, game.config)

        def step(self, state: Any) -> int:
            s = state.m.s
            obs = game.encoder.encode(s, player_id)
            return agent.act(obs, mask_array(E.legal_mask(s)))

    return AgentBot()


__all__ = ["OpenSpielISMCTSAgent", "agent_bot", "ismcts_bot", "install_sampler", "game_params",
           "state_from_observation"]
