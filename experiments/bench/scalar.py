"""The scalar benchmark: the engine and the AEC envs, one step at a time, against PettingZoo's
leduc_holdem_v4, OpenSpiel's dou_dizhu and a no-logic AEC env."""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dragons_egg_env import engine as E
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.config import RulesConfig

from .common import SLICES, Plan, Result, Skip, cpu_model, print_ratios, time_plan, versions

if TYPE_CHECKING:
    from pettingzoo import AECEnv

    #: The AEC envs :class:`AECLoop` steps: any agents, observations and actions.
    AnyAEC = AECEnv[Any, Any, Any]

#: The floor env's observation: a float32 ``observation`` and an int8 ``action_mask``.
FloorObs = dict[str, npt.NDArray[np.float32] | npt.NDArray[np.int8]]

FLOOR_EPISODE_STEPS = 100

# Ratio name, numerator key, denominator key, target.
# (name, numerator, denominator, target, basis): the AEC targets compare env.step calls; the
# engine target compares decisions (player actions), because OpenSpiel deals card by card as
# 52 chance actions a game while the engine deals a round in one call that no step counts.
TARGETS = (
    ("env() / no-logic floor", "de_env", "floor", 1.0, "steps"),
    ("raw_env() / leduc raw_env()", "de_raw", "leduc_raw", 1.3, "steps"),
    ("engine / OpenSpiel dou_dizhu", "engine", "dou_dizhu", 1.0, "decisions"),
)


# Loops. Each ``run(deadline)`` plays whole episodes until the clock passes ``deadline`` and
# returns (steps, decisions, episodes); state (env, rng) carries over between calls.

class EngineLoop:
    def __init__(self, players: int, seed: int) -> None:
        self.config = RulesConfig(num_players=players)
        self.rng = random.Random(seed)

    def run(self, deadline: float) -> tuple[int, int, int]:
        rng = self.rng
        config = self.config
        new_match, legal_actions, step = E.new_match, E.legal_actions, E.step
        deal, random_deal = E.deal, E.random_deal
        DEAL, DONE = E.DEAL, E.DONE
        clock = time.perf_counter
        steps = episodes = 0
        while True:
            s = new_match(config)
            while True:
                ph = s.phase
                if ph == DEAL:
                    deal(s, random_deal(s, rng))
                    continue
                if ph == DONE:
                    break
                acts = legal_actions(s)
                step(s, acts[rng.randrange(len(acts))])
                steps += 1
            episodes += 1
            if clock() >= deadline:
                return steps, steps, episodes


class AECLoop:
    """The standard PettingZoo AEC loop over any AEC env."""

    def __init__(self, make: Callable[[], AnyAEC], seed: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.env = make()
            self.env.reset(seed=seed)
        self.rng = random.Random(seed)

    def run(self, deadline: float) -> tuple[int, int, int]:
        env = self.env
        rng = self.rng
        flatnonzero = np.flatnonzero
        clock = time.perf_counter
        steps = dead = episodes = 0
        # the envs' own observations: a live agent's (never None) is a dict with an action mask
        obs: Any
        while True:
            for _agent in env.agent_iter():
                obs, rew, term, trunc, info = env.last()
                if term or trunc:
                    action = None
                    dead += 1
                else:
                    legal = flatnonzero(obs["action_mask"])
                    action = legal[rng.randrange(len(legal))]
                env.step(action)
                steps += 1
            episodes += 1
            env.reset()
            if clock() >= deadline:
                return steps, steps - dead, episodes


class OpenSpielLoop:
    def __init__(self, name: str, seed: int, params: dict[str, Any] | None = None) -> None:
        try:
            # open-spiel (the bench extra) ships no stubs, and is absent without the extra
            import pyspiel  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as exc:
            raise Skip(exc.name or "pyspiel") from None
        if name == "python_dragons_egg":  # our adapter registers it (the openspiel extra)
            import dragons_egg_env.openspiel  # noqa: F401
        try:
            self.game = pyspiel.load_game(name, params or {})
        except Exception as exc:  # an OpenSpiel build without the game
            raise Skip(f"pyspiel game {name!r} ({exc})") from None
        self.rng = random.Random(seed)
        s = self.game.new_initial_state()
        while s.is_chance_node():  # the uniform draw below is exact only for uniform chance
            probs = {p for _, p in s.chance_outcomes()}
            if max(probs) - min(probs) > 1e-12:
                raise RuntimeError(f"{name}: chance nodes are not uniform; the loop assumes so")
            s.apply_action(s.chance_outcomes()[0][0])

    def run(self, deadline: float) -> tuple[int, int, int]:
        game = self.game
        rng = self.rng
        clock = time.perf_counter
        steps = chance = episodes = 0
        while True:
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
                    chance += 1
                else:
                    acts = state.legal_actions()
                    state.apply_action(acts[rng.randrange(len(acts))])
                steps += 1
            episodes += 1
            if clock() >= deadline:
                return steps, steps - chance, episodes


# The floor: an AEC env with no game logic, wrapped like pettingzoo.classic envs.

def make_floor_env(episode_steps: int = FLOOR_EPISODE_STEPS
                   ) -> AECEnv[str, FloorObs, int | None]:
    """A 2-agent AEC env whose step only hands the turn over (the episode ends after
    ``episode_steps`` steps), with a Dict observation holding an action mask, wrapped in
    TerminateIllegalWrapper, AssertOutOfBoundsWrapper and OrderEnforcingWrapper."""
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers

    class FloorEnv(AECEnv[str, FloorObs, int | None]):
        metadata = {"name": "no_logic_floor_v0", "render_modes": [], "is_parallelizable": False}

        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]  # PettingZoo's has no annotations
            self.possible_agents = ["player_0", "player_1"]
            obs_space = spaces.Dict({
                "observation": spaces.Box(0.0, 1.0, (8,), np.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
            })
            self.observation_spaces = {a: obs_space for a in self.possible_agents}
            self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
            self._obs = np.zeros(8, dtype=np.float32)
            self._mask = np.ones(NUM_ACTIONS, dtype=np.int8)
            self._next = {"player_0": "player_1", "player_1": "player_0"}

        def observation_space(self, agent: str) -> Any:
            return self.observation_spaces[agent]

        def action_space(self, agent: str) -> Any:
            return self.action_spaces[agent]

        def observe(self, agent: str) -> FloorObs:
            return {"observation": self._obs, "action_mask": self._mask}

        def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
                  ) -> None:
            self.agents = self.possible_agents[:]
            self.rewards = {a: 0.0 for a in self.agents}
            self._cumulative_rewards = {a: 0.0 for a in self.agents}
            self.terminations = {a: False for a in self.agents}
            self.truncations = {a: False for a in self.agents}
            self.infos = {a: {} for a in self.agents}
            self.agent_selection = self.agents[0]
            self._t = 0

        def step(self, action: int | None) -> None:
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent]:
                self._was_dead_step(action)
                return
            self._t += 1
            if self._t >= episode_steps:
                for a in self.agents:
                    self.terminations[a] = True
            self.agent_selection = self._next[agent]

    env = FloorEnv()
    guarded = wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    checked = wrappers.AssertOutOfBoundsWrapper(guarded)
    return wrappers.OrderEnforcingWrapper(checked)


