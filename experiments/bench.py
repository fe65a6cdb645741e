"""Throughput benchmark: steps per second of uniformly random legal play, on one CPU core.

Run ``python -m dragons_egg.experiments.bench`` (or ``dragons-egg-bench``); ``--help`` lists the
options. ``docs/benchmark.md`` explains the method and records figures.

Every measurement plays whole episodes of uniformly random legal actions (drawn with one seeded
``random.Random``) through one loop shape, as far as each API allows:

* ``engine``: ``legal_actions`` + random choice + ``step``, ``random_deal`` at deal phases (the
  deal is timed but not counted as a step), a new match when one is done; no observation.
* PettingZoo AEC envs (``dragons_egg_v0.raw_env()``/``env()``, ``leduc_holdem_v4.raw_env()``/
  ``env()`` and the no-logic floor)::

      for agent in env.agent_iter():
          obs, rew, term, trunc, info = env.last()
          action = None if term or trunc else <random choice of np.flatnonzero(obs["action_mask"])>
          env.step(action)

  Every ``env.step`` call is a step (the ``None`` steps of terminated agents too; decisions
  alone are reported beside). The env is reset with ``--seed`` once and with ``reset()`` after
  each episode, so its own RNG carries on (re-seeding every episode would rebuild the rlcard
  game inside PettingZoo's leduc env, which costs several times its episode).
* OpenSpiel ``dou_dizhu`` through ``pyspiel``: at chance nodes an outcome of
  ``state.chance_outcomes()`` drawn uniformly (its chance nodes are uniform; checked), else a
  random choice from ``state.legal_actions()``; ``state.apply_action``. Every applied action,
  chance included, is a step; decisions alone are reported beside.

The process is pinned to its first allowed CPU. Every loop is built and warmed up first; then
five rounds run, in each of which every loop plays one slice of ``--seconds / 5`` (the order
rotating), so a slow spell of a shared machine hits all of them alike. A figure is the median
of a loop's five slice rates; a ratio is the median of its five same-round slice ratios. The
clock is read only between episodes, so no loop pays for it per step.

``--vector`` measures batched random play instead (same pinning and interleaving): the batched
engine (``dragons_egg_env.vector.VectorEngine.random_steps``, the random choice made inside the
compiled loop, observations and masks every step) at ``--batch`` matches, the scalar
``dragons_egg_v0.raw_env()`` through the AEC loop above, and pgx's ``leduc_holdem`` (jax on
CPU, single-threaded XLA) at the same batch, its random choice also inside the compiled
(jitted) loop; plus memory per match and the first-call compile time of the batched engine,
measured in fresh subprocesses (an empty ``NUMBA_CACHE_DIR``, then the same one warm).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.config import MAX_PLAYERS, MIN_PLAYERS, RulesConfig
from dragons_egg_env.extras import require_cli

from .cli_args import int_range, positive_float, table_size

SLICES = 5
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


# --vector: matches per batch, steps per match per compiled call (vector and pgx alike), and the
# targets (same fields as TARGETS; the pgx one is a moonshot, reported, never required).
VECTOR_BATCH = 1024
VECTOR_CHUNK = 64
VECTOR_TARGETS = (
    ("vector / raw_env()", "vector", "raw_env", 20.0, "steps"),
    ("vector / pgx leduc_holdem", "vector", "pgx_leduc", 1.0, "steps"),
)
VECTOR_NOTE = ("steps/s: median of the slices. Batched steps are decisions (deals uncounted; "
               "an episode\nis a match, or a leduc game); raw_env() steps include the None "
               "steps of terminated agents.")
# Single-threaded XLA on CPU, set before jax is first imported (it reads them once).
XLA_CPU_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")


class Skip(Exception):
    """A peer that is not installed; the message names the missing module."""


# ---------------------------------------------------------------------------------------
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

    def __init__(self, make: Callable[[], Any], seed: int) -> None:
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
    def __init__(self, name: str, seed: int) -> None:
        try:
            import pyspiel
        except ImportError as exc:
            raise Skip(exc.name or "pyspiel") from None
        try:
            self.game = pyspiel.load_game(name)
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


class VectorLoop:
    """``VectorEngine.random_steps(chunk)`` over ``batch`` matches: uniformly random legal
    steps drawn inside the compiled loop from each match's generator, the observation and mask
    of every step written; finished matches restart. Every step is a decision (deals are done
    inside the step that ends a round and are not counted)."""

    def __init__(self, batch: int, players: int, seed: int, record: bool = False,
                 chunk: int = VECTOR_CHUNK) -> None:
        try:
            from dragons_egg_env.vector import VectorEngine
        except ImportError as exc:
            raise Skip(exc.name or "numba") from None
        self.engine = VectorEngine(batch, num_players=players, seed=seed, record=record,
                                   copy=False)
        self.engine.reset()
        self.chunk = chunk

    def run(self, deadline: float) -> tuple[int, int, int]:
        random_steps = self.engine.random_steps
        chunk = self.chunk
        clock = time.perf_counter
        steps = matches = 0
        while True:
            stats = random_steps(chunk)
            steps += stats.steps
            matches += stats.matches
            if clock() >= deadline:
                return steps, steps, matches


def configure_xla() -> None:
    """Make jax run on the CPU with single-threaded XLA (``XLA_CPU_FLAGS`` added to
    ``XLA_FLAGS``): effective only before jax's CPU backend starts, so call it before jax is
    imported."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    for flag in XLA_CPU_FLAGS:
        if not any(f.split("=")[0] == flag.split("=")[0] for f in flags):
            flags.append(flag)
    os.environ["XLA_FLAGS"] = " ".join(flags)
    os.environ["JAX_PLATFORMS"] = "cpu"


