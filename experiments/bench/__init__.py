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

The package: :mod:`~dragons_egg.experiments.bench.common` (the timing method and the tables,
one ratio printer for both benchmarks), :mod:`~dragons_egg.experiments.bench.scalar`,
:mod:`~dragons_egg.experiments.bench.vector` and :mod:`~dragons_egg.experiments.bench.cli`;
their public names are importable from the package itself.
"""

from __future__ import annotations

from .cli import (
    DESCRIPTION,
    add_arguments,
    build_parser,
    main,
    run_from_args,
)
from .common import (
    SLICES,
    Skip,
    measure_interleaved,
    pin_to_one_core,
    print_rates,
    print_ratios,
    time_plan,
    warm_up,
)
from .scalar import (
    FLOOR_EPISODE_STEPS,
    TARGETS,
    AECLoop,
    EngineLoop,
    OpenSpielLoop,
    make_floor_env,
    measurements,
)
from .vector import (
    VECTOR_BATCH,
    VECTOR_CHUNK,
    VECTOR_NOTE,
    VECTOR_TARGETS,
    XLA_CPU_FLAGS,
    PgxLeducLoop,
    VectorLoop,
    compile_times,
    configure_xla,
    first_call,
    vector_measurements,
)

__all__ = [
    "AECLoop",
    "DESCRIPTION",
    "EngineLoop",
    "FLOOR_EPISODE_STEPS",
    "OpenSpielLoop",
    "PgxLeducLoop",
    "SLICES",
    "Skip",
    "TARGETS",
    "VECTOR_BATCH",
    "VECTOR_CHUNK",
    "VECTOR_NOTE",
    "VECTOR_TARGETS",
    "VectorLoop",
    "XLA_CPU_FLAGS",
    "add_arguments",
    "build_parser",
    "compile_times",
    "configure_xla",
    "first_call",
    "main",
    "make_floor_env",
    "measure_interleaved",
    "measurements",
    "pin_to_one_core",
    "print_rates",
    "print_ratios",
    "time_plan",
    "run_from_args",
    "vector_measurements",
    "warm_up",
]