def _leduc(kind: str) -> Callable[[], AnyAEC]:
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    for mod in ("rlcard", "pygame"):
        try:
            __import__(mod)
        except ImportError:
            raise Skip(mod) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from pettingzoo.classic import leduc_holdem_v4
        except ImportError as exc:
            raise Skip(exc.name or "pettingzoo.classic") from None
    make: Callable[[], AnyAEC] = getattr(leduc_holdem_v4, kind)
    return make


def de_factory(kind: str, players: int) -> Callable[[], AnyAEC]:
    from dragons_egg_env import dragons_egg_v0

    make = getattr(dragons_egg_v0, kind)
    return lambda: make(num_players=players)


def measurements(players: int) -> Plan:
    """(key, label, factory(seed) -> loop) of every measurement, in run order."""
    return [
        ("engine", f"engine alone ({players} players, no observation)",
         lambda seed: EngineLoop(players, seed)),
        ("de_raw", f"dragons_egg_v0.raw_env() ({players} players)",
         lambda seed: AECLoop(de_factory("raw_env", players), seed)),
        ("de_env", f"dragons_egg_v0.env() ({players} players)",
         lambda seed: AECLoop(de_factory("env", players), seed)),
        ("floor", "no-logic AEC env + 3 classic wrappers",
         lambda seed: AECLoop(make_floor_env, seed)),
        ("leduc_raw", "pettingzoo leduc_holdem_v4.raw_env()",
         lambda seed: AECLoop(_leduc("raw_env"), seed)),
        ("leduc_env", "pettingzoo leduc_holdem_v4.env()",
         lambda seed: AECLoop(_leduc("env"), seed)),
        ("dou_dizhu", "OpenSpiel dou_dizhu (pyspiel)",
         lambda seed: OpenSpielLoop("dou_dizhu", seed)),
        # our game through OpenSpiel (dragons_egg_env.openspiel): a step is a chance outcome
        # (45 a round, one per card) or a decision, as for dou_dizhu
        ("de_openspiel", f"python_dragons_egg via pyspiel ({players} players)",
         lambda seed: OpenSpielLoop("python_dragons_egg", seed, {"players": players})),
    ]


def run_scalar(args: argparse.Namespace, cpu: int | None) -> int:
    """Set up, warm up and time every measurement, print the tables and write the JSON."""
    _print_banner(args, cpu)
    plan = measurements(args.players)
    labels = {key: label for key, label, _ in plan}
    _, skipped, results = time_plan(plan, args.seed, args.seconds)
    ratios = print_ratios(TARGETS, results, skipped)
    if args.json:
        _write_json(args, cpu, labels, results, ratios)
    return 0


def _print_banner(args: argparse.Namespace, cpu: int | None) -> None:
    print(f"dragons-egg bench: {args.seconds:g} s per measurement, seed {args.seed}, "
          f"{args.players} players; pinned to CPU {cpu if cpu is not None else '(not supported)'} "
          f"({cpu_model()}), Python {platform.python_version()}", flush=True)


def _write_json(args: argparse.Namespace, cpu: int | None, labels: dict[str, str],
                results: dict[str, Result], ratios: list[dict[str, Any]]) -> None:
    """Every figure, the ratios and the machine's description, to ``args.json``."""
    doc = {
        "seconds": args.seconds, "slices": SLICES, "seed": args.seed,
        "players": args.players, "pinned_cpu": cpu, "cpu_model": cpu_model(),
        "platform": platform.platform(), "versions": versions(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "results": {k: {"label": label, **results[k]} for k, label in labels.items()},
        "ratios": ratios,
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {args.json}")