class PgxLeducLoop:
    """pgx ``leduc_holdem`` at ``batch`` games on the CPU: one jitted call plays ``chunk``
    steps of every game in a ``lax.scan``, each drawing a uniformly random legal action per
    game (``jax.random.categorical`` over logits masked by ``legal_action_mask``) and stepping
    ``vmap(auto_reset(env.step, env.init))``, so a finished game restarts at once (pgx deals
    in ``init``: every step is a decision). A call counts ``batch * chunk`` steps. Building it
    compiles the call and runs it once (``compile_s``)."""

    def __init__(self, batch: int, seed: int, chunk: int = VECTOR_CHUNK) -> None:
        configure_xla()
        try:
            import jax
            import jax.numpy as jnp
            import pgx
            from pgx.experimental.wrappers import auto_reset
        except ImportError as exc:
            raise Skip(exc.name or "jax/pgx") from None
        env = pgx.make("leduc_holdem")
        step = jax.vmap(auto_reset(env.step, env.init))

        def one(carry: Any, _: Any) -> tuple[Any, Any]:
            state, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, logits, axis=-1)
            state = step(state, action, jax.random.split(k_step, batch))
            return (state, key), state.terminated.sum()

        def play(state: Any, key: Any) -> tuple[Any, Any, Any]:
            (state, key), done = jax.lax.scan(one, (state, key), None, length=chunk)
            return state, key, done.sum()

        self._jax = jax
        self._play = jax.jit(play)
        self.steps_per_call = batch * chunk
        key, k_init = jax.random.split(jax.random.PRNGKey(seed))
        t0 = time.perf_counter()
        self.state = jax.jit(jax.vmap(env.init))(jax.random.split(k_init, batch))
        self.state, self.key, done = self._play(self.state, key)
        jax.block_until_ready(self.state)
        self.compile_s = time.perf_counter() - t0
        self.device = str(jax.devices()[0])

    def run(self, deadline: float) -> tuple[int, int, int]:
        play, block = self._play, self._jax.block_until_ready
        state, key = self.state, self.key
        per = self.steps_per_call
        clock = time.perf_counter
        steps = episodes = 0
        while True:
            state, key, done = play(state, key)
            block(state)
            episodes += int(done)
            steps += per
            if clock() >= deadline:
                self.state, self.key = state, key
                return steps, steps, episodes


