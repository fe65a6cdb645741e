"""The ``--vector`` benchmark: the batched engine against ``raw_env()`` and pgx's leduc_holdem,
with memory per match and the batched engine's first-call compile time."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any, TypedDict, Union, final

from .common import SLICES, Plan, Result, Skip, cpu_model, print_ratios, time_plan, versions
from .scalar import AECLoop, de_factory

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
VECTOR_RATIO_NOTE = "ratios: median over the rounds of the ratio of the two slices of each round."
# Single-threaded XLA on CPU, set before jax is first imported (it reads them once).
XLA_CPU_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")


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
            # the bench extra's: not found without it (then the loop is skipped)
            import jax  # type: ignore[import-not-found, unused-ignore]
            import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]
            import pgx  # type: ignore[import-not-found, unused-ignore]
            from pgx.experimental.wrappers import (  # type: ignore[import-not-found, unused-ignore]
                auto_reset,
            )
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


def vector_measurements(players: int, batch: int) -> Plan:
    """(key, label, factory(seed) -> loop) of every ``--vector`` measurement, in run order."""
    return [
        ("vector", f"VectorEngine.random_steps, batch {batch:,} ({players} players, "
                   f"obs + masks)",
         lambda seed: VectorLoop(batch, players, seed)),
        ("vector_record", "the same with record=True (replay logs kept)",
         lambda seed: VectorLoop(batch, players, seed, record=True)),
        ("raw_env", f"dragons_egg_v0.raw_env() ({players} players)",
         lambda seed: AECLoop(de_factory("raw_env", players), seed)),
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


@final
class FirstCall(TypedDict):
    """The timings of the batched engine's first use in a fresh process (:func:`first_call`),
    in seconds."""

    import_s: float
    reset_s: float
    random_steps_s: float
    #: ``reset_s + random_steps_s``.
    first_call_s: float


@final
class CompileTimes(TypedDict):
    """:func:`compile_times`: the first call with numba's cache empty, then cached."""

    cold: FirstCall
    cached: FirstCall


@final
class CompileFailed(TypedDict):
    """Why the compile times could not be measured."""

    error: str


#: The ``compile`` entry of the ``--vector`` JSON (``None``: not measured).
CompileInfo = Union[CompileTimes, CompileFailed]


def first_call(batch: int, players: int, seed: int, cache_dir: str | None,
               timeout: float = 900.0) -> FirstCall:
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
    timings: FirstCall = json.loads(proc.stdout.strip().splitlines()[-1])  # _FIRST_CALL's
    return timings


def compile_times(batch: int, players: int, seed: int) -> CompileTimes:
    """The batched engine's first call with numba's cache empty (it compiles every kernel it
    uses and fills the cache) and then again in a second fresh process (loading the cache)."""
    with tempfile.TemporaryDirectory(prefix="dragons-egg-numba-") as cache:
        cold = first_call(batch, players, seed, cache)
        warm = first_call(batch, players, seed, cache)
    return {"cold": cold, "cached": warm}


def run_vector(args: argparse.Namespace, cpu: int | None) -> int:
    """The ``--vector`` run: compile times, then set up, warm up and time the batched
    measurements, print them and write the JSON."""
    print(f"dragons-egg bench --vector: {args.seconds:g} s per measurement, seed {args.seed}, "
          f"{args.players} players, batch {args.batch:,}; pinned to CPU "
          f"{cpu if cpu is not None else '(not supported)'} ({cpu_model()}), "
          f"Python {platform.python_version()}", flush=True)
    compile_info: CompileInfo | None = None
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
    loops, skipped, results = time_plan(plan, args.seed, args.seconds, VECTOR_NOTE)
    ratios = print_ratios(VECTOR_TARGETS, results, skipped, VECTOR_RATIO_NOTE)
    batched = {k: loop for k, loop in loops.items() if isinstance(loop, VectorLoop)}
    memory: dict[str, dict[str, float]] = {
        k: batched[k].engine.memory_per_match() for k in ("vector", "vector_record")
        if k in batched}
    pgx = loops.get("pgx_leduc")
    pgx_loop = pgx if isinstance(pgx, PgxLeducLoop) else None
    _print_vector_extras(memory, compile_info, pgx_loop)
    if args.json:
        _write_vector_json(args, cpu, labels, results, ratios, memory, compile_info, pgx_loop)
    return 0


def _rate(results: Mapping[str, Result], key: str) -> float | None:
    r = results.get(key)
    return None if r is None or "skipped" in r else r["steps_per_s"]


def _skipped(results: Mapping[str, Result], key: str) -> str | None:
    r = results.get(key)
    return r["skipped"] if r is not None and "skipped" in r else None


def _print_vector_extras(memory: dict[str, dict[str, float]],
                         compile_info: CompileInfo | None,
                         pgx_loop: PgxLeducLoop | None) -> None:
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


def _write_vector_json(args: argparse.Namespace, cpu: int | None, labels: dict[str, str],
                       results: dict[str, Result], ratios: list[dict[str, Any]],
                       memory: dict[str, dict[str, float]],
                       compile_info: CompileInfo | None, pgx_loop: PgxLeducLoop | None) -> None:
    """The ``--vector`` figures, ratios and the machine's description, to ``args.json``."""
    by_name = {r["numerator"] + "/" + r["denominator"]: r["ratio"] for r in ratios}
    doc = {
        "mode": "vector",
        "vector_steps_per_s": _rate(results, "vector"),
        "vector_record_steps_per_s": _rate(results, "vector_record"),
        "raw_env_steps_per_s": _rate(results, "raw_env"),
        "pgx_leduc_steps_per_s": _rate(results, "pgx_leduc"),
        "pgx_leduc_skipped": _skipped(results, "pgx_leduc"),
        "vector_over_raw_env": by_name.get("vector/raw_env"),
        "vector_over_pgx_leduc": by_name.get("vector/pgx_leduc"),
        "batch": args.batch, "chunk": VECTOR_CHUNK, "players": args.players,
        "memory_per_match": memory.get("vector"),
        "memory_per_match_record": memory.get("vector_record"),
        "compile": compile_info,
        "pgx_compile_s": None if pgx_loop is None else pgx_loop.compile_s,
        "xla_flags": os.environ.get("XLA_FLAGS") if pgx_loop is not None else None,
        "seconds": args.seconds, "slices": SLICES, "seed": args.seed,
        "pinned_cpu": cpu, "cpu_model": cpu_model(), "platform": platform.platform(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": versions(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "results": {k: {"label": label, **results[k]} for k, label in labels.items()},
        "ratios": ratios,
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {args.json}")
