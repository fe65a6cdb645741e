"""OpenSpiel's bots as our agents, and our agents as OpenSpiel bots (the ``openspiel`` extra).

- ``openspiel-ismcts`` (options ``iterations``, default 200, and ``c``, default 2.0): the
  Python ISMCTS bot of OpenSpiel (``open_spiel.python.algorithms.ismcts``) with random
  rollouts, searching the game ``python_dragons_egg`` from a world sampled from the agent's
  observation. The C++ ``pyspiel.ISMCTSBot`` cannot be used: it calls the state's C++
  ``ResampleFromInfostate``, which a Python game's ``resample_from_infostate`` does not
  override (``docs/openspiel.md``).
- :class:`AgentBot`: one of our agents as a ``pyspiel.Bot`` that plays the pyspiel game.
- :func:`train_rl_agent`: OpenSpiel's PyTorch DQN trained in its ``rl_environment`` on
  ``python_dragons_egg`` against uniform random play, measured before and after
  (:class:`RLRun`); it also needs torch (the ``train`` extra).

pyspiel (and torch, for :func:`train_rl_agent`) is imported only when such an agent or bot
is made or the function runs; without the extra that is a one-line error naming it.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
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


#: The DQN settings of :func:`train_rl_agent` (``open_spiel.python.pytorch.dqn.DQN`` keywords;
#: ``epsilon_decay_duration`` is set from the episodes). Where they differ from DQN's defaults:
#: a linear epsilon schedule (the default ``"exp"`` one never goes below
#: ``end + 0.37 (start - end)``), Adam at 1e-3, a Huber loss, a small network.
DQN_SETTINGS: dict[str, Any] = {
    "hidden_layers_sizes": [64], "batch_size": 64, "replay_buffer_capacity": 20_000,
    "learning_rate": 1e-3, "optimizer_str": "adam", "learn_every": 4,
    "update_target_network_every": 250, "min_buffer_size_to_learn": 1000,
    "epsilon_start": 1.0, "epsilon_end": 0.05, "epsilon_decay_schedule_str": "linear",
    "loss_str": "huber"}

#: Learner steps of epsilon's decay per training episode: about half the training (a learner
#: sees about 20 steps per episode at 2 players, one round).
EPSILON_STEPS_PER_EPISODE = 10

#: The seeds of the evaluation episodes' deals and of the random players in them (the same
#: for every evaluation, so that before, after and random play meet the same deals).
EVAL_DEAL_SEED, EVAL_OPPONENT_SEED, EVAL_RANDOM_SEED = 12_345, 777, 999


@dataclass(frozen=True)
class Estimate:
    """A mean over evaluation episodes and the half-width of its 95% interval (normal
    approximation: ``1.96 * sd / sqrt(n)``)."""

    mean: float
    half_width: float

    @property
    def low(self) -> float:
        """The interval's lower end."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """The interval's upper end."""
        return self.mean + self.half_width

    def __str__(self) -> str:
        return f"{self.mean:+.3f} ± {self.half_width:.3f}"


def estimate(xs: Any) -> Estimate:
    """The :class:`Estimate` of a sequence of at least two numbers."""
    a = np.asarray(xs, dtype=float)
    return Estimate(float(a.mean()), float(1.96 * a.std(ddof=1) / math.sqrt(len(a))))


@dataclass(frozen=True)
class RLRun:
    """What :func:`train_rl_agent` measured: seat 0's mean return against uniform random play
    at the other seats over the same ``eval_episodes`` deals, for uniform random play at seat
    0 (``random``), the untrained learner (``before``) and the trained one (``after``), both
    greedy; ``improvement`` is the paired difference ``after - before`` per deal. The
    training loop's seconds: ``train_seconds`` on the clock, ``train_cpu_seconds`` of this
    process."""

    episodes: int
    eval_episodes: int
    random: Estimate
    before: Estimate
    after: Estimate
    improvement: Estimate
    train_seconds: float
    train_cpu_seconds: float
    learner: Any  # the trained open_spiel.python.pytorch.dqn.DQN


class _UniformRandom:
    """Uniform play over the legal actions from its own generator (OpenSpiel's
    ``RandomAgent`` draws from numpy's global one, which the DQN reseeds)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.RandomState(seed)

    def __call__(self, legal: list[int]) -> int:
        return int(legal[self.rng.randint(len(legal))])


def _check_rl_options(players: int, episodes: int, eval_episodes: int, seed: int) -> None:
    check_count("players", players, 2, 8)
    check_count("episodes", episodes, 1, 10_000_000)
    check_count("eval_episodes", eval_episodes, 2, 10_000_000)
    check_count("seed", seed, 0, 2 ** 31 - 1)


def train_rl_agent(players: int = 2, episodes: int = 3000, eval_episodes: int = 1000,
                   seed: int = 0, params: dict[str, Any] | None = None,
                   dqn_settings: dict[str, Any] | None = None,
                   log: Callable[[str], None] | None = None) -> RLRun:
    """Train OpenSpiel's PyTorch DQN at seat 0 of ``python_dragons_egg`` (``players`` seats,
    one round, no tribute, unless ``params``, more ``pyspiel.load_game`` parameters, says
    otherwise) in OpenSpiel's ``rl_environment`` with our observation vector
    (``ObservationType.OBSERVATION``), against uniform random play at the other seats, for
    ``episodes`` matches; evaluate seat 0 greedily before and after on the same
    ``eval_episodes`` deals (:class:`RLRun`).

    Everything is drawn from ``seed`` (the deals of training, the random players, the
    network and DQN's numpy draws), so the same arguments give the same run; torch runs on
    one thread. numpy's and torch's global generators and torch's thread count are restored
    afterwards. ``dqn_settings`` overrides :data:`DQN_SETTINGS`. ``log`` gets a line of
    progress five times during training. A bad argument is a one-line ``ValueError``; a
    missing extra (``openspiel``, and torch of ``train``) a one-line ``MissingExtraError``."""
    try:
        _check_rl_options(players, episodes, eval_episodes, seed)
    except ValueError as exc:
        raise ValueError(f"train_rl_agent: {exc}") from None
    require("train_rl_agent", "openspiel", "train", only=("pyspiel", "torch"))
    install_sampler()
    import pyspiel  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import torch
    from open_spiel.python import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        rl_environment,
    )
    from open_spiel.python.pytorch import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        dqn,
    )

    game = pyspiel.load_game("python_dragons_egg", {
        "num_rounds": 1, "tribute_asks": 0, **(params or {}), "players": players})
    obs_type = rl_environment.ObservationType.OBSERVATION

    def environment(deal_seed: int) -> Any:
        # Environment(seed=...) is no parameter of open_spiel 2.0's rl_environment (it is
        # taken as a game setting and dropped): the deals' generator is the chance sampler.
        return rl_environment.Environment(
            game, observation_type=obs_type,
            chance_event_sampler=rl_environment.ChanceEventSampler(deal_seed))

    settings = {**DQN_SETTINGS,
                "epsilon_decay_duration": EPSILON_STEPS_PER_EPISODE * episodes,
                **(dqn_settings or {})}
    np_state = np.random.get_state()
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with torch.random.fork_rng(devices=[]):
            env = environment(seed)
            size = env.observation_spec()["info_state"][0]
            learner = dqn.DQN(0, size, env.action_spec()["num_actions"], seed=seed, **settings)

            def greedy(ts: Any) -> int:
                return int(learner.step(ts, is_evaluation=True).action)

            def evaluate(policy: Callable[[Any], int] | None) -> Any:
                e = environment(EVAL_DEAL_SEED)
                other = _UniformRandom(EVAL_OPPONENT_SEED)
                mine = _UniformRandom(EVAL_RANDOM_SEED)
                out = np.zeros(eval_episodes)
                for i in range(eval_episodes):
                    ts = e.reset()
                    while not ts.last():
                        p = ts.observations["current_player"]
                        legal = ts.observations["legal_actions"][p]
                        if p != 0:
                            a = other(legal)
                        else:
                            a = policy(ts) if policy is not None else mine(legal)
                        ts = e.step([a])
                    out[i] = ts.rewards[0]
                return out

            rand, before = evaluate(None), evaluate(greedy)
            np.random.seed(seed)  # DQN's draws: the same whatever eval_episodes is
            opponent = _UniformRandom(seed + 1)
            start, wall = time.process_time(), time.perf_counter()
            recent: list[float] = []
            every = max(1, episodes // 5)
            for ep in range(episodes):
                ts = env.reset()
                while not ts.last():
                    if ts.observations["current_player"] == 0:
                        a = learner.step(ts).action
                    else:
                        a = opponent(ts.observations["legal_actions"][ts.current_player()])
                    ts = env.step([a])
                learner.step(ts)
                recent.append(ts.rewards[0])
                if log is not None and (ep + 1) % every == 0:
                    log(f"episode {ep + 1}/{episodes}: mean return of the last {len(recent)} "
                        f"{np.mean(recent):+.3f} (exploring), "
                        f"{time.process_time() - start:.0f} s")
                    recent = []
            cpu, seconds = time.process_time() - start, time.perf_counter() - wall
            after = evaluate(greedy)
    finally:
        torch.set_num_threads(threads)
        np.random.set_state(np_state)
    return RLRun(episodes, eval_episodes, estimate(rand), estimate(before), estimate(after),
                 estimate(after - before), seconds, cpu, learner)


__all__ = ["DQN_SETTINGS", "Estimate", "OpenSpielISMCTSAgent", "RLRun", "agent_bot", "estimate",
           "game_params", "install_sampler", "ismcts_bot", "state_from_observation",
           "train_rl_agent"]