# ---------------------------------------------------------------------------------------
# The floor: an AEC env with no game logic, wrapped like pettingzoo.classic envs.

def make_floor_env(episode_steps: int = FLOOR_EPISODE_STEPS) -> Any:
    """A 2-agent AEC env whose step only hands the turn over (the episode ends after
    ``episode_steps`` steps), with a Dict observation holding an action mask, wrapped in
    TerminateIllegalWrapper, AssertOutOfBoundsWrapper and OrderEnforcingWrapper."""
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers

    class FloorEnv(AECEnv):
        metadata = {"name": "no_logic_floor_v0", "render_modes": [], "is_parallelizable": False}

        def __init__(self) -> None:
            super().__init__()
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

        def observe(self, agent: str) -> dict[str, np.ndarray]:
            return {"observation": self._obs, "action_mask": self._mask}

        def reset(self, seed: int | None = None, options: dict | None = None) -> None:
            self.agents = self.possible_agents[:]
            self.rewards = {a: 0.0 for a in self.agents}
            self._cumulative_rewards = {a: 0.0 for a in self.agents}
            self.terminations = {a: False for a in self.agents}
            self.truncations = {a: False for a in self.agents}
            self.infos = {a: {} for a in self.agents}
            self.agent_selection = self.agents[0]
            self._t = 0

        def step(self, action: Any) -> None:
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
    env = wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)


# ---------------------------------------------------------------------------------------
# The measurements.

def _leduc(kind: str) -> Callable[[], Any]:
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
    return getattr(leduc_holdem_v4, kind)


def _de(kind: str, players: int) -> Callable[[], Any]:
    from dragons_egg_env import dragons_egg_v0

    make = getattr(dragons_egg_v0, kind)
    return lambda: make(num_players=players)


def measurements(players: int) -> list[tuple[str, str, Callable[[int], Any]]]:
    """(key, label, factory(seed) -> loop) of every measurement, in run order."""
    return [
        ("engine", f"engine alone ({players} players, no observation)",
         lambda seed: EngineLoop(players, seed)),
        ("de_raw", f"dragons_egg_v0.raw_env() ({players} players)",
         lambda seed: AECLoop(_de("raw_env", players), seed)),
        ("de_env", f"dragons_egg_v0.env() ({players} players)",
         lambda seed: AECLoop(_de("env", players), seed)),
        ("floor", "no-logic AEC env + 3 classic wrappers",
         lambda seed: AECLoop(make_floor_env, seed)),
        ("leduc_raw", "pettingzoo leduc_holdem_v4.raw_env()",
         lambda seed: AECLoop(_leduc("raw_env"), seed)),
        ("leduc_env", "pettingzoo leduc_holdem_v4.env()",
         lambda seed: AECLoop(_leduc("env"), seed)),
        ("dou_dizhu", "OpenSpiel dou_dizhu (pyspiel)",
         lambda seed: OpenSpielLoop("dou_dizhu", seed)),
    ]


def vector_measurements(players: int, batch: int
                        ) -> list[tuple[str, str, Callable[[int], Any]]]:
    """(key, label, factory(seed) -> loop) of every ``--vector`` measurement, in run order."""
    return [
        ("vector", f"VectorEngine.random_steps, batch {batch:,} ({players} players, "
                   f"obs + masks)",
         lambda seed: VectorLoop(batch, players, seed)),
        ("vector_record", "the same with record=True (replay logs kept)",
         lambda seed: VectorLoop(batch, players, seed, record=True)),
        ("raw_env", f"dragons_egg_v0.raw_env() ({players} players)",
         lambda seed: AECLoop(_de("raw_env", players), seed)),
        ("pgx_leduc", f"pgx leduc_holdem, batch {batch:,} (jax, CPU)",
         lambda seed: PgxLeducLoop(batch, seed)),
    ]


# A fresh interpreter's first use of the batched engine; prints its timings as JSON.
_FIRST_CALL = """\
import json, sys, time
t0 = time.perf_counter()
from dragons_egg_env.vector import VectorEngine
t1 = time.perf_counter()
batch, players, seed, chunk = map(int, sys.argv[1:5])
eng = VectorEngine(batch, num_players=players, seed=seed, record=False, copy=False)
eng.reset()
t2 = time.perf_counter()
eng.random_steps(chunk)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "reset_s": t2 - t1, "random_steps_s": t3 - t2,
                  "first_call_s": t3 - t1}))
"""


def first_call(batch: int, players: int, seed: int, cache_dir: str | None,
               timeout: float = 900.0) -> dict[str, float]:
    """Time, in a fresh subprocess (pinned like this process), importing the batched engine,
    its first ``reset()`` and its first ``random_steps``; ``first_call_s`` is the last two
    together. ``cache_dir`` becomes ``NUMBA_CACHE_DIR`` (``None``: the default cache)."""
    import dragons_egg_env

    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(dragons_egg_env.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.pop("NUMBA_DISABLE_JIT", None)
    if cache_dir is None:
        env.pop("NUMBA_CACHE_DIR", None)
    else:
        env["NUMBA_CACHE_DIR"] = cache_dir
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL, str(batch), str(players), str(seed),
         str(VECTOR_CHUNK)],
        env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"first-call subprocess failed ({proc.returncode}): {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_times(batch: int, players: int, seed: int) -> dict[str, Any]:
    """The batched engine's first call with numba's cache empty (it compiles every kernel it
    uses and fills the cache) and then again in a second fresh process (loading the cache)."""
    with tempfile.TemporaryDirectory(prefix="dragons-egg-numba-") as cache:
        cold = first_call(batch, players, seed, cache)
        warm = first_call(batch, players, seed, cache)
    return {"cold": cold, "cached": warm}


def warm_up(loop: Any, seconds: float) -> None:
    """Run ``loop`` untimed for a moment: caches, lazy imports, first-call costs."""
    loop.run(time.perf_counter() + min(1.0, 0.1 * seconds))


def measure_interleaved(loops: dict[str, Any], seconds: float,
                        progress: Callable[[int], None] | None = None) -> dict[str, dict]:
    """Time ``SLICES`` rounds; in each round every loop runs one slice of ``seconds / SLICES``
    (the order rotating from round to round), so a slow spell of the machine falls on all
    measurements alike and ratios can be taken slice by slice."""
    clock = time.perf_counter
    per = seconds / SLICES
    keys = list(loops)
    raw: dict[str, list[tuple[int, int, int, float]]] = {k: [] for k in keys}
    for r in range(SLICES):
        if progress is not None:
            progress(r)
        for j in range(len(keys)):
            key = keys[(r + j) % len(keys)]
            gc.collect()
            t0 = clock()
            n, d, e = loops[key].run(t0 + per)
            raw[key].append((n, d, e, clock() - t0))
    out = {}
    for key, rows in raw.items():
        rates = [n / dt for n, _, _, dt in rows]
        drates = [d / dt for _, d, _, dt in rows]
        steps = sum(row[0] for row in rows)
        episodes = sum(row[2] for row in rows)
        med = statistics.median(rates)
        out[key] = {
            "steps_per_s": med,
            "decisions_per_s": statistics.median(drates),
            "slice_steps_per_s": rates,
            "slice_decisions_per_s": drates,
            "spread": (max(rates) - min(rates)) / med,
            "steps": steps,
            "decisions": sum(row[1] for row in rows),
            "episodes": episodes,
            "seconds": sum(row[3] for row in rows),
            "steps_per_episode": steps / episodes,
        }
    return out


def pin_to_one_core() -> int | None:
    """Pin this process to its first allowed CPU; returns it (None where unsupported)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("dragons-egg", "numpy", "numba", "pettingzoo", "gymnasium", "rlcard",
                 "open-spiel", "pygame", "jax", "jaxlib", "pgx"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


# ---------------------------------------------------------------------------------------
# Command line.

DESCRIPTION = ("Steps per second of uniformly random legal play, pinned to one CPU core: "
               "the Dragon's Egg engine and envs against PettingZoo leduc_holdem_v4, "
               "OpenSpiel dou_dizhu and a no-logic AEC env (peers are skipped when not "
               "installed; pip install 'dragons-egg[bench]').")


def build_parser(prog: str = "python -m dragons_egg.experiments.bench") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of this command (also the ``dragons-egg bench`` subcommand's)."""
    p.add_argument("--seconds", type=positive_float, default=5.0,
                   help="timed seconds per measurement, after a short warm-up (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of every RNG (default: 0)")
    p.add_argument("--players", type=table_size, default=4,
                   help=f"Dragon's Egg table size, {MIN_PLAYERS}..{MAX_PLAYERS} (default: 4)")
    p.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    p.add_argument("--vector", action="store_true",
                   help="measure batched random play instead: the batched engine against "
                        "raw_env() and pgx leduc_holdem (jax), plus memory per match and "
                        "compile time (docs/benchmark.md)")
    p.add_argument("--batch", type=int_range(1), default=VECTOR_BATCH,
                   help=f"--vector: matches per batch (default: {VECTOR_BATCH})")
    p.add_argument("--compile-time", action=argparse.BooleanOptionalAction, default=True,
                   help="--vector: time the batched engine's first call in fresh "
                        "subprocesses, with an empty numba cache and a warm one (default: on)")


def main(argv: Sequence[str] | None = None) -> int:
    script = os.path.basename(sys.argv[0]) == "dragons-egg-bench"  # the console script
    parser = build_parser("dragons-egg-bench") if script else build_parser()
    return run_from_args(parser.parse_args(argv), parser)


def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run with parsed arguments (``dragons-egg bench``); ``parser`` reports late errors.
    The peers are skipped when not installed; ``--vector`` needs the ``vector`` extra (one
    line naming it and exit status 2 otherwise, before anything runs)."""
    if args.vector:
        require_cli(f"{parser.prog} --vector", "vector")
    if args.json:
        parent = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(parent):
            parser.error(f"--json: directory {parent!r} does not exist")

    old_affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        cpu = pin_to_one_core()
        return _run_vector(args, cpu) if args.vector else _run(args, cpu)
    finally:
        if old_affinity is not None:
            os.sched_setaffinity(0, old_affinity)


def _run(args: argparse.Namespace, cpu: int | None) -> int:
    """Set up, warm up and time every measurement, print the tables and write the JSON."""
    _print_banner(args, cpu)
    plan = measurements(args.players)
    labels = {key: label for key, label, _ in plan}
    loops, skipped = _set_up(plan, args.seed, args.seconds)
    print(f"timing: {SLICES} rounds of {len(loops)} interleaved slices of "
          f"{args.seconds / SLICES:.3g} s ...", flush=True)
    results: dict[str, dict[str, Any]] = {k: {"skipped": v} for k, v in skipped.items()}
    results.update(measure_interleaved(
        loops, args.seconds,
        lambda r: print(f"  round {r + 1}/{SLICES}", flush=True)))
    print()
    _print_rates(plan, results)
    print()
    ratios = _print_ratios(results, skipped)
    if args.json:
        _write_json(args, cpu, labels, results, ratios)
    return 0


def _print_banner(args: argparse.Namespace, cpu: int | None) -> None:
    print(f"dragons-egg bench: {args.seconds:g} s per measurement, seed {args.seed}, "
          f"{args.players} players; pinned to CPU {cpu if cpu is not None else '(not supported)'} "
          f"({_cpu_model()}), Python {platform.python_version()}", flush=True)


def _set_up(plan: list[tuple[str, str, Callable[[int], Any]]], seed: int,
            seconds: float) -> tuple[dict[str, Any], dict[str, str]]:
    """Build and warm up the loop of every measurement in ``plan``; returns the loops and,
    for the measurements whose peer is not installed, why they are skipped."""
    skipped: dict[str, str] = {}
    loops: dict[str, Any] = {}
    for i, (key, label, factory) in enumerate(plan, 1):
        print(f"[{i}/{len(plan)}] {label}: set up and warm up ...", end=" ", flush=True)
        try:
            loop = factory(seed)
        except Skip as exc:
            print(f"skipped (not installed: {exc})", flush=True)
            skipped[key] = f"not installed: {exc}"
            continue
        warm_up(loop, seconds)
        loops[key] = loop
        print("ready", flush=True)
    return loops, skipped


def _print_rates(plan: list[tuple[str, str, Callable[[int], Any]]],
                 results: dict[str, dict[str, Any]], note: str | None = None) -> None:
    """The table of figures, one line per measurement."""
    w = max(len(label) for _, label, _ in plan)
    head = (f"{'measurement':<{w}}  {'steps/s':>10}  {'min..max of slices':>19}  "
            f"{'decisions/s':>11}  {'steps/episode':>13}")
    print(head)
    print("-" * len(head))
    for key, label, _ in plan:
        r = results[key]
        if "skipped" in r:
            print(f"{label:<{w}}  skipped ({r['skipped']})")
            continue
        lo, hi = min(r["slice_steps_per_s"]), max(r["slice_steps_per_s"])
        span = f"{lo / 1000:,.0f}k..{hi / 1000:,.0f}k"
        print(f"{label:<{w}}  {_fmt_rate(r['steps_per_s']):>10}  {span:>19}  "
              f"{_fmt_rate(r['decisions_per_s']):>11}  {r['steps_per_episode']:>13.1f}")
    print(note or (
        "steps/s: median of the slices. AEC steps include the None steps of terminated "
        "agents;\ndou_dizhu steps include its chance actions (the deal); the engine's "
        "exclude its deals.\ndecisions/s counts neither."))


def _slice_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """The slice-by-slice ratios ``a[i] / b[i]`` of two measurements' slice rates."""
    return [x / y for x, y in zip(a, b, strict=True)]


def _ratio(results: dict[str, dict[str, Any]], name: str, num: str, den: str, target: float,
           basis: str) -> dict[str, Any]:
    """One target ratio (a row of ``TARGETS``) of two measurements that both ran; printed and
    returned as its JSON entry."""
    a, b = results[num], results[den]
    sslices = _slice_ratios(a["slice_steps_per_s"], b["slice_steps_per_s"])
    dslices = _slice_ratios(a["slice_decisions_per_s"], b["slice_decisions_per_s"])
    sratio = statistics.median(sslices)
    dratio = statistics.median(dslices)
    per_slice = dslices if basis == "decisions" else sslices
    ratio = statistics.median(per_slice)
    ok = ratio >= target
    span = f"{min(per_slice):.2f}..{max(per_slice):.2f}"
    print(f"{name:<30}  {basis:>9}  {ratio:6.2f}  {span:>11}  {sratio:6.2f}  {dratio:9.2f}"
          f"  (target >= {target:g})  {'PASS' if ok else 'MISS'}")
    return {
        "name": name, "numerator": num, "denominator": den, "target": target,
        "basis": basis, "ratio": ratio, "pass": ok, "slice_ratios": per_slice,
        "steps_ratio": sratio, "decisions_ratio": dratio,
    }


def _print_ratios(results: dict[str, dict[str, Any]],
                  skipped: dict[str, str]) -> list[dict[str, Any]]:
    """The table of target ratios (``TARGETS``); returns their JSON entries."""
    print(f"{'target ratio':<30}  {'basis':>9}  {'median':>6}  {'min..max':>11}  "
          f"{'steps':>6}  {'decisions':>9}")
    ratios = []
    for name, num, den, target, basis in TARGETS:
        if num in skipped or den in skipped:
            print(f"{name:<30}  {'':>9}  {'n/a':>6}  {'':>11}  (target >= {target:g}; "
                  f"{den if den in skipped else num} skipped)")
            ratios.append({"name": name, "numerator": num, "denominator": den,
                           "target": target, "ratio": None, "pass": None})
        else:
            ratios.append(_ratio(results, name, num, den, target, basis))
    print("ratios: median over the rounds of the ratio of the two slices of each round, on the "
          "basis\nshown; the steps and decisions columns give both for information.")
    return ratios


def _write_json(args: argparse.Namespace, cpu: int | None, labels: dict[str, str],
                results: dict[str, dict[str, Any]], ratios: list[dict[str, Any]]) -> None:
    """Every figure, the ratios and the machine's description, to ``args.json``."""
    doc = {
        "seconds": args.seconds, "slices": SLICES, "seed": args.seed,
        "players": args.players, "pinned_cpu": cpu, "cpu_model": _cpu_model(),
        "platform": platform.platform(), "versions": _versions(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "results": {k: {"label": label, **results[k]} for k, label in labels.items()},
        "ratios": ratios,
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {args.json}")


# ---------------------------------------------------------------------------------------
# --vector

def _run_vector(args: argparse.Namespace, cpu: int | None) -> int:
    """The ``--vector`` run: compile times, then set up, warm up and time the batched
    measurements, print them and write the JSON."""
    print(f"dragons-egg bench --vector: {args.seconds:g} s per measurement, seed {args.seed}, "
          f"{args.players} players, batch {args.batch:,}; pinned to CPU "
          f"{cpu if cpu is not None else '(not supported)'} ({_cpu_model()}), "
          f"Python {platform.python_version()}", flush=True)
    compile_info: dict[str, Any] | None = None
    if args.compile_time:
        print("first call of the batched engine in fresh processes (empty numba cache, then "
              "cached) ...", end=" ", flush=True)
        try:
            compile_info = compile_times(args.batch, args.players, args.seed)
            print(f"{compile_info['cold']['first_call_s']:.1f} s, cached "
                  f"{compile_info['cached']['first_call_s']:.2f} s", flush=True)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
            compile_info = {"error": str(exc)}
            print(f"failed: {exc}", flush=True)
    plan = vector_measurements(args.players, args.batch)
    labels = {key: label for key, label, _ in plan}
    loops, skipped = _set_up(plan, args.seed, args.seconds)
    print(f"timing: {SLICES} rounds of {len(loops)} interleaved slices of "
          f"{args.seconds / SLICES:.3g} s ...", flush=True)
    results: dict[str, dict[str, Any]] = {k: {"skipped": v} for k, v in skipped.items()}
    results.update(measure_interleaved(
        loops, args.seconds,
        lambda r: print(f"  round {r + 1}/{SLICES}", flush=True)))
    print()
    _print_rates(plan, results, VECTOR_NOTE)
    print()
    ratios = _print_target_ratios(VECTOR_TARGETS, results, skipped)
    memory = {k: loops[k].engine.memory_per_match() for k in ("vector", "vector_record")
              if k in loops}
    _print_vector_extras(memory, compile_info, loops.get("pgx_leduc"))
    if args.json:
        _write_vector_json(args, cpu, labels, results, ratios, memory, compile_info,
                           loops.get("pgx_leduc"))
    return 0


def _rate(results: dict[str, dict[str, Any]], key: str) -> float | None:
    r = results.get(key, {})
    return r.get("steps_per_s")


def _print_vector_extras(memory: dict[str, dict[str, float]],
                         compile_info: dict[str, Any] | None, pgx_loop: Any) -> None:
    """Memory per match and the compile times."""
    for key, mem in memory.items():
        parts = ", ".join(f"{name} {v:,.0f}" for name, v in mem.items())
        print(f"memory per match ({'record=True' if key == 'vector_record' else 'record=False'}"
              f"): {sum(mem.values()):,.0f} bytes ({parts})")
    if compile_info is None:
        print("compile time: not measured (--no-compile-time)")
    elif "error" in compile_info:
        print(f"compile time: failed ({compile_info['error']})")
    else:
        for which in ("cold", "cached"):
            c = compile_info[which]
            print(f"first call, {'empty numba cache' if which == 'cold' else 'cached'}: "
                  f"reset + random_steps {c['first_call_s']:.2f} s (reset {c['reset_s']:.2f} s, "
                  f"random_steps {c['random_steps_s']:.2f} s; import {c['import_s']:.2f} s)")
    if pgx_loop is not None:
        print(f"pgx leduc_holdem: jit compile + first call {pgx_loop.compile_s:.2f} s "
              f"on {pgx_loop.device}")


def _print_target_ratios(targets: Sequence[tuple[str, str, str, float, str]],
                         results: dict[str, dict[str, Any]],
                         skipped: dict[str, str]) -> list[dict[str, Any]]:
    """The table of ``targets`` ratios; returns their JSON entries."""
    print(f"{'target ratio':<30}  {'basis':>9}  {'median':>6}  {'min..max':>11}  "
          f"{'steps':>6}  {'decisions':>9}")
    ratios = []
    for name, num, den, target, basis in targets:
        if num in skipped or den in skipped:
            print(f"{name:<30}  {'':>9}  {'n/a':>6}  {'':>11}  (target >= {target:g}; "
                  f"{den if den in skipped else num} skipped)")
            ratios.append({"name": name, "numerator": num, "denominator": den,
                           "target": target, "ratio": None, "pass": None})
        else:
            ratios.append(_ratio(results, name, num, den, target, basis))
    print("ratios: median over the rounds of the ratio of the two slices of each round.")
    return ratios


def _write_vector_json(args: argparse.Namespace, cpu: int | None, labels: dict[str, str],
                       results: dict[str, dict[str, Any]], ratios: list[dict[str, Any]],
                       memory: dict[str, dict[str, float]],
                       compile_info: dict[str, Any] | None, pgx_loop: Any) -> None:
    """The ``--vector`` figures, ratios and the machine's description, to ``args.json``."""
    by_name = {r["numerator"] + "/" + r["denominator"]: r["ratio"] for r in ratios}
    doc = {
        "mode": "vector",
        "vector_steps_per_s": _rate(results, "vector"),
        "vector_record_steps_per_s": _rate(results, "vector_record"),
        "raw_env_steps_per_s": _rate(results, "raw_env"),
        "pgx_leduc_steps_per_s": _rate(results, "pgx_leduc"),
        "pgx_leduc_skipped": results.get("pgx_leduc", {}).get("skipped"),
        "vector_over_raw_env": by_name.get("vector/raw_env"),
        "vector_over_pgx_leduc": by_name.get("vector/pgx_leduc"),
        "batch": args.batch, "chunk": VECTOR_CHUNK, "players": args.players,
        "memory_per_match": memory.get("vector"),
        "memory_per_match_record": memory.get("vector_record"),
        "compile": compile_info,
        "pgx_compile_s": None if pgx_loop is None else pgx_loop.compile_s,
        "xla_flags": os.environ.get("XLA_FLAGS") if pgx_loop is not None else None,
        "seconds": args.seconds, "slices": SLICES, "seed": args.seed,
        "pinned_cpu": cpu, "cpu_model": _cpu_model(), "platform": platform.platform(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": _versions(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "results": {k: {"label": label, **results[k]} for k, label in labels.items()},
        "ratios": ratios,
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
